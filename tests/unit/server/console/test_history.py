"""The console's chart history: a ring buffer of samples with rates between them,
and the sampler the app's lifespan runs (started, sampling, stopped; a failing
sample skipped)."""

from __future__ import annotations

import asyncio

from starlette.applications import Starlette

from shoal.server.broker import Broker
from shoal.server.observability.console.history import ChartHistory, Sample, run_sampler
from shoal.server.observability.console.routes import Console


def _sample(wall_ms: int, records_in: float) -> Sample:
    return Sample(wall_ms=wall_ms, totals={"records_in": records_in}, gauges={"share_lag": 1.0})


def test_the_history_keeps_the_newest_samples_up_to_its_limit() -> None:
    history = ChartHistory(max_samples=3)
    for i in range(5):
        history.record(_sample(i * 1_000, i * 10.0))
    assert len(history) == 3
    series = history.series()
    assert series["t"] == [3_000, 4_000]
    assert series["rates"]["records_in"] == [10.0, 10.0]
    assert series["rates"]["acks_release"] == [0.0, 0.0]


def test_a_counter_that_went_back_charts_zero_not_a_negative_rate() -> None:
    history = ChartHistory()
    history.record(_sample(0, 100.0))
    history.record(_sample(1_000, 40.0))  # e.g. the broker restarted its counters
    assert history.series()["rates"]["records_in"] == [0.0]


def test_a_failing_sample_is_skipped_and_sampling_goes_on() -> None:
    history = ChartHistory()
    calls = 0

    async def take() -> Sample:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("boom")
        return _sample(calls, 0.0)

    async def scenario() -> None:
        task = asyncio.create_task(run_sampler(history, take, interval_ms=1))
        while len(history) < 2:
            await asyncio.sleep(0.001)
        task.cancel()

    asyncio.run(asyncio.wait_for(scenario(), 10))
    assert len(history) == calls - 1, "only the failing first sample is missing"


def test_the_lifespan_starts_and_stops_the_sampler(broker: Broker) -> None:
    console = Console(broker.services, sample_interval_ms=1)

    async def scenario() -> int:
        async with console.lifespan(Starlette()):
            while len(console.history) < 2:
                await asyncio.sleep(0.001)
        stopped_at = len(console.history)
        await asyncio.sleep(0.05)
        assert len(console.history) == stopped_at, "no samples after the lifespan ended"
        return stopped_at

    assert asyncio.run(asyncio.wait_for(scenario(), 10)) >= 2
