"""The latency trace (server/latency_trace.py): off without the environment
variable, per-stage percentiles when on, a bounded number of samples per stage, and
the loop-lag probe sees a loop blocked by synchronous work."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from shoal.server import latency_trace
from shoal.server.latency_trace import LatencyTrace


def test_without_the_variable_nothing_is_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(latency_trace.ENV, raising=False)
    trace = LatencyTrace.from_environment()
    assert not trace.enabled
    with trace.stage("handle Produce"):
        pass
    trace.record("loop lag", 3.0)
    assert trace.report() == []


def test_stages_report_count_and_percentiles_then_start_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(latency_trace.ENV, "2")
    trace = LatencyTrace.from_environment()
    assert trace.interval_s == 2.0
    for ms in range(1, 101):
        trace.record("handle Produce", float(ms))
    assert trace.report() == ["handle Produce: n=100 p50=50.000 p99=99.000 max=100.000 ms"]
    assert trace.report() == []


def test_samples_per_stage_are_bounded_and_the_rest_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(latency_trace, "SAMPLES_PER_STAGE_MAX", 10)
    trace = LatencyTrace(1.0)
    for _ in range(25):
        trace.record("loop lag", 1.0)
    assert trace.report() == ["loop lag: n=25 p50=1.000 p99=1.000 max=1.000 ms"]


def test_the_probe_sees_a_blocked_loop(caplog: pytest.LogCaptureFixture) -> None:
    trace = LatencyTrace(0.1)

    async def scenario() -> None:
        trace.start()
        await asyncio.sleep(0.01)
        time.sleep(0.05)  # the loop is blocked, as by a synchronous disk write
        await asyncio.sleep(0.2)
        await trace.stop()

    with caplog.at_level(logging.INFO, logger=latency_trace.__name__):
        asyncio.run(scenario())
    lags = [r.getMessage() for r in caplog.records if "loop lag" in r.getMessage()]
    assert lags, caplog.text
    worst = max(float(line.split("max=")[1].split()[0]) for line in lags)
    assert worst >= 40.0, lags
