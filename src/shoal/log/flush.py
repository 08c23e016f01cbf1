"""An fsync as data: made on the log's owner, run on any thread, finished on the owner.

Owns `Unflushed` (what a partition wrote since its last fsync began: the flush
policy's inputs) and `FlushPlan`, the one way the log package lets its caller move an
fsync of a partition's active segment off the event loop (the log itself stays free
of threads and asyncio):

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
  descriptor: a plan made right after an append makes that append durable;
- a plan with a `directory` fsyncs it after the file: the partition's first flush since
  it was opened makes its directory's entries (the active segment's among them)
  durable too, as Kafka's `LocalLog.flush` flushes the directory when the flushed
  segments include a new one (docs/performance/startup.md).
"""

from __future__ import annotations

import os
from pathlib import Path

from shoal.log.fileio import fsync_directory


class Unflushed:
    """Records, bytes and the monotonic time of the oldest of them, written since the
    last fsync began (a plan made takes them; a plan never run gives them back)."""

    __slots__ = ("records", "since_ms", "size_bytes")

    def __init__(self, *, records: int = 0, size_bytes: int = 0, since_ms: int | None = None):
        self.records = records
        self.size_bytes = size_bytes
        self.since_ms = since_ms

    @property
    def empty(self) -> bool:
        return self.records == 0 and self.since_ms is None

    def add(self, *, records: int, size_bytes: int, since_ms: int | None) -> None:
        self.records += records
        self.size_bytes += size_bytes
        if self.since_ms is None or (since_ms is not None and since_ms < self.since_ms):
            self.since_ms = since_ms

    def older_than(self, *, age_ms: int, now_ms: int) -> bool:
        return self.since_ms is not None and now_ms - self.since_ms >= age_ms

    def take(self) -> Unflushed:
        """A copy of the counts, which restart from zero."""
        taken = Unflushed(records=self.records, size_bytes=self.size_bytes, since_ms=self.since_ms)
        self.records, self.size_bytes, self.since_ms = 0, 0, None
        return taken


class FlushPlan:
    """fsync of one file through a private duplicate descriptor."""

    __slots__ = (
        "_fds",
        "covers",
        "directory",
        "done",
        "end_offset",
        "error",
        "path",
        "visible_from",
    )

    def __init__(
        self,
        *,
        fd: int,
        path: Path,
        end_offset: int,
        covers: Unflushed,
        directory: Path | None = None,
    ) -> None:
        self._fds = [os.dup(fd)]
        self.path = path
        self.directory = directory
        """fsynced after the file when set (the log's directory, not yet durable)."""
        self.end_offset = end_offset
        """Every record below this offset is on disk once `run` succeeded."""
        self.covers = covers
        """What the plan makes durable that no earlier flush did (the policy's inputs)."""
        self.done = False
        """`run` completed (successfully or with `error`)."""
        self.error: OSError | None = None
        self.visible_from = -1
        """For a plan an append deferred (the flush policy called for it): the high
        watermark while it is pending (PartitionLog.high_watermark); else -1."""

    def __repr__(self) -> str:
        state = "done" if self.done else ("pending" if self._fds else "claimed")
        return f"FlushPlan({self.path}, below offset {self.end_offset}, {state})"

    def run(self) -> None:
        """fsync the file (then the `directory`, if any), then close the duplicate. Safe
        on any thread; a second call
        (or a call after `discard`) does nothing. Never raises: see `error`."""
        fd = self._claim()
        if fd is None:
            return
        try:
            os.fsync(fd)
            if self.directory is not None:
                fsync_directory(self.directory)
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
