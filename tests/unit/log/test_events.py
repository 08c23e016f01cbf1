"""The log announces its own changes (log/events.py): appends, log start moves and
topic changes reach the subscribers of `LogManager.events`, once, after the change."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.log.events import LogEvents, TopicsChanged
from shoal.log.manager import LogManager
from tests.unit.log.batches import BASE_TIMESTAMP_MS, append, make_batch

HOUR_MS = 3_600_000


@pytest.fixture
def manager(tmp_path: Path, clock: ManualClock) -> Iterator[LogManager]:
    opened = LogManager.open(
        data_dir=tmp_path / "data", broker_config=BrokerConfig.from_raw({}), clock=clock
    )
    yield opened
    opened.abandon()


class Recorder:
    def __init__(self, events: LogEvents) -> None:
        self.seen: list[tuple[str, object]] = []
        events.on_appended(lambda t, p: self.seen.append(("appended", (t, p))))
        events.on_log_start_moved(lambda t, p: self.seen.append(("log start moved", (t, p))))
        events.on_topics_changed(lambda change: self.seen.append(("topics", change)))


def test_topic_changes_are_announced_after_they_are_done(manager: LogManager) -> None:
    recorder = Recorder(manager.events)
    seen_topics: list[bool] = []
    manager.events.on_topics_changed(lambda _c: seen_topics.append(manager.topic("t") is None))

    manager.create_topic("t", partitions=2, configs={}, validate_only=True)
    assert recorder.seen == [], "a validate-only creation changes nothing"
    manager.create_topic("t", partitions=2, configs={})
    manager.create_partitions("t", count=3)
    manager.create_partitions("t", count=4, validate_only=True)
    manager.delete_topic("t")

    assert recorder.seen == [
        ("topics", TopicsChanged(created=("t",))),
        ("topics", TopicsChanged(grown=("t",))),
        ("topics", TopicsChanged(deleted=(("t", 3),))),
    ]
    assert seen_topics == [False, False, True], "subscribers see the state after the change"
    deleted = recorder.seen[2][1]
    assert isinstance(deleted, TopicsChanged)
    assert deleted.deleted_partitions() == [("t", 0), ("t", 1), ("t", 2)]


def test_failed_topic_changes_are_not_announced(manager: LogManager) -> None:
    recorder = Recorder(manager.events)
    manager.create_topic("t", partitions=1, configs={})
    recorder.seen.clear()
    for call in (
        lambda: manager.create_topic("t", partitions=1, configs={}),
        lambda: manager.create_partitions("t", count=1),
        lambda: manager.delete_topic("missing"),
    ):
        with pytest.raises(Exception, match=r"exists|partitions|does not exist"):
            call()
    assert recorder.seen == []


def test_appends_are_announced_per_partition_but_not_duplicates(manager: LogManager) -> None:
    manager.create_topic("t", partitions=2, configs={})
    recorder = Recorder(manager.events)
    log0, log1 = manager.partition("t", 0), manager.partition("t", 1)
    assert log0 is not None and log1 is not None
    readable_at_event: list[int] = []
    manager.events.on_appended(lambda _t, _p: readable_at_event.append(log1.log_end_offset))

    append(log1, make_batch(3))
    idempotent = make_batch(1, producer_id=7, base_sequence=0)
    append(log0, idempotent)
    duplicate = append(log0, idempotent)

    assert duplicate.duplicate
    assert recorder.seen == [("appended", ("t", 1)), ("appended", ("t", 0))]
    assert readable_at_event[0] == 3, "the event comes after the batches are in the log"


def test_delete_records_announces_only_a_real_move(manager: LogManager) -> None:
    manager.create_topic("t", partitions=1, configs={})
    log = manager.partition("t", 0)
    assert log is not None
    for seed in range(4):
        append(log, make_batch(1, seed=seed))
    recorder = Recorder(manager.events)

    log.delete_records_before(2)
    log.delete_records_before(1)  # below the log start offset: nothing moves
    log.delete_records_before(2)

    assert recorder.seen == [("log start moved", ("t", 0))]


def test_retention_announces_each_partition_whose_start_moved(
    tmp_path: Path, clock: ManualClock
) -> None:
    config = BrokerConfig.from_raw({"log.segment.bytes": "1000"})
    manager = LogManager.open(data_dir=tmp_path / "data", broker_config=config, clock=clock)
    try:
        manager.create_topic("old", partitions=1, configs={"retention.ms": str(HOUR_MS)})
        manager.create_topic("kept", partitions=1, configs={"retention.ms": "-1"})
        for name in ("old", "kept"):
            log = manager.partition(name, 0)
            assert log is not None
            for i in range(20):
                batch = make_batch(2, value_size=120, seed=i, timestamp_ms=BASE_TIMESTAMP_MS)
                append(log, batch)
        recorder = Recorder(manager.events)

        assert manager.enforce_retention(now_wall_ms=BASE_TIMESTAMP_MS + 2 * HOUR_MS) > 0
        assert recorder.seen == [("log start moved", ("old", 0))]
    finally:
        manager.abandon()


def test_a_failing_subscriber_does_not_silence_the_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    events = LogEvents()
    heard: list[tuple[str, int]] = []

    def broken(_topic: str, _partition: int) -> None:
        raise RuntimeError("subscriber bug")

    events.on_appended(broken)
    events.on_appended(lambda t, p: heard.append((t, p)))
    events.for_partition("t", 4).appended()

    assert heard == [("t", 4)]
    assert "subscriber bug" in caplog.text and "t-4" in caplog.text
