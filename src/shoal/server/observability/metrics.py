"""The broker's metrics: one prometheus-client registry per broker.

`BrokerMetrics` owns the registry the HTTP listener exposes at `/metrics` and the
counters and histograms the shell updates: the cores return effects and results, the
shell (the request wrapper in server/observability/request_metrics.py, the connection loop, the
broker's accept, the share service's lock expiry, the disk workers' fsyncs) counts
them. Gauges that read state at scrape time are custom collectors
(server/observability/metrics_collectors.py), registered by the broker once its services exist.

Names follow Kafka's MBeans translated the way the Prometheus JMX exporter's common
Kafka configs do (docs/reference/metrics.md has the rule and the full list); metrics Kafka does
not have start with `shoal_`.

Cost: the request path's counters and histograms are loop-owned families
(server/observability/metric_families.py): plain dicts keyed by label tuples built once, exposed
through prometheus-client's metric families at scrape time; a request costs a few dict
lookups and adds (bench/metrics_overhead.py measures it).

`chart_series` is the small stable view the web console samples for its charts, so
the console does not depend on metric names.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.registry import Collector

from shoal.protocol import codec
from shoal.protocol.errors import ErrorCode
from shoal.server.observability.metric_families import CounterFamily, HistogramFamily

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
        self.requests = self._family(
            "kafka_network_requestmetrics_requests",
            "Requests served, by API and version.",
            ["request", "version"],
        )
        self.errors = self._family(
            "kafka_network_requestmetrics_errors",
            "Error codes answered (top-level and per partition; NONE is not counted).",
            ["request", "error"],
        )
        self.local_time = self._histogram(
            "kafka_network_requestmetrics_localtime_seconds",
            "Time in the handler (decode done to response built), including long polls.",
            ["request"],
        )
        self.total_time = self._histogram(
            "kafka_network_requestmetrics_totaltime_seconds",
            "Time from the request read to its response written to the socket.",
            ["request"],
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
        self.messages_in = self._family(
            "kafka_server_brokertopicmetrics_messagesin",
            "Records appended by Produce, per topic.",
            ["topic"],
        )
        self.bytes_in = self._family(
            "kafka_server_brokertopicmetrics_bytesin",
            "Record batch bytes appended by Produce, per topic.",
            ["topic"],
        )
        self.bytes_out = self._family(
            "kafka_server_brokertopicmetrics_bytesout",
            "Record batch bytes sent by Fetch and ShareFetch, per topic.",
            ["topic"],
        )
        self.share_fetch_requests = self._family(
            "kafka_server_brokertopicmetrics_totalsharefetchrequests",
            "ShareFetch requests naming the topic.",
            ["topic"],
        )
        self.share_fetch_failed = self._family(
            "kafka_server_brokertopicmetrics_failedsharefetchrequests",
            "ShareFetch requests with a partition of the topic answered with an error.",
            ["topic"],
        )
        self.share_ack_requests = self._family(
            "kafka_server_brokertopicmetrics_totalshareacknowledgementrequests",
            "Requests carrying acknowledgements for the topic (ShareFetch, ShareAcknowledge).",
            ["topic"],
        )
        self.share_ack_failed = self._family(
            "kafka_server_brokertopicmetrics_failedshareacknowledgementrequests",
            "Requests whose acknowledgements for the topic were refused.",
            ["topic"],
        )
        # ---- kafka.server:type=share-group-metrics
        self.share_acknowledgement = self._family(
            "kafka_server_share_group_metrics_share_acknowledgement",
            "Requests (ShareFetch, ShareAcknowledge) whose acknowledgements were applied.",
        )
        self.record_acknowledgement = self._family(
            "kafka_server_share_group_metrics_record_acknowledgement",
            "Records acknowledged, by acknowledge type.",
            ["ack_type"],
        )
        # ---- kafka.server:type=SharePartitionMetrics (totals; per share-partition
        # gauges are scrape-time collectors)
        self.lock_timeouts = self._family(
            "kafka_server_sharepartitionmetrics_acquisitionlocktimeout",
            "Acquisition locks that expired (each lock covers a batch or an offset range).",
        )
        self.dlq_records = self._family(
            "shoal_share_dlq_records",
            "Records sent to a share group's dead-letter queue topic (KIP-1191), by outcome: "
            "written, refused (a DLQ check failed) or failed (the append failed); the last "
            "two were archived without a copy.",
            ["group", "outcome"],
        )
        self.records_acquired = self._family(
            "shoal_share_records_acquired",
            "Records acquired by share consumers (delivered in ShareFetch responses).",
            ["group", "topic"],
        )
        # ---- kafka.server:type=group-coordinator-metrics
        self.offset_commits = self._family(
            "kafka_server_group_coordinator_metrics_offset_commit",
            "Partition offsets committed (OffsetCommit, TxnOffsetCommit).",
        )
        # ---- transactions
        self.transactions_ended = self._family(
            "shoal_transactions_ended",
            "Transactions ended by EndTxn, by result (commit or abort).",
            ["result"],
        )
        self.partition_load_time = self._histogram(
            "kafka_server_share_group_metrics_partition_load_time_seconds",
            "Time of the share-state read that loads a share-partition.",
            [],
        )
        # ---- kafka.server:type=share-coordinator-metrics
        self.state_write_latency = self._histogram(
            "kafka_server_share_coordinator_metrics_write_latency_seconds",
            "Time of a share coordinator state write (WriteShareGroupState's work).",
            [],
        )
        # ---- kafka.log:type=LogFlushStats
        self.log_flush = Histogram(
            "kafka_log_logflushstats_logflushrateandtime_seconds",
            "Time of a partition log fsync (run in a disk worker thread).",
            buckets=LATENCY_BUCKETS_S,
            registry=r,
        )
        self._ack_labels = {code: (name,) for code, name in ACK_TYPES.items()}
        self._version_labels: dict[tuple[int, int], tuple[str, str]] = {}
        self._error_labels: dict[tuple[int, int], tuple[str, str]] = {}
        self._api_labels: dict[int, tuple[str]] = {}

    def _family(
        self, name: str, documentation: str, labelnames: list[str] | None = None
    ) -> CounterFamily:
        family = CounterFamily(name, documentation, labelnames or ())
        self.registry.register(family)
        return family

    def _histogram(self, name: str, documentation: str, labelnames: list[str]) -> HistogramFamily:
        family = HistogramFamily(name, documentation, labelnames, buckets=LATENCY_BUCKETS_S)
        self.registry.register(family)
        return family

    # ---- the request path (label tuples built once, then dict lookups)

    def api_labels(self, api_key: int) -> tuple[str]:
        labels = self._api_labels.get(api_key)
        if labels is None:
            labels = self._api_labels[api_key] = (request_name(api_key),)
        return labels

    def request_handled(self, api_key: int, version: int, local_s: float) -> None:
        """A handler of `api_key` answered a request at `version` in `local_s`."""
        labels = self._version_labels.get((api_key, version))
        if labels is None:
            labels = (request_name(api_key), str(version))
            self._version_labels[(api_key, version)] = labels
        self.requests.inc(labels)
        self.local_time.observe(self.api_labels(api_key), local_s)

    def request_done(self, frame: bytes, total_s: float) -> None:
        """The response to `frame` was written `total_s` after the request was read."""
        api_key = int.from_bytes(frame[:2], "big", signed=True)
        self.total_time.observe(self.api_labels(api_key), total_s)

    def error(self, api_key: int, code: int) -> None:
        """Count one error code answered by `api_key` (NONE is not counted)."""
        if not code:
            return
        labels = self._error_labels.get((api_key, code))
        if labels is None:
            try:
                name = ErrorCode(code).name.upper()
            except ValueError:
                name = str(code)
            labels = self._error_labels[(api_key, code)] = (request_name(api_key), name)
        self.errors.inc(labels)

    def locks_expired(self, count: int) -> None:
        """The share service's expiry pass fired `count` acquisition locks."""
        self.lock_timeouts.inc((), count)

    def dlq_records_counted(self, group: str, outcome: str, records: int) -> None:
        """The DLQ writer settled `records` of `group` with `outcome`."""
        self.dlq_records.inc((group, outcome), records)

    def acknowledged(self, ack_type: int, records: int) -> None:
        labels = self._ack_labels.get(ack_type)
        if labels is not None:
            self.record_acknowledgement.inc(labels, records)

    def forget_topics(self, names: Iterable[str]) -> None:
        """Drop the per-topic series of deleted topics (a re-created topic starts at 0)."""
        gone = set(names)
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
            family.remove_where(lambda labels: labels[-1] in gone)  # the topic is last

    # ---- scrape-time collectors

    def register(self, collector: Collector) -> None:
        self.registry.register(collector)

    # ---- the console's view

    def chart_series(self) -> dict[str, float]:
        """The current cumulative value of each of `CHART_SERIES`."""
        return {
            "records_in": self.messages_in.total(),
            "bytes_in": self.bytes_in.total(),
            "bytes_out": self.bytes_out.total(),
            "records_acquired": self.records_acquired.total(),
            "acks_accept": self.record_acknowledgement.total(ack_type="accept"),
            "acks_release": self.record_acknowledgement.total(ack_type="release"),
            "acks_reject": self.record_acknowledgement.total(ack_type="reject"),
            "lock_timeouts": self.lock_timeouts.total(),
        }


def request_name(api_key: int) -> str:
    """Kafka's name of an API as its RequestMetrics label has it (`ShareFetch`)."""
    return "".join(
        part.capitalize() for part in (codec.api_name(api_key) or f"api_{api_key}").split("_")
    )
