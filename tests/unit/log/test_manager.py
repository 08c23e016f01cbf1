"""LogManager: topics, metadata, limits, ids, and the producer-id allocator."""

from __future__ import annotations

import base64
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from shoal import limits
from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.log.api import LogError
from shoal.log.manager import LogManager
from shoal.log.producer_ids import ProducerIdAllocator
from shoal.log.topics import random_uuid, uuid_to_base64, validate_topic_name
from shoal.metadata import TopicImage
from shoal.metadata.records import TOPIC_RESOURCE
from shoal.protocol.errors import ErrorCode
from shoal.server.metadata.metadata_log import MetadataLog
from shoal.server.metadata.topic_catalog import MetadataTopicCatalog
from tests.support.metadata import durable_topics, metadata_at, topic_catalog
from tests.unit.log.batches import append, make_batch, stored

Opener = Callable[..., LogManager]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def open_manager(data_dir: Path, clock: ManualClock) -> Iterator[Opener]:
    opened: list[LogManager] = []

    def opener(**overrides: str) -> LogManager:
        config = BrokerConfig.from_raw(overrides)
        manager = LogManager.open(
            data_dir=data_dir,
            broker_config=config,
            clock=clock,
            catalog=topic_catalog(data_dir.parent / "metadata"),  # beside the data directory
        )
        opened.append(manager)
        return manager

    yield opener
    for manager in opened:
        manager.abandon()


def metadata_of(manager: LogManager) -> MetadataLog:
    catalog = manager._catalog
    assert isinstance(catalog, MetadataTopicCatalog)
    return catalog.metadata


def _code(call: Callable[[], object]) -> str:
    with pytest.raises(LogError) as info:
        call()
    return info.value.code


def test_create_write_reopen(open_manager: Opener, data_dir: Path) -> None:
    manager = open_manager()
    info = manager.create_topic("orders", partitions=3, configs={"retention.ms": "1000"})
    assert info.partitions == 3 and info.configs == {"retention.ms": 1000}
    assert manager.topic("orders") is info
    assert manager.topic_by_id(info.topic_id) is info
    log = manager.partition("orders", 2)
    assert log is not None and manager.partition("orders", 3) is None
    batch = make_batch(2)
    append(log, batch)
    cluster_id = manager.cluster_id
    manager.close()

    reopened = open_manager()
    assert reopened.cluster_id == cluster_id
    again = reopened.topic("orders")
    assert again is not None
    assert (again.topic_id, again.partitions, again.configs) == (
        info.topic_id,
        3,
        {"retention.ms": 1000},
    )
    log = reopened.partition("orders", 2)
    assert log is not None
    assert log.read(0, max_bytes=1000).records == stored(batch, base_offset=0)
    assert sorted(p.name for p in data_dir.iterdir() if p.is_dir()) == [
        "orders-0",
        "orders-1",
        "orders-2",
    ]
    assert (data_dir / "orders-0" / "partition.metadata").read_text().startswith("version: 0\n")


def test_topic_configs_apply_to_partitions(open_manager: Opener) -> None:
    manager = open_manager(**{"log.segment.bytes": "1000000"})
    manager.create_topic("t", partitions=1, configs={"segment.bytes": "500"})
    log = manager.partition("t", 0)
    assert log is not None
    append(log, make_batch(2, value_size=200))
    append(log, make_batch(2, value_size=200, seed=1))
    assert log.segment_base_offsets() == [0, 2]
    manager.alter_topic_configs("t", {})
    append(log, make_batch(2, value_size=200, seed=2))
    assert log.segment_base_offsets() == [0, 2]
    manager.update_broker_config(BrokerConfig.from_raw({"log.segment.bytes": "600"}))
    append(log, make_batch(2, value_size=200, seed=3))
    assert log.segment_base_offsets() == [0, 2, 6]


