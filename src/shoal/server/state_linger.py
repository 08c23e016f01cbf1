"""The share coordinator's append linger in the running broker
(`share.coordinator.append.linger.ms`).

`StateAppendLinger` builds the sinks of `__share_group_state`'s partitions: with a
linger of -1 (the default) the plain `LogRecordSink` (one batch per state write,
written before the persister call returns); with a linger of 0 or more a
`LingeringRecordSink` (coordinator/append_linger.py) per partition, whose staged
writes go to the log as one batch when the linger has passed. It then:

- flushes them on the broker's one timer driver (`timer_source()`, a deadline timer
  at the earliest staged deadline; `rearm` is called when a partition starts a new
  batch, so a linger of 0 flushes as soon as the request in hand yields);
- lets a request wait until the state writes it made are in the log before its
  response leaves (`mark()` before the handler, `await written(mark)` after:
  server/connection.py). The share-partition leader commits a write's transition
  when the persister call returns, but nothing of it reaches a client before the
  records are written: the coordinator rule holds at the wire. A request that
  staged nothing (the mark unchanged) never waits;
- on a failed flush (the partition's log went offline) fails the waiting requests
  with the `RecordSinkError` (their connections close: the client never hears of
  a success that was not written) and rebuilds that partition's shard from its log
  (`reload`), since the shard had replayed the lost records;
- `flush_all()` writes what is staged (shutdown, before the logs close).

A parked waiter holds one future per partition at most; futures are per partition
and batch, so a request waits only for the partitions with staged writes.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Sequence

from shoal.clock import Clock
from shoal.coordinator.append_linger import LingeringRecordSink
from shoal.coordinator.log_sink import Encode, LogRecordSink
from shoal.coordinator.runtime import RecordSink, RecordSinkError
from shoal.log.partition import PartitionLog
from shoal.server.timers import DeadlineTimer, TimerSource
from shoal.share_coordinator.records import ShareCoordinatorRecord

log = logging.getLogger(__name__)

NO_LINGER = -1
"""`share.coordinator.append.linger.ms` = -1: every write is its own batch, at once."""


class StateAppendLinger:
    """Batching of share state writes (module docstring)."""

    def __init__(
        self, *, clock: Clock, linger_ms: int, rearm: Callable[[], None] = lambda: None
    ) -> None:
        assert linger_ms >= NO_LINGER, linger_ms
        self._clock = clock
        self.linger_ms = linger_ms
        self._rearm = rearm
        self._sinks: list[LingeringRecordSink[ShareCoordinatorRecord]] = []
        self._batches: dict[int, asyncio.Future[None]] = {}
        """Per partition with staged records, resolved when they are written."""
        self.reload: Callable[[int], object] = lambda _index: None
        """Rebuilds a partition's shard from its log (set once the coordinator exists)."""

    @property
    def enabled(self) -> bool:
        return self.linger_ms != NO_LINGER

    def sinks(
        self, partitions: Sequence[PartitionLog], *, encode: Encode[ShareCoordinatorRecord]
    ) -> list[RecordSink[ShareCoordinatorRecord]]:
        """One sink per partition, in order (module docstring)."""
        if not self.enabled:
            return [LogRecordSink(log=p, encode=encode, clock=self._clock) for p in partitions]
        assert not self._sinks, "sinks are built once"
        for index, partition in enumerate(partitions):
            self._sinks.append(
                LingeringRecordSink(
                    log=partition,
                    encode=encode,
                    clock=self._clock,
                    linger_ms=self.linger_ms,
                    on_staged=self._rearm,
                    on_flushed=functools.partial(self._flushed, index),
                )
            )
        return list(self._sinks)

    # ---- waiting for the log

    def staged(self, index: int) -> bool:
        """True while partition `index` has records staged but not yet in its log: its
        shard is ahead of the log, so what the shard no longer needs may still be needed
        if that batch is lost (pruning waits)."""
        if not self._sinks:
            return False
        sink = self._sinks[index]
        return sink.appends_written < sink.appends_staged

    def mark(self) -> int:
        """How many appends were staged so far (compare with `written`). Called twice
        per request: without a linger (no sinks) it is a constant 0."""
        if not self._sinks:
            return 0
        return sum(sink.appends_staged for sink in self._sinks)

    async def written(self, mark: int) -> None:
        """Return once every write staged so far is in the log, if any was staged
        since `mark`; raises the `RecordSinkError` of a failed flush."""
        if not self._sinks or self.mark() == mark:
            return
        waits = [
            self._batch(index)
            for index, sink in enumerate(self._sinks)
            if sink.appends_written < sink.appends_staged
        ]
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
        if failure is not None:
            log.error(
                "share state writes on __share_group_state-%d lost: %s; their requests "
                "fail and the partition's state is reloaded from its log",
                index,
                failure,
            )
            self._reload(index)
        if future is None or future.done():
            return
        if failure is None:
            future.set_result(None)
        else:
            future.set_exception(failure)

    def _reload(self, index: int) -> None:
        try:
            self.reload(index)
        except Exception:  # the log is offline: its shard's writes fail from now on anyway
            log.exception("reloading __share_group_state-%d after a lost write failed", index)

    # ---- flushing

    def deadline_ms(self) -> int | None:
        deadlines = [d for sink in self._sinks if (d := sink.deadline_ms) is not None]
        return min(deadlines, default=None)

    def flush_due(self, now_ms: int) -> int:
        """Write every partition whose linger has passed; returns how many."""
        return sum(sink.flush_due(now_ms) for sink in self._sinks)

    def flush_all(self) -> None:
        """Write everything staged now (failures are reported as on a timer flush)."""
        for sink in self._sinks:
            try:
                sink.flush()
            except RecordSinkError:
                pass  # reported through _flushed

    def timer_source(self) -> TimerSource:
        return DeadlineTimer(
            "share-coordinator-append-linger",
            deadline=lambda _now: self.deadline_ms(),
            action=self.flush_due,
        )


def _mark_retrieved(future: asyncio.Future[None]) -> None:
    """A batch nobody waits for (its requests were cancelled) must not warn
    "exception never retrieved": its failure was logged."""
    if not future.cancelled():
        future.exception()
