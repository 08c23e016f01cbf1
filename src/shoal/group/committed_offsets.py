"""Committed offsets of classic groups: OffsetCommit, OffsetFetch, OffsetDelete rules
and the offsets replayed from `OffsetCommit` records (type 1).

`CommittedOffsets` is durable state built only by `replay` (a tombstone removes a
partition's offset). The operations validate against the classic group's live
state (`ClassicGroups`) as Kafka 4.2's `ClassicGroup.validateOffsetCommit` does and
return the records to write:

- a *simple* commit (generation -1, no member: `assign()` users, admin tools) is
  accepted while the group has no members, and creates the group if it is unknown;
- a group commit needs a known member (UNKNOWN_MEMBER_ID), not fenced
  (FENCED_INSTANCE_ID), of the current generation (ILLEGAL_GENERATION), and a group
  not waiting for its leader's assignment (REBALANCE_IN_PROGRESS);
- a commit with generation >= 0 to an unknown group is ILLEGAL_GENERATION
  (GROUP_ID_NOT_FOUND from v9);
- metadata longer than `limits.OFFSET_METADATA_BYTES_MAX` is OFFSET_METADATA_TOO_LARGE
  for that partition only.

A group with committed offsets and no GroupMetadata is an Empty classic group (as
Kafka creates one on a simple commit).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from shoal import limits
from shoal.coordinator.result import CoordinatorResult
from shoal.group import records as r
from shoal.group.classic.groups import (
    COMPLETING_REBALANCE,
    ClassicGroups,
    commit_member_error,
)
from shoal.group.classic.state import EMPTY
from shoal.protocol.errors import ErrorCode

NO_OFFSET = -1
NO_LEADER_EPOCH = -1
GROUP_ID_NOT_FOUND_MIN_VERSION = 9


@dataclass(frozen=True, slots=True, kw_only=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetToCommit:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionError:
    """One partition's answer; error None = NONE."""

    topic: str
    partition: int
    error: ErrorCode | None = None


