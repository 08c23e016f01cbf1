"""Segment deletion with `defer_delete`: renamed on the owner, removed by the caller."""

from __future__ import annotations

import threading
from pathlib import Path

from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.log.fileio import remove_paths
from shoal.log.manager import LogManager
from tests.unit.log.batches import BASE_TIMESTAMP_MS, append, make_batch, stored
from tests.unit.log.conftest import LogOpener

HOUR_MS = 3_600_000


def _segment_files(directory: Path, base: int) -> set[str]:
    return {p.name for p in directory.iterdir() if p.name.startswith(f"{base:020d}")}


def test_deferred_delete_renames_the_files_and_hands_them_over(
    open_log: LogOpener, log_dir: Path
) -> None:
    log = open_log(segment_bytes=1000)
    for i in range(20):
        append(log, make_batch(2, value_size=120, seed=i))
    bases = log.segment_base_offsets()
    assert log.delete_records_before(bases[2], defer_delete=True) == bases[2]
    assert log.segment_base_offsets() == bases[2:]
    assert _segment_files(log_dir, bases[0]) == {
        f"{bases[0]:020d}.log.deleted",
        f"{bases[0]:020d}.index.deleted",
        f"{bases[0]:020d}.timeindex.deleted",
        f"{bases[0]:020d}.txnindex.deleted",
    }
    paths = log.take_deleted_paths()
    assert {p.name for p in paths} == _segment_files(log_dir, bases[0]) | _segment_files(
        log_dir, bases[1]
    )
    assert log.take_deleted_paths() == []  # handed over once
    worker = threading.Thread(target=remove_paths, args=(paths,))
    worker.start()
    worker.join()
    assert _segment_files(log_dir, bases[0]) == set() == _segment_files(log_dir, bases[1])
    assert log.read(bases[2], max_bytes=1).headers[0].base_offset == bases[2]


def test_without_defer_delete_nothing_is_left_behind(open_log: LogOpener, log_dir: Path) -> None:
    log = open_log(segment_bytes=1000)
    for i in range(20):
        append(log, make_batch(2, value_size=120, seed=i))
    bases = log.segment_base_offsets()
    log.delete_records_before(bases[1])
    assert _segment_files(log_dir, bases[0]) == set()
    assert log.take_deleted_paths() == []


def test_files_left_for_deletion_are_removed_on_the_next_open(
    open_log: LogOpener, log_dir: Path, clock: ManualClock
) -> None:
    log = open_log(segment_bytes=1000, retention_ms=HOUR_MS)
    for i in range(20):
        at_ms = BASE_TIMESTAMP_MS + (0 if i < 10 else HOUR_MS)
        append(log, make_batch(2, value_size=120, seed=i, timestamp_ms=at_ms))
    now_ms = BASE_TIMESTAMP_MS + HOUR_MS + 100
    freed = log.enforce_retention(now_wall_ms=now_ms, defer_delete=True)
    assert freed > 0
    start = log.log_start_offset
    end = log.log_end_offset
    log.abandon()  # a crash before the caller removed them
    assert any(p.name.endswith(".deleted") for p in log_dir.iterdir())
    reopened = open_log(segment_bytes=1000, retention_ms=HOUR_MS)
    assert not any(p.name.endswith(".deleted") for p in log_dir.iterdir())
    assert (reopened.log_start_offset, reopened.log_end_offset) == (start, end)
    assert reopened.read(start, max_bytes=1).headers[0].base_offset <= start


def test_close_removes_files_not_taken(open_log: LogOpener, log_dir: Path) -> None:
    log = open_log(segment_bytes=1000)
    for i in range(20):
        append(log, make_batch(2, value_size=120, seed=i))
    log.delete_records_before(log.segment_base_offsets()[1], defer_delete=True)
    log.close()
    assert not any(p.name.endswith(".deleted") for p in log_dir.iterdir())


def test_manager_collects_every_partitions_deleted_files(
    tmp_path: Path, clock: ManualClock
) -> None:
    manager = LogManager.open(data_dir=tmp_path, broker_config=BrokerConfig.load(), clock=clock)
    try:
        manager.create_topic("t", partitions=2, configs={"segment.bytes": "1000"})
        for index in range(2):
            log = manager.partition("t", index)
            assert log is not None
            for i in range(10):
                append(log, make_batch(2, value_size=120, seed=i))
        freed = manager.enforce_retention(now_wall_ms=BASE_TIMESTAMP_MS + 10**12, defer_delete=True)
        assert freed > 0
        paths = manager.take_deleted_paths()
        assert {p.parent.name for p in paths} == {"t-0", "t-1"}
        assert all(p.name.endswith(".deleted") and p.exists() for p in paths)
        remove_paths(paths)
        assert not any(p.exists() for p in paths)
        assert manager.take_deleted_paths() == []
    finally:
        manager.close()


def test_stored_bytes_after_a_deferred_delete_are_unchanged(open_log: LogOpener) -> None:
    log = open_log(segment_bytes=1000)
    batches = [make_batch(2, value_size=120, seed=i) for i in range(20)]
    for batch in batches:
        append(log, batch)
    bases = log.segment_base_offsets()
    log.delete_records_before(bases[1], defer_delete=True)
    remove_paths(log.take_deleted_paths())
    read = log.read(bases[1], max_bytes=1)
    assert read.records == stored(batches[bases[1] // 2], base_offset=bases[1])