def test_configs_are_stored_as_strings_and_reparsed(open_manager: Opener, data_dir: Path) -> None:
    manager = open_manager()
    manager.create_topic(
        "t", partitions=1, configs={"retention.bytes": 12345, "cleanup.policy": ["delete"]}
    )
    stored_configs = metadata_of(manager).image.config(TOPIC_RESOURCE, "t")
    assert stored_configs == {"cleanup.policy": "delete", "retention.bytes": "12345"}
    manager.close()
    info = open_manager().topic("t")
    assert info is not None
    assert info.configs == {"retention.bytes": 12345, "cleanup.policy": ["delete"]}
    assert _code(lambda: open_manager().create_topic("u", partitions=1, configs={"nope": "1"})) == (
        ErrorCode.invalid_config
    )


def test_delete_and_recreate_topic(open_manager: Opener, data_dir: Path) -> None:
    manager = open_manager()
    old = manager.create_topic("t", partitions=2, configs={})
    log = manager.partition("t", 0)
    assert log is not None
    append(log, make_batch(3))
    assert manager.delete_topic("t") is old
    assert manager.topic("t") is None and manager.topic_by_id(old.topic_id) is None
    assert manager.partition("t", 0) is None
    assert [p.name for p in data_dir.iterdir() if p.is_dir()] == []
    assert _code(lambda: manager.delete_topic("t")) == ErrorCode.unknown_topic_or_partition
    new = manager.create_topic("t", partitions=1, configs={})
    assert new.topic_id != old.topic_id
    fresh = manager.partition("t", 0)
    assert fresh is not None and fresh.log_end_offset == 0
    manager.close()
    reopened = open_manager()
    info = reopened.topic("t")
    assert info is not None and info.topic_id == new.topic_id and info.partitions == 1


def test_create_partitions(open_manager: Opener) -> None:
    manager = open_manager()
    manager.create_topic("t", partitions=2, configs={})
    assert _code(lambda: manager.create_partitions("t", count=2)) == ErrorCode.invalid_partitions
    assert _code(lambda: manager.create_partitions("t", count=1)) == ErrorCode.invalid_partitions
    assert (
        _code(lambda: manager.create_partitions("x", count=5))
        == ErrorCode.unknown_topic_or_partition
    )
    manager.create_partitions("t", count=4, validate_only=True)
    assert manager.partition("t", 2) is None
    manager.create_partitions("t", count=4)
    assert manager.partition("t", 3) is not None
    manager.close()
    info = open_manager().topic("t")
    assert info is not None and info.partitions == 4


def test_validate_only_changes_nothing(open_manager: Opener, data_dir: Path) -> None:
    manager = open_manager()
    info = manager.create_topic("t", partitions=2, configs={}, validate_only=True)
    assert info.name == "t" and info.partitions == 2
    assert manager.topic("t") is None and manager.partition("t", 0) is None
    assert not (data_dir / "t-0").exists()


def test_creation_errors(open_manager: Opener) -> None:
    manager = open_manager()
    manager.create_topic("exists", partitions=1, configs={})
    manager.create_topic("a.b", partitions=1, configs={})
    cases = {
        "": ErrorCode.invalid_topic_exception,
        ".": ErrorCode.invalid_topic_exception,
        "..": ErrorCode.invalid_topic_exception,
        "bad name": ErrorCode.invalid_topic_exception,
        "slash/no": ErrorCode.invalid_topic_exception,
        "ü": ErrorCode.invalid_topic_exception,
        "x" * (limits.TOPIC_NAME_LENGTH_MAX + 1): ErrorCode.invalid_topic_exception,
        "exists": ErrorCode.topic_already_exists,
        "a_b": ErrorCode.invalid_topic_exception,  # collides with a.b
    }
    for name, code in cases.items():
        with pytest.raises(LogError) as info:
            manager.create_topic(name, partitions=1, configs={})
        assert info.value.code == code, name
    validate_topic_name("x" * limits.TOPIC_NAME_LENGTH_MAX)
    validate_topic_name("Az09._-")
    for count in (0, -1, limits.PARTITIONS_PER_TOPIC_MAX + 1):
        with pytest.raises(LogError) as bad_count:
            manager.create_topic("p", partitions=count, configs={})
        assert bad_count.value.code == ErrorCode.invalid_partitions


