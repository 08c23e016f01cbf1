"""ShareCoordinator: keys routed to Kafka's `__share_group_state` partition, a failing
sink answered with COORDINATOR_NOT_AVAILABLE and no state change, reload per
partition, pruning offsets, cold snapshots, and settings from the broker config."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence

import pytest

from shoal.clock import ManualClock
from shoal.config import BrokerConfig, ConfigError
from shoal.coordinator.placement import partition_for, share_partition_key
from shoal.coordinator.runtime import InMemoryRecordSink
from shoal.protocol.errors import ErrorCode
from shoal.share.persister import Persister
from shoal.share_coordinator import (
    ShareCoordinator,
    ShareCoordinatorRecord,
    ShareCoordinatorSettings,
)
from shoal.share_coordinator.state import (
    PersistedState,
    ReadResult,
    SharePartitionKey,
    StateBatch,
    StateSummary,
)
from tests.unit.share_coordinator.support import ACK, AV, TOPIC, state_write

KEYS = [SharePartitionKey(g, TOPIC, p) for g in ("alpha", "beta", "gamma") for p in range(4)]


class BrokenSink:
    """A sink whose storage fails (the log of its partition went offline)."""

    def append(self, records: Sequence[ShareCoordinatorRecord], /) -> int:
        raise OSError("disk gone")


def coordinator(
    *,
    partitions: int = 5,
    records_max: int = 10_000,
    clock: ManualClock | None = None,
    records_per_snapshot: int = 500,
) -> tuple[ShareCoordinator, list[InMemoryRecordSink[ShareCoordinatorRecord]]]:
    sinks = [
        InMemoryRecordSink[ShareCoordinatorRecord](records_max=records_max)
        for _ in range(partitions)
    ]
    share = ShareCoordinator(
        sink_for=lambda partition: sinks[partition],
        clock=clock or ManualClock(),
        settings=ShareCoordinatorSettings(
            num_partitions=partitions,
            records_per_snapshot=records_per_snapshot,
            cold_partition_snapshot_interval_ms=10_000,
        ),
    )
    return share, sinks


def test_keys_are_written_to_the_partition_kafka_places_them_on() -> None:
    """§2.1: partition = placement of `groupId:topicId:partition`; the records of a
    key go to that partition's sink only."""
    share, sinks = coordinator()
    for key in KEYS:
        assert share.initialize(key=key, state_epoch=0, start_offset=0) is None
    for key in KEYS:
        expected = partition_for(share_partition_key(key.group_id, key.topic_id, key.partition), 5)
        assert share.placement.partition_of(key) == expected
        holders = [
            p
            for p, sink in enumerate(sinks)
            if any(
                r.key.group_id == key.group_id and r.key.partition == key.partition
                for r in sink.records
            )
        ]
        assert holders == [expected]
    assert len({share.placement.partition_of(key) for key in KEYS}) > 1
    assert sum(len(sink) for sink in sinks) == len(KEYS)


def test_placements_kept_are_bounded_and_stay_correct_past_the_bound() -> None:
    """`limits.SHARE_STATE_PLACEMENTS_KEPT` (here 2): the computed placements kept
    never pass the bound, and a key dropped from them is placed the same again."""
    sinks = [InMemoryRecordSink[ShareCoordinatorRecord](records_max=100) for _ in range(5)]
    share = ShareCoordinator(
        sink_for=lambda partition: sinks[partition],
        clock=ManualClock(),
        settings=ShareCoordinatorSettings(
            num_partitions=5, records_per_snapshot=500, cold_partition_snapshot_interval_ms=10_000
        ),
        placements_kept=2,
    )
    keys = [SharePartitionKey(f"g{i}", TOPIC, i % 3) for i in range(7)] * 2
    for key in keys:
        expected = partition_for(share_partition_key(key.group_id, key.topic_id, key.partition), 5)
        assert share.placement.partition_of(key) == expected
        assert len(share.placement._placements) <= 2
    assert list(share.placement._placements) == [keys[-2], keys[-1]]


