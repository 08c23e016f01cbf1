"""`ShareCoordinator`: the durable `Persister`, one `ShareCoordinatorShard` per
partition of `__share_group_state`, hosted by the coordinator runtime.

Each share-partition key `groupId:topicId:partition` lives on the partition Kafka
places it on (the runtime's `Placement`: Java's String.hashCode of that text; the
answers are kept, `limits.SHARE_STATE_PLACEMENTS_KEPT`, since every state write
asks). Each Persister call is one runtime write on that partition: the shard
decides, the records go to the partition's sink and are replayed, and only then is
the answer returned. Every call is synchronous.

A sink that refuses or fails (a `CoordinatorUnavailable`) turns into
COORDINATOR_NOT_AVAILABLE for that call (Kafka answers a failed state-topic write
so) and leaves the state unchanged: the runtime replays nothing it could not append.
Errors raised while replaying are bugs and propagate.

Timed work, on the runtime (the host drives `runtime.next_deadline`/`fire`): a
snapshot for every key left on updates for the cold-partition interval
(`COLD_SNAPSHOTS`), and, when the host gives a prune interval, the pruning pass
(`PRUNE`: `fire` reports each partition's `prune_offset` for the host to delete).
`write_cold_snapshots(now_ms)` runs the cold snapshots at once (tests, the
simulator); `prune_offsets()` asks the shards at any time.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence

from shoal import limits
from shoal.clock import Clock
from shoal.coordinator.append_linger import LingeringRecordSink
from shoal.coordinator.placement import Placement, share_partition_key
from shoal.coordinator.result import CoordinatorResult, decided
from shoal.coordinator.runtime import (
    CoordinatorRuntime,
    CoordinatorUnavailable,
    Loader,
    RecordSink,
    RecordSinkError,
    RecordSinkUnavailable,
    TimedWrite,
)
from shoal.protocol.errors import ErrorCode
from shoal.share_coordinator.records import ShareCoordinatorRecord
from shoal.share_coordinator.settings import ShareCoordinatorSettings
from shoal.share_coordinator.shard import ShareCoordinatorShard
from shoal.share_coordinator.state import (
    ReadResult,
    SharePartitionKey,
    StateSummary,
    StateWrite,
)

log = logging.getLogger(__name__)

SHARE_STATE_TOPIC = "__share_group_state"
COLD_SNAPSHOTS = "share-coordinator-cold-snapshots"
PRUNE = "share-coordinator-prune"

ShareRuntime = CoordinatorRuntime[ShareCoordinatorShard, ShareCoordinatorRecord]


class _GuardedSink:
    """A partition's sink whose every failure is a refusal: the share coordinator
    answers COORDINATOR_NOT_AVAILABLE for whatever the sink raised (and only for
    that: a failure while replaying is a bug and propagates)."""

    def __init__(self, sink: RecordSink[ShareCoordinatorRecord], partition: int) -> None:
        self._sink = sink
        self._partition = partition

    def append(self, records: Sequence[ShareCoordinatorRecord], /) -> int | Sequence[int]:
        try:
            return self._sink.append(records)
        except RecordSinkError:
            raise
        except Exception as exc:
            raise RecordSinkUnavailable(
                f"{SHARE_STATE_TOPIC}-{self._partition}: append failed: {exc!r}"
            ) from exc


def _guarded(
    sink: RecordSink[ShareCoordinatorRecord], partition: int
) -> RecordSink[ShareCoordinatorRecord]:
    """A lingering sink stays itself (the runtime runs its flushes; its failures are
    `RecordSinkError`s already); any other is guarded."""
    return sink if isinstance(sink, LingeringRecordSink) else _GuardedSink(sink, partition)


def _key_text(key: SharePartitionKey) -> str:
    return share_partition_key(key.group_id, key.topic_id, key.partition)


def _no_records(
    _shard: ShareCoordinatorShard, _now_ms: int
) -> CoordinatorResult[ShareCoordinatorRecord, int]:
    return CoordinatorResult((), 0)


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
        loader: Loader | None = None,
        prune_interval_ms: Callable[[], int] | None = None,
    ) -> None:
        assert placements_kept >= 1, placements_kept
        self._settings = settings
        self._clock = clock

        def new_shard(_partition: int) -> ShareCoordinatorShard:
            return ShareCoordinatorShard(
                clock=clock,
                records_per_snapshot=settings.records_per_snapshot,
                cold_partition_snapshot_interval_ms=settings.cold_partition_snapshot_interval_ms,
            )

        self.placement: Placement[SharePartitionKey] = Placement(
            settings.num_partitions, key_text=_key_text, kept=placements_kept
        )
        self.runtime: ShareRuntime = CoordinatorRuntime(
            new_shard=new_shard,
            sinks=[_guarded(sink_for(p), p) for p in range(settings.num_partitions)],
            name=SHARE_STATE_TOPIC,
            placement=self.placement,
            loader=loader,
            prune_offset=ShareCoordinatorShard.prune_offset,
        )
        self.runtime.add_timed(
            TimedWrite(
                COLD_SNAPSHOTS,
                operation=lambda shard, _now: shard.cold_snapshots(clock.wall_ms()),
                interval_ms=lambda: settings.cold_partition_snapshot_interval_ms,
            )
        )
        if prune_interval_ms is not None:
            self.runtime.add_timed(
                TimedWrite(
                    PRUNE, operation=_no_records, interval_ms=prune_interval_ms, then_prune=True
                )
            )

    @property
    def settings(self) -> ShareCoordinatorSettings:
        return self._settings

    def shard(self, partition: int) -> ShareCoordinatorShard:
        """The live shard of one partition (read it; change it only through calls)."""
        return self.runtime.shard_at(partition)

    # ---- the Persister protocol

    def initialize(
        self, *, key: SharePartitionKey, state_epoch: int, start_offset: int
    ) -> ErrorCode | None:
        try:
            return self.runtime.write(
                self.placement.partition_of(key),
                lambda shard: shard.initialize(
                    key=key, state_epoch=state_epoch, start_offset=start_offset
                ),
            ).response
        except CoordinatorUnavailable as exc:
            log.warning("share state initialize of %s failed: %s", key, exc)
            return ErrorCode.coordinator_not_available

    def read(self, *, key: SharePartitionKey, leader_epoch: int) -> ReadResult:
        try:
            return self.runtime.write(
                self.placement.partition_of(key),
                lambda shard: shard.read(key=key, leader_epoch=leader_epoch),
            ).response
        except CoordinatorUnavailable as exc:
            log.warning("share state read of %s failed: %s", key, exc)
            return ReadResult(ErrorCode.coordinator_not_available)

    def write(self, *, write: StateWrite) -> ErrorCode | None:
        try:
            return self.runtime.write(
                self.placement.partition_of(write.key), lambda shard: shard.write(write=write)
            ).response
        except CoordinatorUnavailable as exc:
            log.warning("share state write of %s failed: %s", write.key, exc)
            return ErrorCode.coordinator_not_available

    def delete(self, *, key: SharePartitionKey) -> ErrorCode | None:
        try:
            return self.runtime.write(
                self.placement.partition_of(key), lambda shard: shard.delete(key=key)
            ).response
        except CoordinatorUnavailable as exc:
            log.warning("share state delete of %s failed: %s", key, exc)
            return ErrorCode.coordinator_not_available

    def read_summary(self, *, key: SharePartitionKey, leader_epoch: int) -> StateSummary:
        try:
            return self.runtime.write(
                self.placement.partition_of(key),
                lambda shard: shard.read_summary(key=key, leader_epoch=leader_epoch),
            ).response
        except CoordinatorUnavailable as exc:
            log.warning("share state read_summary of %s failed: %s", key, exc)
            return StateSummary(ErrorCode.coordinator_not_available)

    def partitions_with_state(self, *, group_id: str, topic_id: uuid.UUID) -> tuple[int, ...]:
        found: set[int] = set()
        for partitions in self.runtime.read_all(
            lambda shard: shard.partitions_with_state(group_id=group_id, topic_id=topic_id)
        ):
            found.update(partitions)
        return tuple(sorted(found))

    # ---- maintenance

    def prune_offsets(self) -> dict[int, int]:
        """Per partition, the offset below which its log is no longer needed
        (partitions with nothing to say are left out)."""
        return self.runtime.prune_offsets()

    def write_cold_snapshots(self, now_ms: int) -> int:
        """Snapshot keys left on updates for the cold-partition interval, now; returns
        how many snapshots were written. A partition whose sink fails is skipped
        (logged) and tried again next time."""
        written = 0
        for partition, shard in list(self.runtime.shards()):
            result = shard.cold_snapshots(now_ms)
            if not result.records:
                continue
            try:
                written += self.runtime.write(partition, decided(result)).response
            except CoordinatorUnavailable as exc:
                log.warning("cold snapshots of %d keys not written: %s", len(result.records), exc)
        return written
