"""The broker's one timer driver: every deadline the cores leave to the server.

A core never sleeps; it says when it next needs to run. A **timer source** exposes
`next_deadline_ms(now_ms) -> int | None` (None = nothing armed) and `fire(now_ms)`;
its name is used in logs. `PeriodicTimer` is a source whose deadline is computed
from an interval (read at each re-arm, so a changed config applies from the next
period). The sources of the running broker: share lock expiry, delayed-redelivery
wake-ups and share idle unload (server/services/share_service.py), group session expiry and
initialisation retry (server/services/group_service.py), share coordinator pruning and cold
snapshots (server/services/share_state.py), log retention (`log.retention.check.interval.ms`) and
the log flush check (every `FLUSH_CHECK_INTERVAL_MS`) (server/broker.py).

Two parts:

- `Schedule` is sans-I/O: which sources are due at `now_ms` and the earliest
  deadline, given the sources and their failures. A source whose `fire` raises is
  logged with its name and backed off: its deadline is held at least
  `backoff_ms` (`TIMER_FAILURE_BACKOFF_MS`) away, and the backoff ends with its next
  successful firing.
- `TimerDriver` runs it on the loop without a task of its own: `rearm()` (the
  services call it after each operation that may have moved a deadline;
  `rearm(source, ...)` when only those sources' deadlines may have moved) schedules
  one pass for the loop's next iteration, shared by every rearm before it; a pass
  fires what is due on the injected clock's `monotonic_ms` and keeps one loop timer
  at the earliest deadline, moved only when that deadline moves. (Before, a task
  woke on an event and entered an `asyncio.timeout` per rearm, asking every source:
  5-8% of the broker's CPU at 1k share records/s.)

Invariant: a source fires only when its deadline (or its backoff, whichever is
later) is <= now; every source due at `now_ms` fires once per `fire_due` call, in
registration order.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection
from typing import Protocol

from shoal.clock import Clock
from shoal.server.observability.latency_trace import TRACE

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


class Rearm(Protocol):
    """The driver's `rearm` as the services get it: `rearm()` after an operation that
    may have moved any deadline, `rearm(source, ...)` when only those sources' may
    have (the others' are taken as last asked)."""

    def __call__(self, *sources: TimerSource) -> None: ...


def no_rearm(*_sources: TimerSource) -> None:
    """A `Rearm` that does nothing (a service used without a timer driver)."""


_NEVER = 1 << 62
"""A kept deadline meaning "nothing armed" (so that the earliest is one `min`)."""


class Schedule:
    """The sans-I/O part of the driver: due sources, earliest deadline, backoff.

    Every answer a source gives is kept (`_kept`, backoff applied), so that the
    driver's pass after a targeted `rearm(source)` asks only the named sources and
    takes the others' deadlines as last asked; a kept deadline that says "due" is
    asked again before the source fires (it fires only when its own answer says so)."""

    def __init__(self, *, backoff_ms: int = TIMER_FAILURE_BACKOFF_MS) -> None:
        assert backoff_ms > 0
        self._backoff_ms = backoff_ms
        self._sources: list[TimerSource] = []
        self._index: dict[int, int] = {}
        """id(source) -> its index."""
        self._kept: list[int] = []
        """Each source's deadline as it last said, backoff applied (`_NEVER`: none)."""
        self._unasked: set[int] = set()
        """Indexes of sources not asked since they were added or fired."""
        self._backoff_until: dict[int, int] = {}
        """Index of a failed source -> monotonic ms before which it does not fire."""

    def add(self, *sources: TimerSource) -> None:
        for source in sources:
            self._index[id(source)] = len(self._sources)
            self._unasked.add(len(self._sources))
            self._sources.append(source)
            self._kept.append(_NEVER)

    @property
    def sources(self) -> tuple[TimerSource, ...]:
        return tuple(self._sources)

    def _ask(self, index: int, now_ms: int) -> int | None:
        """Ask source `index` its deadline, with its backoff applied (and kept)."""
        deadline = self._sources[index].next_deadline_ms(now_ms)
        if deadline is not None and (until := self._backoff_until.get(index)) is not None:
            deadline = max(deadline, until)
        self._kept[index] = _NEVER if deadline is None else deadline
        return deadline

    def next_deadline_ms(self, now_ms: int) -> int | None:
        """The earliest deadline over every source (backoffs included)."""
        deadlines = self._deadlines(now_ms)
        return min((d for d in deadlines if d is not None), default=None)

    def fire_due(self, now_ms: int) -> list[str]:
        """Fire every source due at `now_ms`; returns the names of those that fired
        (a failure is logged and backed off, and counts as fired)."""
        return self._fire(now_ms, self._deadlines(now_ms))

    def fire_due_or_next(
        self, now_ms: int, *, asking: Collection[TimerSource] | None = None
    ) -> list[str] | int | None:
        """`fire_due(now_ms)` asking each source its deadline once: the names fired
        if any did (a firing may move any source's deadline: ask `next_deadline_ms`
        then), else the earliest deadline (None = nothing armed). The driver runs
        this after every `rearm`, i.e. after most share requests, where nothing is
        due: one pass over the sources instead of two. With `asking`, only those
        sources (and any not asked since added or fired) are asked; the others'
        deadlines are the ones they last gave, asked again only if that says they
        are due."""
        if asking is None:
            deadlines = self._deadlines(now_ms)
        else:
            fresh, self._unasked = self._unasked, set()
            for source in asking:
                index = self._index.get(id(source))
                if index is not None:  # a source never added has nothing armed here
                    fresh.add(index)
            for index in fresh:
                self._ask(index, now_ms)
            kept = self._kept
            earliest = min(kept, default=_NEVER)
            if earliest > now_ms:  # the common case: nothing due, one min
                return None if earliest == _NEVER else earliest
            deadlines = [
                self._ask(i, now_ms)
                if d <= now_ms and i not in fresh
                else None
                if d == _NEVER
                else d
                for i, d in enumerate(kept)
            ]  # due as last said: make sure
        fired = self._fire(now_ms, deadlines)
        if fired:
            return fired
        return min((d for d in deadlines if d is not None), default=None)

    def _deadlines(self, now_ms: int) -> list[int | None]:
        self._unasked = set()
        return [self._ask(i, now_ms) for i in range(len(self._sources))]

    def _fire(self, now_ms: int, deadlines: list[int | None]) -> list[str]:
        fired: list[str] = []
        for index, deadline in enumerate(deadlines):
            if deadline is None or deadline > now_ms:
                continue
            source = self._sources[index]
            fired.append(source.name)
            self._unasked.add(index)  # its deadline moves: asked at the next pass
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
    """Fires the `Schedule` on the clock from loop callbacks (module docstring): no
    task of its own. A `rearm` schedules one pass for the loop's next iteration
    (rearms before it runs share it); a pass fires what is due and keeps one loop
    timer handle at the earliest deadline, moved only when that deadline moves."""

    def __init__(self, *, clock: Clock, schedule: Schedule | None = None) -> None:
        self._clock = clock
        self.schedule = schedule if schedule is not None else Schedule()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._soon: asyncio.Handle | None = None
        """The pass scheduled for the loop's next iteration, if any."""
        self._sleep: asyncio.TimerHandle | None = None
        """The pass at `_armed_ms`, the earliest deadline, if any."""
        self._armed_ms: int | None = None
        self._asking: set[TimerSource] | None = set()
        """Sources whose deadlines may have moved since the last pass (None: any)."""

    def add(self, *sources: TimerSource) -> None:
        self.schedule.add(*sources)
        self.rearm()

    def rearm(self, *sources: TimerSource) -> None:
        """A deadline may have moved (only those of `sources`, when named): recompute
        the sleep in the loop's next iteration."""
        if not sources:
            self._asking = None
        elif self._asking is not None:
            self._asking.update(sources)
        if self._soon is None and self._loop is not None:
            self._soon = self._loop.call_soon(self._pass)

    def start(self) -> None:
        """Start firing; call inside the running loop."""
        assert self._loop is None, "timer driver already started"
        self._loop = asyncio.get_running_loop()
        self._asking = None
        self._soon = self._loop.call_soon(self._pass)

    async def stop(self) -> None:
        self._loop = None
        for handle in (self._soon, self._sleep):
            if handle is not None:
                handle.cancel()
        self._soon = self._sleep = None
        self._armed_ms = None

    def _pass(self) -> None:
        self._soon = None
        asking, self._asking = self._asking, set()
        now = self._clock.monotonic_ms()
        try:
            deadline = self.schedule.fire_due_or_next(now, asking=asking)
            if isinstance(deadline, list):  # some fired: deadlines may have moved
                now = self._clock.monotonic_ms()
                deadline = self.schedule.next_deadline_ms(now)
        except Exception:  # a source's deadline raised: keep the driver alive
            log.exception(
                "timer pass failed at %d ms; next try in %d ms", now, TIMER_FAILURE_BACKOFF_MS
            )
            self._asking = None
            deadline = now + TIMER_FAILURE_BACKOFF_MS
        self._arm(deadline, now)

    def _arm(self, deadline: int | None, now: int) -> None:
        loop = self._loop
        if loop is None:  # stopped while firing
            return
        if deadline is not None and deadline <= now:
            if self._soon is None:  # more came due while firing: let others run first
                self._soon = loop.call_soon(self._pass)
            return
        if deadline == self._armed_ms and self._sleep is not None:
            return  # the earliest deadline did not move
        if self._sleep is not None:
            self._sleep.cancel()
            self._sleep = None
        self._armed_ms = deadline
        if deadline is not None:
            self._sleep = loop.call_later((deadline - now) / 1000, self._woke)

    def _woke(self) -> None:
        self._sleep = None
        self._armed_ms = None
        if self._soon is None:
            self._pass()
