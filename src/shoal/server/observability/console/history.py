"""The console's chart history: the last hour of samples, in a ring buffer it owns.

Every `limits.CONSOLE_SAMPLE_INTERVAL_MS` the sampler (`run_sampler`, a task of the
HTTP app's lifespan) records the wall time, `BrokerMetrics.chart_series()` (cumulative
totals: records in, bytes, acquisitions, acknowledgements by type, lock timeouts) and
the lag the console computes (share groups, consumer groups). At most
`limits.CONSOLE_HISTORY_SAMPLES_MAX` samples are kept (an hour at the default
interval); the oldest goes first. `series()` turns the totals into per-second rates
between neighbouring samples, so a chart draws throughput, not a rising counter.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from shoal import limits
from shoal.server.observability.metrics import CHART_SERIES

log = logging.getLogger(__name__)

LAG_SERIES = ("share_lag", "consumer_lag")
"""Gauges the console samples itself (charted as they are, not as rates)."""


@dataclass(frozen=True, slots=True)
class Sample:
    wall_ms: int
    totals: dict[str, float]
    """`CHART_SERIES` cumulative totals."""
    gauges: dict[str, float]
    """`LAG_SERIES` values."""


class ChartHistory:
    def __init__(self, *, max_samples: int = limits.CONSOLE_HISTORY_SAMPLES_MAX) -> None:
        assert max_samples >= 2, max_samples
        self._samples: deque[Sample] = deque(maxlen=max_samples)

    def __len__(self) -> int:
        return len(self._samples)

    def record(self, sample: Sample) -> None:
        self._samples.append(sample)

    def series(self) -> dict[str, Any]:
        """Per-second rates of each total between neighbouring samples, and the
        gauges at each sample; `t` holds each point's wall time (ms)."""
        pairs = list(itertools.pairwise(self._samples))
        rates: dict[str, list[float]] = {name: [] for name in CHART_SERIES}
        for before, after in pairs:
            seconds = max(after.wall_ms - before.wall_ms, 1) / 1000
            for name in CHART_SERIES:
                delta = after.totals.get(name, 0.0) - before.totals.get(name, 0.0)
                rates[name].append(max(delta, 0.0) / seconds)
        return {
            "t": [after.wall_ms for _, after in pairs],
            "rates": rates,
            "gauges": {
                name: [after.gauges.get(name, 0.0) for _, after in pairs] for name in LAG_SERIES
            },
        }


async def run_sampler(
    history: ChartHistory, take: Callable[[], Awaitable[Sample]], *, interval_ms: int
) -> None:
    """Record `take()` every `interval_ms` until cancelled; a failed sample is logged
    and skipped (the chart shows a gap, the console keeps serving)."""
    while True:
        try:
            history.record(await take())
        except Exception:  # a bug in one sample must not stop the charts for good
            log.exception("console chart sample failed")
        await asyncio.sleep(interval_ms / 1000)
