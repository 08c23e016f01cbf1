"""The stall watch (server/observability/stall_watch.py): a loop blocked past the threshold is
reported once, with its length, the stack that held the loop, and whether the main
thread spent the time on a CPU or sleeping."""

from __future__ import annotations

import asyncio
import time

from shoal.clock import measure_ns
from shoal.server.observability.stall_watch import StallWatch


def _busy_for(ms: float) -> None:
    end = measure_ns() + int(ms * 1e6)
    while measure_ns() < end:
        pass


async def _blocked_loop(watch: StallWatch) -> None:
    watch.start()
    await asyncio.sleep(0.05)
    _busy_for(60)
    await asyncio.sleep(0.05)
    time.sleep(0.06)  # blocking the loop without using a CPU
    await asyncio.sleep(0.05)
    await watch.stop()


def test_a_blocked_loop_is_reported_with_its_stack_and_cpu_split() -> None:
    watch = StallWatch(threshold_ms=20)
    asyncio.run(_blocked_loop(watch))
    long = [s for s in watch.stalls if s.length_ms >= 55]
    assert len(long) == 2, watch.report()
    busy, sleeping = sorted(long, key=lambda s: s.started_ms)
    assert any("_busy_for" in stack for stack in busy.stacks), busy.stacks
    assert busy.on_cpu_ms > sleeping.on_cpu_ms
    assert sleeping.on_cpu_ms < sleeping.length_ms / 2
    assert watch.report()[0].startswith(f"{len(watch.stalls)} stalls over 20")


def test_off_without_a_threshold() -> None:
    watch = StallWatch(threshold_ms=None)

    async def run() -> None:
        watch.start()
        _busy_for(30)
        await watch.stop()

    asyncio.run(run())
    assert watch.stalls == []
