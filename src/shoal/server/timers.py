"""The broker's one timer driver: every deadline the cores leave to the server.

A core never sleeps; it says when it next needs to run. A **timer source** exposes
`next_deadline_ms(now_ms) -> int | None` (None = nothing armed) and `fire(now_ms)`;
its name is used in logs. `PeriodicTimer` is a source whose deadline is computed
from an interval (read at each re-arm, so a changed config applies from the next
period). The sources of the running broker: share lock expiry, delayed-redelivery
wake-ups and share idle unload (server/share_service.py), group session expiry and
initialisation retry (server/group_service.py), share coordinator pruning and cold snapshots
(server/share_state.py), log retention (`log.retention.check.interval.ms`) and the
log flush check (every `FLUSH_CHECK_INTERVAL_MS`) (server/broker.py).

Two parts:

- `Schedule` is sans-I/O: which sources are due at `now_ms` and the earliest
  deadline, given the sources and their failures. A source whose `fire` raises is
  logged with its name and backed off: its deadline is held at least
  `backoff_ms` (`TIMER_FAILURE_BACKOFF_MS`) away, and the backoff ends with its next
  successful firing.
- `TimerDriver` is the single asyncio task: fire what is due, sleep until the
  earliest deadline on the injected clock's `monotonic_ms`, wake early when
  `rearm()` is called (the services call it after each operation that may have moved
  a deadline).

Invariant: a source fires only when its deadline (or its backoff, whichever is
later) is <= now; every source due at `now_ms` fires once per `fire_due` call, in
registration order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Protocol

from shoal.clock import Clock
from shoal.server.latency_trace import TRACE

log = logging.getLogger(__name__)

TIMER_FAILURE_BACKOFF_MS = 1_000
"""After a source's `fire` raised, wait at least this long before firing it again."""
FLUSH_CHECK_INTERVAL_MS = 1_000
"""How often the time-based log flush (`flush.ms`) is checked."""


class TimerSource(Protocol):
    """Something with deadlines the timer driver fires."""

    @property
    def name(self) -> str: ...

    def next_deadline_ms(self, now_ms: int) -> int | None:
        """The monotonic ms at which `fire` should next run; None = nothing armed."""
        ...

    def fire(self, now_ms: int) -> None:
        """Do what is due at `now_ms`."""
        ...


class DeadlineTimer:
    """A source made of two functions: the deadline, and what to do when due."""

    def __init__(
        self,
        name: str,
        *,
        deadline: Callable[[int], int | None],
        action: Callable[[int], object],
    ) -> None:
        self._name = name
        self._deadline = deadline
        self._action = action

    @property
    def name(self) -> str:
        return self._name

    def next_deadline_ms(self, now_ms: int) -> int | None:
        return self._deadline(now_ms)

    def fire(self, now_ms: int) -> None:
        self._action(now_ms)


class PeriodicTimer:
    """A source due every `interval_ms()` ms, first one interval after it is first
    asked (the driver's start). The next period starts when it fires."""

    def __init__(
        self, name: str, *, interval_ms: Callable[[], int], action: Callable[[int], object]
    ) -> None:
        self._name = name
        self._interval_ms = interval_ms
        self._action = action
        self._next_ms: int | None = None

    @property
    def name(self) -> str:
        return self._name

    def next_deadline_ms(self, now_ms: int) -> int | None:
        if self._next_ms is None:
            self._next_ms = now_ms + max(1, self._interval_ms())
        return self._next_ms

    def fire(self, now_ms: int) -> None:
        self._next_ms = now_ms + max(1, self._interval_ms())
        self._action(now_ms)


