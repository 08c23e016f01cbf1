"""A gate on `os.fsync` for the disk-work tests: holds every fsync made in a disk
worker thread until the test opens it, and counts those made anywhere else (on the
event loop's thread), so a test can tell work done off the loop from work that
wrongly stayed on it."""

from __future__ import annotations

import asyncio
import os
import threading

WORKER_PREFIX = "shoal-disk-io"
ENTER_TIMEOUT_S = 10.0


class FsyncGate:
    """Holds fsyncs made in disk worker threads until `open()`; then performs them, or
    fails them with EIO when `fail` is set. `outside` counts the fsyncs made in other
    threads (performed at once)."""

    def __init__(self) -> None:
        self._real = os.fsync
        self._opened = threading.Event()
        self._cond = threading.Condition()
        self.entered = 0
        self.outside = 0
        self.fail = False

    def fsync(self, fd: int) -> None:
        if not threading.current_thread().name.startswith(WORKER_PREFIX):
            self.outside += 1
            self._real(fd)
            return
        with self._cond:
            self.entered += 1
            self._cond.notify_all()
        self._opened.wait()
        if self.fail:
            raise OSError(5, "Input/output error (injected)")
        self._real(fd)

    def wait_entered(self, count: int) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self.entered >= count, timeout=ENTER_TIMEOUT_S)

    async def entered_async(self, count: int) -> bool:
        return await asyncio.to_thread(self.wait_entered, count)

    def open(self) -> None:
        self._opened.set()
