"""Where long-polling requests wait for something to happen.

A parked request waits on a set of keys (for Fetch, `(topic, partition)`) until one of
them is notified or its deadline passes. Producers notify the partitions they appended
to. Waiters are futures, kept per key in the order they parked. The number of parked
requests is bounded by connections (one request in flight per connection).

A notify wakes every plain waiter of the key (each Fetch reads the records for
itself), but only the longest-parked waiter of each *queue* (`wait(queue=...)`): the
ShareFetches of one share group compete for the same records, and waking all of them
for one batch made all but one find nothing and park again. A queue waiter that was
woken (by any key) and has not run yet stands for its queue: a second notify does not
wake another. Whoever takes records in queue mode passes the wake on when some are
left (`ShareService`), so nothing waits for the next append.

A waiter's result is the `shoal.clock.measure_ns` of its notify (0 while the trace is
off), for the latency trace's "purgatory wake" (server/observability/latency_trace.py); the deadline
is a loop timer on the future itself, so a notify wakes the waiting task in one loop
pass (no `wait_for` wrapper).
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Iterable

from shoal.clock import measure_ns
from shoal.server.observability.latency_trace import TRACE, trace_woken

_TIMED_OUT = -1


def _expire(future: asyncio.Future[int]) -> None:
    if not future.done():
        future.set_result(_TIMED_OUT)


class Purgatory:
    def __init__(self) -> None:
        # key -> {waiter: its queue (None: a plain waiter)}, in parking order
        self._waiters: dict[Hashable, dict[asyncio.Future[int], Hashable | None]] = {}
        self._closed = False

    @property
    def parked(self) -> int:
        return len({id(f) for fs in self._waiters.values() for f in fs})

    async def wait(
        self, keys: Iterable[Hashable], *, timeout_ms: int, queue: Hashable | None = None
    ) -> bool:
        """Wait until one of `keys` is notified (True) or `timeout_ms` passes (False).
        With a `queue`, a notify wakes only the longest-parked waiter of that queue."""
        if self._closed or timeout_ms <= 0:
            return False
        loop = asyncio.get_running_loop()
        future: asyncio.Future[int] = loop.create_future()
        keys = list(keys)
        for key in keys:
            self._waiters.setdefault(key, {})[future] = queue
        timer = loop.call_later(timeout_ms / 1000, _expire, future)
        try:
            if TRACE.enabled:
                with TRACE.stage("purgatory parked"):
                    notified_ns = await future
            else:
                notified_ns = await future
            if notified_ns == _TIMED_OUT:
                return False
            if TRACE.enabled:
                TRACE.record("purgatory wake", (measure_ns() - notified_ns) / 1e6)
                trace_woken(notified_ns)
            return True
        finally:
            timer.cancel()
            for key in keys:
                waiters = self._waiters.get(key)
                if waiters is not None:
                    waiters.pop(future, None)
                    if not waiters:
                        del self._waiters[key]

    def waiting(self, keys: Iterable[Hashable]) -> bool:
        """Whether anything is parked on one of `keys`."""
        return not self._waiters.keys().isdisjoint(keys)  # one C call, no generator

    def notify(self, key: Hashable) -> None:
        waiters = self._waiters.get(key)
        if not waiters:
            return
        now_ns = measure_ns() if TRACE.enabled else 0  # only the trace reads it
        served: set[Hashable] = set()
        for future, queue in waiters.items():
            if queue is None:
                if not future.done():
                    future.set_result(now_ns)
            elif queue not in served:
                if not future.done():
                    future.set_result(now_ns)
                    served.add(queue)
                elif not future.cancelled() and future.result() != _TIMED_OUT:
                    served.add(queue)  # woken and not run yet: it stands for its queue

    def close(self) -> None:
        """Wake everything now (shutdown): parked requests answer with what they have."""
        self._closed = True
        for waiters in self._waiters.values():
            for future in waiters:
                if not future.done():
                    future.set_result(measure_ns())