def test_topic_and_partition_limits(open_manager: Opener) -> None:
    manager = open_manager(**{"shoal.max.topics": "2", "shoal.max.partitions": "5"})
    manager.create_topic("a", partitions=2, configs={})
    with pytest.raises(LogError) as too_many_partitions:
        manager.create_topic("b", partitions=4, configs={})
    assert too_many_partitions.value.code == ErrorCode.invalid_partitions
    assert "shoal.max.partitions=5" in str(too_many_partitions.value)
    manager.create_topic("b", partitions=3, configs={})
    with pytest.raises(LogError) as too_many_topics:
        manager.create_topic("c", partitions=1, configs={})
    assert too_many_topics.value.code == ErrorCode.policy_violation
    assert "shoal.max.topics=2" in str(too_many_topics.value)
    assert _code(lambda: manager.create_partitions("a", count=3)) == ErrorCode.invalid_partitions
    # Internal topics are never refused and not counted: with one user topic left,
    # another fits beside a 50-partition internal topic.
    manager.create_topic("__internal", partitions=50, configs={}, internal=True)
    manager.delete_topic("b")
    manager.create_topic("c", partitions=1, configs={})
    assert (
        _code(lambda: manager.create_topic("d", partitions=1, configs={}))
        == ErrorCode.policy_violation
    )


def test_topic_ids_follow_kafka_rules() -> None:
    draws = iter(
        [
            uuid.UUID(int=0),
            uuid.UUID(int=1),
            uuid.UUID(bytes=base64.urlsafe_b64decode("-" + "A" * 21 + "==")),
            uuid.UUID("12345678-1234-4234-8234-123456789abc"),
        ]
    )
    chosen = random_uuid(lambda: next(draws))
    assert chosen == uuid.UUID("12345678-1234-4234-8234-123456789abc")
    for _ in range(200):
        value = random_uuid()
        text = uuid_to_base64(value)
        assert len(text) == 22 and not text.startswith("-") and value.int > 1


def test_cluster_id_generated_once_or_from_config(open_manager: Opener, data_dir: Path) -> None:
    manager = open_manager()
    cluster_id = manager.cluster_id
    assert len(cluster_id) == 22 and "=" not in cluster_id
    manager.close()
    assert open_manager().cluster_id == cluster_id
    meta = (data_dir / "meta.properties").read_text()
    assert f"cluster.id={cluster_id}" in meta and "node.id=1" in meta
    assert _code(lambda: open_manager(**{"cluster.id": "someOtherClusterId0000"})) == (
        ErrorCode.inconsistent_cluster_id
    )


def test_configured_cluster_id_is_used(tmp_path: Path, clock: ManualClock) -> None:
    config = BrokerConfig.from_raw({"cluster.id": "MkU3OEVBNTcwNTJENDM2Qk"})
    manager = LogManager.open(data_dir=tmp_path / "d", broker_config=config, clock=clock)
    assert manager.cluster_id == "MkU3OEVBNTcwNTJENDM2Qk"
    manager.close()


