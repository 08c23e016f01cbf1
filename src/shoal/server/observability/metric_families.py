"""Labelled counters and histograms owned by the event loop, cheap on the request path.

prometheus-client's `Counter` and `Histogram` take a lock on every `inc()` and
`observe()` and bind children through `labels()`; on the broker's request path, run on
one event-loop thread, that is most of what a request's metrics would cost. These
families keep their values in a plain dict keyed by the label values (a tuple), so an
increment is a dict lookup and an add, and expose them through prometheus-client's own
metric families at scrape time (`collect`): the exposition is still the library's.

Only the event loop's thread may update them (the scrape runs there too, since the
HTTP listener is served in the loop). Metrics updated from other threads (the disk
workers' fsync time) use prometheus-client's own classes.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence

from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

Labels = tuple[str, ...]


class CounterFamily(Collector):
    """A counter per label-value tuple; `name` without `_total`."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str] = ()) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self.values: dict[Labels, float] = {}

    def inc(self, labels: Labels = (), amount: float = 1.0) -> None:
        values = self.values
        values[labels] = values.get(labels, 0.0) + amount

    def total(self, **match: str) -> float:
        """The sum over the label tuples with the `match` label values."""
        if not match:
            return sum(self.values.values())
        where = [(self.labelnames.index(k), v) for k, v in match.items()]
        return sum(
            value for labels, value in self.values.items() if all(labels[i] == v for i, v in where)
        )

    def remove_where(self, doomed: Callable[[Labels], bool]) -> None:
        for labels in [labels for labels in self.values if doomed(labels)]:
            del self.values[labels]

    def describe(self) -> Iterator[Metric]:
        yield CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for labels, value in sorted(self.values.items()):
            family.add_metric(list(labels), value)
        yield family


class HistogramFamily(Collector):
    """A histogram per label-value tuple, with fixed upper bounds (`+Inf` added)."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        *,
        buckets: Sequence[float],
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self.bounds = tuple(buckets)
        self._counts: dict[Labels, list[int]] = {}
        """Per label tuple: the count of each bucket (not cumulative), +Inf last."""
        self._sums: dict[Labels, float] = {}

    def observe(self, labels: Labels, value: float) -> None:
        counts = self._counts.get(labels)
        if counts is None:
            counts = self._counts[labels] = [0] * (len(self.bounds) + 1)
            self._sums[labels] = 0.0
        counts[bisect_left(self.bounds, value)] += 1
        self._sums[labels] += value

    def count(self, labels: Labels) -> int:
        return sum(self._counts.get(labels, ()))

    def describe(self) -> Iterator[Metric]:
        yield HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def collect(self) -> Iterator[Metric]:
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for labels, counts in sorted(self._counts.items()):
            cumulative = 0
            buckets = []
            for bound, count in zip((*self.bounds, float("inf")), counts, strict=True):
                cumulative += count
                buckets.append(("+Inf" if bound == float("inf") else repr(bound), cumulative))
            family.add_metric(list(labels), buckets, sum_value=self._sums[labels])
        yield family
