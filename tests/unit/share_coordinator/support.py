"""A share coordinator shard hosted by the real coordinator runtime over an in-memory
sink (offsets = list positions), plus builders of the records tests expect."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from kio.static.primitive import i8, i16, i32, i64

from shoal.clock import ManualClock
from shoal.coordinator.runtime import CoordinatorRuntime, InMemoryRecordSink
from shoal.share_coordinator.records import (
    ShareCoordinatorRecord,
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareUpdateKey,
    ShareUpdateValue,
    StateBatchEntry,
)
from shoal.share_coordinator.shard import KeyState, ShardResult, ShareCoordinatorShard
from shoal.share_coordinator.state import SharePartitionKey, StateBatch, StateWrite

TOPIC = uuid.UUID(int=7)
KEY = SharePartitionKey("g", TOPIC, 0)
AV, ACK, ARC = 0, 2, 4
T0 = ManualClock().wall_ms()
"""Wall time of a fresh ManualClock."""

R = TypeVar("R")


@dataclass
class Rig:
    records_per_snapshot: int = 500
    cold_interval_ms: int = 300_000
    clock: ManualClock = field(default_factory=ManualClock)
    sink: InMemoryRecordSink[ShareCoordinatorRecord] = field(default_factory=InMemoryRecordSink)
    runtime: CoordinatorRuntime[ShareCoordinatorShard, ShareCoordinatorRecord] = field(init=False)

    def __post_init__(self) -> None:
        self.runtime = CoordinatorRuntime(shard_factory=self.new_shard, sink=self.sink)

    def new_shard(self) -> ShareCoordinatorShard:
        return ShareCoordinatorShard(
            clock=self.clock,
            records_per_snapshot=self.records_per_snapshot,
            cold_partition_snapshot_interval_ms=self.cold_interval_ms,
        )

    @property
    def shard(self) -> ShareCoordinatorShard:
        return self.runtime.shard

    def apply(self, result: ShardResult[R]) -> R:
        return self.runtime.apply(result)

    def state(self, key: SharePartitionKey = KEY) -> KeyState | None:
        return self.shard.states.get(key)

    def logged(self) -> list[tuple[int, ShareCoordinatorRecord]]:
        return list(enumerate(self.sink.records))

    # Operations applied at once (for setting a scene).

    def init(self, key: SharePartitionKey = KEY, *, state_epoch: int = 0, start: int = 0) -> None:
        result = self.shard.initialize(key=key, state_epoch=state_epoch, start_offset=start)
        assert self.apply(result) is None

    def write(self, *batches: StateBatch, key: SharePartitionKey = KEY, **kw: int) -> None:
        assert self.apply(self.shard.write(write=state_write(*batches, key=key, **kw))) is None


def state_write(
    *batches: StateBatch,
    key: SharePartitionKey = KEY,
    start: int = 0,
    state_epoch: int = 0,
    leader_epoch: int = 0,
    count: int = -1,
) -> StateWrite:
    return StateWrite(key, state_epoch, leader_epoch, start, count, tuple(batches))


def entries(batches: Iterable[StateBatch]) -> tuple[StateBatchEntry, ...]:
    return tuple(
        StateBatchEntry(
            first_offset=i64(b.first_offset),
            last_offset=i64(b.last_offset),
            delivery_state=i8(b.delivery_state),
            delivery_count=i16(b.delivery_count),
        )
        for b in batches
    )


def snapshot(
    key: SharePartitionKey = KEY,
    *,
    snapshot_epoch: int,
    state_epoch: int = 0,
    leader_epoch: int = -1,
    start: int = 0,
    count: int = 0,
    batches: Iterable[StateBatch] = (),
    create: int = T0,
    write: int = T0,
) -> ShareCoordinatorRecord:
    return ShareCoordinatorRecord(
        key=ShareSnapshotKey(
            group_id=key.group_id, topic_id=key.topic_id, partition=i32(key.partition)
        ),
        value=ShareSnapshotValue(
            snapshot_epoch=i32(snapshot_epoch),
            state_epoch=i32(state_epoch),
            leader_epoch=i32(leader_epoch),
            start_offset=i64(start),
            delivery_complete_count=i32(count),
            create_timestamp=i64(create),
            write_timestamp=i64(write),
            state_batches=entries(batches),
        ),
    )


def update(
    key: SharePartitionKey = KEY,
    *,
    snapshot_epoch: int = 0,
    leader_epoch: int = -1,
    start: int = -1,
    count: int = -1,
    batches: Iterable[StateBatch] = (),
) -> ShareCoordinatorRecord:
    return ShareCoordinatorRecord(
        key=ShareUpdateKey(
            group_id=key.group_id, topic_id=key.topic_id, partition=i32(key.partition)
        ),
        value=ShareUpdateValue(
            snapshot_epoch=i32(snapshot_epoch),
            leader_epoch=i32(leader_epoch),
            start_offset=i64(start),
            delivery_complete_count=i32(count),
            state_batches=entries(batches),
        ),
    )


def tombstone(key: SharePartitionKey = KEY) -> ShareCoordinatorRecord:
    return ShareCoordinatorRecord(
        key=ShareSnapshotKey(
            group_id=key.group_id, topic_id=key.topic_id, partition=i32(key.partition)
        ),
        value=None,
    )
