"""Transactional offset commits (TxnOffsetCommit, API 28) pending their transaction's end.

A transactional producer commits a consumer group's offsets inside its transaction;
they become the group's committed offsets only when the transaction commits (its
COMMIT marker reaches the group's `__consumer_offsets` partition), and are dropped
when it aborts. Until then they are *pending*: invisible to OffsetFetch, which for
such a partition answers UNSTABLE_OFFSET_COMMIT when the request asks for stable
offsets (`require_stable`), as Kafka 4.2.

**Records.** Kafka writes the offsets as OffsetCommit records in a transactional
batch of `__consumer_offsets` and lets the control marker settle them. Shoal's
coordinator runtime writes plain (non-transactional) batches, so a pending offset is
Shoal's own record type 1000, `PendingTxnOffsetKey(group, producer id, topic,
partition)` -> `PendingTxnOffsetValue` (an upsert per key: a later TxnOffsetCommit of
the same transaction replaces it). The marker (`complete`) writes, in one batch, the
OffsetCommit records of the offsets a commit materialises, then the tombstones of
every pending record of that producer on that partition. Replay alone builds the
state; a replayed log and a compacted one (latest record per key) give the same.

**Which offset wins.** As Kafka's `replayEndTransactionMarker`: a committed
transactional offset replaces the group's committed offset only if its record is
newer than the committed offset's record (a plain OffsetCommit written after the
TxnOffsetCommit wins). Record order is the order of replay: `_sequence` counts the
records replayed here (both types; all of a group's records are in one partition,
and log_bound's re-writing keeps a group's records in their relative order, so the
comparison gives the same answer after a reload).

**Markers.** Idempotent: a repeated marker finds nothing pending and writes nothing.
A marker whose producer epoch is below the pending offsets' epoch is a zombie's
(fenced): ignored, the offsets stay pending.

**Validation** (`txn_commit_error`, Kafka 4.2's `validateTransactionalOffsetCommit`):
v0-v2 carry no member fields (member "" and generation -1): accepted whatever the
group's state. With member fields, a classic group checks FENCED_INSTANCE_ID,
UNKNOWN_MEMBER_ID and ILLEGAL_GENERATION (no REBALANCE_IN_PROGRESS check); a
consumer group (KIP-848) checks the member and its epoch (a stale epoch answers
ILLEGAL_GENERATION); generation >= 0 for an unknown group is ILLEGAL_GENERATION; a
share group id is GROUP_ID_NOT_FOUND. The transactional id, producer id and epoch
are the transaction coordinator's to check (txn/), not this module's; only a
request at an epoch older than the producer's offsets pending in the group (a zombie)
is refused here, INVALID_PRODUCER_EPOCH, as the log's producer state would.

Limits: the metadata bound of OffsetCommit (`limits.OFFSET_METADATA_BYTES_MAX`,
OFFSET_METADATA_TOO_LARGE for that partition). Pending offsets are bounded by the
transactions the coordinator keeps open (`transaction.max.timeout.ms` aborts them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from shoal.group import records as r
from shoal.group.classic.groups import ClassicGroups, commit_member_error
from shoal.group.classic.state import EMPTY
from shoal.group.committed_offsets import (
    CommitResult,
    FetchedOffset,
    OffsetToCommit,
    commit_records,
    refused,
)
from shoal.protocol.errors import ErrorCode

_NO_GENERATION = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingOffset:
    """One partition's offset committed by an open transaction."""

    producer_epoch: int
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int


_GroupProducer = tuple[str, int]
_Partition = tuple[str, int]


