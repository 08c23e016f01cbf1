"""A share coordinator shard hosted by the real coordinator runtime over an in-memory
sink (offsets = list positions), plus the public record builders of `records` with
the defaults these tests start from."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from shoal.clock import ManualClock
from shoal.coordinator.runtime import CoordinatorRuntime, InMemoryRecordSink
from shoal.share_coordinator import records
from shoal.share_coordinator.records import ShareCoordinatorRecord, snapshot_record, update_record
from shoal.share_coordinator.shard import KeyState, ShareCoordinatorShard, ShareResult
from shoal.share_coordinator.state import SharePartitionKey, StateBatch, StateWrite

TOPIC = uuid.UUID(int=7)
KEY = SharePartitionKey("g", TOPIC, 0)
AV, ACK, ARCHIVING, ARC = 0, 2, 3, 4
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
        self.runtime = CoordinatorRuntime(new_shard=lambda _p: self.new_shard(), sinks=[self.sink])

    def new_shard(self) -> ShareCoordinatorShard:
        return ShareCoordinatorShard(
            clock=self.clock,
            records_per_snapshot=self.records_per_snapshot,
            cold_partition_snapshot_interval_ms=self.cold_interval_ms,
        )

    @property
    def shard(self) -> ShareCoordinatorShard:
        return self.runtime.shard_at(0)

    def apply(self, result: ShareResult[R]) -> R:
        return self.runtime.write(0, lambda _shard: result).response

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
    """`records.snapshot_record` with the defaults these tests start from."""
    return snapshot_record(
        key,
        snapshot_epoch=snapshot_epoch,
        state_epoch=state_epoch,
        leader_epoch=leader_epoch,
        start_offset=start,
        delivery_complete_count=count,
        state_batches=batches,
        create_timestamp_ms=create,
        write_timestamp_ms=write,
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
    """`records.update_record` with the defaults these tests start from."""
    return update_record(
        key,
        snapshot_epoch=snapshot_epoch,
        leader_epoch=leader_epoch,
        start_offset=start,
        delivery_complete_count=count,
        state_batches=batches,
    )


def tombstone(key: SharePartitionKey = KEY) -> ShareCoordinatorRecord:
    return records.tombstone(key)
