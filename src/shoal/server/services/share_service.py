"""The share-partition leader in the running broker: sessions, share-partitions,
long-poll and lock timers.

`ShareService` owns the `ShareSessionCache` (share/sessions.py) and the
`SharePartitionManager` (share/manager.py) and drives what they leave to the server:

- **Requests.** `share_fetch` and `share_acknowledge` take a decoded request
  (`ShareFetchCall`, `ShareAcknowledgeCall`) and return a `ShareOutcome` the handlers
  encode. Order (docs/design/share-partition.md §11.2): session update, acknowledgements, fetch.
  A final request (epoch -1) applies its acknowledgements, fetches nothing, closes
  the session and releases the member's records in the session's partitions; a
  renew-only ShareFetch (IsRenewAck) fetches nothing.
- **Long-poll.** A ShareFetch answers at once when records were acquired, a partition
  has an error, MinBytes <= 0, the session has no partitions, MaxBytes or MaxRecords
  is 0, or MaxWaitMs (clamped to `shoal.fetch.max.wait.ms`) is 0. Otherwise it parks
  in the broker purgatory on `(topic name, partition)` of each session partition
  (notified by Produce and DeleteTopics) and `share_wait_key`, `("share", group,
  topic id, partition)` (notified from the `Effects` the manager returns: acks,
  releases, expiries, start-offset moves, config changes, dropped share-partitions),
  and acquires when woken; at MaxWaitMs it answers with what is there. The parked
  fetches of one group form a purgatory queue: a notify wakes the longest-parked one,
  which passes the wake on when it leaves acquirable records (or leaves without
  acquiring), and an acknowledgement wakes its share-partition only when something
  there is acquirable. A ShareFetch carrying acknowledgements queues behind the
  fetches of its group already parked on its partitions (`behind_parked`): they
  take what its acknowledgements freed first, as in Kafka.
  With MinBytes above 1 it acquires only once the logs hold that many bytes (or at
  MaxWaitMs), and waits outside the queue (it may decline what another would take). A new epoch-0
  session beyond `group.share.max.share.sessions` is answered
  SHARE_SESSION_LIMIT_REACHED after MaxWaitMs, as Kafka does. A parked fetch whose
  session was closed or replaced meanwhile, or that shutdown woke, answers without
  acquiring.
- **Timers.** `timer_sources()` gives the broker's timer driver (server/services/timers.py)
  the acquisition-lock expiry (earliest deadline over all share-partitions), the
  delayed-redelivery wake-up (the earliest redelivery delay ending) and the
  idle unload (every half `shoal.share.partition.idle.unload.ms`, at most a minute);
  every operation that may move a lock deadline calls `rearm`, except a
  ShareAcknowledge whose deadlines only moved later (locks cancelled: the driver
  re-asks a source when its stale deadline comes), so that most acknowledgements
  cost no timer pass.
- **The manager's I/O.** The manager (share/manager.py) is pure; this service
  performs what it asks for, in the same synchronous step: loads (`_load`: the
  persister's read, a `StateCut` made durable with `persist_cut`, the reset offset
  resolved over the log), the log reads of an acquisition round
  (`log_read.perform_read` for each `LogRead`, fed back) and of the MinBytes
  estimate (`bytes_between`), the state write of each acknowledgement and release
  (made through the `Persister`, its outcome handed back to commit or roll back).
- **Effects.** Every manager operation returns `Effects`; `_perform` makes the
  standing state writes they carry (expiries, archivals), then the dead-letter queue
  copies they ask for (server/services/share_dlq.py, KIP-1191), and wakes the share fetches
  parked on the named share-partitions (purgatory notify).
- **Hooks.** A closed connection ends the sessions it opened (records released); a
  group whose last session ended has its share-partitions dropped (reloaded on next
  use); group config changes wake the group's parked fetches (settings are resolved
  for each operation); deleted topics drop their share-partitions (`topics_changed`), and
  so does a group whose share state an admin operation replaced or deleted
  (`share_state_reset`: AlterShareGroupOffsets, DeleteShareGroupOffsets,
  DeleteGroups), so the next fetch reloads the new state;
  DeleteRecords and retention move share-partition start offsets.

Group settings are a value (`SharePartitionConfig`) resolved once per request step
(`settings_for`: the broker config and the group's overrides; the last answer per
group is kept while neither object changes) and handed to each manager operation; a
woken round of a parked fetch resolves them again.

Collaborators come in through the constructor (never the broker): the clock, the
broker config getter, the log manager, the group config store, the persister, the
purgatory, a `stopping` flag and the timer driver's `rearm` (told which of the
service's timer sources may have moved). The broker subscribes
`connection_closed`, `group_config_changed` and `share_state_reset` to its events.

About 880 lines on purpose: ShareFetch's and ShareAcknowledge's paths share the
session, the settings resolved per step, the purgatory keys, the timer rearm and the
performing of the manager's reads and writes, and each is written as one straight
function (few calls per request); the per-partition work lives in `share/`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from shoal.clock import Clock
from shoal.config import BrokerConfig, broker_keys
from shoal.log.manager import LogManager
from shoal.protocol.errors import ErrorCode
from shoal.protocol.share import AcquireMode
from shoal.server.metadata.group_config_store import GroupConfigStore
from shoal.server.observability.record_path import RECORD_PATH
from shoal.server.services.purgatory import Purgatory
from shoal.server.services.share_dlq import DlqWriter
from shoal.server.services.timers import DeadlineTimer, PeriodicTimer, Rearm, TimerSource, no_rearm
from shoal.share.acknowledge import AckBatch
from shoal.share.acquire import AcquiredRecords
from shoal.share.leader_settings import SharePartitionConfig
from shoal.share.log_read import PartitionLogs, bytes_between, perform_read, reset_offset
from shoal.share.manager import (
    LEADER_EPOCH,
    NO_EFFECTS,
    Effects,
    ShareFetchPartition,
    SharePartitionManager,
    StateCut,
    describe_key,
)
from shoal.share.partition import SharePartition
from shoal.share.persister import (
    Persister,
    ReadResult,
    SharePartitionKey,
    StateWrite,
    partition_error,
    persist_cut,
)
from shoal.share.sessions import (
    INITIAL_EPOCH,
    SessionStep,
    ShareSession,
    ShareSessionCache,
    TopicIdPartition,
)

if TYPE_CHECKING:
    from shoal.server.connection_info import ConnectionInfo

log = logging.getLogger(__name__)

_IDLE_CHECK_INTERVAL_MAX_MS = 60_000
"""Idle share-partitions are looked for every half idle period, at most this often
apart."""
_RESOLVED_GROUPS_MAX = 10_000
"""Groups whose resolved settings `settings_for` keeps; beyond this it starts afresh."""
_SESSION_LIMIT_KEY = ("share-session-limit",)
"""Purgatory key of requests delayed by SHARE_SESSION_LIMIT_REACHED (woken only by
shutdown)."""


def share_wait_key(key: SharePartitionKey) -> Hashable:
    """Purgatory key that wakes share fetches parked on a share-partition."""
    return _share_wait_key(key.group_id, key.topic_id, key.partition)


def _share_wait_key(group_id: str, topic_id: uuid.UUID, partition: int) -> Hashable:
    """`share_wait_key` of its parts. The topic id goes in as its 128-bit int, whose
    hash is C's: a UUID's (or TopicId's) is a Python call at every purgatory lookup."""
    return ("share", group_id, topic_id.int, partition)


# ---- decoded requests and their outcome ------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShareFetchCall:
    group_id: str
    member_id: str
    epoch: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    max_records: int
    batch_size: int
    acquire_mode: AcquireMode = AcquireMode.BATCH_OPTIMIZED
    is_renew_ack: bool = False
    partitions: Sequence[TopicIdPartition] = ()
    """Every partition listed in `Topics`, duplicates merged, in request order."""
    acknowledgements: Mapping[TopicIdPartition, Sequence[AckBatch]] = field(default_factory=dict)
    """Partitions that carried acknowledgement batches."""
    forgotten: Sequence[TopicIdPartition] = ()


@dataclass(frozen=True, slots=True)
class ShareAcknowledgeCall:
    group_id: str
    member_id: str
    epoch: int
    is_renew_ack: bool = False
    acknowledgements: Mapping[TopicIdPartition, Sequence[AckBatch]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PartitionOutcome:
    partition: TopicIdPartition
    error: ErrorCode | None = None
    acknowledge_error: ErrorCode | None = None
    records: bytes = b""
    acquired: tuple[AcquiredRecords, ...] = ()


@dataclass(frozen=True, slots=True)
class ShareOutcome:
    error: ErrorCode | None = None
    """Top-level error; nothing else is answered."""
    lock_duration_ms: int = 0
    partitions: tuple[PartitionOutcome, ...] = ()


# ---- the service ------------------------------------------------------------------------


class ShareService:
    """Share sessions and share-partitions of one broker. See the module docstring."""

    def __init__(
        self,
        *,
        clock: Clock,
        config: Callable[[], BrokerConfig],
        logs: LogManager,
        group_configs: GroupConfigStore,
        persister: Persister,
        purgatory: Purgatory,
        stopping: Callable[[], bool] = lambda: False,
        rearm: Rearm = no_rearm,
        locks_expired: Callable[[int], None] = lambda _count: None,
        dlq_records: Callable[[str, str, int], None] = lambda _group, _outcome, _count: None,
        flush_state: Callable[[], None] = lambda: None,
    ) -> None:
        self._locks_expired = locks_expired
        """Told how many acquisition locks each expiry pass fired (metrics)."""
        self._clock = clock
        self._config = config
        self._logs = logs
        self._group_configs = group_configs
        self._purgatory = purgatory
        self._stopping = stopping
        self._rearm_driver = rearm
        self.sessions = ShareSessionCache()
        self._persister = persister
        self._log_for = PartitionLogs(logs)
        """(topic id, partition) -> partition log, for the manager and for the reads."""
        self.partitions = SharePartitionManager(clock=clock, logs=self._log_for)
        self._topic_names: dict[int, str] = {}
        """Topic id (int) -> name, as `_wait_keys` found them, until the next topic
        change."""
        self._resolved: dict[str, tuple[BrokerConfig, Mapping[str, object], SharePartitionConfig]]
        self._resolved = {}
        """Group id -> (broker config, group overrides, the settings they resolve to)."""
        self._max_wait_cap: tuple[BrokerConfig, int] | None = None
        """`shoal.fetch.max.wait.ms` of the broker config object it was read from (a
        reconfiguration replaces the object)."""
        self._deadline_timers = (
            DeadlineTimer(
                "share-lock-expiry",
                deadline=lambda _now: self.partitions.next_lock_deadline(),
                action=self.expire_locks,
            ),
            DeadlineTimer(
                "share-redelivery",
                deadline=lambda _now: self.partitions.next_redelivery_deadline(),
                action=self.redeliveries_due,
            ),
        )
        """The sources whose deadlines share operations move (`_rearm` names them)."""
        self.dlq = DlqWriter(
            clock=clock,
            config=config,
            logs=logs,
            partitions=self.partitions,
            settings_for=self.settings_for,
            counted=dlq_records,
            flush_state=flush_state,
        )

    # ---- timers

    def timer_sources(self) -> list[TimerSource]:
        """Lock expiry, delayed redelivery and idle unload, for the timer driver."""
        return [
            *self._deadline_timers,
            PeriodicTimer(
                "share-idle-unload",
                interval_ms=lambda: min(self._idle_unload_ms() // 2, _IDLE_CHECK_INTERVAL_MAX_MS),
                action=self.unload_idle,
            ),
        ]

    def _rearm(self) -> None:
        """Tell the timer driver that the lock and redelivery deadlines may have moved
        (the only ones a share operation moves; the idle unload is periodic)."""
        self._rearm_driver(*self._deadline_timers)

    def expire_locks(self, now_ms: int) -> None:
        """Fire the acquisition locks due at `now_ms` and wake what they freed."""
        due = self.partitions.groups_due(now_ms=now_ms)
        expired = self.partitions.expire_locks(
            now_ms=now_ms, settings={group_id: self.settings_for(group_id) for group_id in due}
        )
        if expired.writes:
            self._locks_expired(expired.writes)
        self._perform(expired.effects)

    def redeliveries_due(self, now_ms: int) -> None:
        """Wake the fetches parked where delayed redeliveries became due."""
        self._perform(self.partitions.redeliveries_due(now_ms=now_ms))

    def unload_idle(self, now_ms: int) -> None:
        """Unload the share-partitions idle for `shoal.share.partition.idle.unload.ms`."""
        unloading = self.partitions.unload_idle(now_ms=now_ms, idle_ms=self._idle_unload_ms())
        for write in unloading.writes:
            self.partitions.unload_written(write, self._persister.write(write=write))

    def _idle_unload_ms(self) -> int:
        return self._config().get(broker_keys.SHOAL_SHARE_PARTITION_IDLE_UNLOAD_MS)

    # ---- ShareFetch

    async def share_fetch(self, call: ShareFetchCall, *, connection_id: int) -> ShareOutcome:
        step = self.sessions.share_fetch(
            group_id=call.group_id,
            member_id=call.member_id,
            epoch=call.epoch,
            connection_id=connection_id,
            partitions=call.partitions,
            forgotten=call.forgotten,
            has_acknowledgements=bool(call.acknowledgements),
            max_sessions=(
                self._config().get(broker_keys.GROUP_SHARE_MAX_SHARE_SESSIONS)
                if call.epoch == INITIAL_EPOCH
                else None
            ),
        )
        if step.dropped is not None:
            self._session_ended(step.dropped, release=False)
        if step.error is not None:
            self._log_refused("ShareFetch", call.group_id, call.member_id, call.epoch, step)
            if step.error is ErrorCode.share_session_limit_reached:
                await self._purgatory.wait(
                    [_SESSION_LIMIT_KEY], timeout_ms=self._max_wait_ms(call.max_wait_ms)
                )
            return ShareOutcome(error=step.error)
        session = step.session
        assert session is not None
        # Resolved once for the synchronous part below (the acknowledgements and the
        # first acquisition round run before any await, so no config change can come
        # in between; a woken round re-resolves).
        broker_config = self._config()
        settings = self.settings_for(call.group_id, broker_config)
        ack_errors = (
            self._acknowledge_each(
                call.group_id,
                call.member_id,
                call.acknowledgements,
                renew_allowed=call.is_renew_ack,
                settings=settings,
            )[0]
            if call.acknowledgements
            else {}
        )
        fetched: list[ShareFetchPartition] = []
        if step.final:
            self._close(session)
        elif not call.is_renew_ack:
            fetched = await self._long_poll(
                session, call, settings, broker_config, behind_parked=bool(call.acknowledgements)
            )
            if RECORD_PATH.enabled:
                self._note_acquired(fetched)
        self._rearm()
        by_partition: dict[TopicIdPartition, ShareFetchPartition] = {}
        notable: set[TopicIdPartition] = set()
        for f in fetched:
            by_partition[f.partition] = f
            if f.records or f.error is not None:
                notable.add(f.partition)
        listed = ShareSessionCache.response_partitions(
            session,
            full=step.full,
            final=step.final,
            notable=notable,
            acknowledged=ack_errors,
        )
        outcomes = []
        for tp in listed:
            data = by_partition.get(tp)
            if data is None:
                outcomes.append(PartitionOutcome(tp, acknowledge_error=ack_errors.get(tp)))
            else:
                outcomes.append(
                    PartitionOutcome(
                        tp,
                        data.error,
                        ack_errors.get(tp) if ack_errors else None,
                        data.records,
                        data.acquired,
                    )
                )
        return ShareOutcome(
            lock_duration_ms=settings.record_lock_duration_ms, partitions=tuple(outcomes)
        )

    async def _long_poll(
        self,
        session: ShareSession,
        call: ShareFetchCall,
        settings: SharePartitionConfig,
        broker_config: BrokerConfig,
        *,
        behind_parked: bool = False,
    ) -> list[ShareFetchPartition]:
        """Acquire for `session` now, or park until something may be acquirable (see
        the module docstring). `settings` are the group's, resolved by the caller
        without an await since: the first round uses them, a woken round re-resolves.

        `behind_parked` (the fetch carried acknowledgements): if fetches of the group
        are parked on these share-partitions, this one queues behind them instead of
        taking at once what its acknowledgements freed, as in Kafka, where the
        acknowledgement completes the parked fetches (in the order they parked) before
        the fetch that carried it, which waited for its write."""
        partitions = list(session.partitions)
        clock = self._clock
        deadline_ms = clock.monotonic_ms() + self._max_wait_ms(call.max_wait_ms, broker_config)
        keys: list[Hashable] | None = None  # computed when first needed (to park)
        nothing_wanted = not partitions or call.max_bytes <= 0 or call.max_records <= 0
        # The fetches of one group compete for the same records: an append wakes one of
        # them (purgatory queue), which passes the wake on if it leaves records behind.
        # A MinBytes fetch may decline what another would take, so it waits as before.
        queue = session.group_id if call.min_bytes <= 1 else None
        woken = False
        fresh: SharePartitionConfig | None = settings  # None after an await: re-resolve
        if behind_parked and queue is not None and not nothing_wanted:
            keys = self._wait_keys(session.group_id, partitions)
            group_keys = [
                _share_wait_key(session.group_id, tp.topic_id, tp.partition) for tp in partitions
            ]
            remaining_ms = deadline_ms - clock.monotonic_ms()
            if remaining_ms > 0 and self._purgatory.waiting(group_keys):
                woken = await self._purgatory.wait(keys, timeout_ms=remaining_ms, queue=queue)
                fresh = None
        while True:
            remaining_ms = deadline_ms - clock.monotonic_ms()
            last_round = remaining_ms <= 0 or nothing_wanted
            if self.sessions.get(session.group_id, session.member_id) is not session:
                if woken and queue is not None and keys is not None:
                    self._pass_on(keys)
                return []  # closed or replaced meanwhile: nobody will read the answer
            if self._stopping():
                return []  # records acquired now would only be released at the close
            if fresh is None:
                fresh = self.settings_for(session.group_id)
            if call.min_bytes > 1 and not last_round:
                available = self._available_bytes(
                    session.group_id, partitions, cap=call.min_bytes, settings=fresh
                )
                if available < call.min_bytes:
                    if keys is None:
                        keys = self._wait_keys(session.group_id, partitions)
                    await self._purgatory.wait(keys, timeout_ms=remaining_ms)
                    fresh = None
                    continue
            fetched = self._acquire(session, call, partitions, fresh)
            acquired = errored = False
            for f in fetched:
                if f.acquired:
                    acquired = True
                elif f.error is not None:
                    errored = True
            if acquired or errored or last_round or call.min_bytes <= 0:
                if queue is not None and acquired:
                    # Records left behind go to the next parked fetch of the group, if
                    # one is parked (one that comes later acquires before parking).
                    if keys is None:
                        keys = self._wait_keys(session.group_id, partitions)
                    if self._purgatory.waiting(keys) and self._acquirable(
                        session.group_id, partitions, fresh
                    ):
                        self._pass_on(keys)
                return fetched
            if keys is None:
                keys = self._wait_keys(session.group_id, partitions)
            woken = await self._purgatory.wait(keys, timeout_ms=remaining_ms, queue=queue)
            fresh = None

    def _note_acquired(self, fetched: Sequence[ShareFetchPartition]) -> None:
        """The spans a ShareFetch acquired, for the record path
        (server/observability/record_path.py)."""
        for f in fetched:
            info = self._logs.topic_by_id(f.partition.topic_id)
            name = info.name if info is not None else str(f.partition.topic_id)
            for span in f.acquired:
                RECORD_PATH.note(
                    "acquired", name, f.partition.partition, span.first_offset, span.last_offset
                )

    def _acquire(
        self,
        session: ShareSession,
        call: ShareFetchCall,
        partitions: Sequence[TopicIdPartition],
        settings: SharePartitionConfig,
    ) -> list[ShareFetchPartition]:
        """One acquisition round of `_long_poll`, its effects performed, under the
        group's `settings` (resolved since the last await; no await here)."""
        load_errors = None
        while True:
            round_ = self.partitions.acquire(
                group_id=session.group_id,
                member_id=session.member_id,
                partitions=partitions,
                max_records=call.max_records,
                batch_size=call.batch_size,
                max_bytes=call.max_bytes,
                acquire_mode=call.acquire_mode,
                rotation=max(call.epoch, 0),
                settings=settings,
                load_errors=load_errors,
            )
            if not round_.load:
                break
            load_errors = self._load_each(round_.load, settings)
        read = round_.next_read()
        while read is not None:
            partition_log = self._log_for(read.partition.topic_id, read.partition.partition)
            assert not isinstance(partition_log, ErrorCode), "the round found it"
            round_.feed(perform_read(partition_log, read))
            read = round_.next_read()
        acquired = round_.done()
        if acquired.effects is not NO_EFFECTS:
            self._perform(acquired.effects)
        if acquired.deadlines_earlier:
            self._rearm()  # a scheduled record's wake-up, before this fetch parks
        return acquired.partitions

    def _acquirable(
        self,
        group_id: str,
        partitions: Sequence[TopicIdPartition],
        settings: SharePartitionConfig,
    ) -> bool:
        """Whether anything is acquirable in `partitions` now, under the group's
        `settings` (resolved since the last await), right after an acquisition round
        (which loaded what it could: one that could not be loaded counts as
        acquirable, as `available_bytes` says)."""
        available = self.partitions.available_bytes(
            group_id=group_id, partitions=partitions, cap=1, settings=settings
        )
        return bool(available)  # cap 1: answered without reading

    def _pass_on(self, keys: Sequence[Hashable]) -> None:
        """Wake the next parked fetch of the group on `keys` (records are left for it,
        or this fetch was woken for them and leaves without taking them)."""
        for key in keys:
            self._purgatory.notify(key)

    def _wait_keys(self, group_id: str, partitions: Sequence[TopicIdPartition]) -> list[Hashable]:
        logs = self._logs
        keys: list[Hashable] = []
        for tp in partitions:
            keys.append(_share_wait_key(group_id, tp.topic_id, tp.partition))
            name = self._topic_names.get(tp.topic_id.int)
            if name is None:
                info = logs.topic_by_id(tp.topic_id)
                if info is None:
                    continue
                name = self._topic_names[tp.topic_id.int] = info.name
            keys.append((name, tp.partition))
        return keys

    def _max_wait_ms(self, requested_ms: int, config: BrokerConfig | None = None) -> int:
        """MaxWaitMs clamped to `shoal.fetch.max.wait.ms` of `config` (the current
        broker config, read here if not given)."""
        if config is None:
            config = self._config()
        cached = self._max_wait_cap
        if cached is None or cached[0] is not config:
            cached = self._max_wait_cap = (config, config.get(broker_keys.SHOAL_FETCH_MAX_WAIT_MS))
        return max(0, min(requested_ms, cached[1]))

    # ---- ShareAcknowledge

    def share_acknowledge(self, call: ShareAcknowledgeCall) -> ShareOutcome:
        step = self.sessions.share_acknowledge(
            group_id=call.group_id, member_id=call.member_id, epoch=call.epoch
        )
        if step.error is not None:
            self._log_refused("ShareAcknowledge", call.group_id, call.member_id, call.epoch, step)
            return ShareOutcome(error=step.error)
        session = step.session
        assert session is not None
        settings = self.settings_for(call.group_id)
        ack_errors, earlier = self._acknowledge_each(
            call.group_id,
            call.member_id,
            call.acknowledgements,
            renew_allowed=call.is_renew_ack,
            settings=settings,
        )
        if step.final:
            self._close(session)
        if earlier or step.final:
            # Otherwise the lock and redelivery deadlines only moved later (locks
            # cancelled): the driver re-asks when it reaches the stale one, and no
            # timer pass runs per acknowledgement.
            self._rearm()
        return ShareOutcome(
            lock_duration_ms=settings.record_lock_duration_ms,
            partitions=tuple(  # a list comprehension: no generator resumed per item
                [PartitionOutcome(tp, error, error) for tp, error in ack_errors.items()]
            ),
        )

    def _acknowledge_each(
        self,
        group_id: str,
        member_id: str,
        acknowledgements: Mapping[TopicIdPartition, Sequence[AckBatch]],
        *,
        renew_allowed: bool,
        settings: SharePartitionConfig,
    ) -> tuple[dict[TopicIdPartition, ErrorCode | None], bool]:
        """Apply each partition's acknowledgements under the group's `settings`
        (resolved by the caller in the same synchronous step), make their state
        writes and perform their effects. Returns each partition's error, and whether
        a lock or redelivery deadline may have come earlier (`Acknowledged`)."""
        errors: dict[TopicIdPartition, ErrorCode | None] = {}
        earlier = False
        partitions = self.partitions
        for tp, batches in acknowledgements.items():
            acknowledged = partitions.acknowledge(
                group_id=group_id,
                member_id=member_id,
                partition=tp,
                batches=batches,
                renew_allowed=renew_allowed,
                settings=settings,
            )
            if acknowledged.load is not None:
                loaded = self._load(acknowledged.load, settings)
                if isinstance(loaded, ErrorCode):
                    errors[tp] = loaded
                    continue
                acknowledged = partitions.acknowledge(
                    group_id=group_id,
                    member_id=member_id,
                    partition=tp,
                    batches=batches,
                    renew_allowed=renew_allowed,
                    settings=settings,
                )
            pending = acknowledged.pending
            if pending is not None:
                written = self._persister.write(write=pending.pending.write)
                acknowledged = partitions.acknowledge_written(pending, written)
            if acknowledged.effects is not NO_EFFECTS:
                self._perform(acknowledged.effects)
            earlier = earlier or acknowledged.deadlines_earlier
            error = acknowledged.error
            if error is not None:
                log.info(
                    "acknowledgement of %s-%d by member %s of group %s failed: %s",
                    tp.topic_id,
                    tp.partition,
                    member_id,
                    group_id,
                    error.name,
                )
            errors[tp] = error
        return errors, earlier

    # ---- sessions ending

    def _close(self, session: ShareSession) -> None:
        if self.sessions.close(session):
            self._session_ended(session, release=True)

    def connection_closed(self, info: ConnectionInfo) -> None:
        """Hook: a connection closed; the sessions it opened end."""
        ended = self.sessions.connection_closed(info.connection_id)
        for session in ended:
            log.info(
                "share session of member %s of group %s ended with connection %d",
                session.member_id,
                session.group_id,
                info.connection_id,
            )
            self._session_ended(session, release=True)
        if ended:
            self._rearm()

    def _session_ended(self, session: ShareSession, *, release: bool) -> None:
        partitions = self.partitions
        if release:
            pending = partitions.release(
                group_id=session.group_id,
                member_id=session.member_id,
                partitions=list(session.partitions),
                settings=self.settings_for(session.group_id),
            )
            for each in pending:
                error, effects = partitions.write_done(
                    each, self._persister.write(write=each.write)
                )
                if error is not None:
                    log.warning(
                        "release of %s for member %s failed: %s",
                        describe_key(each.write.key),
                        session.member_id,
                        error.name,
                    )
                self._perform(effects)
        if self.sessions.group_session_count(session.group_id) == 0:
            dropped = partitions.drop_group(session.group_id)
            for write in dropped.writes:
                partitions.unload_written(write, self._persister.write(write=write))
            if dropped.keys:
                log.info(
                    "share group %s has no share sessions left: %d share-partitions unloaded",
                    session.group_id,
                    len(dropped.keys),
                )

    # ---- hooks

    def group_config_changed(self, group_id: str) -> None:
        """Hook: the group's configs changed; parked fetches retry with them."""
        self._perform(self.partitions.group_changed(group_id))
        self._rearm()

    def share_state_reset(self, group_id: str) -> None:
        """Hook: an admin operation replaced or deleted the group's share state. Its
        cached share-partitions are dropped (the next use reloads from the persister)
        and the fetches parked on them retry."""
        dropped = self.partitions.forget_group(group_id)
        self._perform(dropped)
        if dropped.wake:
            log.info(
                "share group %s: share state reset, %d share-partitions unloaded",
                group_id,
                len(dropped.wake),
            )
        self._rearm()

    def topics_changed(self) -> None:
        """Topics were created, deleted or grown: deleted ones drop their share state."""
        self._log_for.forget()
        self._topic_names.clear()
        existing = {info.topic_id for info in self._logs.topics()}
        gone = self.partitions.retain_topics(existing)
        self._perform(gone)
        if gone.wake:
            log.info("dropped %d share-partitions of deleted topics", len(gone.wake))
        self._rearm()

    def log_start_moved(self, topic: str, partition: int) -> None:
        """DeleteRecords or retention moved the log start offset of `topic`-`partition`
        (a log change event)."""
        logs = self._logs
        info = logs.topic(topic)
        partition_log = logs.partition(topic, partition)
        if info is None or partition_log is None:
            return
        groups = self.partitions.groups_of(topic_id=info.topic_id, partition=partition)
        moved = self.partitions.on_log_start_offset(
            topic_id=info.topic_id,
            partition=partition,
            log_start_offset=partition_log.log_start_offset,
            settings={group_id: self.settings_for(group_id) for group_id in groups},
        )
        self._perform(moved)

    # ---- settings, logs and wake-ups for the manager

    def settings_for(
        self, group_id: str, broker_config: BrokerConfig | None = None
    ) -> SharePartitionConfig:
        """The group's effective share settings, resolved now from the broker config
        (`broker_config` when the caller has just read it) and the group's overrides:
        the value handed to each manager operation. Resolving is a pure function of
        two immutable objects (a change replaces them: compared by identity), so the
        last answer per group is kept (`_resolved`): three resolutions per share
        consumer cycle would cost a fifth more Python calls (bench/share_fetch_cost)."""
        if broker_config is None:
            broker_config = self._config()
        overrides = self._group_configs.overrides(group_id)
        memo = self._resolved.get(group_id)
        if memo is not None and memo[0] is broker_config and memo[1] is overrides:
            return memo[2]
        settings = SharePartitionConfig.resolve(broker=broker_config, group=overrides)
        if len(self._resolved) >= _RESOLVED_GROUPS_MAX:
            self._resolved.clear()
        self._resolved[group_id] = (broker_config, overrides, settings)
        return settings

    # ---- loading and state writes, for the manager

    def _available_bytes(
        self,
        group_id: str,
        partitions: Sequence[TopicIdPartition],
        *,
        cap: int,
        settings: SharePartitionConfig,
    ) -> int:
        """The bytes a fetch could acquire now, up to `cap` (MinBytes): the
        share-partitions loaded first, the log ranges the manager names measured."""
        missing = self.partitions.to_load(group_id, partitions)
        if missing:
            self._load_each(missing, settings)
        available = self.partitions.available_bytes(
            group_id=group_id, partitions=partitions, cap=cap, settings=settings
        )
        if isinstance(available, int):
            return available
        ranges = []
        for tp, offset, limit in available:
            partition_log = self._log_for(tp.topic_id, tp.partition)
            assert not isinstance(partition_log, ErrorCode), "the manager found it"
            ranges.append((partition_log, offset, limit))
        return bytes_between(ranges, cap=cap)

    def _load_each(
        self, keys: Sequence[SharePartitionKey], settings: SharePartitionConfig
    ) -> dict[TopicIdPartition, ErrorCode]:
        """Load the share-partitions of `keys`; returns the errors of those that
        could not be."""
        errors = {}
        for key in keys:
            loaded = self._load(key, settings)
            if isinstance(loaded, ErrorCode):
                errors[TopicIdPartition(key.topic_id, key.partition)] = loaded
        return errors

    def _load(
        self, key: SharePartitionKey, settings: SharePartitionConfig
    ) -> SharePartition | ErrorCode:
        """Read `key`'s persisted state and load it (docs/design/share-partition.md §10); a state
        reaching past the log end is cut and made durable first (`persist_cut`)."""
        read = self._persister.read(key=key, leader_epoch=LEADER_EPOCH)
        reset = None
        if read.state is not None and read.state.start_offset < 0:
            partition_log = self._log_for(key.topic_id, key.partition)
            if not isinstance(partition_log, ErrorCode):
                reset = reset_offset(settings.auto_offset_reset, partition_log, clock=self._clock)
        loaded = self.partitions.load(key, read, settings=settings, reset_offset=reset)
        if not isinstance(loaded, StateCut):
            return loaded
        error = persist_cut(
            self._persister, key, loaded.persisted, loaded.cut, leader_epoch=LEADER_EPOCH
        )
        if error is not None:
            log.warning(
                "share-partition %s not loaded: the cut state was not written (%s)",
                describe_key(key),
                error.name,
            )
            return partition_error(error)
        again = self.partitions.load(key, ReadResult(None, loaded.cut), settings=settings)
        assert not isinstance(again, StateCut), "a cut state lies within the log"
        return again

    def _write_standing(self, write: StateWrite) -> None:
        """Make a write whose transitions stand whatever its outcome."""
        self.partitions.standing_written(write, self._persister.write(write=write))

    def _perform(self, effects: Effects) -> None:
        """Make the standing state writes `effects` asks for, then the DLQ copies
        (and their state writes), then wake the share fetches parked on the
        share-partitions it names."""
        if effects is NO_EFFECTS:
            return
        for write in effects.writes:
            self._write_standing(write)
        for key in sorted(effects.dlq, key=str):
            copied = self.dlq.perform(key)
            for write in copied.writes:
                self._write_standing(write)
            effects |= copied
        for key in sorted(effects.wake, key=str):
            self._purgatory.notify(share_wait_key(key))

    # ---- logging

    @staticmethod
    def _log_refused(
        api: str, group_id: str, member_id: str, epoch: int, step: SessionStep
    ) -> None:
        log.info(
            "%s of member %s of group %s at epoch %d refused: %s",
            api,
            member_id,
            group_id,
            epoch,
            None if step.error is None else step.error.name,
        )