class PendingTxnOffsets:
    """Pending offsets by (group, producer id), then (topic, partition). See the
    module docstring."""

    def __init__(self) -> None:
        self._pending: dict[_GroupProducer, dict[_Partition, PendingOffset]] = {}
        self._pending_at: dict[tuple[str, int, str, int], int] = {}
        """(group, producer, topic, partition) -> replay sequence of its record."""
        self._committed_at: dict[tuple[str, str, int], int] = {}
        """(group, topic, partition) -> replay sequence of the committed offset."""
        self._sequence = 0

    # ---- replay -----------------------------------------------------------------------

    def replay(self, key: r.PendingTxnOffsetKey, value: r.PendingTxnOffsetValue | None) -> None:
        self._sequence += 1
        owner = (key.group_id, key.producer_id)
        where = (key.topic, key.partition)
        full = (key.group_id, key.producer_id, key.topic, key.partition)
        if value is None:
            partitions = self._pending.get(owner)
            if partitions is not None:
                partitions.pop(where, None)
                if not partitions:
                    del self._pending[owner]
            self._pending_at.pop(full, None)
            return
        self._pending.setdefault(owner, {})[where] = PendingOffset(
            producer_epoch=value.producer_epoch,
            offset=value.offset,
            leader_epoch=value.leader_epoch,
            metadata=value.metadata,
            commit_timestamp_ms=value.commit_timestamp,
        )
        self._pending_at[full] = self._sequence

    def replayed_commit(self, key: r.OffsetCommitKey, value: r.OffsetCommitValue | None) -> None:
        """Note the order of a committed offset's record (type 1)."""
        self._sequence += 1
        where = (key.group_id, key.topic, key.partition)
        if value is None:
            self._committed_at.pop(where, None)
        else:
            self._committed_at[where] = self._sequence

    # ---- queries ----------------------------------------------------------------------

    def has_group(self, group_id: str) -> bool:
        return any(group == group_id for group, _producer in self._pending)

    def group_ids(self) -> set[str]:
        return {group for group, _producer in self._pending}

    def pending_partitions(self, group_id: str) -> frozenset[_Partition]:
        """The group's partitions with a pending transactional offset."""
        return frozenset(
            where
            for (group, _producer), partitions in self._pending.items()
            if group == group_id
            for where in partitions
        )

    def stable_only(
        self, group_id: str, fetched: tuple[FetchedOffset, ...]
    ) -> tuple[FetchedOffset, ...]:
        """OffsetFetch with `require_stable`: each partition with a pending offset
        answers UNSTABLE_OFFSET_COMMIT (offset -1) instead of its committed offset."""
        unstable = self.pending_partitions(group_id)
        if not unstable:
            return fetched
        return tuple(
            FetchedOffset(
                topic=f.topic, partition=f.partition, error=ErrorCode.unstable_offset_commit
            )
            if (f.topic, f.partition) in unstable
            else f
            for f in fetched
        )

    def snapshot(self) -> dict[_GroupProducer, dict[_Partition, PendingOffset]]:
        return {owner: dict(partitions) for owner, partitions in self._pending.items()}

    # ---- TxnOffsetCommit --------------------------------------------------------------

    def commit(
        self,
        *,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        offsets: Sequence[OffsetToCommit],
        now_ms: int,
    ) -> CommitResult:
        """The pending records of a validated TxnOffsetCommit (`txn_commit_error`);
        INVALID_PRODUCER_EPOCH for every partition if the producer already has
        offsets pending in this group at a newer epoch (a zombie's request)."""
        held = self._pending.get((group_id, producer_id), {})
        if any(p.producer_epoch > producer_epoch for p in held.values()):
            return refused(offsets, ErrorCode.invalid_producer_epoch)
        return commit_records(
            offsets,
            lambda o, metadata: r.CoordinatorRecord(
                key=r.PendingTxnOffsetKey(
                    group_id=group_id,
                    producer_id=producer_id,
                    topic=o.topic,
                    partition=o.partition,
                ),
                value=r.PendingTxnOffsetValue(
                    producer_epoch=producer_epoch,
                    offset=o.offset,
                    leader_epoch=o.leader_epoch,
                    metadata=metadata,
                    commit_timestamp=now_ms,
                ),
            ),
        )

    # ---- the transaction's marker -----------------------------------------------------

    def complete(
        self,
        *,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
    ) -> tuple[r.CoordinatorRecord, ...]:
        """The records settling `producer_id`'s pending offsets of the shard's groups
        (its `__consumer_offsets` partition's): committed
        offsets first (commit only, newer than the group's committed record), then
        the pending records' tombstones. Nothing for a repeated or fenced marker."""
        materialised: list[r.CoordinatorRecord] = []
        tombstones: list[r.CoordinatorRecord] = []
        for (group_id, owner), partitions in sorted(self._pending.items()):
            if owner != producer_id:
                continue
            if any(p.producer_epoch > producer_epoch for p in partitions.values()):
                continue  # a zombie's marker: the newer epoch's transaction stays pending
            for (topic, partition), pending in sorted(partitions.items()):
                if commit and self._newer_than_committed(group_id, producer_id, topic, partition):
                    materialised.append(_committed_record(group_id, topic, partition, pending))
                tombstones.append(_pending_tombstone(group_id, producer_id, topic, partition))
        return (*materialised, *tombstones)

    def _newer_than_committed(
        self, group_id: str, producer_id: int, topic: str, partition: int
    ) -> bool:
        committed = self._committed_at.get((group_id, topic, partition))
        pending = self._pending_at[(group_id, producer_id, topic, partition)]
        return committed is None or pending > committed

    # ---- deletions --------------------------------------------------------------------

    def group_tombstones(self, group_id: str) -> list[r.CoordinatorRecord]:
        """Tombstones of every pending offset of a group being deleted."""
        return [
            _pending_tombstone(group, producer_id, topic, partition)
            for (group, producer_id), partitions in sorted(self._pending.items())
            if group == group_id
            for topic, partition in sorted(partitions)
        ]

    def partition_tombstones(
        self, group_id: str, wanted: Iterable[_Partition]
    ) -> list[r.CoordinatorRecord]:
        """Tombstones of every producer's pending offsets of the group's `wanted`
        partitions (their committed offsets are being deleted: Kafka's tombstone
        drops the pending ones too)."""
        names = frozenset(wanted)
        return [
            _pending_tombstone(group, producer_id, topic, partition)
            for (group, producer_id), partitions in sorted(self._pending.items())
            if group == group_id
            for topic, partition in sorted(partitions)
            if (topic, partition) in names
        ]

    def topic_tombstones(self, topics: Iterable[str]) -> tuple[r.CoordinatorRecord, ...]:
        """Tombstones of every pending offset of `topics` (the topics were deleted)."""
        names = frozenset(topics)
        return tuple(
            _pending_tombstone(group, producer_id, topic, partition)
            for (group, producer_id), partitions in sorted(self._pending.items())
            for topic, partition in sorted(partitions)
            if topic in names
        )


