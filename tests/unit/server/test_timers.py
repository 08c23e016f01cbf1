"""The timer driver: the sans-I/O `Schedule` on a manual clock (which sources fire
when, periodic re-arming, failure backoff), and one asyncio run of `TimerDriver`."""

from __future__ import annotations

import asyncio
import logging

import pytest

from shoal.clock import ManualClock
from shoal.server.services.timers import (
    TIMER_FAILURE_BACKOFF_MS,
    DeadlineTimer,
    PeriodicTimer,
    Schedule,
    TimerDriver,
)


class Deadlines:
    """A source with a settable deadline that records its firings."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.deadline: int | None = None
        self.fired: list[int] = []
        self.fail = False
        self.asked = 0

    def next_deadline_ms(self, now_ms: int) -> int | None:
        self.asked += 1
        return self.deadline

    def fire(self, now_ms: int) -> None:
        self.fired.append(now_ms)
        if self.fail:
            raise RuntimeError("boom")
        self.deadline = None


def test_only_due_sources_fire_and_the_earliest_deadline_wins() -> None:
    a, b, idle = Deadlines("a"), Deadlines("b"), Deadlines("idle")
    schedule = Schedule()
    schedule.add(a, b, idle)
    a.deadline, b.deadline = 300, 100
    assert schedule.next_deadline_ms(0) == 100
    assert schedule.fire_due(99) == []
    assert schedule.fire_due(100) == ["b"]
    assert schedule.next_deadline_ms(100) == 300
    assert schedule.fire_due(500) == ["a"]
    assert a.fired == [500] and b.fired == [100] and idle.fired == []
    assert schedule.next_deadline_ms(500) is None


def test_fire_due_or_next_asks_each_source_once_when_nothing_is_due() -> None:
    """The driver's pass after a rearm: with nothing due it is the earliest deadline,
    from one question per source; when something fired, the names (deadlines may
    have moved: the driver asks `next_deadline_ms`)."""
    a, b = Deadlines("a"), Deadlines("b")
    schedule = Schedule()
    schedule.add(a, b)
    assert schedule.fire_due_or_next(0) is None
    a.deadline, b.deadline = 300, 100
    a.asked = b.asked = 0
    assert schedule.fire_due_or_next(99) == 100
    assert (a.asked, b.asked) == (1, 1)
    assert schedule.fire_due_or_next(100) == ["b"]
    assert b.fired == [100] and a.fired == []
    assert schedule.next_deadline_ms(100) == 300


def test_a_moved_deadline_is_seen_at_the_next_query() -> None:
    a = Deadlines("a")
    schedule = Schedule()
    schedule.add(a)
    assert schedule.next_deadline_ms(0) is None
    a.deadline = 40  # an operation armed a lock; the service calls rearm()
    assert schedule.next_deadline_ms(0) == 40


def test_periodic_timer_fires_every_interval_from_its_last_firing() -> None:
    fired: list[int] = []
    interval = [1000]
    periodic = PeriodicTimer("p", interval_ms=lambda: interval[0], action=fired.append)
    schedule = Schedule()
    schedule.add(periodic)
    assert schedule.next_deadline_ms(50) == 1050
    assert schedule.fire_due(1049) == []
    assert schedule.fire_due(1200) == ["p"]  # late: the next period starts now
    assert schedule.next_deadline_ms(1200) == 2200
    interval[0] = 10  # a changed interval applies from the next period
    assert schedule.fire_due(2200) == ["p"]
    assert schedule.next_deadline_ms(2200) == 2210
    assert fired == [1200, 2200]


def test_a_failing_source_is_logged_backed_off_and_the_others_still_fire(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bad, good = Deadlines("bad"), Deadlines("good")
    bad.deadline, good.deadline, bad.fail = 10, 10, True
    schedule = Schedule()
    schedule.add(bad, good)
    with caplog.at_level(logging.ERROR):
        assert schedule.fire_due(10) == ["bad", "good"]
    assert "timer bad failed" in caplog.text
    assert schedule.next_deadline_ms(10) == 10 + TIMER_FAILURE_BACKOFF_MS
    assert schedule.fire_due(10 + TIMER_FAILURE_BACKOFF_MS - 1) == []
    bad.fail = False
    assert schedule.fire_due(10 + TIMER_FAILURE_BACKOFF_MS) == ["bad"]
    assert bad.deadline is None and schedule.next_deadline_ms(2000) is None
    bad.deadline = 2000  # backoff ended with the success
    assert schedule.next_deadline_ms(2000) == 2000


def test_driver_fires_on_the_clock_and_wakes_on_rearm() -> None:
    clock = ManualClock()
    fired: list[int] = []
    deadline: list[int | None] = [None]

    def action(now_ms: int) -> None:
        fired.append(now_ms)
        deadline[0] = None

    async def main() -> None:
        driver = TimerDriver(clock=clock)
        driver.add(DeadlineTimer("t", deadline=lambda _now: deadline[0], action=action))
        driver.start()
        try:
            await asyncio.sleep(0.01)
            assert fired == []
            deadline[0] = 500
            clock.advance(500)
            driver.rearm()
            for _ in range(20):
                await asyncio.sleep(0)
                if fired:
                    break
            assert fired == [500]
            # Armed 5 ms ahead: the driver sleeps (real time) and re-checks the
            # clock, firing only once the clock has reached the deadline.
            deadline[0] = 505
            driver.rearm()
            await asyncio.sleep(0.03)
            assert fired == [500]
            clock.advance(5)
            await asyncio.sleep(0.03)
            assert fired == [500, 505]
        finally:
            await driver.stop()

    asyncio.run(main())


def test_a_targeted_pass_asks_only_the_named_sources_and_keeps_the_others_answers() -> None:
    """`fire_due_or_next(asking=...)`, the driver's pass after `rearm(source)`: the
    named sources (and any never asked) are asked; the others' deadlines are those
    they last gave, asked again only when that says they are due, and a source fires
    only when its own fresh answer says so."""
    a, b = Deadlines("a"), Deadlines("b")
    schedule = Schedule()
    schedule.add(a, b)
    a.deadline, b.deadline = 300, 100
    assert schedule.fire_due_or_next(0, asking=[a]) == 100, "never asked: b is asked"
    assert (a.asked, b.asked) == (1, 1)
    a.deadline = 50
    assert schedule.fire_due_or_next(0, asking=[a]) == 50
    assert (a.asked, b.asked) == (2, 1), "b's deadline is the one it last gave"
    b.deadline = 400  # moved later, unannounced: kept 100 says due at 100, asked again
    assert schedule.fire_due_or_next(100, asking=[]) == ["a"]
    assert (a.asked, b.asked) == (3, 2) and b.fired == [] and a.fired == [100]
    assert schedule.next_deadline_ms(100) == 400
    b.deadline = 200  # moved earlier, announced with a full pass
    assert schedule.fire_due_or_next(100) == 200


def test_driver_passes_are_shared_by_rearms_and_targeted_ones_ask_only_their_sources() -> None:
    clock = ManualClock()
    a, b = Deadlines("a"), Deadlines("b")

    async def main() -> None:
        driver = TimerDriver(clock=clock)
        driver.add(a, b)
        driver.start()
        try:
            await asyncio.sleep(0)
            asked = (a.asked, b.asked)
            assert asked == (1, 1), "the first pass asks every source once"
            for _ in range(5):
                driver.rearm(a)
            await asyncio.sleep(0)
            assert (a.asked, b.asked) == (2, 1), "five rearms, one pass, only a asked"
            driver.rearm()
            driver.rearm(a)
            await asyncio.sleep(0)
            assert (a.asked, b.asked) == (3, 2), "an untargeted rearm asks every source"
            a.deadline = clock.monotonic_ms()  # due now: fired by the pass
            driver.rearm(a)
            await asyncio.sleep(0)
            assert a.fired == [clock.monotonic_ms()] and b.fired == []
        finally:
            await driver.stop()
        driver.rearm()
        await asyncio.sleep(0.01)
        assert len(a.fired) == 1, "a stopped driver fires nothing"

    asyncio.run(main())


def test_driver_survives_a_source_whose_deadline_raises(caplog: pytest.LogCaptureFixture) -> None:
    clock = ManualClock()
    good = Deadlines("good")
    broken = [True]

    class Broken(Deadlines):
        def next_deadline_ms(self, now_ms: int) -> int | None:
            if broken[0]:
                raise RuntimeError("no deadline")
            return super().next_deadline_ms(now_ms)

    async def main() -> None:
        driver = TimerDriver(clock=clock)
        driver.add(Broken("broken"), good)
        with caplog.at_level(logging.ERROR):
            driver.start()
            await asyncio.sleep(0)
        assert "timer pass failed" in caplog.text
        broken[0] = False
        good.deadline = 0
        driver.rearm()
        await asyncio.sleep(0)
        assert good.fired == [0], "the driver still fires after the failed pass"
        await driver.stop()

    asyncio.run(main())


def test_a_targeted_pass_ignores_a_source_it_does_not_drive() -> None:
    """`rearm(source)` naming a source never added (a service used with another
    driver) asks nothing of it and still answers the driven ones' earliest deadline."""
    a, stranger = Deadlines("a"), Deadlines("stranger")
    schedule = Schedule()
    schedule.add(a)
    a.deadline, stranger.deadline = 70, 5
    assert schedule.fire_due_or_next(0, asking=[stranger]) == 70
    assert stranger.asked == 0 and stranger.fired == []
