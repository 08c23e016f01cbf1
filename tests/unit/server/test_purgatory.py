"""The purgatory's wake-ups: plain waiters all woken, one waiter per queue per notify
(longest parked first), a woken waiter standing for its queue until it runs, and
deadlines that answer False without swallowing a later notify."""

from __future__ import annotations

import asyncio
import time

from shoal.server.services.purgatory import Purgatory


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_a_notify_wakes_every_plain_waiter() -> None:
    async def run() -> list[bool]:
        purgatory = Purgatory()
        waiters = [asyncio.create_task(purgatory.wait(["k"], timeout_ms=5_000)) for _ in range(3)]
        await _settle()
        purgatory.notify("k")
        return list(await asyncio.gather(*waiters))

    assert asyncio.run(run()) == [True, True, True]


def test_a_notify_wakes_the_longest_parked_waiter_of_each_queue_only() -> None:
    async def run() -> None:
        purgatory = Purgatory()
        a1 = asyncio.create_task(purgatory.wait(["k"], timeout_ms=5_000, queue="a"))
        await _settle()
        a2 = asyncio.create_task(purgatory.wait(["k"], timeout_ms=5_000, queue="a"))
        b1 = asyncio.create_task(purgatory.wait(["k"], timeout_ms=5_000, queue="b"))
        plain = asyncio.create_task(purgatory.wait(["k"], timeout_ms=5_000))
        await _settle()
        purgatory.notify("k")
        await _settle()
        assert a1.done() and b1.done() and plain.done()
        assert not a2.done(), "the second waiter of queue a stays parked"
        assert purgatory.parked == 1
        purgatory.notify("k")
        assert await a2 is True

    asyncio.run(run())


def test_a_woken_waiter_stands_for_its_queue_until_it_runs() -> None:
    async def run() -> None:
        purgatory = Purgatory()
        first = asyncio.create_task(purgatory.wait(["k1", "k2"], timeout_ms=5_000, queue="g"))
        await _settle()
        second = asyncio.create_task(purgatory.wait(["k1", "k2"], timeout_ms=5_000, queue="g"))
        await _settle()
        purgatory.notify("k1")
        purgatory.notify("k2")  # before the first has run: it will see both
        await _settle()
        assert first.done() and not second.done()
        second.cancel()

    asyncio.run(run())


def test_a_deadline_answers_false_and_leaves_the_queue_to_the_next_waiter() -> None:
    async def run() -> None:
        purgatory = Purgatory()
        short = asyncio.create_task(purgatory.wait(["k"], timeout_ms=10, queue="g"))
        await _settle()
        long = asyncio.create_task(purgatory.wait(["k"], timeout_ms=5_000, queue="g"))
        await asyncio.sleep(0.05)
        assert short.done() and await short is False
        purgatory.notify("k")
        assert await long is True
        assert purgatory.parked == 0

    asyncio.run(run())


def test_a_waiter_expired_but_not_yet_run_does_not_swallow_a_notify() -> None:
    async def run() -> None:
        purgatory = Purgatory()
        late = asyncio.create_task(purgatory.wait(["k"], timeout_ms=10, queue="g"))
        await _settle()
        other = asyncio.create_task(purgatory.wait(["k"], timeout_ms=5_000, queue="g"))
        await _settle()
        time.sleep(0.02)  # the deadline passes while the loop is busy
        await asyncio.sleep(0)  # the loop queues the expiry behind this task
        await asyncio.sleep(0)  # the expiry ran; the late waiter has not
        assert not late.done()
        purgatory.notify("k")
        assert await late is False
        assert await other is True

    asyncio.run(run())


def test_waiting_says_whether_anything_is_parked_on_the_keys() -> None:
    """What a fetch that took records asks before checking what it leaves behind."""

    async def run() -> None:
        purgatory = Purgatory()
        assert not purgatory.waiting(["k", "j"])
        parked = asyncio.create_task(purgatory.wait(["k", "i"], timeout_ms=5_000, queue="g"))
        await _settle()
        assert purgatory.waiting(["j", "k"]) and purgatory.waiting(["i"])
        assert not purgatory.waiting(["j"])
        purgatory.notify("k")
        assert await parked
        assert not purgatory.waiting(["k", "i"]), "a waiter leaves every key it parked on"

    asyncio.run(run())