def _committed_record(
    group_id: str, topic: str, partition: int, pending: PendingOffset
) -> r.CoordinatorRecord:
    return r.CoordinatorRecord(
        key=r.OffsetCommitKey(group_id=group_id, topic=topic, partition=partition),
        value=r.OffsetCommitValue(
            offset=pending.offset,
            leader_epoch=pending.leader_epoch,
            metadata=pending.metadata,
            commit_timestamp=pending.commit_timestamp_ms,
        ),
    )


def _pending_tombstone(
    group_id: str, producer_id: int, topic: str, partition: int
) -> r.CoordinatorRecord:
    return r.CoordinatorRecord(
        key=r.PendingTxnOffsetKey(
            group_id=group_id, producer_id=producer_id, topic=topic, partition=partition
        ),
        value=None,
    )


# ---- validation ------------------------------------------------------------------------


def txn_commit_error(
    *,
    groups: ClassicGroups,
    group_type: str | None,
    consumer_commit_error: Callable[[str, str, int], ErrorCode | None] | None,
    group_id: str,
    member_id: str,
    generation_id: int,
    group_instance_id: str | None,
) -> ErrorCode | None:
    """Why a TxnOffsetCommit may not write, or None (module docstring). `group_type`:
    "consumer" or "share" when the id is taken by such a group, else None."""
    if not group_id:
        return ErrorCode.invalid_group_id
    no_member_fields = (
        generation_id == _NO_GENERATION and not member_id and group_instance_id is None
    )
    if group_type == "consumer":
        if no_member_fields or consumer_commit_error is None:
            return None
        error = consumer_commit_error(group_id, member_id, generation_id)
        return ErrorCode.illegal_generation if error == ErrorCode.stale_member_epoch else error
    if group_type is not None:
        return ErrorCode.group_id_not_found
    group = groups.groups.get(group_id)
    if group is None:
        return None if generation_id < 0 else ErrorCode.illegal_generation
    if generation_id < 0 and group.state == EMPTY:
        return None
    if no_member_fields:
        return None
    return commit_member_error(group, member_id, group_instance_id, generation_id)
