"""A full disk (ENOSPC) fails the append with KAFKA_STORAGE_ERROR and nothing else:
no partial batch stays in the segment, a segment roll that cannot create its files
leaves the active segment usable, and once there is space appends succeed again, in
the same process and after a reopen (docs/design/disk-io.md)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

import shoal.log.partition as partition_module
from shoal.log.api import LogError
from shoal.protocol.errors import ErrorCode
from tests.unit.log.batches import append, make_batch
from tests.unit.log.conftest import LogOpener


def _offsets(log: partition_module.PartitionLog) -> list[int]:
    return [h.base_offset for h in log.read(0, max_bytes=1 << 24).headers]


def test_a_partial_write_is_cut_off_and_appends_resume(
    open_log: LogOpener, log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = open_log()
    append(log, make_batch(3))
    size_before = sum(p.stat().st_size for p in log_dir.glob("*.log"))
    real_pwritev = os.pwritev
    calls = 0

    def half_then_full(fd: int, buffers: list[bytes], position: int) -> int:
        nonlocal calls
        calls += 1
        if calls == 1:  # the kernel takes some bytes, then the disk is full
            return real_pwritev(fd, [bytes(buffers[0])[:10]], position)
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(os, "pwritev", half_then_full)
        with pytest.raises(LogError) as info:
            append(log, make_batch(2, seed=1))
    assert info.value.code == ErrorCode.kafka_storage_error
    assert sum(p.stat().st_size for p in log_dir.glob("*.log")) == size_before
    append(log, make_batch(2, seed=2))  # space is back: no restart needed
    assert _offsets(log) == [0, 3]
    log.close()
    reopened = open_log()
    assert _offsets(reopened) == [0, 3]
    assert reopened.log_end_offset == 5


def test_a_roll_that_cannot_create_its_files_leaves_the_partition_online(
    open_log: LogOpener, log_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = open_log(segment_bytes=300)
    append(log, make_batch(1, value_size=150))

    def no_space(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(partition_module, "write_snapshot", no_space)
        with pytest.raises(LogError) as info:
            append(log, make_batch(1, value_size=150, seed=1))  # due to roll
    assert info.value.code == ErrorCode.kafka_storage_error
    assert "offline" not in str(info.value)
    assert _offsets(log) == [0]  # still readable
    append(log, make_batch(1, value_size=150, seed=2))  # the roll happens now
    assert _offsets(log) == [0, 1]
    assert len(list(log_dir.glob("*.log"))) == 2
    log.close()
    assert _offsets(open_log(segment_bytes=300)) == [0, 1]
