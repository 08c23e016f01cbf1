"""The group coordinator's log on `__consumer_offsets`: the topic is made from the
offsets.topic.* configs, records land on their group's partition, and a shard
replaying the log after a restart equals the one that wrote it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from shoal.clock import ManualClock
from shoal.config import BrokerConfig, ConfigError
from shoal.coordinator.log_sink import read_log
from shoal.coordinator.placement import partition_for
from shoal.group.records import CODEC
from shoal.log.manager import LogManager
from shoal.server.services.group_persistence import GROUP_METADATA_TOPIC, open_group_log
from tests.support.metadata import topic_catalog
from tests.unit.group.conftest import Harness

Opener = Callable[..., tuple[LogManager, BrokerConfig]]


@pytest.fixture
def open_manager(tmp_path: Path) -> Iterator[Opener]:
    opened: list[LogManager] = []

    def opener(**overrides: str) -> tuple[LogManager, BrokerConfig]:
        config = BrokerConfig.from_raw(overrides)
        manager = LogManager.open(
            data_dir=tmp_path / "data",
            broker_config=config,
            clock=ManualClock(),
            catalog=topic_catalog(tmp_path / "data"),
        )
        opened.append(manager)
        return manager, config

    yield opener
    for manager in opened:
        manager.abandon()


def test_topic_made_from_the_offsets_configs(open_manager: Opener) -> None:
    logs, config = open_manager()
    group_log = open_group_log(logs, config, ManualClock())
    info = logs.topic(GROUP_METADATA_TOPIC)
    assert info is not None and info.internal
    assert info.partitions == 50 == len(group_log.sinks)
    assert info.configs["segment.bytes"] == 104_857_600
    assert info.configs["retention.ms"] == -1 and info.configs["cleanup.policy"] == ["delete"]
    assert [pair for p in range(50) for pair in group_log.loader(p)] == []


def test_segment_size_and_partition_count_follow_the_config(open_manager: Opener) -> None:
    logs, config = open_manager(
        **{"offsets.topic.num.partitions": "3", "offsets.topic.segment.bytes": "65536"}
    )
    group_log = open_group_log(logs, config, ManualClock())
    info = logs.topic(GROUP_METADATA_TOPIC)
    assert info is not None and info.partitions == 3 == len(group_log.sinks)
    assert info.configs["segment.bytes"] == 65536


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("offsets.topic.num.partitions", "0", "below the minimum 1"),
        ("offsets.topic.segment.bytes", "13", "below the minimum 14"),
        ("offsets.topic.replication.factor", "3", "above the maximum 1"),
        ("offsets.load.buffer.size", "0", "below the minimum 1"),
    ],
)
def test_offsets_configs_out_of_bounds_are_refused_by_name(
    key: str, value: str, problem: str
) -> None:
    with pytest.raises(ConfigError, match=problem) as info:
        BrokerConfig.from_raw({key: value})
    assert info.value.key == key


def scripted_groups() -> Harness:
    """Three share groups with members, assignments and initialised partitions."""
    harness = Harness()
    harness.set_topics(orders=3, payments=2)
    harness.join("alpha", "a1", ["orders"])
    harness.join("alpha", "a2", ["orders", "payments"])
    harness.join("beta", "b1", ["payments"])
    harness.join("gamma", "c1", ["orders"])
    harness.complete_inits()
    harness.settle("alpha", ["a1", "a2"])
    harness.settle("beta", ["b1"])
    harness.heartbeat("gamma", "c1", -1)  # leaves: tombstones too
    return harness


def test_a_reloaded_shard_equals_the_one_that_wrote(open_manager: Opener) -> None:
    harness = scripted_groups()
    partitions = 4
    logs, config = open_manager(**{"offsets.topic.num.partitions": str(partitions)})
    sinks = open_group_log(logs, config, harness.clock).sinks
    # each record to its group's partition, as the group's shard writes it
    written_at = [
        sinks[partition_for(rec.key.group_id, partitions)].append([rec]) for rec in harness.log
    ]
    logs.close()

    reopened, config = open_manager(**{"offsets.topic.num.partitions": str(partitions)})
    group_log = open_group_log(reopened, config, harness.clock)
    replayed = [pair for p in range(partitions) for pair in group_log.loader(p)]
    # each record comes back at the offset the live append gave it in its partition
    assert sorted((offset, repr(rec)) for offset, rec in replayed) == sorted(
        (offset, repr(rec)) for offset, rec in zip(written_at, harness.log, strict=True)
    )
    assert sorted(map(repr, (rec for _, rec in replayed))) == sorted(map(repr, harness.log))
    fresh = harness.new_shard()
    for offset, record in replayed:
        fresh.replay(record, offset)
    assert fresh.durable_state() == harness.shard.durable_state()

    for group in ("alpha", "beta", "gamma"):
        home = reopened.partition(GROUP_METADATA_TOPIC, partition_for(group, partitions))
        assert home is not None
        on_home = [rec for _, rec in read_log(home, CODEC.decode, buffer_bytes=4096)]
        written = [rec for rec in harness.log if rec.key.group_id == group]
        assert written and [rec for rec in on_home if rec.key.group_id == group] == written
