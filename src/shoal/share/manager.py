"""`SharePartitionManager`: every share-partition this broker leads, loaded on demand,
and the operations a share request performs across them.

Pure: synchronous and deterministic, no I/O. The caller injects the clock and a log
lookup (topic id, partition -> the log's positions, `transactions.LogPositions`, or an
`ErrorCode`); it calls nothing above it and reads and writes nothing itself. Each
operation takes the group's settings as a value (`SharePartitionConfig`, resolved by
the caller from the broker config and the group's overrides; a mapping by group for
the operations across groups) and answers with what the caller is to perform:

- **State writes** through the caller's `Persister` (share/persister.py): a tentative
  transition's write (`Acknowledged.pending`, `release`'s `PendingWrite`s), whose
  outcome the caller hands back (`acknowledge_written`, `write_done`: commit or roll
  back); standing writes whose transitions stand whatever happens
  (`Effects.writes`, reported with `standing_written`); start offsets to persist
  before an unload (`Unloading.writes`, `unload_written`).
- **Loads**: share-partitions to load first (`to_load`, `AcquireRound.load`,
  `Acknowledged.load`); the caller reads the persisted state and hands it to `load`.
- **Log reads**: an acquisition is an `AcquireRound` naming each read it needs
  (`LogRead`) and handed each result (`LogSlice`); `available_bytes` names the log
  ranges to measure (share/log_read.py performs both for the caller).
- **Wake-ups and DLQ work**: every operation that may have made records acquirable
  (acknowledgements and releases committed, locks expired, start offset or log start
  offset moved, archivals, share-partitions dropped) returns `Effects` naming the
  share-partitions whose parked share fetches the caller must wake, and those with
  dead-letter copies to make.

- **Loading** (docs/design/share-partition.md §10): the first fetch or acknowledgement of a
  (group, topic id, partition) loads the persisted state the caller read; StartOffset -1 means the
  group's `share.auto.offset.reset` (latest = high watermark, earliest = log start,
  by_duration = first batch with a timestamp >= now - duration). A failed load caches
  nothing, so the next request retries; persister errors become partition errors
  through `persister.partition_error` (Kafka's `fetchPersisterError`): an
  uninitialised key (INVALID_REQUEST) answers UNKNOWN_SERVER_ERROR, fenced epochs
  NOT_LEADER_OR_FOLLOWER, coordinator errors COORDINATOR_NOT_AVAILABLE.
- **Acquisition for a session** (§7.1): partitions are visited from a rotation point
  that moves with each request (Kafka rotates by the session epoch), MaxBytes is split
  evenly among the partitions that can acquire and have data to read, MaxRecords is
  one budget for the request, the first batch of the request goes out even if larger
  than the limits. Each partition reads its log from `next_fetch_offset`; a read below
  the log start offset moves the share-partition's start first (§4.4) and reads again.
  `Records` is the slice of the read covering the log batches that overlap the
  acquired offsets (never null: empty bytes).
- **Isolation** (§9): under the group's `share.isolation.level=read_committed`, read
  per fetch, acquisition stops at the partition's last stable offset and the aborted
  transactional batches of the read (`transactions.aborted_batches` over the log's
  aborted index) are archived right after acquisition; read_uncommitted reads to the
  high watermark. Control batches are acquired either way and GAP-acknowledged.
- **Acknowledgements** are checked for shape (docs/design/wire.md §3: INVALID_REQUEST,
  RENEW only with IsRenewAck), applied atomically per partition, then persisted by the
  caller: a successful write commits, a failed one rolls back and answers the mapped error
  (fenced -> NOT_LEADER_OR_FOLLOWER, and the share-partition is dropped to reload).
  The acknowledged share-partition is woken only when something there is
  acquirable now.
- **Releases** (session closed, connection dropped) go through the same write path.
- **Lock expiry**: `next_lock_deadline` is the earliest deadline over all
  share-partitions; `expire_locks` fires what is due (under the settings of
  `groups_due`) and returns each expiry's write (the transition stands if the write
  fails).
- **Delayed redelivery** (Shoal extension): `next_redelivery_deadline` is the
  earliest time a delayed record becomes due; `redeliveries_due` wakes the fetches
  parked there. Nothing is written (the delay is not persisted).
- **Dropping**: deleted topics (`retain_topics`) and groups whose last share session
  ended (`drop_group`) leave memory, and so do share-partitions idle for
  `shoal.share.partition.idle.unload.ms` with nothing acquired and no redelivery delay
  pending (`unload_idle`, run by the server's timer). Everything they hold is already
  persisted, except a start offset resolved from `share.auto.offset.reset`
  (persisted -1) and never written since: that one is written before the
  share-partition leaves (a reload must not resolve `latest` again and skip what
  arrived meanwhile). They reload from the persisted state on next use.

Invariant: `_by_group`, `_by_partition` and `_by_group_tp` index exactly the keys of
`_partitions` (`_by_group_tp` by (group id, topic id's int, partition): the hot lookups of a
fetch need no `SharePartitionKey` built and hashed);
`_touched` holds exactly their keys; `_woken`, `_dlq_due` and `_writes` are empty
between operations.

(Past 600 lines because it is the one place where a share request meets every
share-partition: loading, acquisition across a session, acknowledgement and its
persistence, expiry and unloading share the indexes above; the per-partition logic
lives in partition.py, acquire.py and acknowledge.py.)
"""

from __future__ import annotations

import logging
import operator
import uuid
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from shoal.clock import Clock
from shoal.limits import SHARE_FETCH_READS_MAX
from shoal.protocol.errors import ErrorCode
from shoal.protocol.share import AcknowledgeType, AcquireMode
from shoal.share.acknowledge import AckBatch, validate_batches
from shoal.share.acquire import AcquiredRecords
from shoal.share.leader_settings import SharePartitionConfig
from shoal.share.log_read import LogLookup, LogRead, LogSlice
from shoal.share.partition import PendingWrite, SharePartition, StateLoadError
from shoal.share.persister import (
    FENCING_ERRORS,
    PersistedState,
    SharePartitionKey,
    StateWrite,
    partition_error,
    within_log,
)
from shoal.share.persister import ReadResult as StateRead
from shoal.share.read_committed import LogPositions, read_limit
from shoal.share.sessions import TopicIdPartition

