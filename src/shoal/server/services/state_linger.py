"""A coordinator's append linger in the running broker (`share.coordinator.append.linger.ms`
for `__share_group_state`): the sinks, the flush timer and the waiting.

The bookkeeping is the coordinator runtime's (coordinator/runtime.py, "Append
linger": marks, staged partitions, flush deadlines, reloading a partition whose
batch was lost). What stays here is the asyncio side:

- `sinks()`: with a linger of -1 (the default) the plain `LogRecordSink` per
  partition (one batch per write, written before the call returns); with 0 or more
  a `LingeringRecordSink` (coordinator/append_linger.py), whose `on_staged` rearms
  the broker's timer driver, so a linger of 0 flushes as soon as the request in
  hand yields;
- `timer_source()`: the flush timer, at the runtime's `flush_deadline`;
- waiting: a request takes `mark()` before its handler runs and, if it staged
  anything, awaits `written(mark)` before its response leaves
  (server/net/connection.py): nothing of a write reaches a client before its records
  are in the log. A failed flush fails the waiters with the `RecordSinkError`
  (their connections close: the client never hears of a success that was not
  written); the runtime has rebuilt that partition's shard from its log;
- `flush_all()` writes what is staged (shutdown, before the logs close).

Futures are per partition and batch, so a request waits only for the partitions
with staged writes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from shoal.clock import Clock
from shoal.coordinator.append_linger import LingeringRecordSink
from shoal.coordinator.log_sink import Encode, LogRecordSink
from shoal.coordinator.runtime import CoordinatorRuntime, RecordSink, RecordSinkError
from shoal.log.partition import PartitionLog
from shoal.server.services.timers import DeadlineTimer, TimerSource

log = logging.getLogger(__name__)

R = TypeVar("R")

NO_LINGER = -1
"""A linger of -1: every write is its own batch, at once."""


class StateAppendLinger:
    """A coordinator runtime's append linger, on the loop (module docstring)."""

    def __init__(
        self,
        *,
        clock: Clock,
        linger_ms: int,
        rearm: Callable[[], None] = lambda: None,
        name: str = "share-coordinator-append-linger",
    ) -> None:
        assert linger_ms >= NO_LINGER, linger_ms
        self._clock = clock
        self.linger_ms = linger_ms
        self._rearm = rearm
        self._name = name
        self._runtime: CoordinatorRuntime[Any, Any] | None = None
        self._batches: dict[int, asyncio.Future[None]] = {}
        """Per partition with staged records, resolved when they are written."""

    @property
    def enabled(self) -> bool:
        return self.linger_ms != NO_LINGER

    def sinks(
        self, partitions: Sequence[PartitionLog], *, encode: Encode[R]
    ) -> list[RecordSink[R]]:
        """One sink per partition, in order (module docstring)."""
        if not self.enabled:
            return [LogRecordSink(log=p, encode=encode, clock=self._clock) for p in partitions]
        return [
            LingeringRecordSink(
                log=partition,
                encode=encode,
                clock=self._clock,
                linger_ms=self.linger_ms,
                on_staged=self._rearm,
            )
            for partition in partitions
        ]

    def attach(self, runtime: CoordinatorRuntime[Any, Any]) -> None:
        """Follow `runtime`, whose partitions use `sinks()`."""
        self._runtime = runtime
        runtime.on_flushed(self._flushed)

    # ---- waiting for the log

    def staged(self, index: int) -> bool:
        """True while partition `index` has records staged but not yet in its log."""
        return self._runtime is not None and self._runtime.staged(index)

    def mark(self) -> int:
        """How many appends were staged so far (compare with `written`). Called twice
        per request: without a linger it is a constant 0."""
        if not self.enabled or self._runtime is None:
            return 0
        return self._runtime.appends_staged()

    async def written(self, mark: int) -> None:
        """Return once every write staged so far is in the log, if any was staged
        since `mark`; raises the `RecordSinkError` of a failed flush."""
        if self._runtime is None or self.mark() == mark:
            return
        waits = [self._batch(index) for index in self._runtime.unwritten()]
        for wait in waits:
            await asyncio.shield(wait)

    def _batch(self, index: int) -> asyncio.Future[None]:
        future = self._batches.get(index)
        if future is None:
            future = asyncio.get_running_loop().create_future()
            future.add_done_callback(_mark_retrieved)
            self._batches[index] = future
        return future

    def _flushed(self, index: int, failure: RecordSinkError | None) -> None:
        future = self._batches.pop(index, None)
        if future is None or future.done():
            return
        if failure is None:
            future.set_result(None)
        else:
            future.set_exception(failure)

    # ---- flushing

    def deadline_ms(self) -> int | None:
        return None if self._runtime is None else self._runtime.flush_deadline()

    def flush_due(self, now_ms: int) -> int:
        """Write every partition whose linger has passed; returns how many."""
        return 0 if self._runtime is None else self._runtime.flush_due(now_ms)

    def flush_all(self) -> None:
        """Write everything staged now (failures are reported as on a timer flush)."""
        if self._runtime is not None:
            self._runtime.flush_all()

    def timer_source(self) -> TimerSource:
        return DeadlineTimer(
            self._name, deadline=lambda _now: self.deadline_ms(), action=self.flush_due
        )


def _mark_retrieved(future: asyncio.Future[None]) -> None:
    """A batch nobody waits for (its requests were cancelled) must not warn
    "exception never retrieved": its failure was logged."""
    if not future.cancelled():
        future.exception()
