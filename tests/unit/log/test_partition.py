"""PartitionLog: append, read, offsets, segments, timestamps."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shoal.clock import ManualClock
from shoal.limits import READ_POSITIONS_CACHED
from shoal.log.api import LogError
from shoal.log.segment import Segment
from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import TIMESTAMP_TYPE_MASK, compute_crc, iter_headers
from shoal.sim.disk import Disk
from tests.unit.log.batches import BASE_TIMESTAMP_MS, append, make_batch, stored
from tests.unit.log.conftest import LogOpener


def test_append_and_read_round_trip_byte_exact(open_log: LogOpener) -> None:
    log = open_log()
    batch = make_batch(5, value_size=100)
    result = append(log, batch, leader_epoch=3)
    assert (result.base_offset, result.last_offset) == (0, 4)
    assert result.log_append_time_ms == -1
    assert not result.duplicate
    read = log.read(0, max_bytes=1 << 20)
    assert read.records == stored(batch, base_offset=0, leader_epoch=3)
    assert read.high_watermark == 5 == log.log_end_offset
    assert read.log_start_offset == 0
    assert [(h.position, h.base_offset, h.records_count) for h in read.headers] == [(0, 0, 5)]
    header = read.headers[0]
    assert compute_crc(read.records, header) == header.crc


def test_offsets_are_assigned_contiguously(open_log: LogOpener) -> None:
    log = open_log()
    results = [append(log, make_batch(n, seed=n)) for n in (1, 3, 2, 7)]
    assert [(r.base_offset, r.last_offset) for r in results] == [(0, 0), (1, 3), (4, 5), (6, 12)]
    multi = append(log, make_batch(2, seed=1), make_batch(4, seed=2))
    assert (multi.base_offset, multi.last_offset) == (13, 18)
    read = log.read(0, max_bytes=1 << 20)
    assert [h.base_offset for h in read.headers] == [0, 1, 4, 6, 13, 15]
    assert log.log_end_offset == 19


def test_read_mid_batch_returns_the_containing_batch(open_log: LogOpener) -> None:
    log = open_log()
    first, second = make_batch(5, seed=1), make_batch(5, seed=2)
    append(log, first)
    append(log, second)
    for offset in range(5, 10):
        read = log.read(offset, max_bytes=1 << 20)
        assert read.records == stored(second, base_offset=5)
    read = log.read(3, max_bytes=1 << 20)
    assert read.records == stored(first, base_offset=0) + stored(second, base_offset=5)


def test_max_bytes_stops_before_a_batch_that_does_not_fit(open_log: LogOpener) -> None:
    log = open_log()
    batches = [make_batch(1, value_size=200, seed=i) for i in range(4)]
    for batch in batches:
        append(log, batch)
    size = len(batches[0])
    read = log.read(0, max_bytes=2 * size + size // 2)
    assert [h.base_offset for h in read.headers] == [0, 1]
    assert len(read.records) == 2 * size
    assert log.read(1, max_bytes=size).records == stored(batches[1], base_offset=1)


def test_min_one_batch_returns_a_first_batch_larger_than_max_bytes(open_log: LogOpener) -> None:
    log = open_log()
    big = make_batch(3, value_size=1000)
    append(log, big)
    append(log, make_batch(1, seed=9))
    read = log.read(0, max_bytes=10)
    assert read.records == stored(big, base_offset=0)
    assert log.read(0, max_bytes=10, min_one_batch=False).records == b""
    assert log.read(0, max_bytes=0).records == stored(big, base_offset=0)


def test_read_at_log_end_is_empty_and_outside_is_out_of_range(open_log: LogOpener) -> None:
    log = open_log()
    assert log.read(0, max_bytes=100).records == b""
    append(log, make_batch(2))
    empty = log.read(2, max_bytes=100)
    assert (empty.records, empty.headers, empty.high_watermark) == (b"", [], 2)
    for offset in (3, -1, 100):
        with pytest.raises(LogError) as info:
            log.read(offset, max_bytes=100)
        assert info.value.code == ErrorCode.offset_out_of_range


def test_segment_rolls_by_bytes_and_reads_cross_segments(open_log: LogOpener) -> None:
    log = open_log(segment_bytes=1000)
    batches = [make_batch(2, value_size=150, seed=i) for i in range(10)]
    for batch in batches:
        append(log, batch)
    bases = log.segment_base_offsets()
    assert len(bases) > 3
    assert bases == sorted(bases) and bases[0] == 0
    expected = b"".join(stored(b, base_offset=2 * i) for i, b in enumerate(batches))
    read = log.read(0, max_bytes=1 << 20)
    assert read.records == expected
    assert [h.base_offset for h in read.headers] == list(range(0, 20, 2))
    assert [h.position for h in read.headers] == [h.position for h in iter_headers(read.records)]
    files = sorted(p.name for p in log.directory.iterdir() if p.suffix == ".log")
    assert files == [f"{b:020d}.log" for b in bases]
    assert all(os.path.getsize(log.directory / f) <= 1000 for f in files)


def test_append_larger_than_segment_bytes_is_refused(open_log: LogOpener) -> None:
    """As Kafka's UnifiedLog.append: records larger than segment.bytes are refused with
    RECORD_LIST_TOO_LARGE and change nothing; records as large as it fill a segment."""
    batch = make_batch(3, value_size=100, seed=1)
    log = open_log(segment_bytes=len(batch))
    append(log, make_batch(1, value_size=10))
    append(log, batch)  # a segment of its own: it fits beside nothing
    with pytest.raises(LogError) as info:
        append(log, make_batch(3, value_size=101, seed=2))
    assert info.value.code == ErrorCode.record_list_too_large
    assert f"exceeds the maximum configured segment size of {len(batch)}." in str(info.value)
    append(log, make_batch(1, value_size=10, seed=3))
    assert log.segment_base_offsets() == [0, 1, 4]
    assert log.log_end_offset == 5
    assert log.read(1, max_bytes=1 << 20).headers[0].base_offset == 1


def test_segment_rolls_by_time(open_log: LogOpener, clock: ManualClock) -> None:
    log = open_log(segment_ms=1000)
    append(log, make_batch(1))
    clock.advance(999)
    append(log, make_batch(1, seed=1))
    assert log.segment_base_offsets() == [0]
    clock.advance(1)
    append(log, make_batch(1, seed=2))
    assert log.segment_base_offsets() == [0, 2]
    clock.advance(5000)  # age counts from the segment's first append
    append(log, make_batch(1, seed=3))
    assert log.segment_base_offsets() == [0, 2, 3]


def test_sequential_reads_hit_the_position_cache(open_log: LogOpener) -> None:
    log = open_log(index_interval_bytes=1 << 30)  # no index entries: lookups would scan
    batches = [make_batch(1, value_size=50, seed=i) for i in range(50)]
    for batch in batches:
        append(log, batch)
    size = len(batches[0])
    offset = 0
    collected = b""
    while offset < log.log_end_offset:
        read = log.read(offset, max_bytes=3 * size)
        collected += read.records
        offset = read.headers[-1].next_offset
        assert offset in log._read_positions  # the next read starts without a scan
    assert collected == b"".join(stored(b, base_offset=i) for i, b in enumerate(batches))


def test_a_read_end_survives_a_burst_of_appends(
    open_log: LogOpener, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A consumer at the log end reads again after more appends than the position
    cache holds (a share group's next ShareFetch after many small Produce requests):
    its read starts where the last one ended, without an index lookup or a scan."""
    log = open_log(index_interval_bytes=1 << 30)  # no index entries: lookups would scan
    batches = [make_batch(1, value_size=50, seed=i) for i in range(3 * READ_POSITIONS_CACHED)]
    append(log, batches[0])
    read = log.read(0, max_bytes=1 << 20)
    offset = read.headers[-1].next_offset
    for batch in batches[1:]:
        append(log, batch)

    def located(_segment: Segment, _offset: int) -> int | None:
        raise AssertionError("the read's start was looked up")

    monkeypatch.setattr(Segment, "locate", located)
    read = log.read(offset, max_bytes=len(batches[1]))
    assert read.records == stored(batches[1], base_offset=1)


