"""The index file formats and the file primitives."""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from pathlib import Path

import pytest

from shoal.log import fileio
from shoal.log.api import LogError
from shoal.log.index import OffsetIndex, TimeIndex
from shoal.protocol.errors import ErrorCode
from tests.unit.log.batches import append, make_batch
from tests.unit.log.conftest import LogOpener


def test_offset_index_round_trip_in_kafka_format() -> None:
    index = OffsetIndex(1000)
    for i in range(50):
        index.append(1000 + 3 * i, 100 * i)
    data = index.to_bytes()
    assert len(data) == 50 * 8
    assert struct.unpack_from(">iI", data, 8 * 7) == (21, 700)
    loaded = OffsetIndex.from_bytes(1000, data, file_size=5000)
    assert loaded is not None and loaded.to_bytes() == data
    assert loaded.lookup(999) == (1000, 0)
    assert loaded.lookup(1000) == (1000, 0)
    assert loaded.lookup(1022) == (1021, 700)
    assert loaded.lookup(10**9) == (1147, 4900)
    assert OffsetIndex.from_bytes(1000, data, file_size=4900) is None  # points past the end
    assert OffsetIndex.from_bytes(1000, data[:-3], file_size=5000) is None
    swapped = data[8:16] + data[:8] + data[16:]
    assert OffsetIndex.from_bytes(1000, swapped, file_size=5000) is None


def test_time_index_round_trip_in_kafka_format() -> None:
    index = TimeIndex(10)
    for i, ts in enumerate([5, 5, 7, 6, 9]):
        index.maybe_append(ts, 10 + 2 * i)
    assert len(index) == 3  # only rising timestamps are kept
    data = index.to_bytes()
    assert struct.unpack_from(">qi", data, 12) == (7, 4)
    loaded = TimeIndex.from_bytes(10, data, next_offset=20)
    assert loaded is not None and loaded.last() == (9, 18)
    assert loaded.start_offset_for(5) == 10
    assert loaded.start_offset_for(8) == 14
    assert loaded.start_offset_for(100) == 18
    assert TimeIndex.from_bytes(10, data, next_offset=18) is None


def test_pwritev_all_continues_short_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.pwritev

    def stingy(fd: int, buffers: Sequence[bytes | memoryview], position: int) -> int:
        return real(fd, [memoryview(buffers[0])[:3]], position)

    monkeypatch.setattr(os, "pwritev", stingy)
    path = tmp_path / "f"
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        parts: list[bytes | memoryview] = [b"hello", b"", memoryview(b"big world"), b"!" * 2000]
        assert fileio.pwritev_all(fd, parts, 0) == 2014
    finally:
        os.close(fd)
    assert path.read_bytes() == b"hellobig world" + b"!" * 2000


def test_pwritev_all_refuses_a_write_of_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "pwritev", lambda fd, buffers, position: 0)
    fd = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT)
    try:
        with pytest.raises(OSError, match="no progress"):
            fileio.pwritev_all(fd, [b"abc", b"def"], 0)
        assert fileio.pwritev_all(fd, [b"", b""], 0) == 0  # nothing to write: no call
    finally:
        os.close(fd)


def test_write_atomic_replaces_whole_files(tmp_path: Path) -> None:
    path = tmp_path / "x"
    fileio.write_atomic(path, b"one")
    fileio.write_atomic(path, b"two")
    assert path.read_bytes() == b"two"
    assert [p.name for p in tmp_path.iterdir()] == ["x"]


def test_storage_errors_name_the_context() -> None:
    with pytest.raises(LogError) as info, fileio.storage_errors("reading thing"):
        raise OSError(5, "Input/output error")
    assert info.value.code == ErrorCode.kafka_storage_error
    assert "reading thing" in str(info.value)


def test_segment_read_equals_pread_exact_with_short_reads_and_the_file_end(
    open_log: LogOpener, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Segment.read` does pread_exact's first read inline (the acquisition's read
    path): whatever the kernel hands back per call, it answers as pread_exact does."""
    log = open_log()
    append(log, make_batch(5, seed=1), make_batch(3, seed=2))
    segment = log._segments[-1]
    size = segment.size_bytes
    cases = [(0, size), (7, 50), (size - 10, 40), (size, 10), (0, size + 100)]
    expected = [fileio.pread_exact(segment.fd, n, at) for at, n in cases]
    assert [segment.read(at, n) for at, n in cases] == expected
    real = os.pread
    monkeypatch.setattr(os, "pread", lambda fd, n, at: real(fd, min(n, 9), at))
    assert [segment.read(at, n) for at, n in cases] == expected
