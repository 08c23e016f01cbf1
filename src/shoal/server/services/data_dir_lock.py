"""The data directory's lock: one broker process per data directory.

Like Kafka (its LogManager locks `.lock` in each log directory with
FileChannel.tryLock, an fcntl record lock on Linux, and refuses to start when another
process holds it), `shoal serve` takes an exclusive fcntl lock on `<data dir>/.lock`
before it reads or recovers anything there, and holds it for the life of the process.
A second process on the same directory stops at start-up with a message naming the
directory and the holder's PID, which the holder writes into the file. The kernel
drops the lock when its process ends, however it ends (SIGKILL too), so a restart
after a crash takes it again; the stale PID in the file is then overwritten.
"""

from __future__ import annotations

import fcntl
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)

LOCK_FILE = ".lock"
"""The lock file's name in the data directory (Kafka's name too)."""


class DataDirLocked(OSError):
    """Another process holds the data directory's lock."""

    def __init__(self, data_dir: Path, holder: int | None) -> None:
        who = f"process {holder}" if holder is not None else "another process"
        super().__init__(
            f"data directory {data_dir} is in use: {who} holds its lock "
            f"{data_dir / LOCK_FILE} (is another broker running on it?)"
        )
        self.data_dir = data_dir
        self.holder = holder


@contextmanager
def data_dir_lock(data_dir: Path) -> Iterator[Path]:
    """Hold the exclusive lock on `data_dir` (created if missing) while the block runs;
    raises DataDirLocked at once if another process holds it."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except (BlockingIOError, PermissionError) as exc:
            raise DataDirLocked(data_dir.resolve(), _holder(fd)) from exc
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        log.info("locked data directory %s (%s)", data_dir.resolve(), path.name)
        yield path
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _holder(fd: int) -> int | None:
    """The PID the holder wrote into the lock file, if it reads as one."""
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError as exc:
        log.warning("could not read the data directory lock's holder: %s", exc)
        return None
    return int(text) if text.isdigit() else None
