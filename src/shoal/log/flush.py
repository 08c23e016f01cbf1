"""An fsync as data: made on the log's owner, run on any thread, finished on the owner.

Owns `FlushPlan`, the one way the log package lets its caller move an fsync of a
partition's active segment off the event loop (the log itself stays free of threads
and asyncio):

    plan = log.flush_plan()                  # owner (event loop): cheap, dup()s the fd
    if plan is not None:
        await asyncio.to_thread(plan.run)    # any thread: fsync, then close the dup
        log.finish_flush(plan)               # owner: raises LogError if the fsync failed

Invariants:
- the plan fsyncs the file through its own duplicate of the segment's descriptor, so
  the log may roll, close or delete the segment meanwhile: the duplicate keeps the
  file open, and nobody but the plan ever closes it;
- whoever first claims the duplicate (`run`, or `discard` for a plan never run) is the
  only one to use and close it: the claim is one `list.pop`, atomic under the GIL, so
  `discard` on the owner never closes a descriptor a worker thread is fsyncing;
- `run` never raises: an OSError (fsync or close) is kept in `error` for
  `PartitionLog.finish_flush` to turn into KAFKA_STORAGE_ERROR on the owner;
- fsync covers every byte written to the file before `run` starts, through any
  descriptor: a plan made right after an append makes that append durable.
"""

from __future__ import annotations

import os
from pathlib import Path


class FlushPlan:
    """fsync of one file through a private duplicate descriptor."""

    __slots__ = (
        "_fds",
        "done",
        "end_offset",
        "error",
        "path",
        "records",
        "since_ms",
        "size_bytes",
    )

    def __init__(
        self,
        *,
        fd: int,
        path: Path,
        end_offset: int,
        records: int,
        size_bytes: int,
        since_ms: int | None,
    ) -> None:
        self._fds = [os.dup(fd)]
        self.path = path
        self.end_offset = end_offset
        """Every record below this offset is on disk once `run` succeeded."""
        self.records = records
        """Records the plan covers that no earlier flush did (the flush policy's count)."""
        self.size_bytes = size_bytes
        """Bytes of those records."""
        self.since_ms = since_ms
        """Monotonic time of the oldest of those records (the flush policy's age)."""
        self.done = False
        """`run` completed (successfully or with `error`)."""
        self.error: OSError | None = None

    def __repr__(self) -> str:
        state = "done" if self.done else ("pending" if self._fds else "claimed")
        return f"FlushPlan({self.path}, below offset {self.end_offset}, {state})"

    def run(self) -> None:
        """fsync the file, then close the duplicate. Safe on any thread; a second call
        (or a call after `discard`) does nothing. Never raises: see `error`."""
        fd = self._claim()
        if fd is None:
            return
        try:
            os.fsync(fd)
        except OSError as exc:
            self.error = exc
        finally:
            self._close(fd)
            self.done = True

    def discard(self) -> bool:
        """Close the duplicate of a plan that was never run; False if `run` claimed it
        first (the running thread closes it)."""
        fd = self._claim()
        if fd is None:
            return False
        self._close(fd)
        return True

    def _claim(self) -> int | None:
        try:
            return self._fds.pop()
        except IndexError:
            return None

    def _close(self, fd: int) -> None:
        try:
            os.close(fd)
        except OSError as exc:
            if self.error is None:
                self.error = exc
