"""The logs' blocking disk work, run in worker threads; its outcome taken back on the loop.

The partition log (log/) hands its blocking work to its caller as data (log/flush.py,
docs/disk-io.md): a `FlushPlan` to fsync in any thread and then `finish_flush` on the
owner, and paths a deferred deletion set aside, to remove in any thread. `DiskIO`
owns the broker's worker threads for that work (at most `limits.DISK_IO_THREADS_MAX`
run at once, the rest queue in order) and is the one way the server uses them:

- `flush(log, plan)` starts the plan's fsync in a worker and returns a future that
  resolves once `log.finish_flush(plan)` has run on the loop, or raises its LogError
  (KAFKA_STORAGE_ERROR: the partition is offline). The plan is finished when its
  thread is done, whoever waits: a caller cancelled meanwhile (its connection closed
  mid-request) leaves nothing half done. A caller that acknowledges the append awaits
  the future first.
- `flushed(log)` waits for every flush of `log` started so far (an idempotent
  producer's retry answered as a duplicate must not be acknowledged before the
  original append's fsync, still running for a request whose connection was lost).
- `remove(paths)` removes files and directories set aside for deletion
  (`log.fileio.remove_paths`, which logs and skips what it cannot remove: opening the
  data directory removes leftovers again). Cancelling the returned future does not
  stop the removal.
- `flush_due(logs, now_ms)` is the background flusher's pass: it starts every plan
  `flush.ms` or the unflushed-bytes bound calls for. While a pass still runs, the next
  one is skipped (its data stays counted as unflushed, so the pass after picks it up):
  passes never overlap.
- `close()` waits for everything started, then stops the threads (shutdown, before
  the logs close). Work started after `close` runs in place, on the caller's thread.

Invariants: log methods run only on the loop (`finish_flush` in a done callback);
only `FlushPlan.run` and `remove_paths` run in a worker; every plan started is
finished exactly once, after its `run` returned (or, if its thread never ran it,
discarded by `finish_flush`, which counts its records as unflushed again).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from shoal import limits
from shoal.clock import measure_ns
from shoal.log.api import LogError
from shoal.log.fileio import remove_paths
from shoal.log.flush import FlushPlan
from shoal.log.manager import LogManager
from shoal.log.partition import PartitionLog

log = logging.getLogger(__name__)


class DiskIO:
    """Worker threads for the logs' fsyncs and removals. See the module docstring."""

    def __init__(
        self,
        *,
        threads_max: int = limits.DISK_IO_THREADS_MAX,
        observe_flush_s: Callable[[float], None] | None = None,
    ) -> None:
        """`observe_flush_s` is told each fsync's duration in seconds (metrics; called
        in the worker thread)."""
        if threads_max < 1:
            raise ValueError(f"DiskIO needs at least one thread, not {threads_max}")
        self.threads_max = threads_max
        self._executor = ThreadPoolExecutor(
            max_workers=threads_max, thread_name_prefix="shoal-disk-io"
        )
        self._running: set[asyncio.Future[None]] = set()
        self._flushing: dict[PartitionLog, set[asyncio.Future[None]]] = {}
        """Per log, the flushes started and not yet finished."""
        self._flush_pass: asyncio.Future[list[BaseException | None]] | None = None
        self._closed = False
        self._observe_flush_s = observe_flush_s

    @property
    def running(self) -> int:
        """Pieces of work started and not yet done (running or queued)."""
        return len(self._running)

    def flush(self, log: PartitionLog, plan: FlushPlan) -> asyncio.Future[None]:
        """Run `plan` in a worker, then `log.finish_flush(plan)` on the loop; the future
        resolves after that finish (or raises its LogError); cancelling it cancels
        nothing else. Call on the loop."""
        loop = asyncio.get_running_loop()
        finished: asyncio.Future[None] = loop.create_future()
        finished.add_done_callback(_mark_retrieved)

        def finish(_ran: object) -> None:
            try:
                log.finish_flush(plan)
            except LogError as exc:
                if not finished.done():
                    finished.set_exception(exc)
                return
            if not finished.done():
                finished.set_result(None)

        run = plan.run if self._observe_flush_s is None else _timed(plan.run, self._observe_flush_s)
        self._start(run).add_done_callback(finish)
        self._flushing.setdefault(log, set()).add(finished)
        finished.add_done_callback(lambda done: self._flushed(log, done))
        waiter = asyncio.shield(finished)  # a cancelled waiter leaves `finished` pending
        waiter.add_done_callback(_mark_retrieved)
        return waiter

    def flushed(self, log: PartitionLog) -> asyncio.Future[None]:
        """Resolves when every flush of `log` started so far is finished, or raises
        the LogError of the first that failed. Call on the loop."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiter.add_done_callback(_mark_retrieved)

        def settle(flushes: asyncio.Future[list[BaseException | None]]) -> None:
            if waiter.done():  # its awaiter was cancelled
                return
            failures = [outcome for outcome in flushes.result() if outcome is not None]
            if failures:
                waiter.set_exception(failures[0])
            else:
                waiter.set_result(None)

        pending = self._flushing.get(log, set())
        asyncio.gather(*pending, return_exceptions=True).add_done_callback(settle)
        return waiter

    def _flushed(self, log: PartitionLog, done: asyncio.Future[None]) -> None:
        flushing = self._flushing.get(log)
        if flushing is not None:
            flushing.discard(done)
            if not flushing:
                del self._flushing[log]

    def remove(self, paths: list[Path]) -> asyncio.Future[None]:
        """Remove `paths` in a worker; the future resolves when they are gone (or the
        failures logged). Call on the loop."""
        if not paths:
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            done.set_result(None)
            return done
        return asyncio.shield(self._start(lambda: remove_paths(paths)))

    def flush_due(self, logs: LogManager, *, now_ms: int) -> int:
        """Start the flusher's pass over `logs` (monotonic `now_ms`); returns how many
        fsyncs it started: 0 when none is due, or while the previous pass runs."""
        if self._flush_pass is not None and not self._flush_pass.done():
            log.debug("flush pass at %d ms skipped: the previous one is still running", now_ms)
            return 0
        plans = logs.flush_plans_due(now_ms=now_ms)
        if not plans:
            return 0
        flushes = [self.flush(partition_log, plan) for partition_log, plan in plans]
        # A failed fsync was logged by its partition, which is offline now.
        self._flush_pass = asyncio.gather(*flushes, return_exceptions=True)
        return len(flushes)

    async def close(self) -> None:
        """Wait for every piece of work started, then stop the threads."""
        while self._running:
            await asyncio.wait(set(self._running))
        self._closed = True
        self._executor.shutdown(wait=True)

    def _start(self, work: Callable[[], None]) -> asyncio.Future[None]:
        loop = asyncio.get_running_loop()
        if self._closed:
            log.warning("disk I/O after close runs on the event loop: %r", work)
            ran: asyncio.Future[None] = loop.create_future()
            work()
            ran.set_result(None)
            return ran
        running = loop.run_in_executor(self._executor, work)
        self._running.add(running)
        running.add_done_callback(self._running.discard)
        return running


def _timed(work: Callable[[], None], observe_s: Callable[[float], None]) -> Callable[[], None]:
    def run() -> None:
        started_ns = measure_ns()
        try:
            work()
        finally:
            observe_s((measure_ns() - started_ns) / 1e9)

    return run


def _mark_retrieved(future: asyncio.Future[None]) -> None:
    """A flush nobody awaits (a cancelled request) must not warn "exception never
    retrieved": its failure was logged by the partition, which went offline."""
    if not future.cancelled():
        future.exception()