class Schedule:
    """The sans-I/O part of the driver: due sources, earliest deadline, backoff."""

    def __init__(self, *, backoff_ms: int = TIMER_FAILURE_BACKOFF_MS) -> None:
        assert backoff_ms > 0
        self._backoff_ms = backoff_ms
        self._sources: list[TimerSource] = []
        self._backoff_until: dict[int, int] = {}
        """Index of a failed source -> monotonic ms before which it does not fire."""

    def add(self, *sources: TimerSource) -> None:
        self._sources.extend(sources)

    @property
    def sources(self) -> tuple[TimerSource, ...]:
        return tuple(self._sources)

    def _deadline_of(self, index: int, now_ms: int) -> int | None:
        deadline = self._sources[index].next_deadline_ms(now_ms)
        if deadline is None:
            return None
        return max(deadline, self._backoff_until.get(index, deadline))

    def next_deadline_ms(self, now_ms: int) -> int | None:
        """The earliest deadline over every source (backoffs included)."""
        deadlines = [
            d for i in range(len(self._sources)) if (d := self._deadline_of(i, now_ms)) is not None
        ]
        return min(deadlines, default=None)

    def fire_due(self, now_ms: int) -> list[str]:
        """Fire every source due at `now_ms`; returns the names of those that fired
        (a failure is logged and backed off, and counts as fired)."""
        return self._fire(now_ms, self._deadlines(now_ms))

    def fire_due_or_next(self, now_ms: int) -> list[str] | int | None:
        """`fire_due(now_ms)` asking each source its deadline once: the names fired
        if any did (a firing may move any source's deadline: ask `next_deadline_ms`
        then), else the earliest deadline (None = nothing armed). The driver runs
        this after every `rearm`, i.e. after most share requests, where nothing is
        due: one pass over the sources instead of two."""
        deadlines = self._deadlines(now_ms)
        fired = self._fire(now_ms, deadlines)
        if fired:
            return fired
        return min((d for d in deadlines if d is not None), default=None)

    def _deadlines(self, now_ms: int) -> list[int | None]:
        return [self._deadline_of(i, now_ms) for i in range(len(self._sources))]

    def _fire(self, now_ms: int, deadlines: list[int | None]) -> list[str]:
        fired: list[str] = []
        for index, deadline in enumerate(deadlines):
            if deadline is None or deadline > now_ms:
                continue
            source = self._sources[index]
            fired.append(source.name)
            try:
                if TRACE.enabled:
                    with TRACE.stage(f"timer {source.name}"):
                        source.fire(now_ms)
                else:
                    source.fire(now_ms)
            except Exception:  # keep the other timers alive; logged with context
                log.exception(
                    "timer %s failed at %d ms; next try in %d ms",
                    source.name,
                    now_ms,
                    self._backoff_ms,
                )
                self._backoff_until[index] = now_ms + self._backoff_ms
            else:
                self._backoff_until.pop(index, None)
        return fired


class TimerDriver:
    """The one asyncio task that fires the `Schedule` on the clock (module docstring)."""

    def __init__(self, *, clock: Clock, schedule: Schedule | None = None) -> None:
        self._clock = clock
        self.schedule = schedule if schedule is not None else Schedule()
        self._rearm = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def add(self, *sources: TimerSource) -> None:
        self.schedule.add(*sources)
        self.rearm()

    def rearm(self) -> None:
        """A deadline may have moved: recompute the sleep."""
        self._rearm.set()

    def start(self) -> None:
        """Start the task; call inside the running loop."""
        assert self._task is None, "timer driver already started"
        self._task = asyncio.create_task(self._run(), name="timers")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        while True:
            self._rearm.clear()
            now = self._clock.monotonic_ms()
            deadline = self.schedule.fire_due_or_next(now)
            if isinstance(deadline, list):  # some fired: deadlines may have moved
                now = self._clock.monotonic_ms()
                deadline = self.schedule.next_deadline_ms(now)
            if deadline is not None and deadline <= now:
                await asyncio.sleep(0)  # more came due while firing: let others run
                continue
            # asyncio.timeout, not wait_for: 3.11's wait_for swallows a cancellation
            # that arrives just as the event is set, and stop() would hang.
            timeout_s = None if deadline is None else (deadline - now) / 1000
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout_s):
                    await self._rearm.wait()