def test_unknown_and_deleted_dirs_on_open(
    open_manager: Opener, data_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    manager = open_manager()
    manager.create_topic("t", partitions=1, configs={})
    manager.close()
    (data_dir / "mystery-0").mkdir()
    (data_dir / f"t-0.{uuid.uuid4().hex}-delete").mkdir()
    (data_dir / f"t-0.{uuid.uuid4().hex}-delete" / "x").parent.mkdir()
    with caplog.at_level("WARNING"):
        open_manager()
    names = sorted(p.name for p in data_dir.iterdir() if p.is_dir())
    assert names == ["mystery-0", "t-0"]
    assert any("mystery-0" in r.getMessage() for r in caplog.records)


def test_partition_dir_of_another_topic_id_is_set_aside(
    open_manager: Opener, data_dir: Path
) -> None:
    manager = open_manager()
    manager.create_topic("t", partitions=1, configs={})
    log = manager.partition("t", 0)
    assert log is not None
    append(log, make_batch(1))
    manager.close()
    metadata = metadata_at(data_dir.parent / "metadata")  # t made again while the broker is down
    metadata.write_now(metadata.shard.put_topic(TopicImage("t", uuid.uuid4(), 1, False)))
    reopened = open_manager()
    fresh = reopened.partition("t", 0)
    assert fresh is not None and fresh.log_end_offset == 0
    assert any(p.name.endswith("-stray") for p in data_dir.iterdir())


def test_producer_ids_never_repeat(open_manager: Opener, data_dir: Path) -> None:
    manager = open_manager()
    seen = [manager.allocate_producer_id() for _ in range(10)]
    manager.close()
    manager = open_manager()
    seen += [manager.allocate_producer_id() for _ in range(1500)]
    manager.abandon()  # crash
    manager = open_manager()
    seen += [manager.allocate_producer_id() for _ in range(10)]
    assert len(set(seen)) == len(seen)
    assert seen == sorted(seen)


def test_producer_id_blocks_are_reserved_before_use(tmp_path: Path) -> None:
    allocator = ProducerIdAllocator.open(tmp_path)
    assert allocator.allocate() == 0
    assert (tmp_path / "producer-ids").read_text() == f"1\n{limits.PRODUCER_ID_BLOCK_SIZE}\n"
    for _ in range(limits.PRODUCER_ID_BLOCK_SIZE):
        allocator.allocate()
    assert (tmp_path / "producer-ids").read_text() == f"1\n{2 * limits.PRODUCER_ID_BLOCK_SIZE}\n"
    assert ProducerIdAllocator.open(tmp_path).allocate() == 2 * limits.PRODUCER_ID_BLOCK_SIZE


def test_retention_and_flush_run_over_all_partitions(
    open_manager: Opener, clock: ManualClock
) -> None:
    manager = open_manager()
    manager.create_topic("t", partitions=2, configs={"retention.ms": "1000", "flush.ms": "10"})
    for index in range(2):
        log = manager.partition("t", index)
        assert log is not None
        append(log, make_batch(2))
    manager.flush_if_due(now_ms=clock.monotonic_ms() + 10)
    freed = manager.enforce_retention(now_wall_ms=clock.wall_ms() + 10**6)
    assert freed > 0
    for index in range(2):
        log = manager.partition("t", index)
        assert log is not None and log.log_start_offset == log.log_end_offset == 2


# ---- a creation as data: plan on the owner, run on another thread, finish on the owner


def test_a_planned_creation_changes_nothing_until_finished(
    open_manager: Opener, data_dir: Path
) -> None:
    manager = open_manager()
    heard: list[tuple[str, ...]] = []
    manager.events.on_topics_changed(lambda change: heard.append(change.created))
    creation = manager.plan_topic("t", partitions=2, configs={})
    assert manager.topic("t") is None and not (data_dir / "t-0").exists()
    worker = threading.Thread(target=creation.run)  # as a disk worker runs it
    worker.start()
    worker.join()
    assert "t" in durable_topics(metadata_of(manager)), "durable before adopted"
    assert manager.topic("t") is None and heard == []
    opened = dict(creation.opened)  # the worker opened the new partitions' logs
    assert sorted(opened) == [0, 1]
    info = manager.finish_topic(creation)
    assert manager.topic("t") is info and heard == [("t",)]
    log = manager.partition("t", 1)
    assert log is not None and log is opened[1]
    batch = make_batch(2)
    append(log, batch)
    manager.close()
    again = open_manager().partition("t", 1)
    assert again is not None
    assert again.read(0, max_bytes=1000).records == stored(batch, base_offset=0)


def test_a_name_taken_meanwhile_is_refused_and_its_logs_closed(open_manager: Opener) -> None:
    manager = open_manager()
    late = manager.plan_topic("t", partitions=1, configs={})
    manager.create_topic("t", partitions=1, configs={})
    late.run()
    assert _code(lambda: manager.finish_topic(late)) == ErrorCode.topic_already_exists
    assert late.opened == {}
    assert manager.topic("t") is not None


def test_a_topic_change_between_plan_and_finish_is_kept_in_the_catalog(
    open_manager: Opener, data_dir: Path
) -> None:
    manager = open_manager()
    creation = manager.plan_topic("a", partitions=1, configs={})
    manager.create_topic("b", partitions=1, configs={})  # not from the same lane
    creation.run()
    manager.finish_topic(creation)
    names = list(durable_topics(metadata_of(manager)))
    assert sorted(names) == ["a", "b"]


def test_a_failed_creation_write_raises_storage_error_and_opens_nothing(
    open_manager: Opener, data_dir: Path
) -> None:
    manager = open_manager()
    creation = manager.plan_topic("t", partitions=1, configs={})
    metadata_of(manager).partition.close()  # the metadata log refuses every append now
    assert _code(creation.run) == ErrorCode.kafka_storage_error
    assert creation.opened == {} and manager.topic("t") is None
    assert not (data_dir / "t-0").exists()


def test_a_planned_growth_or_config_change_waits_for_its_finish(
    open_manager: Opener, data_dir: Path
) -> None:
    manager = open_manager()
    info = manager.create_topic("t", partitions=1, configs={})
    growth = manager.plan_partitions("t", count=3)
    growth.run()
    assert info.partitions == 1 and manager.partition("t", 1) is None
    assert durable_topics(metadata_of(manager))["t"].partitions == 3
    manager.finish_topic_change(growth)
    assert info.partitions == 3 and manager.partition("t", 2) is not None
    change = manager.plan_topic_configs("t", {"retention.ms": "1000"})
    change.run()
    assert info.configs == {}
    manager.finish_topic_change(change)
    assert info.configs == {"retention.ms": 1000}


def test_a_change_of_a_topic_deleted_meanwhile_is_refused(open_manager: Opener) -> None:
    manager = open_manager()
    manager.create_topic("t", partitions=1, configs={})
    growth = manager.plan_partitions("t", count=2)
    growth.run()
    manager.delete_topic("t")
    assert (
        _code(lambda: manager.finish_topic_change(growth)) == ErrorCode.unknown_topic_or_partition
    )
    assert growth.opened == {} and manager.topic("t") is None


def test_a_partition_dir_of_a_topic_the_catalog_does_not_hold_is_stray(
    open_manager: Opener, data_dir: Path
) -> None:
    """As Kafka reconciles its log directories with the metadata image: a creation
    whose directories were made but whose record is gone (here: deleted while the
    broker was down) leaves a directory whose topic id nobody has; it is set aside."""
    manager = open_manager()
    manager.create_topic("t", partitions=1, configs={})
    manager.close()
    metadata = metadata_at(data_dir.parent / "metadata")
    metadata.write_now(metadata.shard.remove_topic("t"))
    reopened = open_manager()
    assert reopened.topic("t") is None
    names = [p.name for p in data_dir.iterdir() if p.is_dir()]
    assert len(names) == 1 and names[0].startswith("t-0.") and names[0].endswith("-stray")


@pytest.mark.parametrize("left", [b"", b"\0" * 40, b"version: 0\ntopic_"])
@pytest.mark.parametrize("internal", [False, True])
def test_a_partition_metadata_lost_in_a_crash_is_written_again_from_the_catalog(
    open_manager: Opener, data_dir: Path, fsync_calls: list[int], left: bytes, internal: bool
) -> None:
    # A new partition's partition.metadata is not fsynced (it repeats the catalog, which
    # is): a crash may leave it empty, zeroed or cut. The next open writes it again,
    # and the partition keeps its flushed records; it is not taken for another topic's.
    manager = open_manager()
    before = len(fsync_calls)
    info = manager.create_topic("t", partitions=4, configs={}, internal=internal)
    # the catalog's write and the data directory; then each new partition's directory,
    # except for an internal topic's (made at start: fsynced at its first flush)
    assert len(fsync_calls) - before == 2 + (0 if internal else 4), fsync_calls[before:]
    log = manager.partition("t", 2)
    assert log is not None
    append(log, make_batch(1))
    log.flush()
    manager.abandon()
    (data_dir / "t-2" / "partition.metadata").write_bytes(left)
    reopened = open_manager()
    again = reopened.partition("t", 2)
    assert again is not None and again.log_end_offset == 1
    assert not any(p.name.endswith("-stray") for p in data_dir.iterdir())
    text = (data_dir / "t-2" / "partition.metadata").read_text()
    assert text == f"version: 0\ntopic_id: {uuid_to_base64(info.topic_id)}\n"
