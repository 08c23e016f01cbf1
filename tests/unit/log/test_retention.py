"""Log start offset, DeleteRecords, retention, and the flush policy."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoal.clock import ManualClock
from shoal.config import LONG_MAX
from shoal.log.api import LogError
from shoal.protocol.errors import ErrorCode
from tests.unit.log.batches import BASE_TIMESTAMP_MS, append, make_batch, stored
from tests.unit.log.conftest import LogOpener

HOUR_MS = 3_600_000


def test_delete_records_before_moves_log_start_and_deletes_whole_segments(
    open_log: LogOpener, log_dir: Path
) -> None:
    log = open_log(segment_bytes=1000)
    batches = [make_batch(2, value_size=120, seed=i) for i in range(20)]
    for batch in batches:
        append(log, batch)
    bases = log.segment_base_offsets()
    target = bases[2] + 1  # inside a batch of the third segment
    size_before = log.size_bytes
    assert log.delete_records_before(target) == target
    assert log.log_start_offset == target
    assert log.segment_base_offsets() == bases[2:]
    assert log.size_bytes < size_before
    assert not (log_dir / f"{bases[0]:020d}.log").exists()
    with pytest.raises(LogError) as info:
        log.read(target - 1, max_bytes=100)
    assert info.value.code == ErrorCode.offset_out_of_range
    # A read at the log start returns its whole containing batch.
    read = log.read(target, max_bytes=1)
    assert read.records == stored(batches[bases[2] // 2], base_offset=bases[2])
    assert read.log_start_offset == target
    # Lower or equal is a no-op; beyond the end is out of range.
    assert log.delete_records_before(3) == target
    with pytest.raises(LogError) as beyond:
        log.delete_records_before(log.log_end_offset + 1)
    assert beyond.value.code == ErrorCode.offset_out_of_range
    assert log.delete_records_before(log.log_end_offset) == 40
    assert log.read(40, max_bytes=100).records == b""
    assert append(log, make_batch(1)).log_start_offset == 40


def test_retention_by_time_deletes_old_segments(open_log: LogOpener, clock: ManualClock) -> None:
    log = open_log(segment_bytes=1000, retention_ms=HOUR_MS)
    for i in range(20):
        append(
            log, make_batch(2, value_size=120, seed=i, timestamp_ms=BASE_TIMESTAMP_MS + i * 1000)
        )
    bases = log.segment_base_offsets()
    assert log.enforce_retention(now_wall_ms=BASE_TIMESTAMP_MS + HOUR_MS) == 0
    # Segments whose largest timestamp is over an hour old go; the rest stay.
    cutoff_ms = BASE_TIMESTAMP_MS + 10_000 + HOUR_MS
    freed = log.enforce_retention(now_wall_ms=cutoff_ms)
    assert freed > 0
    remaining = log.segment_base_offsets()
    assert remaining[0] > 0 and remaining == bases[bases.index(remaining[0]) :]
    assert log.log_start_offset == remaining[0]
    first = log.read(log.log_start_offset, max_bytes=1).headers[0]
    assert first.max_timestamp >= BASE_TIMESTAMP_MS + 9_000


def test_retention_by_time_rolls_an_expired_active_segment(
    open_log: LogOpener, clock: ManualClock
) -> None:
    log = open_log(segment_bytes=1000, retention_ms=HOUR_MS)
    for i in range(20):
        append(log, make_batch(2, value_size=120, seed=i))
    size = log.size_bytes
    assert log.enforce_retention(now_wall_ms=BASE_TIMESTAMP_MS + 2 * HOUR_MS) == size
    assert log.segment_base_offsets() == [40]
    assert log.log_start_offset == log.log_end_offset == 40
    assert log.size_bytes == 0
    assert append(log, make_batch(1)).base_offset == 40
    log.abandon()
    reopened = open_log(segment_bytes=1000, retention_ms=HOUR_MS)
    assert (reopened.log_start_offset, reopened.log_end_offset) == (40, 41)


def test_retention_forever_keeps_everything(open_log: LogOpener) -> None:
    log = open_log(segment_bytes=1000, retention_ms=-1)
    for i in range(10):
        append(log, make_batch(2, value_size=120, seed=i))
    assert log.enforce_retention(now_wall_ms=BASE_TIMESTAMP_MS + 10**12) == 0
    assert log.log_start_offset == 0


def test_retention_by_size_deletes_oldest_segments(open_log: LogOpener) -> None:
    log = open_log(segment_bytes=1000, retention_bytes=2500, retention_ms=-1)
    for i in range(30):
        append(log, make_batch(2, value_size=120, seed=i))
    before = log.size_bytes
    freed = log.enforce_retention(now_wall_ms=BASE_TIMESTAMP_MS)
    assert freed > 0
    assert log.size_bytes == before - freed
    assert log.size_bytes <= 2500 + 1000  # at most one segment over
    assert log.size_bytes > 2500 - 1000
    assert log.log_start_offset == log.segment_base_offsets()[0]
    assert log.enforce_retention(now_wall_ms=BASE_TIMESTAMP_MS) == 0


@pytest.mark.parametrize(
    ("policy", "deletes"), [(["compact"], False), ([], False), (["compact", "delete"], True)]
)
def test_retention_applies_only_under_the_delete_policy(
    open_log: LogOpener, policy: list[str], deletes: bool
) -> None:
    """retention.ms and retention.bytes belong to cleanup.policy=delete: a compact-only
    topic (or one with no policy) keeps every segment however old or large."""
    log = open_log(
        segment_bytes=1000, retention_ms=HOUR_MS, retention_bytes=1000, cleanup_policy=policy
    )
    for i in range(20):
        append(log, make_batch(2, value_size=120, seed=i))
    bases = log.segment_base_offsets()
    freed = log.enforce_retention(now_wall_ms=BASE_TIMESTAMP_MS + 2 * HOUR_MS)
    assert (freed > 0) is deletes
    assert (log.segment_base_offsets() == bases) is not deletes
    assert (log.log_start_offset == 0) is not deletes


def test_flush_messages_one_fsyncs_every_append(
    open_log: LogOpener, fsync_calls: list[int]
) -> None:
    log = open_log(flush_messages=1)
    fsync_calls.clear()
    for i in range(5):
        append(log, make_batch(1, seed=i))
        assert len(fsync_calls) == i + 1


def test_flush_messages_counts_records(open_log: LogOpener, fsync_calls: list[int]) -> None:
    log = open_log(flush_messages=10)
    fsync_calls.clear()
    append(log, make_batch(4))
    append(log, make_batch(4, seed=1))
    assert fsync_calls == []
    append(log, make_batch(4, seed=2))
    assert len(fsync_calls) == 1


def test_default_policy_leaves_data_in_the_page_cache(
    open_log: LogOpener, fsync_calls: list[int], clock: ManualClock
) -> None:
    log = open_log(flush_messages=LONG_MAX, flush_ms=LONG_MAX)
    fsync_calls.clear()
    for i in range(20):
        append(log, make_batch(1, seed=i))
    clock.advance(10**9)
    log.flush_if_due(now_ms=clock.monotonic_ms())
    assert fsync_calls == []
    log.flush()
    assert len(fsync_calls) == 1


def test_flush_ms_flushes_old_unflushed_data(
    open_log: LogOpener, fsync_calls: list[int], clock: ManualClock
) -> None:
    log = open_log(flush_ms=1000)
    fsync_calls.clear()
    log.flush_if_due(now_ms=clock.monotonic_ms())
    assert fsync_calls == []
    append(log, make_batch(1))
    clock.advance(999)
    log.flush_if_due(now_ms=clock.monotonic_ms())
    assert fsync_calls == []
    clock.advance(1)
    log.flush_if_due(now_ms=clock.monotonic_ms())
    assert len(fsync_calls) == 1
    clock.advance(5000)
    log.flush_if_due(now_ms=clock.monotonic_ms())
    assert len(fsync_calls) == 1  # nothing new to flush


def test_update_config_applies_live(open_log: LogOpener) -> None:
    log = open_log(segment_bytes=1_000_000)
    append(log, make_batch(2, value_size=200))
    log.update_config({"segment.bytes": 500})
    append(log, make_batch(2, value_size=200, seed=1))
    assert log.segment_base_offsets() == [0, 2]