def test_a_full_sink_answers_coordinator_not_available_and_changes_nothing() -> None:
    """The in-memory sink's bound (`limits.COORDINATOR_RECORDS_IN_MEMORY_MAX`, here 2):
    a write it refuses is COORDINATOR_NOT_AVAILABLE and leaves the state as it was."""
    share, sinks = coordinator(partitions=1, records_max=2)
    key = KEYS[0]
    assert share.initialize(key=key, state_epoch=0, start_offset=0) is None
    assert share.write(write=state_write(StateBatch(0, 4, ACK, 1), key=key, count=5)) is None
    before = share.shard(0).states[key]
    assert share.write(write=state_write(StateBatch(5, 9, ACK, 1), key=key)) == (
        ErrorCode.coordinator_not_available
    )
    assert share.read(key=key, leader_epoch=1) == ReadResult(ErrorCode.coordinator_not_available)
    assert share.delete(key=key) == ErrorCode.coordinator_not_available
    assert (
        share.initialize(key=key, state_epoch=1, start_offset=0)
        == ErrorCode.coordinator_not_available
    )
    assert share.shard(0).states[key] == before
    assert len(sinks[0]) == 2
    summary = share.read_summary(key=key, leader_epoch=0)
    assert (summary.error, summary.start_offset, summary.delivery_complete_count) == (None, 0, 5)


def test_a_failing_sink_is_logged_and_answered_with_coordinator_not_available(
    caplog: pytest.LogCaptureFixture,
) -> None:
    share = ShareCoordinator(
        sink_for=lambda _partition: BrokenSink(),
        clock=ManualClock(),
        settings=ShareCoordinatorSettings(num_partitions=2),
    )
    key = KEYS[0]
    with caplog.at_level(logging.WARNING, logger="shoal.share_coordinator.coordinator"):
        assert (
            share.initialize(key=key, state_epoch=0, start_offset=0)
            == ErrorCode.coordinator_not_available
        )
    assert "initialize" in caplog.text and "disk gone" in caplog.text
    assert share.read_summary(key=key, leader_epoch=0) == StateSummary(None)
    assert share.read(key=key, leader_epoch=0) == ReadResult(ErrorCode.invalid_request)


def test_a_coordinator_loaded_from_the_logs_answers_like_the_live_one() -> None:
    """Restart (conformance 71, coordinator side): acknowledged ranges and delivery
    counts come back from the records alone, through each partition's own load."""
    clock = ManualClock()
    live, sinks = coordinator(clock=clock, records_per_snapshot=2)
    for index, key in enumerate(KEYS):
        live.initialize(key=key, state_epoch=1, start_offset=0)
        assert live.read(key=key, leader_epoch=3).error is None
        for first in range(0, 10 * (index % 4 + 1), 10):
            batch = StateBatch(first, first + 4, ACK, 1), StateBatch(first + 5, first + 9, AV, 2)
            assert (
                live.write(write=state_write(*batch, key=key, state_epoch=1, leader_epoch=3))
                is None
            )
    live.delete(key=KEYS[0])
    restarted, _ = coordinator(clock=clock, records_per_snapshot=2)
    for partition, sink in enumerate(sinks):
        restarted.runtime.load_partition(partition, enumerate(sink.records))
    for key in KEYS:
        assert restarted.read(key=key, leader_epoch=3) == live.read(key=key, leader_epoch=3)
        assert restarted.read_summary(key=key, leader_epoch=0) == live.read_summary(
            key=key, leader_epoch=0
        )
    state = restarted.read(key=KEYS[5], leader_epoch=3).state
    assert state == PersistedState(
        1,
        0,
        (
            StateBatch(0, 4, ACK, 1),
            StateBatch(5, 9, AV, 2),
            StateBatch(10, 14, ACK, 1),
            StateBatch(15, 19, AV, 2),
        ),
    )
    for group in ("alpha", "beta"):
        assert restarted.partitions_with_state(group_id=group, topic_id=TOPIC) == (
            live.partitions_with_state(group_id=group, topic_id=TOPIC)
        )
    assert restarted.partitions_with_state(group_id="alpha", topic_id=TOPIC) == (1, 2, 3)


def test_prune_offsets_per_partition() -> None:
    share, sinks = coordinator(partitions=3)
    assert share.prune_offsets() == {}
    key = KEYS[0]
    partition = share.placement.partition_of(key)
    share.initialize(key=key, state_epoch=0, start_offset=0)
    share.write(write=state_write(StateBatch(0, 0, ACK, 1), key=key))
    assert share.prune_offsets() == {partition: 0}
    share.delete(key=key)
    assert share.prune_offsets() == {partition: len(sinks[partition])} == {partition: 3}


