"""The log cleaner's backlog and progress per partition, for `shoal topics --describe`.

Where the figures come from, and why there: Kafka's protocol has no message that
carries a cleaner's backlog, and `shoal topics --describe` must print exactly what
Kafka's kafka-topics prints wherever Kafka is the broker. So the figures are not put
into any Kafka answer (no invented config entry, no tagged field); they are read
from a Shoal broker's own HTTP listener, the `/metrics` page it already serves
(`shoal_log_cleaner_dirty_bytes`, `shoal_log_cleaner_cleaned_bytes_total`,
`shoal_log_cleaner_cleans_total`, docs/reference/metrics.md), which a Shoal broker names in its
read-only `metrics.listener` config. The tool asks the partition leader for that one
key with DescribeConfigs (a Kafka broker has no such key and answers without it);
when the key is unset, names an ephemeral port (0, unknown to anyone but the broker's
log) or the page does not answer within `SCRAPE_TIMEOUT_S`, the view is empty and
nothing extra is printed. The lines are printed only for compacted topics.

    Cleaner: Partition: 0	DirtyBytes: 1234	CleanedBytes: 56789	Cleans: 3
"""

from __future__ import annotations

import logging
import urllib.error
import urllib.request
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from shoal.client import Client, KafkaError, check, requests
from shoal.config import broker_keys, http_listener_address

log = logging.getLogger(__name__)

BROKER_RESOURCE = 4
"""DescribeConfigs resource type of a broker."""
METRICS_LISTENER_KEY = broker_keys.METRICS_LISTENER.name
SCRAPE_TIMEOUT_S = 5.0
"""How long the tool waits for the broker's `/metrics` page."""
_DIRTY = "shoal_log_cleaner_dirty_bytes"
_CLEANED = "shoal_log_cleaner_cleaned_bytes_total"
_CLEANS = "shoal_log_cleaner_cleans_total"


@dataclass(frozen=True, slots=True)
class CleanerFigures:
    dirty_bytes: int
    cleaned_bytes: int
    cleans: int

    def line(self, partition: int) -> str:
        return (
            f"\tCleaner: Partition: {partition}\tDirtyBytes: {self.dirty_bytes}"
            f"\tCleanedBytes: {self.cleaned_bytes}\tCleans: {self.cleans}"
        )


CleanerView = dict[tuple[str, int], CleanerFigures]


def metrics_url(client: Client, node_id: int, broker_host: str) -> str | None:
    """The `/metrics` address a Shoal broker names in `metrics.listener`; None for a
    broker without one (Kafka), an ephemeral port, or a refused DescribeConfigs."""
    try:
        response = client.call(
            requests.describe_configs(BROKER_RESOURCE, [str(node_id)], keys=[METRICS_LISTENER_KEY])
        )
        (result,) = response.results
        check(result.error_code, result.error_message, context=f"configs of broker {node_id}")
    except KafkaError as exc:
        log.debug("no cleaner figures: broker %d's configs not described: %s", node_id, exc)
        return None
    value = next((c.value for c in result.configs if c.name == METRICS_LISTENER_KEY), None)
    if not value:
        return None
    try:
        host, port = http_listener_address(value)
    except ValueError:
        return None
    if port == 0:
        return None
    if host in ("0.0.0.0", "::"):  # bound on every address: reach it where the broker is
        host = broker_host
    return f"http://{host}:{port}/metrics"


def scrape(url: str) -> CleanerView:
    """The per-partition cleaner figures on the page at `url`; empty if it does not
    answer (logged at debug level: the view is optional)."""
    try:
        with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT_S) as response:
            text = response.read().decode("utf-8")
    except (OSError, urllib.error.URLError) as exc:
        log.debug("no cleaner figures from %s: %s", url, exc)
        return {}
    found: dict[tuple[str, int], dict[str, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name in (_DIRTY, _CLEANED, _CLEANS):
                key = (sample.labels["topic"], int(sample.labels["partition"]))
                found.setdefault(key, {})[sample.name] = sample.value
    return {
        key: CleanerFigures(
            dirty_bytes=int(values.get(_DIRTY, 0)),
            cleaned_bytes=int(values.get(_CLEANED, 0)),
            cleans=int(values.get(_CLEANS, 0)),
        )
        for key, values in found.items()
    }


def cleaner_view(client: Client, node_id: int) -> CleanerView:
    """The cleaner figures of broker `node_id`; empty where it serves none."""
    node = next((n for n in client.brokers() if n.node_id == node_id), None)
    if node is None:
        return {}
    url = metrics_url(client, node_id, node.host)
    return {} if url is None else scrape(url)