log = logging.getLogger(__name__)

LEADER_EPOCH = 0
"""Shoal is a single node: every partition's leader epoch is 0."""


def describe_key(key: SharePartitionKey) -> str:
    """`group:topic-id:partition`, the share coordinator's key string, for logs."""
    return f"{key.group_id}:{key.topic_id}:{key.partition}"


@dataclass(frozen=True, slots=True)
class Effects:
    """What the caller performs after a manager operation."""

    wake: frozenset[SharePartitionKey] = frozenset()
    """Share-partitions whose parked share fetches should retry (records may have
    become acquirable there, or the share-partition left memory)."""

    dlq: frozenset[SharePartitionKey] = frozenset()
    """Share-partitions with ARCHIVING records to copy to their group's dead-letter
    queue topic (`SharePartition.dlq_copies`, then `dlq_done`)."""

    writes: tuple[StateWrite, ...] = ()
    """State writes whose transitions stand whatever their outcome (expiries,
    archivals, a start offset a commit moved past what its write carried): the caller
    makes each through its `Persister`, in order, before the DLQ copies and the
    wake-ups, and reports each outcome to `standing_written`."""

    def __or__(self, other: Effects) -> Effects:
        return Effects(
            wake=self.wake | other.wake,
            dlq=self.dlq | other.dlq,
            writes=self.writes + other.writes,
        )


NO_EFFECTS = Effects()


@dataclass(frozen=True, slots=True)
class StateCut:
    """`load`'s answer when the persisted state reaches past the log end (a power
    loss, `within_log`): the caller makes `cut` durable (`persister.persist_cut`) and
    loads again with it, or answers the mapped error if that fails."""

    key: SharePartitionKey
    persisted: PersistedState
    cut: PersistedState


@dataclass(frozen=True, slots=True)
class PendingAck:
    """An acknowledgement applied tentatively: the caller makes `pending.write`
    through its `Persister` and hands the outcome to `acknowledge_written`."""

    pending: PendingWrite
    deadlines: tuple[int | None, int | None] | None
    """The share-partition's deadlines before, when the batches may bring one earlier."""
    sp: SharePartition
    partition_log: LogPositions


@dataclass(frozen=True, slots=True)
class Unloading:
    """`drop_group`'s and `unload_idle`'s answer."""

    keys: list[SharePartitionKey]
    """Every share-partition leaving memory, sorted."""
    writes: tuple[StateWrite, ...] = ()
    """Start offsets resolved in memory only, to persist before their share-partitions
    leave: the caller makes each write and hands the outcome to `unload_written` (a
    failed one stays loaded)."""


@dataclass(frozen=True, slots=True)
class ShareFetchPartition:
    """One partition's part of a share fetch."""

    partition: TopicIdPartition
    error: ErrorCode | None = None
    records: bytes = b""
    acquired: tuple[AcquiredRecords, ...] = ()

    @property
    def count(self) -> int:
        return sum(r.count for r in self.acquired)


@dataclass(frozen=True, slots=True)
class ShareFetched:
    """`SharePartitionManager.acquire`'s answer: one entry per partition, and effects."""

    partitions: list[ShareFetchPartition]
    effects: Effects = NO_EFFECTS
    load: tuple[SharePartitionKey, ...] = ()
    """Share-partitions to load first (`load`); nothing was acquired: acquire again
    with `load_errors` naming those that could not be loaded."""
    deadlines_earlier: bool = False
    """A redelivery deadline may have come earlier: records waiting for their
    scheduled time entered a window (the timers need asking again, before the fetch
    parks)."""


@dataclass(frozen=True, slots=True)
class Acknowledged:
    """`SharePartitionManager.acknowledge`'s answer: the partition's error, effects,
    and whether a lock or redelivery deadline may have come earlier (the timers need
    asking again; deadlines that only moved later are left to be re-asked when the
    timer driver reaches the stale one)."""

    error: ErrorCode | None = None
    effects: Effects = NO_EFFECTS
    deadlines_earlier: bool = False
    pending: PendingAck | None = None
    """A state write to make first (`acknowledge_written` gives the answer)."""
    load: SharePartitionKey | None = None
    """The share-partition is not loaded: load it (`load`) and acknowledge again."""


@dataclass(frozen=True, slots=True)
class LocksExpired:
    """`SharePartitionManager.expire_locks`'s answer: expiry writes made, and effects."""

    writes: int = 0
    effects: Effects = NO_EFFECTS


def validate_acknowledgements(
    batches: Sequence[AckBatch], *, renew_allowed: bool
) -> ErrorCode | None:
    """docs/design/wire.md §3 ack batch validation: INVALID_REQUEST or None. RENEW (4)
    only in a request with IsRenewAck."""
    error = validate_batches(batches)
    if error is not None:
        return error
    if not renew_allowed:
        for batch in batches:
            if AcknowledgeType.RENEW in batch.types:
                return ErrorCode.invalid_request
    return None


_DEADLINE_TYPES = (AcknowledgeType.RELEASE, AcknowledgeType.RENEW)
"""Acknowledgement types that can bring a share-partition's lock or redelivery deadline
earlier (a RENEW re-arms a lock, a RELEASE may start a redelivery delay); ACCEPT,
REJECT and GAP only cancel locks."""


def _may_bring_deadlines_earlier(batches: Sequence[AckBatch]) -> bool:
    for batch in batches:
        for ack_type in _DEADLINE_TYPES:
            if ack_type in batch.types:
                return True
    return False


