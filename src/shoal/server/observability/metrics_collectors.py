"""Scrape-time gauges: custom prometheus collectors that read the broker's state.

Each collector reads the services when `/metrics` is scraped (on the event loop: the
listener runs there), so nothing is counted on the request path:

    LogCollector           size, log start and log end offset of every partition
                           (Kafka's kafka.log:type=Log), and the share coordinator's
                           state topic size
    PurgatoryCollector     requests parked in long polls
    SharePartitionCollector per loaded share-partition: in-flight records and batches
                           (Kafka's SharePartitionMetrics), records by state (archived
                           among them), start and end offset, and what Shoal's
                           key-ordered and scheduled delivery hold back (blocked keys,
                           records held by key, records waiting for their time,
                           malformed `shoal.deliver.at` headers)
    GroupCollector         groups by protocol, share and consumer groups by state, and
                           share-group rebalances (group epoch increases seen)
    TransactionCollector   transactional ids by transaction state
    CleanerCollector       the log cleaner (Kafka's kafka.log:type=LogCleaner and
                           LogCleanerManager gauges) and, per compacted partition,
                           its backlog (dirty bytes) and progress (bytes cleaned)
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Callable, Iterator

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from shoal.log.api import LogError
from shoal.log.manager import LogManager
from shoal.server.services.group_service import GroupService
from shoal.server.services.log_cleaner import LogCleaner
from shoal.server.services.purgatory import Purgatory
from shoal.server.services.share_service import ShareService
from shoal.server.services.txn_service import TxnService
from shoal.share.states import RecordState

SHARE_STATE_TOPIC = "__share_group_state"


class LogCollector(Collector):
    def __init__(self, logs: LogManager) -> None:
        self._logs = logs

    def collect(self) -> Iterator[Metric]:
        labels = ["topic", "partition"]
        size = GaugeMetricFamily("kafka_log_log_size", "Partition log bytes.", labels=labels)
        start = GaugeMetricFamily(
            "kafka_log_log_logstartoffset", "Partition log start offset.", labels=labels
        )
        end = GaugeMetricFamily(
            "kafka_log_log_logendoffset", "Partition log end offset.", labels=labels
        )
        state_bytes = 0
        for info in self._logs.topics():
            for index in range(info.partitions):
                partition_log = self._logs.partition(info.name, index)
                if partition_log is None:
                    continue
                values = [info.name, str(index)]
                size.add_metric(values, partition_log.size_bytes)
                start.add_metric(values, partition_log.log_start_offset)
                end.add_metric(values, partition_log.log_end_offset)
                if info.name == SHARE_STATE_TOPIC:
                    state_bytes += partition_log.size_bytes
        yield from (size, start, end)
        yield GaugeMetricFamily(
            "shoal_share_coordinator_state_topic_size_bytes",
            f"Bytes in {SHARE_STATE_TOPIC} (the share coordinator's state topic).",
            value=state_bytes,
        )


class PurgatoryCollector(Collector):
    def __init__(self, purgatory: Purgatory) -> None:
        self._purgatory = purgatory

    def collect(self) -> Iterator[Metric]:
        gauge = GaugeMetricFamily(
            "kafka_server_delayedoperationpurgatory_purgatorysize",
            "Requests parked in long polls (Fetch, ShareFetch).",
            labels=["delayed_operation"],
        )
        gauge.add_metric(["LongPoll"], self._purgatory.parked)
        yield gauge


class SharePartitionCollector(Collector):
    def __init__(self, share_service: ShareService, logs: LogManager) -> None:
        self._share = share_service
        self._logs = logs

    def collect(self) -> Iterator[Metric]:
        labels = ["group", "topic", "partition"]
        messages = GaugeMetricFamily(
            "kafka_server_sharepartitionmetrics_inflightmessagecount",
            "Records in the share-partition's in-flight window.",
            labels=labels,
        )
        batches = GaugeMetricFamily(
            "kafka_server_sharepartitionmetrics_inflightbatchcount",
            "Entries (batches, or single offsets of split batches) in the in-flight window.",
            labels=labels,
        )
        by_state = GaugeMetricFamily(
            "shoal_share_partition_records",
            "In-flight records by state (available, acquired, acknowledged, archiving, archived).",
            labels=[*labels, "state"],
        )
        start = GaugeMetricFamily(
            "shoal_share_partition_start_offset", "Share-partition start (SPSO).", labels=labels
        )
        end = GaugeMetricFamily(
            "shoal_share_partition_end_offset", "Share-partition end offset (SPEO).", labels=labels
        )
        blocked_keys = GaugeMetricFamily(
            "shoal_share_partition_blocked_keys",
            "Keys with a record held back behind an earlier record of the key in flight "
            "(shoal.share.delivery.order=key).",
            labels=labels,
        )
        key_blocked = GaugeMetricFamily(
            "shoal_share_partition_key_blocked_records",
            "AVAILABLE records held back by their key (shoal.share.delivery.order=key).",
            labels=labels,
        )
        scheduled = GaugeMetricFamily(
            "shoal_share_partition_scheduled_records",
            "Records waiting for their shoal.deliver.at time (scheduled delivery).",
            labels=labels,
        )
        malformed = CounterMetricFamily(
            "shoal_share_partition_malformed_deliver_at",
            "Records delivered at once because their shoal.deliver.at header did not "
            "parse, since the share-partition was loaded.",
            labels=labels,
        )
        manager = self._share.partitions
        for key in list(manager.keys()):
            sp = manager.get(key)
            info = self._logs.topic_by_id(key.topic_id)
            if sp is None or info is None or not sp.initialized:
                continue
            values = [key.group_id, info.name, str(key.partition)]
            counts, entries = sp.record_counts()
            messages.add_metric(values, sum(counts.values()))
            batches.add_metric(values, entries)
            for state in (
                RecordState.AVAILABLE,
                RecordState.ACQUIRED,
                RecordState.ACKNOWLEDGED,
                RecordState.ARCHIVING,
                RecordState.ARCHIVED,
            ):
                by_state.add_metric([*values, state.name.lower()], counts.get(state, 0))
            start.add_metric(values, sp.start_offset)
            end.add_metric(values, sp.end_offset)
            holds = sp.delivery_holds(top=0)
            blocked_keys.add_metric(values, holds.blocked_keys)
            key_blocked.add_metric(values, holds.blocked_records)
            scheduled.add_metric(values, holds.scheduled_records)
            malformed.add_metric(values, holds.malformed_deliver_at)
        yield from (messages, batches, by_state, start, end)
        yield from (blocked_keys, key_blocked, scheduled, malformed)


class GroupCollector(Collector):
    """Group counts, and share-group rebalances: the sum of the group epoch increases
    seen at scrapes (an epoch bump is a rebalance; bumps between two scrapes are all
    counted, a group deleted keeps what it added)."""

    def __init__(self, group_service: GroupService) -> None:
        self._groups = group_service
        self._epochs: dict[str, int] = {}
        self._rebalances = 0

    def collect(self) -> Iterator[Metric]:
        listed = self._groups.list_groups()
        by_protocol = GaugeMetricFamily(
            "kafka_server_group_coordinator_metrics_group_count",
            "Groups by protocol (classic, consumer, share).",
            labels=["protocol"],
        )
        for protocol, count in sorted(Tally(g.group_type for g in listed).items()):
            by_protocol.add_metric([protocol], count)
        yield by_protocol
        for group_type in ("share", "consumer"):
            gauge = GaugeMetricFamily(
                f"kafka_server_group_coordinator_metrics_{group_type}_group_count",
                f"{group_type.capitalize()} groups by state.",
                labels=["state"],
            )
            states = Tally(g.group_state.lower() for g in listed if g.group_type == group_type)
            for state, count in sorted(states.items()):
                gauge.add_metric([state], count)
            yield gauge
        share_ids = [g.group_id for g in listed if g.group_type == "share"]
        for described in self._groups.describe(share_ids):
            seen = self._epochs.get(described.group_id, 0)
            if described.group_epoch > seen:
                self._rebalances += described.group_epoch - seen
            self._epochs[described.group_id] = described.group_epoch
        for gone in set(self._epochs) - set(share_ids):
            del self._epochs[gone]
        yield CounterMetricFamily(
            "kafka_server_group_coordinator_metrics_share_group_rebalance",
            "Share-group rebalances (group epoch increases).",
            value=self._rebalances,
        )


class TransactionCollector(Collector):
    def __init__(self, txn: TxnService) -> None:
        self._txn = txn

    def collect(self) -> Iterator[Metric]:
        gauge = GaugeMetricFamily(
            "shoal_transactions", "Transactional ids by transaction state.", labels=["state"]
        )
        if self._txn.opened:
            states = Tally(
                metadata.state.display_name
                for shard in self._txn.coordinator.shards()
                for metadata in shard.transactions.values()
            )
            for state, count in sorted(states.items()):
                gauge.add_metric([state], count)
        yield gauge


class CleanerCollector(Collector):
    """Kafka's cleaner gauges, computed as Kafka computes them from the workers'
    last cleans (server/services/log_cleaner.py `CleanerState`), and the per-partition
    backlog read from each compacted log's `cleaner_progress` at scrape time."""

    def __init__(
        self, cleaner: LogCleaner, logs: LogManager, *, wall_ms: Callable[[], int]
    ) -> None:
        self._cleaner = cleaner
        self._logs = logs
        self._wall_ms = wall_ms

    def collect(self) -> Iterator[Metric]:
        state = self._cleaner.state
        yield GaugeMetricFamily(
            "kafka_log_logcleanermanager_max_dirty_percent",
            "Dirty ratio of the dirtiest compacted partition at the cleaner's last pass, in %.",
            value=int(100 * state.max_dirty_ratio),
        )
        yield GaugeMetricFamily(
            "kafka_log_logcleanermanager_time_since_last_run_ms",
            "Milliseconds since the cleaner last looked for a partition to clean.",
            value=max(0, self._wall_ms() - state.last_run_wall_ms),
        )
        uncleanable = GaugeMetricFamily(
            "kafka_log_logcleanermanager_uncleanable_partitions_count",
            "Partitions the cleaner gave up on after an error.",
            labels=["log_directory"],
        )
        uncleanable.add_metric([str(self._logs.data_dir)], len(state.uncleanable))
        yield uncleanable
        lasts = list(state.last_cleans.values())
        threads = max(1, self._cleaner.threads, len(lasts))
        recopy = sum(
            100 * last.bytes_written / last.bytes_read for last in lasts if last.bytes_read
        )
        yield GaugeMetricFamily(
            "kafka_log_logcleaner_cleaner_recopy_percent",
            "Bytes written per byte read by each worker's last clean, in %, averaged.",
            value=int(recopy / threads),
        )
        yield GaugeMetricFamily(
            "kafka_log_logcleaner_max_buffer_utilization_percent",
            "Key map use of the workers' last cleans (the fullest), in %.",
            value=int(100 * max((last.buffer_utilization for last in lasts), default=0.0)),
        )
        yield GaugeMetricFamily(
            "kafka_log_logcleaner_max_clean_time_secs",
            "Duration of the workers' last cleans (the longest), in seconds.",
            value=int(max((last.elapsed_s for last in lasts), default=0.0)),
        )
        yield GaugeMetricFamily(
            "kafka_log_logcleaner_max_compaction_delay_secs",
            "How far past max.compaction.lag.ms the most overdue partition was at the "
            "cleaner's last pass, in seconds.",
            value=state.max_compaction_delay_ms // 1000,
        )
        yield GaugeMetricFamily(
            "kafka_log_logcleaner_deadthreadcount",
            "Cleaner workers that died of an unexpected error.",
            value=state.dead_workers,
        )
        labels = ["topic", "partition"]
        dirty = GaugeMetricFamily(
            "shoal_log_cleaner_dirty_bytes",
            "Bytes of a compacted partition not yet cleaned (the cleaner's backlog).",
            labels=labels,
        )
        cleaned = CounterMetricFamily(
            "shoal_log_cleaner_cleaned_bytes",
            "Bytes of a compacted partition its cleans read (the cleaner's progress).",
            labels=labels,
        )
        cleans = CounterMetricFamily(
            "shoal_log_cleaner_cleans", "Cleans of a compacted partition finished.", labels=labels
        )
        for (topic, index), partition_log in self._cleaner.compacted_partitions():
            values = [topic, str(index)]
            try:
                progress = partition_log.cleaner_progress()
            except LogError:  # offline: the cleaner counts it uncleanable
                continue
            dirty.add_metric(values, progress.dirty_bytes)
            cleaned.add_metric(values, state.cleaned_bytes.get((topic, index), 0))
            cleans.add_metric(values, state.cleans.get((topic, index), 0))
        yield from (dirty, cleaned, cleans)


def broker_collectors(
    *,
    logs: LogManager,
    purgatory: Purgatory,
    share_service: ShareService,
    group_service: GroupService,
    txn: TxnService,
    cleaner: LogCleaner,
) -> list[Collector]:
    """The broker's scrape-time collectors (the caller registers them)."""
    return [
        LogCollector(logs),
        PurgatoryCollector(purgatory),
        SharePartitionCollector(share_service, logs),
        GroupCollector(group_service),
        TransactionCollector(txn),
        CleanerCollector(cleaner, logs, wall_ms=cleaner.wall_ms),
    ]
