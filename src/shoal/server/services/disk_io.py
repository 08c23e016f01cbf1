"""The broker's blocking disk work, run in worker threads; its outcome taken back on the loop.

The partition log (log/) hands its blocking work to its caller as data (log/flush.py,
docs/design/disk-io.md): a `FlushPlan` to fsync in any thread and then `finish_flush` on the
owner, and paths a deferred deletion set aside, to remove in any thread. `DiskIO`
owns the broker's worker threads for that work (at most `limits.DISK_IO_THREADS_MAX`
run at once, the rest queue in order; an injected `concurrent.futures.Executor`
instead, as the simulator's) and is the one way the server uses them:

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
- `write_atomic(path, data)` replaces a small durable file (`log.fileio.write_atomic`:
  temporary file, fsync, rename, directory fsync) in a worker. Writes of one path
  run one after the other in the order they were asked for (the next starts when
  the previous ended, failed or not): two writes of a file never share its temporary
  file nor land out of order. `run(work)` runs any other blocking work (a topic's
  `TopicWrite`, log/topic_writes.py) and gives back its result or its exception.
- `changes` is the broker's one `ChangeLane`: the metadata and config changes of the
  admin APIs (topics, dynamic configs, group configs, ACLs, quotas, SCRAM
  credentials) run in it one at a time, in arrival order, each to its end (read the
  current state, decide, write durably off the loop, adopt in memory) even if its
  requester goes away meanwhile. As in Kafka's controller, a change is decided on
  the state every earlier change left and answered once it is durable; a request
  that only reads (Metadata, DescribeConfigs, DescribeAcls, an authorization check)
  sees the last adopted state, never a change whose write is still in flight. At
  `limits.ADMIN_CHANGES_PENDING_MAX` changes pending (only requests abandoned by
  their clients can queue past one per connection) `run` refuses a new one with
  `ChangeLaneFull`, and the connection closes with the reason logged.
- `close()` waits for the lane's changes, then for everything started, then stops the
  threads (shutdown, before the logs close). Work started after `close` runs in
  place, on the caller's thread.

Invariants: log methods run only on the loop (`finish_flush` in a done callback);
only `FlushPlan.run`, `remove_paths`, `write_atomic` and the work given to `run` (a
`TopicWrite`, which opens logs nobody holds until it is finished on the loop) run
in a worker; every plan started is finished exactly once, after its `run` returned
(or, if its thread never ran it, discarded by `finish_flush`, which counts its records
as unflushed again).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from shoal import limits
from shoal.clock import measure_ns
from shoal.log.api import LogError
from shoal.log.fileio import remove_paths, write_atomic
from shoal.log.flush import FlushPlan
from shoal.log.manager import LogManager
from shoal.log.partition import PartitionLog

log = logging.getLogger(__name__)

T = TypeVar("T")


class ChangeLaneFull(Exception):
    """`limits.ADMIN_CHANGES_PENDING_MAX` changes are pending: a new one is refused."""


class ChangeLane:
    """Changes run one at a time, in arrival order, each in its own task so that it
    runs to its end even when its caller is cancelled. See the module docstring."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def pending(self) -> int:
        """Changes started and not yet ended (running or waiting their turn)."""
        return len(self._tasks)

    async def run(self, change: Callable[[], Awaitable[T]]) -> T:
        """Run `change()` after every change started before it ended; its result or
        exception. Cancelling the caller leaves the change running. Call on the loop.
        Never call `run` from inside a change (it would wait for itself). Raises
        `ChangeLaneFull` (the change not started) at the pending bound."""
        if self.pending >= limits.ADMIN_CHANGES_PENDING_MAX:
            raise ChangeLaneFull(
                f"{self.pending} admin changes pending "
                f"(limits.ADMIN_CHANGES_PENDING_MAX): change refused"
            )

        async def in_turn() -> T:
            async with self._lock:
                return await change()

        task = asyncio.get_running_loop().create_task(in_turn())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(_mark_retrieved)
        return await asyncio.shield(task)

    async def idle(self) -> None:
        """Wait until every change started (and any they led to) has ended."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))


class DiskIO:
    """Worker threads for the logs' fsyncs and removals and the stores' durable writes,
    and the admin changes' lane. See the module docstring."""

    def __init__(
        self,
        *,
        threads_max: int = limits.DISK_IO_THREADS_MAX,
        observe_flush_s: Callable[[float], None] | None = None,
        executor: Executor | None = None,
    ) -> None:
        """`observe_flush_s` is told each fsync's duration in seconds (metrics; called
        in the worker thread). `executor` runs the work (default: `threads_max` worker
        threads); the simulator gives one that runs it on the loop at a time of its
        choosing (shoal/sim/shell_disk.py)."""
        if threads_max < 1:
            raise ValueError(f"DiskIO needs at least one thread, not {threads_max}")
        self.threads_max = threads_max
        self._executor = executor or ThreadPoolExecutor(
            max_workers=threads_max, thread_name_prefix="shoal-disk-io"
        )
        self._running: set[asyncio.Future[Any]] = set()
        self._flushing: dict[PartitionLog, set[asyncio.Future[None]]] = {}
        """Per log, the flushes started and not yet finished."""
        self._flush_pass: asyncio.Future[list[BaseException | None]] | None = None
        self._writes: dict[Path, asyncio.Future[None]] = {}
        """Per path, the last atomic write asked for and not yet ended."""
        self.changes = ChangeLane()
        """The admin APIs' metadata and config changes (see the module docstring)."""
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

    def write_atomic(self, path: Path, data: bytes) -> asyncio.Future[None]:
        """Replace `path` with `data` durably in a worker, once every earlier write of
        `path` ended; the future raises the write's OSError. Cancelling it cancels
        nothing: the write still happens. Call on the loop."""
        loop = asyncio.get_running_loop()
        written: asyncio.Future[None] = loop.create_future()
        written.add_done_callback(_mark_retrieved)

        def start(_previous: object = None) -> None:
            _settle(self._start(lambda: write_atomic(path, data)), written)

        previous = self._writes.get(path)
        if previous is None or previous.done():
            start()
        else:
            previous.add_done_callback(start)
        self._writes[path] = written

        def forget(done: asyncio.Future[None]) -> None:
            if self._writes.get(path) is done:
                del self._writes[path]

        written.add_done_callback(forget)
        waiter = asyncio.shield(written)
        waiter.add_done_callback(_mark_retrieved)
        return waiter

    def run(self, work: Callable[[], T]) -> asyncio.Future[T]:
        """Run `work` in a worker; the future has its result or raises its exception.
        Cancelling it cancels nothing: the work runs to its end. Call on the loop."""
        waiter = asyncio.shield(self._start(work))
        waiter.add_done_callback(_mark_retrieved)
        return waiter

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
        """Wait for the lane's changes and every piece of work started (the atomic
        writes still waiting their turn too), then stop the threads."""
        await self.changes.idle()
        while self._running or self._writes:
            await asyncio.wait({*self._running, *self._writes.values()})
        self._closed = True
        self._executor.shutdown(wait=True)

    def _start(self, work: Callable[[], T]) -> asyncio.Future[T]:
        loop = asyncio.get_running_loop()
        if self._closed:
            log.warning("disk I/O after close runs on the event loop: %r", work)
            ran: asyncio.Future[T] = loop.create_future()
            try:
                ran.set_result(work())
            except (OSError, LogError) as exc:  # handed to the waiter, as a worker's
                ran.set_exception(exc)
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


def _settle(source: asyncio.Future[None], target: asyncio.Future[None]) -> None:
    """Give `target` the outcome of `source` once it is done."""

    def copy(done: asyncio.Future[None]) -> None:
        if target.done():
            return
        if done.cancelled():
            target.cancel()
        elif (exc := done.exception()) is not None:
            target.set_exception(exc)
        else:
            target.set_result(None)

    source.add_done_callback(copy)


def _mark_retrieved(future: asyncio.Future[Any]) -> None:
    """Work nobody awaits any more (a cancelled request) must not warn "exception never
    retrieved": a failed flush was logged by its partition, which went offline; a
    failed write or change was logged by the one that asked for it."""
    if not future.cancelled():
        future.exception()
