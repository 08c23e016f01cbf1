"""Where long-polling requests wait for something to happen.

A parked request waits on a set of keys (for Fetch, `(topic, partition)`) until one of
them is notified or its deadline passes. Producers notify the partitions they appended
to. Waiters are futures; notifying wakes every waiter of the key once. The number of
parked requests is bounded by connections (one request in flight per connection).
A waiter's result is the `shoal.clock.measure_ns` of its notify, for the latency trace's
"purgatory wake" (server/latency_trace.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Iterable

from shoal.clock import measure_ns
from shoal.server.latency_trace import TRACE


class Purgatory:
    def __init__(self) -> None:
        self._waiters: dict[Hashable, set[asyncio.Future[int]]] = {}
        self._closed = False

    @property
    def parked(self) -> int:
        return len({id(f) for fs in self._waiters.values() for f in fs})

    async def wait(self, keys: Iterable[Hashable], *, timeout_ms: int) -> bool:
        """Wait until one of `keys` is notified (True) or `timeout_ms` passes (False)."""
        if self._closed or timeout_ms <= 0:
            return False
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        keys = list(keys)
        for key in keys:
            self._waiters.setdefault(key, set()).add(future)
        try:
            with TRACE.stage("purgatory parked"):
                notified_ns = await asyncio.wait_for(future, timeout_ms / 1000)
            if TRACE.enabled:
                TRACE.record("purgatory wake", (measure_ns() - notified_ns) / 1e6)
            return True
        except TimeoutError:
            return False
        finally:
            for key in keys:
                waiters = self._waiters.get(key)
                if waiters is not None:
                    waiters.discard(future)
                    if not waiters:
                        del self._waiters[key]

    def notify(self, key: Hashable) -> None:
        waiters = self._waiters.get(key)
        if not waiters:
            return
        now_ns = measure_ns()
        for future in waiters:
            if not future.done():
                future.set_result(now_ns)

    def close(self) -> None:
        """Wake everything now (shutdown): parked requests answer with what they have."""
        self._closed = True
        for waiters in self._waiters.values():
            for future in waiters:
                if not future.done():
                    future.set_result(measure_ns())
