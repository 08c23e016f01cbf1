"""Opening a partition log after a clean shutdown, a crash, or damage."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shoal.log.segment import Segment
from shoal.protocol.record_batch import BatchHeader
from tests.unit.log.batches import BASE_TIMESTAMP_MS, append, make_batch, stored
from tests.unit.log.conftest import LogOpener


def _log_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.log"))


def _fill(open_log: LogOpener, count: int, **config: object) -> tuple[list[bytes], int]:
    log = open_log(**config)
    batches = [make_batch(2, value_size=120, seed=i) for i in range(count)]
    for batch in batches:
        append(log, batch)
    end = log.log_end_offset
    log.abandon()
    return batches, end


def _expected(batches: list[bytes]) -> bytes:
    return b"".join(stored(b, base_offset=2 * i) for i, b in enumerate(batches))


def test_clean_close_and_reopen_keeps_everything(open_log: LogOpener, log_dir: Path) -> None:
    log = open_log(segment_bytes=1000)
    batches = [make_batch(2, value_size=120, seed=i) for i in range(20)]
    for batch in batches:
        append(log, batch)
    log.close()
    assert (log_dir / "clean-shutdown").exists()
    reopened = open_log(segment_bytes=1000)
    assert not (log_dir / "clean-shutdown").exists()
    assert reopened.log_end_offset == 40
    assert reopened.read(0, max_bytes=1 << 20).records == _expected(batches)
    assert append(reopened, make_batch(1, seed=99)).base_offset == 40


def test_crash_without_close_keeps_acknowledged_batches(open_log: LogOpener) -> None:
    batches, end = _fill(open_log, 20, segment_bytes=1000)
    log = open_log(segment_bytes=1000)
    assert log.log_end_offset == end == 40
    assert log.read(0, max_bytes=1 << 20).records == _expected(batches)


@pytest.mark.parametrize("cut", [1, 30, 61, 100])
def test_recovery_truncates_a_torn_tail(
    open_log: LogOpener, log_dir: Path, cut: int, caplog: pytest.LogCaptureFixture
) -> None:
    batches, _ = _fill(open_log, 10, segment_bytes=1000)
    active = _log_files(log_dir)[-1]
    size = active.stat().st_size
    os.truncate(active, size - cut)
    with caplog.at_level(logging.WARNING):
        log = open_log(segment_bytes=1000)
    assert log.log_end_offset == 18  # the last batch (offsets 18-19) was torn
    assert log.read(0, max_bytes=1 << 20).records == _expected(batches[:9])
    assert any(
        str(active) in r.getMessage() and "position" in r.getMessage() for r in caplog.records
    )
    assert active.stat().st_size == size - len(stored(batches[-1], base_offset=18))
    result = append(log, make_batch(1, seed=77))
    assert result.base_offset == 18
    assert log.read(18, max_bytes=1 << 20).records == stored(make_batch(1, seed=77), base_offset=18)


def test_recovery_truncates_a_corrupt_crc_tail(
    open_log: LogOpener, log_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    batches, _ = _fill(open_log, 10, segment_bytes=1_000_000)
    active = _log_files(log_dir)[-1]
    data = bytearray(active.read_bytes())
    last_batch_start = len(data) - len(batches[-1])
    data[last_batch_start - 50] ^= 0xFF  # inside the records of the 9th batch
    active.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING):
        log = open_log(segment_bytes=1_000_000)
    assert log.log_end_offset == 16
    assert log.read(0, max_bytes=1 << 20).records == _expected(batches[:8])
    assert any("truncating" in r.getMessage() for r in caplog.records)
    assert append(log, make_batch(1)).base_offset == 16


def test_clean_marker_skips_crc_scan_but_checks_the_tail(
    open_log: LogOpener, log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = open_log()
    for i in range(5):
        append(log, make_batch(1, seed=i))
    log.close()
    scans: list[bool] = []
    real_scan = Segment.scan

    def spy(
        self: Segment, *, verify_crc: bool, index_interval_bytes: int, contiguous: bool = False
    ) -> int | None:
        scans.append(verify_crc)
        return real_scan(
            self,
            verify_crc=verify_crc,
            index_interval_bytes=index_interval_bytes,
            contiguous=contiguous,
        )

    monkeypatch.setattr(Segment, "scan", spy)
    reopened = open_log()
    assert scans == []
    assert reopened.log_end_offset == 5
    reopened.close()
    # A torn tail behind a clean marker (the marker lied) is still found.
    active = _log_files(log_dir)[-1]
    os.truncate(active, active.stat().st_size - 3)
    again = open_log()
    assert scans == [True]
    assert again.log_end_offset == 4


@pytest.mark.parametrize("damage", ["delete", "garbage", "truncate", "wrong-entry"])
def test_indexes_are_rebuilt_when_missing_or_damaged(
    open_log: LogOpener, log_dir: Path, damage: str
) -> None:
    log = open_log(segment_bytes=2000, index_interval_bytes=200)
    batches = [
        make_batch(2, value_size=120, seed=i, timestamp_ms=BASE_TIMESTAMP_MS + 10 * i)
        for i in range(30)
    ]
    for batch in batches:
        append(log, batch)
    log.close()
    for index in sorted(log_dir.glob("*.index")) + sorted(log_dir.glob("*.timeindex")):
        if damage == "delete":
            index.unlink()
        elif damage == "garbage":
            index.write_bytes(os.urandom(index.stat().st_size + 3))
        elif damage == "truncate":
            index.write_bytes(index.read_bytes()[:5])
        elif index.suffix == ".index":
            data = bytearray(index.read_bytes())
            data[-1] ^= 0x01  # last entry points one byte off its batch
            index.write_bytes(bytes(data))
    reopened = open_log(segment_bytes=2000, index_interval_bytes=200)
    assert reopened.log_end_offset == 60
    assert reopened.read(0, max_bytes=1 << 20).records == _expected(batches)
    for offset in range(0, 60, 7):
        want = stored(batches[offset // 2], base_offset=offset - offset % 2)
        assert reopened.read(offset, max_bytes=1).records == want
    for k in (0, 9, 17, 29):
        assert reopened.offset_for_timestamp(BASE_TIMESTAMP_MS + 10 * k + 1) == (
            2 * k,
            BASE_TIMESTAMP_MS + 10 * k + 1,
        )
    assert reopened.max_timestamp() == (58, BASE_TIMESTAMP_MS + 291)
    # Rebuilt sealed indexes were written back (the active one's are written at close).
    sealed = sorted(log_dir.glob("*.index"))[:-1]
    assert sealed and all(p.stat().st_size % 8 == 0 and p.stat().st_size for p in sealed)


def test_damaged_middle_index_entry_is_caught_when_read(open_log: LogOpener, log_dir: Path) -> None:
    log = open_log(index_interval_bytes=0)
    batches = [make_batch(1, value_size=50, seed=i) for i in range(10)]
    for batch in batches:
        append(log, batch)
    log.close()
    index = log_dir / f"{0:020d}.index"
    data = bytearray(index.read_bytes())
    data[5 * 8 + 7] ^= 0x01  # entry 5's position, off by one; still increasing
    index.write_bytes(bytes(data))
    reopened = open_log(index_interval_bytes=0)
    assert reopened.read(5, max_bytes=1).records == stored(batches[5], base_offset=5)


def test_log_start_offset_survives_restart(open_log: LogOpener) -> None:
    log = open_log(segment_bytes=1000)
    for i in range(20):
        append(log, make_batch(2, value_size=120, seed=i))
    assert log.delete_records_before(13) == 13
    log.abandon()
    reopened = open_log(segment_bytes=1000)
    assert reopened.log_start_offset == 13
    assert reopened.read(13, max_bytes=1).headers[0].base_offset == 12


def test_crash_between_checkpoint_and_segment_deletion(open_log: LogOpener, log_dir: Path) -> None:
    log = open_log(segment_bytes=1000)
    for i in range(20):
        append(log, make_batch(2, value_size=120, seed=i))
    bases = log.segment_base_offsets()
    log.abandon()
    (log_dir / "log-start-offset.checkpoint").write_text(f"1\n{bases[2]}\n")
    reopened = open_log(segment_bytes=1000)
    assert reopened.log_start_offset == bases[2]
    assert reopened.segment_base_offsets() == bases[2:]
    assert not (log_dir / f"{bases[0]:020d}.log").exists()


def test_log_start_beyond_recovered_end_restarts_at_log_start(
    open_log: LogOpener, log_dir: Path
) -> None:
    log = open_log()
    for i in range(5):
        append(log, make_batch(1, seed=i))
    log.delete_records_before(5)
    log.abandon()
    active = _log_files(log_dir)[-1]
    os.truncate(active, 0)  # the unflushed data was lost in a power cut
    reopened = open_log()
    assert reopened.log_start_offset == reopened.log_end_offset == 5
    assert append(reopened, make_batch(1)).base_offset == 5


def test_a_lost_sealed_tail_leaves_a_gap_that_reads_skip(
    open_log: LogOpener, log_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = open_log(segment_bytes=1000)
    batches = [make_batch(2, value_size=120, seed=i) for i in range(20)]
    for batch in batches:
        append(log, batch)
    bases = log.segment_base_offsets()
    log.abandon()
    first = _log_files(log_dir)[0]
    last_batch = len(stored(batches[0], base_offset=0))
    os.truncate(first, first.stat().st_size - last_batch)
    with caplog.at_level(logging.WARNING):
        reopened = open_log(segment_bytes=1000)
    assert any("missing" in r.getMessage() for r in caplog.records)
    gap = bases[1] - 2
    read = reopened.read(gap, max_bytes=1 << 20)
    assert read.headers[0].base_offset == bases[1]
    assert reopened.log_end_offset == 40


def test_leftover_files_are_removed(open_log: LogOpener, log_dir: Path) -> None:
    log = open_log()
    append(log, make_batch(1))
    log.close()
    (log_dir / "topics.json.tmp").write_text("x")
    (log_dir / f"{99:020d}.index").write_bytes(b"")
    (log_dir / f"{99:020d}.snapshot").write_bytes(b"junk")
    reopened = open_log()
    names = {p.name for p in log_dir.iterdir()}
    assert "topics.json.tmp" not in names
    assert f"{99:020d}.index" not in names
    assert f"{99:020d}.snapshot" not in names  # beyond the log end offset
    assert reopened.log_end_offset == 1


@pytest.mark.parametrize("jump", [1, -1])
def test_a_base_offset_out_of_line_in_the_active_segment_is_cut_off(
    open_log: LogOpener, log_dir: Path, jump: int
) -> None:
    """The base offset lies outside the CRC: the active segment (which the cleaner never
    rewrites, docs/design/compaction.md) must hold contiguous offsets, so a batch that does not
    continue the one before it is damage, cut off with what follows."""
    batches, _ = _fill(open_log, 4)
    active = _log_files(log_dir)[-1]
    data = bytearray(active.read_bytes())
    third = 2 * len(stored(batches[0], base_offset=0))
    offset = int.from_bytes(data[third : third + 8], "big")
    data[third : third + 8] = (offset + jump).to_bytes(8, "big")
    active.write_bytes(bytes(data))
    reopened = open_log()
    assert reopened.log_end_offset == 4
    assert reopened.read(0, max_bytes=1 << 20).records == _expected(batches[:2])


def test_a_crash_rescans_only_the_active_segment(
    open_log: LogOpener, log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Kafka recovers only the segments past its recovery point; here every sealed
    # segment was fsynced at its roll, so after a crash only the active one is read
    # batch by batch (CRC) and the sealed ones only from their last index entry
    # (docs/performance/startup.md, "Recovery after kill -9").
    config = {"segment_bytes": 20_000, "index_interval_bytes": 1024}
    batches, end = _fill(open_log, 400, **config)
    segments = _log_files(log_dir)
    assert len(segments) >= 5
    scanned: list[tuple[int, bool]] = []
    walked: dict[int, int] = {}
    real_scan, real_headers = Segment.scan, Segment.headers

    def scan(self: Segment, **kwargs: Any) -> int | None:
        scanned.append((self.base_offset, kwargs["verify_crc"]))
        return real_scan(self, **kwargs)

    def headers(self: Segment, position: int = 0, **kwargs: Any) -> Iterator[BatchHeader]:
        walked[self.base_offset] = walked.get(self.base_offset, 0) + self.size_bytes - position
        return real_headers(self, position, **kwargs)

    monkeypatch.setattr(Segment, "scan", scan)
    monkeypatch.setattr(Segment, "headers", headers)
    log = open_log(**config)
    active = Segment.open_existing(log_dir, int(segments[-1].name.removesuffix(".log")))
    assert scanned == [(active.base_offset, True)]
    batch_bytes = max(len(stored(b, base_offset=0)) for b in batches)
    for path in segments[:-1]:
        base = int(path.name.removesuffix(".log"))
        assert walked.get(base, 0) <= 1024 + batch_bytes, (path.name, walked)
    assert log.log_end_offset == end
    assert log.read(0, max_bytes=1 << 30).records == _expected(batches)