def test_reads_use_the_sparse_index(open_log: LogOpener) -> None:
    log = open_log(index_interval_bytes=300)
    batches = [make_batch(1, value_size=100, seed=i) for i in range(40)]
    for batch in batches:
        append(log, batch)
    active = log._segments[-1]
    assert 5 < len(active.index) < 40
    log._read_positions.clear()
    log._append_positions.clear()
    for offset in (0, 7, 23, 39):
        assert log.read(offset, max_bytes=1).records == stored(batches[offset], base_offset=offset)


def test_log_append_time_sets_timestamps_and_crc(open_log: LogOpener, clock: ManualClock) -> None:
    log = open_log(message_timestamp_type="LogAppendTime")
    clock.advance(42)
    result = append(log, make_batch(3, timestamp_ms=5))
    assert result.log_append_time_ms == clock.wall_ms()
    read = log.read(0, max_bytes=1 << 20)
    header = read.headers[0]
    assert header.attributes & TIMESTAMP_TYPE_MASK
    assert header.max_timestamp == clock.wall_ms()
    assert compute_crc(read.records, header) == header.crc


def test_offset_for_timestamp_and_max_timestamp(open_log: LogOpener) -> None:
    log = open_log(segment_bytes=600, index_interval_bytes=0)
    assert log.offset_for_timestamp(0) is None
    assert log.max_timestamp() is None
    for i in range(12):
        append(
            log, make_batch(2, value_size=100, timestamp_ms=BASE_TIMESTAMP_MS + 1000 * i, seed=i)
        )
    assert len(log.segment_base_offsets()) > 2
    assert log.offset_for_timestamp(0) == (0, BASE_TIMESTAMP_MS + 1)
    assert log.offset_for_timestamp(BASE_TIMESTAMP_MS + 1) == (0, BASE_TIMESTAMP_MS + 1)
    assert log.offset_for_timestamp(BASE_TIMESTAMP_MS + 2) == (2, BASE_TIMESTAMP_MS + 1001)
    assert log.offset_for_timestamp(BASE_TIMESTAMP_MS + 7000) == (14, BASE_TIMESTAMP_MS + 7001)
    assert log.offset_for_timestamp(BASE_TIMESTAMP_MS + 11_002) is None
    assert log.max_timestamp() == (22, BASE_TIMESTAMP_MS + 11_001)
    log.delete_records_before(15)
    assert log.offset_for_timestamp(0) == (15, BASE_TIMESTAMP_MS + 7001)