CommitResult = CoordinatorResult[r.CoordinatorRecord, tuple[PartitionError, ...]]
"""An offset commit's or deletion's records and its per-partition answers."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchedOffset:
    topic: str
    partition: int
    offset: int = NO_OFFSET
    leader_epoch: int = NO_LEADER_EPOCH
    metadata: str | None = ""
    error: ErrorCode | None = None


class CommittedOffsets:
    """Offsets by group, then (topic, partition). See the module docstring."""

    def __init__(self) -> None:
        self._offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = {}

    def replay(self, key: r.OffsetCommitKey, value: r.OffsetCommitValue | None) -> None:
        partitions = self._offsets.get(key.group_id)
        if value is None:
            if partitions is not None:
                partitions.pop((key.topic, key.partition), None)
                if not partitions:
                    del self._offsets[key.group_id]
            return
        self._offsets.setdefault(key.group_id, {})[(key.topic, key.partition)] = CommittedOffset(
            offset=value.offset,
            leader_epoch=value.leader_epoch,
            metadata=value.metadata,
            commit_timestamp_ms=value.commit_timestamp,
        )

    def has_group(self, group_id: str) -> bool:
        return group_id in self._offsets

    def group_ids(self) -> Iterable[str]:
        return self._offsets.keys()

    def count(self, group_id: str) -> int:
        return len(self._offsets.get(group_id, {}))

    def expired(
        self,
        group_id: str,
        *,
        now_ms: int,
        retention_ms: int,
        base_ms: int | None,
        keep_topics: frozenset[str] = frozenset(),
        keep_partitions: frozenset[tuple[str, int]] = frozenset(),
    ) -> list[r.CoordinatorRecord]:
        """Tombstones of the group's offsets older than `retention_ms`, counted from
        `base_ms` (when the group emptied) or else each offset's commit time; offsets
        of `keep_topics` (subscribed to) and `keep_partitions` (with a pending
        transactional offset) never expire."""
        out = []
        for (topic, partition), committed in sorted(self._offsets.get(group_id, {}).items()):
            if topic in keep_topics or (topic, partition) in keep_partitions:
                continue
            since = committed.commit_timestamp_ms if base_ms is None else base_ms
            if now_ms - since >= retention_ms:
                out.append(_tombstone(group_id, topic, partition))
        return out

    def snapshot(self) -> dict[str, dict[tuple[str, int], CommittedOffset]]:
        return {g: dict(p) for g, p in self._offsets.items()}

    # ---- OffsetCommit -----------------------------------------------------------------

    def commit(
        self,
        *,
        groups: ClassicGroups,
        group_id: str,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
        offsets: Sequence[OffsetToCommit],
        api_version: int,
        now_ms: int,
    ) -> CommitResult:
        """OffsetCommit (8) of a classic (or not yet existing) group."""
        error = self._commit_error(
            groups=groups,
            group_id=group_id,
            member_id=member_id,
            generation_id=generation_id,
            group_instance_id=group_instance_id,
            api_version=api_version,
        )
        if error is not None:
            return refused(offsets, error)
        return commit_records(
            offsets,
            lambda o, metadata: r.CoordinatorRecord(
                key=r.OffsetCommitKey(group_id=group_id, topic=o.topic, partition=o.partition),
                value=r.OffsetCommitValue(
                    offset=o.offset,
                    leader_epoch=o.leader_epoch,
                    metadata=metadata,
                    commit_timestamp=now_ms,
                ),
            ),
        )

    def _commit_error(
        self,
        *,
        groups: ClassicGroups,
        group_id: str,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
        api_version: int,
    ) -> ErrorCode | None:
        if not group_id:
            return ErrorCode.invalid_group_id
        group = groups.groups.get(group_id)
        if group is None:
            if generation_id < 0:
                return None
            if api_version >= GROUP_ID_NOT_FOUND_MIN_VERSION:
                return ErrorCode.group_id_not_found
            return ErrorCode.illegal_generation
        if generation_id < 0 and group.state == EMPTY:
            return None
        member_error = commit_member_error(group, member_id, group_instance_id, generation_id)
        if member_error is not None:
            return member_error
        if group.state == COMPLETING_REBALANCE:
            return ErrorCode.rebalance_in_progress
        return None

    # ---- OffsetFetch ------------------------------------------------------------------

    def fetch(
        self, *, group_id: str, partitions: Sequence[tuple[str, int]] | None
    ) -> tuple[FetchedOffset, ...]:
        """OffsetFetch (9): the committed offsets of `partitions` (-1 where none), or
        of every partition with one when `partitions` is None."""
        committed = self._offsets.get(group_id, {})
        if partitions is None:
            partitions = sorted(committed)
        out = []
        for topic, partition in partitions:
            offset = committed.get((topic, partition))
            if offset is None:
                out.append(FetchedOffset(topic=topic, partition=partition))
            else:
                out.append(
                    FetchedOffset(
                        topic=topic,
                        partition=partition,
                        offset=offset.offset,
                        leader_epoch=offset.leader_epoch,
                        metadata=offset.metadata,
                    )
                )
        return tuple(out)

    # ---- OffsetDelete and group deletion ----------------------------------------------

    def delete(
        self,
        *,
        groups: ClassicGroups,
        group_id: str,
        partitions: Sequence[tuple[str, int]],
        consumer_subscribed: frozenset[str] | None = None,
    ) -> tuple[ErrorCode | None, CommitResult]:
        """OffsetDelete (47): (top-level error, per-partition answers and tombstones).
        Partitions of topics the group's members subscribe to are
        GROUP_SUBSCRIBED_TO_TOPIC; a classic group of another protocol with members
        is NON_EMPTY_GROUP. `consumer_subscribed` is given for a consumer group
        (KIP-848): the topics its members subscribe to (Kafka's
        ConsumerGroup.validateOffsetDelete accepts it in any state)."""
        if consumer_subscribed is not None:
            subscribed = consumer_subscribed
        else:
            group = groups.groups.get(group_id)
            if group is None and not self.has_group(group_id):
                return ErrorCode.group_id_not_found, CommitResult(records=(), response=())
            if group is not None and not group.is_empty and group.protocol_type != "consumer":
                return ErrorCode.non_empty_group, CommitResult(records=(), response=())
            subscribed = groups.subscribed_topics(group_id) or frozenset()
        committed = self._offsets.get(group_id, {})
        records = []
        answers = []
        for topic, partition in partitions:
            if topic in subscribed:
                answers.append(
                    PartitionError(
                        topic=topic, partition=partition, error=ErrorCode.group_subscribed_to_topic
                    )
                )
                continue
            if (topic, partition) in committed:
                records.append(_tombstone(group_id, topic, partition))
            answers.append(PartitionError(topic=topic, partition=partition))
        return None, CommitResult(records=tuple(records), response=tuple(answers))

    def topic_tombstones(self, topics: Iterable[str]) -> tuple[r.CoordinatorRecord, ...]:
        """Tombstones of every group's offsets of `topics` (the topics were deleted)."""
        names = frozenset(topics)
        return tuple(
            _tombstone(group_id, topic, partition)
            for group_id, partitions in sorted(self._offsets.items())
            for topic, partition in sorted(partitions)
            if topic in names
        )

    def delete_group_records(self, group_id: str) -> list[r.CoordinatorRecord]:
        """Tombstones of every offset of a group being deleted."""
        return [_tombstone(group_id, t, p) for t, p in sorted(self._offsets.get(group_id, {}))]


def refused(offsets: Sequence[OffsetToCommit], error: ErrorCode) -> CommitResult:
    """A commit refused as a whole: `error` for every partition, no records."""
    return CommitResult(
        records=(),
        response=tuple(
            PartitionError(topic=o.topic, partition=o.partition, error=error) for o in offsets
        ),
    )


def commit_records(
    offsets: Sequence[OffsetToCommit],
    record: Callable[[OffsetToCommit, str], r.CoordinatorRecord],
) -> CommitResult:
    """A validated commit (OffsetCommit or TxnOffsetCommit): `record(offset,
    metadata)` for each offset whose metadata ("" for null) is within
    `limits.OFFSET_METADATA_BYTES_MAX`, OFFSET_METADATA_TOO_LARGE for the others."""
    records: list[r.CoordinatorRecord] = []
    answers: list[PartitionError] = []
    for o in offsets:
        metadata = o.metadata or ""
        if len(metadata.encode()) > limits.OFFSET_METADATA_BYTES_MAX:
            answers.append(
                PartitionError(
                    topic=o.topic, partition=o.partition, error=ErrorCode.offset_metadata_too_large
                )
            )
            continue
        records.append(record(o, metadata))
        answers.append(PartitionError(topic=o.topic, partition=o.partition))
    return CommitResult(records=tuple(records), response=tuple(answers))


def _tombstone(group_id: str, topic: str, partition: int) -> r.CoordinatorRecord:
    return r.CoordinatorRecord(
        key=r.OffsetCommitKey(group_id=group_id, topic=topic, partition=partition), value=None
    )
