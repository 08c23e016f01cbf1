"""`ShareCoordinator`: the durable `Persister`, one coordinator shard per partition of
`__share_group_state`.

Each share-partition key `groupId:topicId:partition` is routed to the partition
Kafka would place it on (`coordinator.placement`), whose `CoordinatorRuntime` runs
the shard operation: the records go to that partition's sink, are replayed, and
only then is the answer returned. Every call is synchronous.

A sink that raises (full, or its log failing) turns into COORDINATOR_NOT_AVAILABLE
for that call (Kafka answers a failed state-topic write so) and leaves the state
unchanged: the runtime replays nothing it could not append. Errors raised while
replaying are bugs and propagate.

Maintenance, driven by the server on its timers: `write_cold_snapshots(now_ms)`
(every cold-partition interval) and `prune_offsets()` (every prune interval: the
offset below which each partition's log may be deleted). `load_partition` rebuilds
one partition's shard from its log at start-up.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from shoal import limits
from shoal.clock import Clock
from shoal.coordinator.placement import partition_for, share_partition_key
from shoal.coordinator.runtime import CoordinatorRuntime, RecordSink
from shoal.protocol.errors import ErrorCode
from shoal.share_coordinator.records import ShareCoordinatorRecord
from shoal.share_coordinator.settings import ShareCoordinatorSettings
from shoal.share_coordinator.shard import ShardResult, ShareCoordinatorShard
from shoal.share_coordinator.state import (
    ReadResult,
    SharePartitionKey,
    StateSummary,
    StateWrite,
)

log = logging.getLogger(__name__)

ResponseT = TypeVar("ResponseT")


class SinkFailed(Exception):
    """A partition's sink refused or failed an append; nothing was written."""

    def __init__(self, partition: int, cause: Exception) -> None:
        super().__init__(f"__share_group_state-{partition}: append failed: {cause!r}")
        self.partition = partition


class _GuardedSink:
    """Marks exceptions raised by the sink itself, so that only those (and not a
    failure while replaying) become an error answer."""

    def __init__(self, sink: RecordSink[ShareCoordinatorRecord], partition: int) -> None:
        self._sink = sink
        self._partition = partition

    def append(self, records: Sequence[ShareCoordinatorRecord], /) -> int | Sequence[int]:
        try:
            return self._sink.append(records)
        except Exception as exc:
            raise SinkFailed(self._partition, exc) from exc