class SharePartitionManager:
    """The share-partitions of this broker. See the module docstring."""

    def __init__(self, *, clock: Clock, logs: LogLookup) -> None:
        self._clock = clock
        self._logs = logs
        self._partitions: dict[SharePartitionKey, SharePartition] = {}
        self._by_group: dict[str, set[SharePartitionKey]] = {}
        self._by_partition: dict[TopicIdPartition, set[SharePartitionKey]] = {}
        self._by_group_tp: dict[tuple[str, int, int], SharePartition] = {}
        """(group id, topic id's 128-bit int, partition) -> its share-partition: the
        int is hashed in C (a UUID's hash is a Python call)."""
        self._touched: dict[SharePartitionKey, int] = {}
        """Monotonic ms of each loaded share-partition's last use."""
        self._start_unpersisted: set[SharePartitionKey] = set()
        """Loaded with persisted start offset -1 and not written since."""
        self._woken: set[SharePartitionKey] = set()
        """Wake-ups collected during the operation in progress (`_effects` takes them)."""
        self._dlq_due: set[SharePartitionKey] = set()
        """Share-partitions noted with DLQ work by the operation in progress."""
        self._writes: list[StateWrite] = []
        """Standing writes made by the operation in progress."""

    def __len__(self) -> int:
        return len(self._partitions)

    def get(self, key: SharePartitionKey) -> SharePartition | None:
        """The loaded share-partition of `key`, if any (never loads)."""
        return self._partitions.get(key)

    def keys(self) -> list[SharePartitionKey]:
        return list(self._partitions)

    # ---- loading

    def to_load(
        self, group_id: str, partitions: Iterable[TopicIdPartition]
    ) -> list[SharePartitionKey]:
        """The keys of `partitions` whose log exists and whose share-partition is not
        loaded: the caller loads each (`load`) before an operation on them."""
        missing: dict[SharePartitionKey, None] = {}  # a partition named twice loads once
        for tp in partitions:
            if self._by_group_tp.get(
                (group_id, tp.topic_id.int, tp.partition)
            ) is None and not isinstance(self._logs(tp.topic_id, tp.partition), ErrorCode):
                missing[SharePartitionKey(group_id, tp.topic_id, tp.partition)] = None
        return list(missing)

    def load(
        self,
        key: SharePartitionKey,
        read: StateRead,
        *,
        settings: SharePartitionConfig,
        reset_offset: int | ErrorCode | None = None,
    ) -> SharePartition | ErrorCode | StateCut:
        """Load the share-partition of `key` from `read`, the answer of the persister's
        read the caller made (LEADER_EPOCH), under the group's `settings`. A persisted
        start offset of -1 starts at `reset_offset`, which the caller resolved from
        `settings.auto_offset_reset` over the log (`log_read.reset_offset`) when the
        read said -1. Answers the share-partition (the loaded one, if it already was),
        an error code, or a `StateCut` to make durable first."""
        loaded = self._partitions.get(key)
        if loaded is not None:
            self._touched[key] = self._clock.monotonic_ms()
            return loaded
        found = self._logs(key.topic_id, key.partition)
        if isinstance(found, ErrorCode):
            return found
        if read.error is not None or read.state is None:
            failed = ErrorCode.unknown_server_error if read.error is None else read.error
            error = partition_error(failed)
            log.info(
                "share-partition %s not loaded: state read failed (%s)",
                describe_key(key),
                failed.name,
            )
            return error
        state = within_log(read.state, found.high_watermark)
        if state != read.state:
            log.warning(
                "share-partition %s: persisted state (start offset %d, %d batches) reaches "
                "past the high watermark %d, records lost in a power loss? Loaded and "
                "persisted again from start offset %d with %d batches",
                describe_key(key),
                read.state.start_offset,
                len(read.state.state_batches),
                found.high_watermark,
                state.start_offset,
                len(state.state_batches),
            )
            return StateCut(key, read.state, state)
        group_id = key.group_id
        sp = SharePartition(
            group_id=group_id,
            topic_id=key.topic_id,
            partition=key.partition,
            clock=self._clock,
            settings=settings,
            leader_epoch=LEADER_EPOCH,
        )
        key = sp.key  # one key object in every index: lookups by `sp.key` match by identity
        if state.start_offset < 0:
            if reset_offset is None or isinstance(reset_offset, ErrorCode):
                log.warning(
                    "share-partition %s not loaded: share.auto.offset.reset %r not resolved",
                    describe_key(key),
                    settings.auto_offset_reset,
                )
                return ErrorCode.unknown_server_error if reset_offset is None else reset_offset
        else:
            reset_offset = state.start_offset
        try:
            sp.initialize(
                state=state,
                log_start_offset=found.log_start_offset,
                reset_offset=reset_offset,
            )
        except (StateLoadError, ValueError) as exc:
            log.warning("share-partition %s not loaded: %s", describe_key(key), exc)
            return ErrorCode.unknown_server_error
        self._partitions[key] = sp
        self._note_dlq(sp)
        self._touched[key] = self._clock.monotonic_ms()
        if state.start_offset < 0:
            self._start_unpersisted.add(key)
        self._by_group.setdefault(group_id, set()).add(key)
        tp = TopicIdPartition(key.topic_id, key.partition)
        self._by_partition.setdefault(tp, set()).add(key)
        self._by_group_tp[(group_id, key.topic_id.int, key.partition)] = sp
        log.info(
            "share-partition %s loaded: start offset %d (persisted %d), end offset %d",
            describe_key(key),
            sp.start_offset,
            state.start_offset,
            sp.end_offset,
        )
        return sp

    # ---- acquisition

    def acquire(
        self,
        *,
        group_id: str,
        member_id: str,
        partitions: Sequence[TopicIdPartition],
        max_records: int,
        batch_size: int,
        max_bytes: int,
        settings: SharePartitionConfig,
        acquire_mode: AcquireMode = AcquireMode.BATCH_OPTIMIZED,
        rotation: int = 0,
        load_errors: Mapping[TopicIdPartition, ErrorCode] | None = None,
    ) -> AcquireRound:
        """Start acquiring records for `member_id` across `partitions` (one share
        fetch) under the group's `settings`: the round names the log reads it needs
        (`AcquireRound.next_read`), is handed each one's result (`feed`) and answers
        one entry per partition, in the order given (`done`). Log errors are per
        partition. Without `load_errors`, share-partitions not loaded yet are named in
        `AcquireRound.load` and nothing is read; with it (the caller's failed `load`s,
        after loading the others), a partition not loaded answers its entry.
        `rotation` picks the partition visited first (mod the count)."""
        if len(partitions) == 1:
            tp = partitions[0]
            sp = self._by_group_tp.get((group_id, tp.topic_id.int, tp.partition))
            if sp is not None:  # a loaded one-partition session: the usual case
                return self._acquire_single(
                    tp,
                    sp,
                    settings,
                    member_id=member_id,
                    max_records=max_records,
                    batch_size=batch_size,
                    max_bytes=max_bytes,
                    acquire_mode=acquire_mode,
                )
        if load_errors is None:
            missing = self.to_load(group_id, partitions)
            if missing:
                return AcquireRound(self, partitions, {}, [], settings, load=tuple(missing))
        return self._acquire_many(
            group_id,
            member_id,
            partitions,
            settings,
            max_records=max_records,
            batch_size=batch_size,
            max_bytes=max_bytes,
            acquire_mode=acquire_mode,
            rotation=rotation,
            load_errors=load_errors,
        )

    def _acquire_many(
        self,
        group_id: str,
        member_id: str,
        partitions: Sequence[TopicIdPartition],
        config: SharePartitionConfig,
        *,
        max_records: int,
        batch_size: int,
        max_bytes: int,
        acquire_mode: AcquireMode,
        rotation: int,
        load_errors: Mapping[TopicIdPartition, ErrorCode] | None = None,
    ) -> AcquireRound:
        """`acquire` across any number of partitions (the reference for
        `_acquire_single`): the partitions that can acquire and have data to read,
        in rotation order, share MaxBytes evenly."""
        results: dict[TopicIdPartition, ShareFetchPartition] = {}
        ready: list[tuple[TopicIdPartition, SharePartition, int]] = []
        for tp in _rotated(partitions, rotation):
            found = self._logs(tp.topic_id, tp.partition)
            if isinstance(found, ErrorCode):
                results[tp] = ShareFetchPartition(tp, error=found)
                continue
            sp = self._by_group_tp.get((group_id, tp.topic_id.int, tp.partition))
            if sp is None:
                results[tp] = ShareFetchPartition(tp, error=_load_error(load_errors, tp))
                continue
            sp.settings = config
            results[tp] = ShareFetchPartition(tp)
            offset = sp.acquirable_from()
            if offset is not None and offset < read_limit(config.isolation_level, found):
                ready.append((tp, sp, offset))
        if max_bytes <= 0 or max_records <= 0:
            ready = []
        return AcquireRound(
            self,
            partitions,
            results,
            ready,
            config,
            member_id=member_id,
            max_records=max_records,
            batch_size=batch_size,
            share_bytes=max(1, max_bytes // len(ready)) if ready else 0,
            acquire_mode=acquire_mode,
        )

    def _acquire_single(
        self,
        tp: TopicIdPartition,
        sp: SharePartition,
        config: SharePartitionConfig,
        *,
        member_id: str,
        max_records: int,
        batch_size: int,
        max_bytes: int,
        acquire_mode: AcquireMode,
    ) -> AcquireRound:
        """`acquire` of a loaded share-partition alone in its session (a share
        consumer's usual case): the same steps without the rotation and the MaxBytes
        split (tests/unit/share/test_acquire_single.py compares it with
        `_acquire_many`)."""
        found = self._logs(tp.topic_id, tp.partition)
        if isinstance(found, ErrorCode):
            return AcquireRound(
                self, (tp,), None, [], config, single=ShareFetchPartition(tp, error=found)
            )
        sp.settings = config
        offset = sp.acquirable_from()
        ready: list[tuple[TopicIdPartition, SharePartition, int]] = []
        if (
            offset is not None
            and offset < read_limit(config.isolation_level, found)
            and max_bytes > 0
            and max_records > 0
        ):
            ready.append((tp, sp, offset))
        return AcquireRound(
            self,
            (tp,),
            None,
            ready,
            config,
            single=ShareFetchPartition(tp),
            member_id=member_id,
            max_records=max_records,
            batch_size=batch_size,
            share_bytes=max_bytes,
            acquire_mode=acquire_mode,
        )

    def available_bytes(
        self,
        *,
        group_id: str,
        partitions: Iterable[TopicIdPartition],
        cap: int,
        settings: SharePartitionConfig,
    ) -> int | list[tuple[TopicIdPartition, int, int]]:
        """An estimate of the bytes a fetch could acquire now, up to `cap` (for
        MinBytes above 1; with `cap` 1, whether anything is acquirable): `cap` or 0
        when known without reading, else the [offset, limit) log ranges of the
        acquirable share-partitions, whose bytes the caller measures
        (`log_read.bytes_between`). The caller loads the share-partitions first, as
        for a fetch (a load wakes nobody); a partition that could not be loaded
        counts as `cap`, so that the fetch answers its error at once."""
        ranges: list[tuple[TopicIdPartition, int, int]] = []
        for tp in partitions:
            found = self._logs(tp.topic_id, tp.partition)
            if isinstance(found, ErrorCode):
                return cap
            sp = self._by_group_tp.get((group_id, tp.topic_id.int, tp.partition))
            if sp is None:
                return cap  # not loaded (the caller's load failed): the fetch answers it
            self._touched[sp.key] = self._clock.monotonic_ms()
            sp.settings = settings
            offset = sp.acquirable_from()
            limit = read_limit(settings.isolation_level, found)
            if offset is None or offset >= limit:
                continue
            if offset < found.log_start_offset:
                return cap  # the fetch moves the start offset first
            if cap <= 1:
                # Only "anything at all?" is asked (the wake checks after each
                # acknowledgement and fetch): a batch lies in [offset, limit), the
                # limit being a batch boundary, so no read is needed to know it.
                return cap
            ranges.append((tp, offset, limit))
        return ranges if ranges else 0

    # ---- acknowledgement and release

    def acknowledge(
        self,
        *,
        group_id: str,
        member_id: str,
        partition: TopicIdPartition,
        batches: Sequence[AckBatch],
        settings: SharePartitionConfig,
        renew_allowed: bool = False,
    ) -> Acknowledged:
        """Apply one partition's acknowledgement batches (atomic, tentatively) under
        the group's `settings`. Answers the partition's error code, or `load` (load
        that share-partition and call again), or `pending`: the state write to make,
        whose outcome `acknowledge_written` turns into the answer. Nothing to write
        (renewed only, or below the SPSO) answers at once."""
        found = self._logs(partition.topic_id, partition.partition)
        if isinstance(found, ErrorCode):
            return Acknowledged(found)
        invalid = validate_acknowledgements(batches, renew_allowed=renew_allowed)
        if invalid is not None:
            return Acknowledged(invalid)
        sp = self._by_group_tp.get((group_id, partition.topic_id.int, partition.partition))
        if sp is None:
            return Acknowledged(
                load=SharePartitionKey(group_id, partition.topic_id, partition.partition)
            )
        key = sp.key  # the indexes' own key object: found by identity
        self._touched[key] = self._clock.monotonic_ms()
        sp.settings = settings
        deadlines = sp.deadlines() if _may_bring_deadlines_earlier(batches) else None
        result = sp.acknowledge(member_id=member_id, batches=batches, validated=True)
        if result.error is not None:
            return Acknowledged(result.error)
        if result.pending is None:  # renewed only (the locks moved), or below the SPSO
            return Acknowledged(deadlines_earlier=deadlines is not None and _earlier(deadlines, sp))
        return Acknowledged(pending=PendingAck(result.pending, deadlines, sp, found))

    def acknowledge_written(self, pending: PendingAck, error: ErrorCode | None) -> Acknowledged:
        """The state write of an acknowledgement was made, with `error` (None =
        success): commit or roll back (`write_done`) and answer. The share-partition
        is woken (its start offset moved, or records were released) only when
        something there is acquirable now (`_acquirable`), or when a fenced write
        dropped it.

        The deadlines are compared before and after (`_earlier`) only when a batch
        RELEASEs or RENEWs (`_DEADLINE_TYPES`); a failed write answers "earlier"
        without comparing (its rollback may expire a lock, and so start a redelivery
        delay: the timers are asked again, as after any other failure)."""
        sp = pending.sp
        error = self._write_done(sp, pending.pending, error)
        woken = self._woken  # `sp.key` alone, if anything: empty between operations
        if (
            woken
            and (error is None or self._partitions.get(sp.key) is sp)  # not dropped (fenced)
            and not self._acquirable(sp, pending.partition_log)
        ):
            woken.clear()  # discards `sp.key` without hashing it
        deadlines = pending.deadlines
        earlier = error is not None or (deadlines is not None and _earlier(deadlines, sp))
        return Acknowledged(error, self._effects(), earlier)

    def _acquirable(self, sp: SharePartition, partition_log: LogPositions) -> bool:
        """Whether a fetch would find something to acquire in `sp` now: the wake check
        after an acknowledgement (an ACCEPT at the head moves the start offset, but
        with every record after it acquired a woken fetch would only park again). The
        same answer as `available_bytes` with cap 1 for a loaded share-partition whose
        log is known, without looking either up again."""
        acquirable = sp.acquirable_from()
        return acquirable is not None and acquirable < read_limit(
            sp.settings.isolation_level, partition_log
        )

    def release(
        self,
        *,
        group_id: str,
        member_id: str,
        partitions: Iterable[TopicIdPartition],
        settings: SharePartitionConfig,
    ) -> list[PendingWrite]:
        """The member's share session ended: its ACQUIRED records in `partitions`
        become available again (or archived), tentatively, like acknowledgements.
        Returns the state writes to make, each handed back to `write_done`."""
        pending = []
        for tp in partitions:
            sp = self._partitions.get(SharePartitionKey(group_id, tp.topic_id, tp.partition))
            if sp is None:
                continue
            sp.settings = settings
            write = sp.release_member(member_id=member_id)
            if write is not None:
                pending.append(write)
        return pending

    def write_done(
        self, pending: PendingWrite, error: ErrorCode | None
    ) -> tuple[ErrorCode | None, Effects]:
        """The state write of `pending` (a release's) was made, with `error` (None =
        success): commit or roll back its transitions. Returns the share-partition's
        error (`partition_error`) and the effects."""
        sp = self._partitions[pending.write.key]
        return self._write_done(sp, pending, error), self._effects()

    def _write_done(
        self, sp: SharePartition, pending: PendingWrite, error: ErrorCode | None
    ) -> ErrorCode | None:
        if error is None:
            if self._start_unpersisted:
                self._start_unpersisted.discard(sp.key)
            completion = sp.commit_write(handle=pending.handle)
        else:
            log.warning(
                "state write of %s failed (%s): rolled back", describe_key(sp.key), error.name
            )
            completion = sp.rollback_write(handle=pending.handle)
        if completion.writes:
            self._writes.extend(completion.writes)
        if completion.wake:
            self._woken.add(sp.key)
        self._note_dlq(sp)
        if error is None:
            return None
        if error in FENCING_ERRORS:
            self._drop(sp.key)
            self._woken.add(sp.key)
        return partition_error(error)

    def standing_written(self, write: StateWrite, error: ErrorCode | None) -> None:
        """A standing write (`Effects.writes`) was made, with `error`: its
        transitions stand either way; a failure is logged."""
        if error is None:
            self._start_unpersisted.discard(write.key)
        else:
            log.warning(
                "state write of %s failed (%s); the transition stands",
                describe_key(write.key),
                error.name,
            )

    # ---- time

    def next_lock_deadline(self) -> int | None:
        """The earliest acquisition-lock deadline over every share-partition."""
        deadlines = [
            d for sp in self._partitions.values() if (d := sp.next_lock_deadline()) is not None
        ]
        return min(deadlines, default=None)

    def groups_due(self, *, now_ms: int) -> set[str]:
        """The groups with a lock due at `now_ms`: `expire_locks` needs their settings."""
        return {
            sp.key.group_id
            for sp in self._partitions.values()
            if (deadline := sp.next_lock_deadline()) is not None and deadline <= now_ms
        }

    def expire_locks(
        self, *, now_ms: int, settings: Mapping[str, SharePartitionConfig]
    ) -> LocksExpired:
        """Fire every lock due at `now_ms`, under each group's `settings` (those of
        `groups_due`); returns the number of expiry writes, and the writes among the
        effects."""
        writes = 0
        for sp in list(self._partitions.values()):
            deadline = sp.next_lock_deadline()
            if deadline is None or deadline > now_ms:
                continue
            group_settings = settings.get(sp.key.group_id)
            if group_settings is not None:
                sp.settings = group_settings
            expired = sp.expire_locks(now_ms=now_ms)
            self._writes.extend(expired.writes)
            writes += len(expired.writes)
            if expired.wake:
                self._woken.add(sp.key)
            self._note_dlq(sp)
        return LocksExpired(writes, self._effects())

    def next_redelivery_deadline(self) -> int | None:
        """The earliest time a delayed redelivery becomes due, over every
        share-partition (share/redelivery.py)."""
        deadlines = [
            d for sp in self._partitions.values() if (d := sp.next_redelivery_ms()) is not None
        ]
        return min(deadlines, default=None)

    def redeliveries_due(self, *, now_ms: int) -> Effects:
        """Wake the fetches parked on share-partitions whose delayed records are due."""
        for sp in self._partitions.values():
            if sp.redeliveries_due(now_ms=now_ms):
                self._woken.add(sp.key)
        return self._effects()

    # ---- the log

    def groups_of(self, *, topic_id: uuid.UUID, partition: int) -> set[str]:
        """The groups with a loaded share-partition of (topic id, partition)."""
        keys = self._by_partition.get(TopicIdPartition(topic_id, partition), ())
        return {key.group_id for key in keys}

    def on_log_start_offset(
        self,
        *,
        topic_id: uuid.UUID,
        partition: int,
        log_start_offset: int,
        settings: Mapping[str, SharePartitionConfig],
    ) -> Effects:
        """The log start offset of (topic id, partition) moved (DeleteRecords,
        retention): every group's share-partition of it follows (§4.4), under the
        group's `settings` (those of `groups_of`)."""
        for key in list(self._by_partition.get(TopicIdPartition(topic_id, partition), ())):
            sp = self._partitions[key]
            group_settings = settings.get(key.group_id)
            if group_settings is not None:
                sp.settings = group_settings
            self._log_start_moved(sp, log_start_offset)
        return self._effects()

    def _log_start_moved(self, sp: SharePartition, log_start_offset: int) -> None:
        if sp.on_log_start_offset(log_start_offset=log_start_offset):
            log.info(
                "share-partition %s: log start offset moved to %d",
                describe_key(sp.key),
                log_start_offset,
            )
            self._woken.add(sp.key)

    # ---- dropping

    def retain_topics(self, topic_ids: Collection[uuid.UUID]) -> Effects:
        """Drop the share-partitions of every topic not in `topic_ids` (deleted);
        the fetches parked on them are to be woken."""
        gone = [key for key in self._partitions if key.topic_id not in topic_ids]
        for key in gone:
            self._drop(key)
        return Effects(wake=frozenset(gone))

    def drop_group(self, group_id: str) -> Unloading:
        """Forget the group's share-partitions (its last share session ended); they
        reload from the persisted state on next use."""
        return self._unload(sorted(self._by_group.get(group_id, ()), key=str))

    def forget_group(self, group_id: str) -> Effects:
        """Drop the group's share-partitions without writing anything: their
        persisted state was replaced or deleted (AlterShareGroupOffsets,
        DeleteShareGroupOffsets, DeleteGroups). The fetches parked on them are to
        be woken (the next fetch reloads the new state)."""
        keys = sorted(self._by_group.get(group_id, ()), key=str)
        for key in keys:
            self._drop(key)
        return Effects(wake=frozenset(keys))

    def unload_idle(self, *, now_ms: int, idle_ms: int) -> Unloading:
        """Unload every share-partition unused for `idle_ms` that holds no acquired
        records (no lock armed); see the module docstring."""
        idle = sorted(
            (
                key
                for key, touched in self._touched.items()
                if now_ms - touched >= idle_ms
                and self._partitions[key].next_lock_deadline() is None
                and self._partitions[key].next_redelivery_ms() is None
            ),
            key=str,
        )
        unloading = self._unload(idle)
        if idle:
            log.info("unloaded %d idle share-partitions", len(idle))
        return unloading

    def _unload(self, keys: list[SharePartitionKey]) -> Unloading:
        """Drop share-partitions that may reload later, except those holding a start
        offset resolved in memory only: their write comes first (`unload_written`)."""
        writes = []
        for key in keys:
            if key in self._start_unpersisted:
                writes.append(self._partitions[key].start_offset_write())
            else:
                self._drop(key)
        return Unloading(keys, tuple(writes))

    def unload_written(self, write: StateWrite, error: ErrorCode | None) -> None:
        """The start offset write of an `Unloading` was made, with `error`: on success
        its share-partition leaves memory; otherwise it stays loaded."""
        key = write.key
        sp = self._partitions.get(key)
        if sp is None:
            return
        if error is not None:
            log.warning(
                "share-partition %s kept loaded: writing its start offset %d failed (%s)",
                describe_key(key),
                sp.start_offset,
                error.name,
            )
            return
        self._drop(key)

    def group_changed(self, group_id: str) -> Effects:
        """The group's configs changed: its parked fetches retry with them."""
        return Effects(wake=frozenset(self._by_group.get(group_id, ())))

    def _effects(self) -> Effects:
        """Take the wake-ups, DLQ work and standing writes collected by the operation
        in progress."""
        if not self._woken and not self._dlq_due and not self._writes:
            return NO_EFFECTS
        woken, self._woken = frozenset(self._woken), set()
        due, self._dlq_due = frozenset(self._dlq_due), set()
        writes, self._writes = tuple(self._writes), []
        return Effects(wake=woken, dlq=due, writes=writes)

    # ---- dead-letter queue

    def _note_dlq(self, sp: SharePartition) -> None:
        if sp.has_dlq_work():
            self._dlq_due.add(sp.key)

    def dlq_done(
        self,
        key: SharePartitionKey,
        *,
        first_offset: int,
        last_offset: int,
        settings: SharePartitionConfig,
    ) -> Effects:
        """The DLQ copies of [first, last] of `key` were written or given up: those
        records become ARCHIVED (the write, among the effects, stands like an
        expiry)."""
        sp = self._partitions.get(key)
        if sp is None:
            return NO_EFFECTS  # unloaded meanwhile: the reload hands them out again
        sp.settings = settings
        write, moved = sp.dlq_done(first_offset=first_offset, last_offset=last_offset)
        if write is not None:
            self._writes.append(write)
        if moved:
            self._woken.add(key)
        return self._effects()

    def _drop(self, key: SharePartitionKey) -> None:
        if self._partitions.pop(key, None) is None:
            return
        del self._touched[key]
        self._start_unpersisted.discard(key)
        keys = self._by_group[key.group_id]
        keys.discard(key)
        if not keys:
            del self._by_group[key.group_id]
        tp = TopicIdPartition(key.topic_id, key.partition)
        del self._by_group_tp[(key.group_id, key.topic_id.int, key.partition)]
        keys = self._by_partition[tp]
        keys.discard(key)
        if not keys:
            del self._by_partition[tp]


def _load_error(
    load_errors: Mapping[TopicIdPartition, ErrorCode] | None, tp: TopicIdPartition
) -> ErrorCode:
    """The error of a partition left unloaded: the caller's `load` answer for it."""
    if load_errors is not None:
        error = load_errors.get(tp)
        if error is not None:
            return error
    log.warning(
        "share-partition of %s-%d acquired from before being loaded", tp.topic_id, tp.partition
    )
    return ErrorCode.unknown_server_error


class AcquireRound:
    """One acquisition across a session's partitions (`SharePartitionManager.acquire`),
    step by step: `next_read` names the log read the next ready partition needs (None
    when the round is over), the caller performs it and hands the `LogSlice` to
    `feed`; `done` answers. `load`: share-partitions to load first (nothing is read).

    Per partition, in order: read from its next fetch offset (`min_one_batch` only
    until one partition returned records: the first batch of the request goes out
    even if larger than the limits), within its share of MaxBytes and the records
    left of MaxRecords; a read below the log start offset moves the share-partition's
    start first (§4.4) and reads again, once. `Records` is the slice of the read
    covering the log batches that overlap the acquired offsets (never null: empty
    bytes)."""

    __slots__ = (
        "_batch_size",
        "_config",
        "_current",
        "_earlier",
        "_first",
        "_index",
        "_manager",
        "_member_id",
        "_mode",
        "_new_read",
        "_partial",
        "_partitions",
        "_reads",
        "_ready",
        "_remaining",
        "_results",
        "_resume",
        "_share_bytes",
        "_single",
        "load",
    )

    def __init__(
        self,
        manager: SharePartitionManager,
        partitions: Sequence[TopicIdPartition],
        results: dict[TopicIdPartition, ShareFetchPartition] | None,
        ready: list[tuple[TopicIdPartition, SharePartition, int]],
        config: SharePartitionConfig,
        *,
        single: ShareFetchPartition | None = None,
        member_id: str = "",
        max_records: int = 0,
        batch_size: int = 0,
        share_bytes: int = 0,
        acquire_mode: AcquireMode = AcquireMode.BATCH_OPTIMIZED,
        load: tuple[SharePartitionKey, ...] = (),
    ) -> None:
        self._manager = manager
        self._partitions = partitions
        self._results = results
        """Each partition's entry by partition; None for a one-partition round."""
        self._single = single
        """The entry of a one-partition round (no dict, no hashing)."""
        self._ready = ready
        self._config = config
        self._member_id = member_id
        self._remaining = max_records
        self._batch_size = batch_size
        self._share_bytes = share_bytes
        self._mode = acquire_mode
        self._first = True
        self._index = 0
        self._current: tuple[TopicIdPartition, SharePartition, int, bool] | None = None
        """(partition, share-partition, fetch offset, whether this is the re-read)."""
        self._earlier = False
        """A scheduled record entered a window: its wake-up may come before the others."""
        self._partial: tuple[dict[int, bytes], list[AcquiredRecords], int] | None = None
        """The current partition's reads so far, when another follows (key order or
        scheduled delivery: records, acquired ranges, count)."""
        self._reads = 0
        """Reads made of the current partition (`limits.SHARE_FETCH_READS_MAX`)."""
        self._new_read = False
        """The current partition's new records were read (`_following`)."""
        self._resume: int | None = None
        """Where the current partition's first read ended, while its new records are
        read (`_following`)."""
        self.load = load

    def next_read(self) -> LogRead | None:
        """The read the round needs next, or None: call `done`."""
        current = self._current
        if current is None:
            index = self._index
            if index >= len(self._ready) or self._remaining <= 0:
                return None
            tp, sp, checked_offset = self._ready[index]
            # `partitions` may name a partition twice: a later one reads where it is now
            offset = sp.next_fetch_offset() if index else checked_offset
            current = self._current = (tp, sp, offset, False)
        return LogRead(
            current[0],
            current[2],
            self._share_bytes,
            current[1].records_to_read(current[2], self._remaining),
            self._first,
            self._config.isolation_level,
        )

    def feed(self, got: LogSlice) -> None:
        """The result of the read `next_read` named."""
        current = self._current
        assert current is not None, "feed without a read"
        tp, sp, offset, reread = current
        error = got.error
        if error is not None and self._partial is not None:
            self._finish_partial(tp)  # a later read failed: the earlier ones stand
            return
        if error is not None:
            if (
                reread
                or error is not ErrorCode.offset_out_of_range
                or offset >= got.log_start_offset
            ):
                self._finish(ShareFetchPartition(tp, error=error), 0)
                return
            # Retention or DeleteRecords moved the log start past the fetch offset.
            self._manager._log_start_moved(sp, got.log_start_offset)
            offset = sp.next_fetch_offset()
            if offset >= got.read_limit:
                self._finish(ShareFetchPartition(tp), 0)
            else:
                self._current = (tp, sp, offset, True)
            return
        read = got.read
        assert read is not None
        if not read.headers:
            if self._partial is not None:
                self._finish_partial(tp)
            else:
                self._finish(ShareFetchPartition(tp), 0)
            return
        scheduled = sp.settings.delivery_delay_max_ms > 0
        before = sp.deadlines() if scheduled else None
        taken = 0 if self._partial is None else self._partial[2]
        result = sp.acquire(
            member_id=self._member_id,
            fetch_offset=offset,
            headers=read.headers,
            max_records=self._remaining - taken,
            batch_size=self._batch_size,
            acquire_mode=self._mode,
            max_bytes=self._share_bytes,
            end_offset_limit=got.end_offset_limit,
            aborted=got.aborted,
            records=read.records,
        )
        if result.write is not None:
            self._manager._writes.append(result.write)
            self._manager._woken.add(sp.key)
        if before is not None and not self._earlier:
            self._earlier = _earlier(before, sp)
        if sp.settings.key_ordered or scheduled:
            # acquisitions with holes, over several reads: only the batches of acquired
            # records, each once, in offset order at the end (`_finish_partial`)
            pieces, ranges, _ = self._partial or ({}, [], 0)
            for base_offset, batch in result.batch_bytes(read.records):
                pieces.setdefault(base_offset, batch)
            ranges.extend(result.acquired)
            self._partial = (pieces, ranges, taken + result.count)
            self._reads += 1
            following = None
            if taken + result.count < self._remaining and self._reads < SHARE_FETCH_READS_MAX:
                following = self._following(sp, read.headers[-1].last_offset + 1, got.read_limit)
            if following is not None:
                # The read ended among waiting or held-back records: read on from the
                # next record that may be taken (or the new records past the window).
                self._current = (tp, sp, following, True)
                return
            self._finish_partial(tp)
            return
        else:
            span = result.byte_range
            records = b"" if span is None else read.records[span[0] : span[1]]
        self._finish(
            ShareFetchPartition(tp, records=records, acquired=result.acquired), result.count
        )

    def _following(self, sp: SharePartition, after: int, read_limit: int) -> int | None:
        """Where the next read of the current partition starts (key order, scheduled
        delivery), the last one having ended before `after`.

        Scheduled delivery: after the first read, the new records past the window (so
        the window keeps up with the log), coming back after them to where the first
        read ended, then on to the next record that came due. Key order: on to the next
        record that may be taken inside the window first (held-back records whose key
        cleared; taking new records first would hold back ever more), the new records
        last."""
        if self._reads == 1 and not sp.settings.key_ordered:
            beyond = sp.new_records_offset(read_limit)
            if beyond is not None and beyond >= after:
                self._resume = after if beyond > after else None
                self._new_read = True
                return beyond
        elif self._resume is not None:
            after, self._resume = self._resume, None
        following = sp.next_ready_offset(after)
        if following is None and not self._new_read:
            following = sp.new_records_offset(read_limit)
            if following is not None and following < after:
                following = None  # the last read reached past the window already
            self._new_read = following is not None
        return following

    def _finish_partial(self, tp: TopicIdPartition) -> None:
        """The reads of a partition under key order or scheduled delivery are done: its
        entry joins them."""
        partial = self._partial
        assert partial is not None
        self._partial = None
        self._reads = 0
        self._resume = None
        self._new_read = False
        pieces, ranges, count = partial
        if len(pieces) == 1:
            joined = next(iter(pieces.values()))
        else:
            joined = b"".join([pieces[first] for first in sorted(pieces)])
        ranges.sort(key=_FIRST_OFFSET)
        self._finish(ShareFetchPartition(tp, records=joined, acquired=tuple(ranges)), count)

    def _finish(self, fetched: ShareFetchPartition, count: int) -> None:
        """`fetched` is the partition's entry; it acquired `count` records."""
        results = self._results
        if results is None:
            self._single = fetched
        else:
            results[fetched.partition] = fetched
        self._remaining -= count
        self._first = self._first and not fetched.records
        self._index += 1
        self._current = None

    def done(self) -> ShareFetched:
        """One entry per partition, in the order given, and the effects."""
        assert self._current is None, "a read is still to be fed"
        results = self._results
        earlier = self._earlier
        if results is None:
            assert self._single is not None
            return ShareFetched([self._single], self._manager._effects(), deadlines_earlier=earlier)
        entries = [results[tp] for tp in self._partitions]
        return ShareFetched(entries, self._manager._effects(), deadlines_earlier=earlier)


_FIRST_OFFSET = operator.attrgetter("first_offset")


def _earlier(before: tuple[int | None, int | None], sp: SharePartition) -> bool:
    """Whether `sp`'s lock or redelivery deadline is now earlier than `before` (a new
    one counts as earlier), so that the earliest over every share-partition may
    have come earlier too. An acknowledgement cancels locks, so mostly they move
    later; a RELEASE with a redelivery delay and a RENEW under a shortened lock
    duration are the ways they come earlier."""
    lock, redelivery = before
    new_lock, new_redelivery = sp.deadlines()
    if new_lock is not None and (lock is None or new_lock < lock):
        return True
    return new_redelivery is not None and (redelivery is None or new_redelivery < redelivery)


def _rotated(partitions: Sequence[TopicIdPartition], rotation: int) -> Sequence[TopicIdPartition]:
    if len(partitions) <= 1:
        return partitions
    start = rotation % len(partitions)
    return [*partitions[start:], *partitions[:start]]
