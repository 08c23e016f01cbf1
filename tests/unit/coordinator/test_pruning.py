"""coordinator/pruning.py: the lowest offset a reload needs, the keys that pin the log,
and the prune step both coordinators' shells run."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.coordinator import NO_OFFSET
from shoal.coordinator.log_sink import LogRecordSink
from shoal.coordinator.pruning import LiveKeys, lowest_needed_offset, prune_log
from shoal.group import records as r
from shoal.log import fileio
from shoal.log.manager import LogManager
from shoal.log.partition import PartitionLog


def test_lowest_needed_offset_is_the_lowest_live_one_or_the_end() -> None:
    assert lowest_needed_offset([7, 3, 9], end_offset=12) == 3
    assert lowest_needed_offset([], end_offset=12) == 12  # nothing live: all of it may go
    assert lowest_needed_offset([], end_offset=0) is None  # nothing replayed
    assert lowest_needed_offset([4, NO_OFFSET], end_offset=12) is None  # unknown: keep all


def test_live_keys_follow_the_latest_record_and_forget_tombstones() -> None:
    live: LiveKeys[str, str] = LiveKeys()
    live.replayed("a", "a1", 0, tombstone=False)
    live.replayed("b", "b1", 1, tombstone=False)
    live.replayed("a", "a2", 2, tombstone=False)
    assert (live.prune_offset(), live.end_offset, len(live)) == (1, 3, 2)
    live.replayed("b", "b-gone", 3, tombstone=True)
    assert live.prune_offset() == 2  # b needs nothing now; a's latest is at 2
    live.replayed("a", "a-gone", 4, tombstone=True)
    assert (live.prune_offset(), len(live)) == (5, 0)  # nothing live: up to the end
    live.replayed("c", "c1", NO_OFFSET, tombstone=False)
    assert live.prune_offset() is None  # a key without an offset pins everything


def test_stale_names_keys_further_than_window_plus_live_keys_below_the_end() -> None:
    live: LiveKeys[str, str] = LiveKeys()
    for offset, key in enumerate(["old", "older-but-rewritten", "mid", "new"]):
        live.replayed(key, f"{key}@{offset}", offset, tombstone=False)
    live.replayed("older-but-rewritten", "again", 10, tombstone=False)  # end 11, 4 live
    assert live.stale(window_records=4) == [(0, "old", "old@0"), (2, "mid", "mid@2")]
    assert live.stale(window_records=6) == [(0, "old", "old@0")]
    assert live.stale(window_records=7) == []
    assert [key for _, key, _ in live.latest()] == ["old", "mid", "new", "older-but-rewritten"]
    assert [key for _, key, _ in live.latest(lambda _key, offset: offset >= 2)] == [
        "mid",
        "new",
        "older-but-rewritten",
    ]


def test_right_after_every_key_was_re_written_none_is_stale() -> None:
    """Counting the live keys in makes re-writing converge: their copies span the
    last `len(live)` records, inside any window."""
    live: LiveKeys[str, str] = LiveKeys()
    keys = [f"k{i}" for i in range(50)]
    for offset, key in enumerate(keys):
        live.replayed(key, key, offset, tombstone=False)
    live.replayed("gone", "x", 200, tombstone=True)  # the end moves far on
    assert len(live.stale(window_records=0)) == 50
    for offset, key in enumerate(keys, start=201):  # all re-written at the end
        live.replayed(key, key, offset, tombstone=False)
    assert live.stale(window_records=0) == []
    assert live.prune_offset() == 201


@pytest.fixture
def partition(tmp_path: Path) -> Iterator[PartitionLog]:
    config = BrokerConfig.from_raw({"log.segment.bytes": "1024"})
    logs = LogManager.open(data_dir=tmp_path / "data", broker_config=config, clock=ManualClock())
    logs.create_topic("t", partitions=1, configs={"segment.bytes": 1024})
    log = logs.partition("t", 0)
    assert log is not None
    yield log
    logs.close()


def test_prune_log_moves_the_log_start_and_removes_whole_segments(
    partition: PartitionLog,
) -> None:
    sink = LogRecordSink(log=partition, encode=r.CODEC.encode, clock=ManualClock())
    for index in range(40):
        key = r.OffsetCommitKey(group_id="g", topic="t" * 60, partition=index)
        value = r.OffsetCommitValue(offset=index, leader_epoch=-1, metadata="", commit_timestamp=0)
        assert sink.append([r.CoordinatorRecord(key=key, value=value)]) == index
    segments = sorted(partition.directory.glob("*.log"))
    assert len(segments) > 3
    removed: list[Path] = []

    def remove(paths: list[Path]) -> None:
        removed.extend(paths)
        fileio.remove_paths(paths)

    assert prune_log(partition, 30, remove_paths=remove)
    assert partition.log_start_offset == 30
    assert removed and not any(path.exists() for path in removed)
    assert len(sorted(partition.directory.glob("*.log"))) < len(segments)
    assert not prune_log(partition, 30, remove_paths=remove)  # nothing more to do
    assert not prune_log(partition, 12, remove_paths=remove)  # never backwards
    assert prune_log(partition, 10_000, remove_paths=remove)  # clamped to the end
    assert partition.log_start_offset == partition.log_end_offset == 40


def test_prune_log_makes_the_records_above_durable_before_moving_the_start(
    partition: PartitionLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The re-written records that replace the pruned ones must be on disk before the
    new log start is: a power loss must not keep the deletion and lose them (found by
    the simulation, seed 2301)."""
    sink = LogRecordSink(log=partition, encode=r.CODEC.encode, clock=ManualClock())
    for index in range(5):
        key = r.OffsetCommitKey(group_id="g", topic="t", partition=index)
        value = r.OffsetCommitValue(offset=index, leader_epoch=-1, metadata="", commit_timestamp=0)
        sink.append([r.CoordinatorRecord(key=key, value=value)])
    events: list[str] = []
    real_fsync = os.fsync
    real_delete = partition.delete_records_before

    def fsync(fd: int) -> None:
        events.append("fsync")
        real_fsync(fd)

    def delete(offset: int, **kwargs: bool) -> int:
        events.append("delete")
        return real_delete(offset, **kwargs)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(partition, "delete_records_before", delete)
    assert prune_log(partition, 3, remove_paths=fileio.remove_paths)
    assert "fsync" in events and events.index("fsync") < events.index("delete")