def test_timestamps_out_of_order_still_find_the_first_batch(open_log: LogOpener) -> None:
    log = open_log(index_interval_bytes=0)
    for i, ts in enumerate([100, 50, 300, 200, 400]):
        append(log, make_batch(1, timestamp_ms=ts, seed=i))
    assert log.offset_for_timestamp(60) == (0, 100)
    assert log.offset_for_timestamp(150) == (2, 300)
    assert log.offset_for_timestamp(350) == (4, 400)
    assert log.max_timestamp() == (4, 400)


def test_a_failed_write_is_a_storage_error_and_leaves_the_log_intact(
    open_log: LogOpener, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = open_log()
    first = make_batch(1)
    append(log, first)

    def failing_pwritev(fd: int, buffers: object, position: int) -> int:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(os, "pwritev", failing_pwritev)
        with pytest.raises(LogError) as info:
            append(log, make_batch(1, seed=1))
    assert info.value.code == ErrorCode.kafka_storage_error
    assert "No space left" in str(info.value)
    assert log.log_end_offset == 1
    append(log, make_batch(1, seed=2))
    assert log.read(0, max_bytes=1 << 20).headers[-1].base_offset == 1


def test_a_failed_fsync_takes_the_partition_offline(
    open_log: LogOpener, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = open_log(flush_messages=1)

    def failing_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", failing_fsync)
        with pytest.raises(LogError) as info:
            append(log, make_batch(1))
    assert info.value.code == ErrorCode.kafka_storage_error
    with pytest.raises(LogError) as again:
        log.read(0, max_bytes=100)
    assert again.value.code == ErrorCode.kafka_storage_error
    assert "offline" in str(again.value)


def test_flush_loaded_makes_a_crashed_process_unsynced_tail_durable(
    open_log: LogOpener, log_dir: Path
) -> None:
    """A crash between a write and its fsync leaves the tail in the page cache only;
    the reopened log has written nothing, yet `flush_loaded` fsyncs that tail (what
    the transaction coordinator does before acting on its state topic)."""
    disk = Disk(log_dir.parent)
    with disk.installed():
        log = open_log()
        disk.settle()
        append(log, make_batch(3))
        log.abandon()  # the crash: nothing fsynced
        reopened = open_log()
        reopened.flush()  # nothing written since the open: no fsync
        assert disk.unflushed_bytes() > 0
        reopened.flush_loaded()
        assert disk.unflushed_bytes() == 0
    assert reopened.log_end_offset == 3


def test_closed_log_refuses_use(open_log: LogOpener) -> None:
    log = open_log()
    log.close()
    with pytest.raises(LogError) as info:
        append(log, make_batch(1))
    assert info.value.code == ErrorCode.unknown_topic_or_partition


def test_files_are_kafka_style(open_log: LogOpener, log_dir: Path) -> None:
    log = open_log(segment_bytes=300)
    for i in range(3):
        append(log, make_batch(1, value_size=200, seed=i))
    log.close()
    names = sorted(p.name for p in log_dir.iterdir())
    assert "00000000000000000000.log" in names
    assert "00000000000000000000.index" in names
    assert "00000000000000000000.timeindex" in names
    assert "00000000000000000003.snapshot" in names
    assert "clean-shutdown" in names
