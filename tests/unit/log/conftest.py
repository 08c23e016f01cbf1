"""Fixtures for partition-log tests: a manual clock and a log opener that cleans up."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from shoal.clock import ManualClock
from shoal.log.partition import PartitionLog

LogOpener = Callable[..., PartitionLog]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "topic-0"


@pytest.fixture
def open_log(log_dir: Path, clock: ManualClock) -> Iterator[LogOpener]:
    """open_log(**config) opens the partition log in `log_dir`; config keys use '_'
    for '.', e.g. open_log(segment_bytes=1000)."""
    opened: list[PartitionLog] = []

    def opener(directory: Path | None = None, **config: Any) -> PartitionLog:
        settings = {key.replace("_", "."): value for key, value in config.items()}
        log = PartitionLog.open(directory=directory or log_dir, config=settings, clock=clock)
        opened.append(log)
        return log

    yield opener
    for log in opened:
        log.abandon()


@pytest.fixture
def fsync_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts os.fsync calls (and still performs them)."""
    import os

    calls: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        calls.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    return calls