def test_cold_snapshots_across_partitions() -> None:
    clock = ManualClock()
    share, sinks = coordinator(clock=clock)
    on_updates = KEYS[:6]
    for key in KEYS:
        share.initialize(key=key, state_epoch=0, start_offset=0)
    for key in on_updates:
        share.write(write=state_write(StateBatch(0, 1, ACK, 1), key=key))
    assert share.write_cold_snapshots(clock.wall_ms()) == 0
    clock.advance(10_000)
    offsets_before = share.prune_offsets()
    assert share.write_cold_snapshots(clock.wall_ms()) == len(on_updates)
    assert share.write_cold_snapshots(clock.wall_ms()) == 0
    for key in on_updates:
        state = share.shard(share.placement.partition_of(key)).states[key]
        assert (state.snapshot_epoch, state.updates_since_snapshot) == (1, 0)
    assert sum(len(s) for s in sinks) == len(KEYS) + 2 * len(on_updates)
    offsets_after = share.prune_offsets()
    assert offsets_after.keys() == offsets_before.keys()
    assert all(offsets_after[p] >= offsets_before[p] for p in offsets_before)
    assert offsets_after != offsets_before  # the cold snapshots let some logs be pruned


def test_cold_snapshots_skip_a_partition_whose_sink_fails(caplog: pytest.LogCaptureFixture) -> None:
    clock = ManualClock()
    sinks: dict[int, InMemoryRecordSink[ShareCoordinatorRecord]] = {}

    def sink_for(partition: int) -> InMemoryRecordSink[ShareCoordinatorRecord]:
        sinks[partition] = InMemoryRecordSink(records_max=2 if partition == 0 else 100)
        return sinks[partition]

    share = ShareCoordinator(
        sink_for=sink_for,
        clock=clock,
        settings=ShareCoordinatorSettings(num_partitions=2, cold_partition_snapshot_interval_ms=1),
    )
    keys = {share.placement.partition_of(k): k for k in KEYS}
    for key in keys.values():
        share.initialize(key=key, state_epoch=0, start_offset=0)
        share.write(write=state_write(StateBatch(0, 0, ACK, 1), key=key))
    clock.advance(1)
    with caplog.at_level(logging.WARNING, logger="shoal.share_coordinator.coordinator"):
        assert share.write_cold_snapshots(clock.wall_ms()) == 1
    assert "cold snapshots of 1 keys not written" in caplog.text
    assert (len(sinks[0]), len(sinks[1])) == (2, 3)
    assert share.shard(0).states[keys[0]].updates_since_snapshot == 1
    assert share.shard(1).states[keys[1]].updates_since_snapshot == 0


def test_settings_from_the_broker_config() -> None:
    defaults = ShareCoordinatorSettings.from_config(BrokerConfig.from_raw({}))
    assert defaults == ShareCoordinatorSettings(
        num_partitions=50, records_per_snapshot=500, cold_partition_snapshot_interval_ms=300_000
    )
    config = BrokerConfig.from_raw(
        {
            "share.coordinator.state.topic.num.partitions": "7",
            "share.coordinator.snapshot.update.records.per.snapshot": "0",
            "share.coordinator.cold.partition.snapshot.interval.ms": "1000",
        }
    )
    assert ShareCoordinatorSettings.from_config(config) == ShareCoordinatorSettings(
        num_partitions=7, records_per_snapshot=0, cold_partition_snapshot_interval_ms=1000
    )
    with pytest.raises(ConfigError, match=r"records\.per\.snapshot"):
        BrokerConfig.from_raw({"share.coordinator.snapshot.update.records.per.snapshot": "-1"})
    with pytest.raises(ConfigError, match=r"num\.partitions"):
        BrokerConfig.from_raw({"share.coordinator.state.topic.num.partitions": "0"})
    kafka_knobs = BrokerConfig.from_raw({})
    assert kafka_knobs["share.coordinator.state.topic.compression.codec"] == 0
    assert kafka_knobs["share.coordinator.threads"] == 1


def test_it_is_a_persister() -> None:
    share, _ = coordinator()
    persister: Persister = share
    key = SharePartitionKey("g", uuid.UUID(int=3), 0)
    assert persister.initialize(key=key, state_epoch=0, start_offset=0) is None
    assert persister.partitions_with_state(group_id="g", topic_id=key.topic_id) == (0,)
