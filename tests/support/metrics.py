"""Scraping a broker's `/metrics` (docs/reference/metrics.md) in tests and benchmarks.

`metrics_url(broker)` finds the HTTP listener's address in the broker's log (it is
started with `metrics.listener=http://127.0.0.1:0`); `scrape(url)` returns the samples
parsed by prometheus-client's own parser, keyed by (sample name, labels).
"""

from __future__ import annotations

import urllib.request
from collections.abc import Mapping

from prometheus_client.parser import text_string_to_metric_families

from tests.support.broker import BrokerProcess

METRICS_OVERRIDE = "metrics.listener=http://127.0.0.1:0"
"""The override that turns the listener on, on an ephemeral loopback port."""

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def metrics_url(broker: BrokerProcess, *, timeout_s: float = 30.0) -> str:
    match = broker.wait_for_log(r"metrics listener on (http://\S+) ", timeout_s=timeout_s)
    assert match is not None, "the broker did not log its metrics listener"
    return match.group(1)


def scrape(url: str, *, timeout_s: float = 30.0) -> Samples:
    with urllib.request.urlopen(f"{url}/metrics", timeout=timeout_s) as response:
        assert response.status == 200
        text = response.read().decode("utf-8")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, labels: Mapping[str, str] | None = None) -> float:
    """The sample `name` with exactly `labels` (0 when absent: a child not yet used)."""
    return samples.get((name, frozenset((labels or {}).items())), 0.0)
