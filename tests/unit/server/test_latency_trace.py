"""The latency trace (server/observability/latency_trace.py): off without the environment
variable, per-stage percentiles when on, a bounded number of samples per stage, and
the loop-lag probe sees a loop blocked by synchronous work."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from shoal.server.observability import latency_trace
from shoal.server.observability.latency_trace import LatencyTrace


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


def test_serve_and_client_stages_are_per_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each connection task keeps its own last response: the client stage of one
    connection never spans another's response; a woken request also gets its part
    from the notify."""
    trace = LatencyTrace(1.0)
    monkeypatch.setattr(latency_trace, "TRACE", trace)
    ms = 1_000_000

    async def connection(api_first: str, api_next: str, base_ns: int, woken: bool) -> None:
        latency_trace.trace_request_read(api_first, base_ns)
        if woken:
            latency_trace.trace_woken(base_ns + 1 * ms)
        monkeypatch.setattr(latency_trace, "measure_ns", lambda: base_ns + 3 * ms)
        latency_trace.trace_response_written(api_first, base_ns)
        await asyncio.sleep(0)
        latency_trace.trace_request_read(api_next, base_ns + 8 * ms)

    async def scenario() -> None:
        await asyncio.gather(
            asyncio.create_task(connection("share_fetch", "share_acknowledge", 0, True)),
            asyncio.create_task(connection("produce", "produce", 100 * ms, False)),
        )

    asyncio.run(scenario())
    lines = trace.report()
    assert "serve share_fetch: n=1 p50=3.000 p99=3.000 max=3.000 ms" in lines
    assert "serve share_fetch from wake: n=1 p50=2.000 p99=2.000 max=2.000 ms" in lines
    assert "serve produce: n=1 p50=3.000 p99=3.000 max=3.000 ms" in lines
    assert "client share_fetch -> share_acknowledge: n=1 p50=5.000 p99=5.000 max=5.000 ms" in lines
    assert "client produce -> produce: n=1 p50=5.000 p99=5.000 max=5.000 ms" in lines
    assert not any("from wake" in line and "produce" in line for line in lines), lines


def test_stop_reports_what_was_sampled_since_the_last_report(
    caplog: pytest.LogCaptureFixture,
) -> None:
    trace = LatencyTrace(60.0)

    async def scenario() -> None:
        trace.start()
        trace.record("serve produce", 0.25)
        await trace.stop()

    with caplog.at_level(logging.INFO, logger=latency_trace.__name__):
        asyncio.run(scenario())
    assert "latency trace (at stop): serve produce: n=1 p50=0.250 p99=0.250 max=0.250 ms" in (
        caplog.text
    )
