"""The simulator's disk executor: the broker's disk work run on the loop, late.

The broker hands its blocking disk work (fsyncs, removals, atomic file writes,
server/disk_io.py) to an executor. In production that is worker threads; here
`SimExecutor` runs each piece on the simulated loop after a delay drawn from the
run's generator (a slow disk now and then: `slow_disk`), in the context of the
process that asked for it, so that a crash before the delay ends means the work
never happened (an fsync the process never got to make). No thread, no real wait.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

from shoal.sim.faults import Faults
from shoal.sim.loop import SimLoop

T = TypeVar("T")

DISK_NS = (50_000, 2_000_000)
"""A piece of disk work takes 50 microseconds to 2 ms."""
SLOW_DISK_NS = (20_000_000, 500_000_000)
"""A slow one, 20 to 500 ms."""


class SimExecutor(Executor):
    """See the module docstring."""

    def __init__(self, loop: SimLoop, rng: random.Random, faults: Faults) -> None:
        self._loop = loop
        self._rng = rng
        self._faults = faults
        self.ran = 0

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        if self._faults.fires("slow_disk"):
            delay_ns = self._rng.randint(*SLOW_DISK_NS)
        else:
            delay_ns = self._rng.randint(*DISK_NS)

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            self.ran += 1
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiter, as a worker's
                future.set_exception(exc)
            else:
                future.set_result(result)

        self._loop.call_later(delay_ns / 1e9, run)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        pass
