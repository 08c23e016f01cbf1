"""The broker's metrics: one prometheus-client registry per broker (issue 13).

`BrokerMetrics` owns the registry the HTTP listener exposes at `/metrics` and the
counters and histograms the shell updates: the cores return effects and results, the
shell (the request wrapper in server/request_metrics.py, the connection loop, the
broker's accept, the share service's lock expiry, the disk workers' fsyncs) counts
them. Gauges that read state at scrape time are custom collectors
(server/metrics_collectors.py), registered by the broker once its services exist.

Names follow Kafka's MBeans translated the way the Prometheus JMX exporter's common
Kafka configs do (docs/metrics.md has the rule and the full list); metrics Kafka does
not have start with `shoal_`.

Cost: the request path touches only pre-bound children, looked up in plain dicts by
(api key, version) or topic, so a request costs a few dict lookups and `inc()` /
`observe()` calls (bench/metrics_overhead.py measures it).

`chart_series` is the small stable view the web console samples for its charts, so
the console does not depend on metric names.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.registry import Collector

from shoal.protocol import codec
from shoal.protocol.errors import ErrorCode

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

LATENCY_BUCKETS_S = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)
"""Request and flush latency buckets, in seconds (long polls reach MaxWaitMs)."""

ACK_TYPES = {0: "gap", 1: "accept", 2: "release", 3: "reject", 4: "renew"}
"""KIP-932 acknowledge type codes and the `ack_type` label each is counted under."""


class BrokerMetrics:
    """Every metric of one broker, in its own registry. See the module docstring."""

    def __init__(self, *, enabled: bool = False) -> None:
        self.enabled = enabled
        """Whether requests are counted and timed (the broker sets it when
        `metrics.listener` is set; the other counters are always kept)."""
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        # ---- kafka.network:type=RequestMetrics
        self.requests = Counter(
            "kafka_network_requestmetrics_requests",
            "Requests served, by API and version.",
            ["request", "version"],
            registry=r,
        )
        self.errors = Counter(
            "kafka_network_requestmetrics_errors",
            "Error codes answered (top-level and per partition; NONE is not counted).",
            ["request", "error"],
            registry=r,
        )
        self.local_time = Histogram(
            "kafka_network_requestmetrics_localtime_seconds",
            "Time in the handler (decode done to response built), including long polls.",
            ["request"],
            buckets=LATENCY_BUCKETS_S,
            registry=r,
        )
        self.total_time = Histogram(
            "kafka_network_requestmetrics_totaltime_seconds",
            "Time from the request read to its response written to the socket.",
            ["request"],
            buckets=LATENCY_BUCKETS_S,
            registry=r,
        )
        # ---- kafka.server:type=socket-server-metrics
        self.connections = Gauge(
            "kafka_server_socket_server_metrics_connection_count",
            "Open client connections.",
            registry=r,
        )
        self.connections_created = Counter(
            "kafka_server_socket_server_metrics_connection_creation",
            "Client connections accepted.",
            registry=r,
        )
        # ---- kafka.server:type=BrokerTopicMetrics
        self.messages_in = Counter(
            "kafka_server_brokertopicmetrics_messagesin",
            "Records appended by Produce, per topic.",
            ["topic"],
            registry=r,
        )
        self.bytes_in = Counter(
            "kafka_server_brokertopicmetrics_bytesin",
            "Record batch bytes appended by Produce, per topic.",
            ["topic"],
            registry=r,
        )
        self.bytes_out = Counter(
            "kafka_server_brokertopicmetrics_bytesout",
            "Record batch bytes sent by Fetch and ShareFetch, per topic.",
            ["topic"],
            registry=r,
        )
        self.share_fetch_requests = Counter(
            "kafka_server_brokertopicmetrics_totalsharefetchrequests",
            "ShareFetch requests naming the topic.",
            ["topic"],
            registry=r,
        )
        self.share_fetch_failed = Counter(
            "kafka_server_brokertopicmetrics_failedsharefetchrequests",
            "ShareFetch requests with a partition of the topic answered with an error.",
            ["topic"],
            registry=r,
        )
        self.share_ack_requests = Counter(
            "kafka_server_brokertopicmetrics_totalshareacknowledgementrequests",
            "Requests carrying acknowledgements for the topic (ShareFetch, ShareAcknowledge).",
            ["topic"],
            registry=r,
        )
        self.share_ack_failed = Counter(
            "kafka_server_brokertopicmetrics_failedshareacknowledgementrequests",
            "Requests whose acknowledgements for the topic were refused.",
            ["topic"],
            registry=r,
        )
        # ---- kafka.server:type=share-group-metrics
        self.share_acknowledgement = Counter(
            "kafka_server_share_group_metrics_share_acknowledgement",
            "Requests (ShareFetch, ShareAcknowledge) whose acknowledgements were applied.",
            registry=r,
        )
        self.record_acknowledgement = Counter(
            "kafka_server_share_group_metrics_record_acknowledgement",
            "Records acknowledged, by acknowledge type.",
            ["ack_type"],
            registry=r,
        )
        # ---- kafka.server:type=SharePartitionMetrics (totals; per share-partition
        # gauges are scrape-time collectors)
        self.lock_timeouts = Counter(
            "kafka_server_sharepartitionmetrics_acquisitionlocktimeout",
            "Acquisition locks that expired (each lock covers a batch or an offset range).",
            registry=r,
        )
        self.records_acquired = Counter(
            "shoal_share_records_acquired",
            "Records acquired by share consumers (delivered in ShareFetch responses).",
            ["group", "topic"],
            registry=r,
        )
        # ---- kafka.server:type=group-coordinator-metrics
        self.offset_commits = Counter(
            "kafka_server_group_coordinator_metrics_offset_commit",
            "Partition offsets committed (OffsetCommit, TxnOffsetCommit).",
            registry=r,
        )
        # ---- transactions
        self.transactions_ended = Counter(
            "shoal_transactions_ended",
            "Transactions ended by EndTxn, by result (commit or abort).",
            ["result"],
            registry=r,
        )
        # ---- kafka.log:type=LogFlushStats
        self.log_flush = Histogram(
            "kafka_log_logflushstats_logflushrateandtime_seconds",
            "Time of a partition log fsync (run in a disk worker thread).",
            buckets=LATENCY_BUCKETS_S,
            registry=r,
        )
        acks = self.record_acknowledgement
        self._acks = {code: acks.labels(name) for code, name in ACK_TYPES.items()}
        self._by_api: dict[tuple[int, int], Any] = {}
        self._errors: dict[tuple[int, int], Any] = {}
        self._times: dict[int, tuple[Any, Any]] = {}
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}

    # ---- pre-bound children (a dict lookup after the first use)

    def request_counter(self, api_key: int, version: int) -> Any:
        child = self._by_api.get((api_key, version))
        if child is None:
            child = self.requests.labels(request_name(api_key), str(version))
            self._by_api[(api_key, version)] = child
        return child

    def request_times(self, api_key: int) -> tuple[Any, Any]:
        """(local time, total time) histogram children of the API."""
        times = self._times.get(api_key)
        if times is None:
            name = request_name(api_key)
            times = (self.local_time.labels(name), self.total_time.labels(name))
            self._times[api_key] = times
        return times

    def request_done(self, frame: bytes, total_s: float) -> None:
        """The response to `frame` was written `total_s` after the request was read."""
        self.request_times(int.from_bytes(frame[:2], "big", signed=True))[1].observe(total_s)

    def error(self, api_key: int, code: int) -> None:
        """Count one error code answered by `api_key` (NONE is not counted)."""
        if not code:
            return
        child = self._errors.get((api_key, code))
        if child is None:
            try:
                name = ErrorCode(code).name.upper()
            except ValueError:
                name = str(code)
            child = self.errors.labels(request_name(api_key), name)
            self._errors[(api_key, code)] = child
        child.inc()

    def child(self, family: Counter, *labels: str) -> Any:
        """The child of `family` with `labels` (e.g. a topic), bound once."""
        key = (id(family), labels)
        child = self._children.get(key)
        if child is None:
            child = family.labels(*labels)
            self._children[key] = child
        return child

    def acknowledged(self, ack_type: int, records: int) -> None:
        child = self._acks.get(ack_type)
        if child is not None:
            child.inc(records)

    def forget_topics(self, names: Iterable[str]) -> None:
        """Drop the per-topic series of deleted topics (a re-created topic starts at 0)."""
        gone = set(names)
        self._children.clear()  # bound again at the next use
        for family in (
            self.messages_in,
            self.bytes_in,
            self.bytes_out,
            self.share_fetch_requests,
            self.share_fetch_failed,
            self.share_ack_requests,
            self.share_ack_failed,
            self.records_acquired,
        ):
            for labels in list(_label_sets(family)):
                if labels[-1] in gone:  # the topic is the last label
                    family.remove(*labels)

    # ---- scrape-time collectors

    def register(self, collector: Collector) -> None:
        self.registry.register(collector)

    # ---- the console's view

    def chart_series(self) -> dict[str, float]:
        """The current cumulative value of each of `CHART_SERIES`."""
        return {
            "records_in": _total(self.messages_in),
            "bytes_in": _total(self.bytes_in),
            "bytes_out": _total(self.bytes_out),
            "records_acquired": _total(self.records_acquired),
            "acks_accept": _total(self.record_acknowledgement, ack_type="accept"),
            "acks_release": _total(self.record_acknowledgement, ack_type="release"),
            "acks_reject": _total(self.record_acknowledgement, ack_type="reject"),
            "lock_timeouts": _total(self.lock_timeouts),
        }


def request_name(api_key: int) -> str:
    """Kafka's name of an API as its RequestMetrics label has it (`ShareFetch`)."""
    return "".join(
        part.capitalize() for part in (codec.api_name(api_key) or f"api_{api_key}").split("_")
    )


def _total(family: Counter, **labels: str) -> float:
    """The sum of a counter family's `_total` samples (those with `labels`)."""
    return sum(
        sample.value
        for metric in family.collect()
        for sample in metric.samples
        if sample.name.endswith("_total")
        and all(sample.labels.get(k) == v for k, v in labels.items())
    )


def _label_sets(family: Counter) -> Iterable[tuple[str, ...]]:
    for metric in family.collect():
        for sample in metric.samples:
            if sample.name.endswith("_total"):
                yield tuple(sample.labels.values())