class ShareCoordinator:
    """The share coordinator over `settings.num_partitions` shards. Implements
    `shoal.share.persister.Persister`."""

    def __init__(
        self,
        *,
        sink_for: Callable[[int], RecordSink[ShareCoordinatorRecord]],
        clock: Clock,
        settings: ShareCoordinatorSettings,
        placements_kept: int = limits.SHARE_STATE_PLACEMENTS_KEPT,
    ) -> None:
        assert placements_kept >= 1, placements_kept
        self._settings = settings
        self._placements: dict[SharePartitionKey, int] = {}
        self._placements_kept = placements_kept

        def shard_factory() -> ShareCoordinatorShard:
            return ShareCoordinatorShard(
                clock=clock,
                records_per_snapshot=settings.records_per_snapshot,
                cold_partition_snapshot_interval_ms=settings.cold_partition_snapshot_interval_ms,
            )

        self._runtimes: tuple[
            CoordinatorRuntime[ShareCoordinatorShard, ShareCoordinatorRecord], ...
        ] = tuple(
            CoordinatorRuntime(shard_factory=shard_factory, sink=_GuardedSink(sink_for(p), p))
            for p in range(settings.num_partitions)
        )

    @property
    def settings(self) -> ShareCoordinatorSettings:
        return self._settings

    def partition_of(self, key: SharePartitionKey) -> int:
        """The `__share_group_state` partition owning `key`. Every state write asks
        (its Java string hash of the base64 key cost ~10% of a write), so the answers
        are kept, at most `limits.SHARE_STATE_PLACEMENTS_KEPT` (the oldest go first)."""
        placements = self._placements
        partition = placements.get(key)
        if partition is None:
            text = share_partition_key(key.group_id, key.topic_id, key.partition)
            partition = partition_for(text, self._settings.num_partitions)
            if len(placements) >= self._placements_kept:
                del placements[next(iter(placements))]
            placements[key] = partition
        return partition

    def shard(self, partition: int) -> ShareCoordinatorShard:
        """The live shard of one partition (read it; change it only through calls)."""
        return self._runtimes[partition].shard

    # ---- the Persister protocol

    def initialize(
        self, *, key: SharePartitionKey, state_epoch: int, start_offset: int
    ) -> ErrorCode | None:
        partition = self.partition_of(key)
        result = self.shard(partition).initialize(
            key=key, state_epoch=state_epoch, start_offset=start_offset
        )
        return self._apply(
            partition, result, ErrorCode.coordinator_not_available, "initialize", key
        )

    def read(self, *, key: SharePartitionKey, leader_epoch: int) -> ReadResult:
        partition = self.partition_of(key)
        result = self.shard(partition).read(key=key, leader_epoch=leader_epoch)
        return self._apply(
            partition, result, ReadResult(ErrorCode.coordinator_not_available), "read", key
        )

    def write(self, *, write: StateWrite) -> ErrorCode | None:
        partition = self.partition_of(write.key)
        result = self._runtimes[partition].shard.write(write=write)
        return self._apply(
            partition, result, ErrorCode.coordinator_not_available, "write", write.key
        )

    def delete(self, *, key: SharePartitionKey) -> ErrorCode | None:
        partition = self.partition_of(key)
        result = self.shard(partition).delete(key=key)
        return self._apply(partition, result, ErrorCode.coordinator_not_available, "delete", key)

    def read_summary(self, *, key: SharePartitionKey, leader_epoch: int) -> StateSummary:
        partition = self.partition_of(key)
        result = self.shard(partition).read_summary(key=key, leader_epoch=leader_epoch)
        failed = StateSummary(ErrorCode.coordinator_not_available)
        return self._apply(partition, result, failed, "read_summary", key)

    def partitions_with_state(self, *, group_id: str, topic_id: uuid.UUID) -> tuple[int, ...]:
        found: set[int] = set()
        for runtime in self._runtimes:
            found.update(runtime.shard.partitions_with_state(group_id=group_id, topic_id=topic_id))
        return tuple(sorted(found))

    # ---- loading and maintenance

    def load_partition(
        self, partition: int, pairs: Iterable[tuple[int, ShareCoordinatorRecord]]
    ) -> ShareCoordinatorShard:
        """Rebuild one partition's shard from `(offset, record)` pairs read back from
        its log (they are not appended again)."""
        return self._runtimes[partition].load_at(pairs)

    def prune_offsets(self) -> dict[int, int]:
        """Per partition, the offset below which its log is no longer needed
        (partitions with nothing to say are left out)."""
        offsets: dict[int, int] = {}
        for partition, runtime in enumerate(self._runtimes):
            offset = runtime.shard.prune_offset()
            if offset is not None:
                offsets[partition] = offset
        return offsets

    def write_cold_snapshots(self, now_ms: int) -> int:
        """Snapshot keys left on updates for the cold-partition interval; returns how
        many snapshots were written. A partition whose sink fails is skipped (logged)
        and tried again next time."""
        written = 0
        for runtime in self._runtimes:
            result = runtime.shard.cold_snapshots(now_ms)
            if not result.records:
                continue
            try:
                written += runtime.apply(result)
            except SinkFailed as exc:
                log.warning("cold snapshots of %d keys not written: %s", len(result.records), exc)
        return written

    def _apply(
        self,
        partition: int,
        result: ShardResult[ResponseT],
        failed: ResponseT,
        operation: str,
        key: SharePartitionKey,
    ) -> ResponseT:
        try:
            return self._runtimes[partition].apply(result)
        except SinkFailed as exc:
            log.warning("share state %s of %s failed: %s", operation, key, exc)
            return failed
