"""`spark.readStream.format("shoal")`: topics as an offset-based micro-batch stream, the
source Spark users know from Spark's Kafka source (options: topic_stream_options.py).

A micro-batch is a range of offsets per partition, named by its end offset JSON
(`{"orders": {"0": 23, "1": 40}}`, topic_offsets.py); executors read the ranges with
plain Fetch (`reading.read_range`, as the batch source does). The ranges follow from
the offsets alone, so a batch Spark replays after a crash reads the same records, and
a sink that is idempotent through the query's checkpoint (Parquet, Delta, ...) gets
each record exactly once.

Where things run (docs/design/spark-connector.md §2): `streamReader()` in a planner
worker (its reader is pickled to the executors for `read()`) and in the query's
long-lived source runner, which alone calls the offset methods:

- `initialOffset()`: `startingOffsets` resolved with ListOffsets, once per runner (a
  stream that starts at `latest` must not skip what arrives between two idle
  triggers). It only matters for a new query: afterwards Spark starts from the
  checkpoint's offsets. Unlike Spark's Kafka source, which writes its initial offsets
  into the checkpoint at once, a Python source has no place there: a query restarted
  before it planned its first batch resolves `startingOffsets` again.
- `latestOffset(start, limit)`: the partitions of the topics and their log bounds,
  then `topic_offsets.plan_end`: new partitions from earliest, data losses (fail or
  log, `failOnDataLoss`), the read limit (`maxOffsetsPerTrigger` is the default
  `ReadMaxRows`; `ReadAllAvailable` reads everything) and, for AvailableNow, the log end
  offsets `prepareForTriggerAvailableNow()` recorded. Nothing new: `start` itself.
- `partitions(start, end)`: the ranges, split as the batch source splits them
  (`minPartitions`, `maxRecordsPerPartition`); a new partition starts at its earliest
  offset, asked at that moment.
- `read(range)`: `read_range`; a range whose records were deleted before the task
  read them fails the task (`failOnDataLoss=true`, the default) or is skipped to the
  log start with a warning.

`commitToGroup=<group.id>`: the stream's position is committed to that consumer group
(OffsetCommit from outside the group, as Kafka's AdminClient does,
`shoal.client.group_offsets`), so `shoal consumer-groups --describe --group G` and any
Kafka lag monitor show the query's lag. When the group's offsets advance:

1. at `latestOffset(start)`: Spark calls it with `start` = the end of batch N only once
   batch N is durably committed in the checkpoint (docs/design/spark-connector.md §3
   rule 3), so `start` is committed to the group first. This is the reliable "batch N
   done" signal, and it comes at every trigger: with AvailableNow the last call (which
   returns `start` and ends the run) commits the final batch, so the lag reads 0 when
   the query finishes.
2. at `commit(end)`, which Spark calls when it plans batch N+1; it always follows the
   call of rule 1 for the same offsets, so it commits only if that one failed.

The group therefore trails the query by at most the batch in flight; a query stopped
(`query.stop()`) between triggers leaves its last batch uncommitted to the group until
it runs again. A restart first replays an uncommitted batch and then commits its end
at the next `latestOffset`. The group must have no members: a group with active
consumers refuses the commit (UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION), and so does any
broker error; the source logs a warning and goes on, since the stream must not fail
because a lag monitor cannot be fed. Commits never move the stream: Spark's checkpoint
is the only source of truth for where the query is.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from shoal.client import ClientError, KafkaError
from shoal.client.errors import ErrorCode
from shoal.client.group_offsets import commit_offsets
from shoal.client.metadata import TopicPartition
from shoal.spark import cluster
from shoal.spark.cluster import EARLIEST, LATEST
from shoal.spark.offset_ranges import OffsetRange, resolve_ranges, split_ranges
from shoal.spark.reading import OffsetRangeError, read_range
from shoal.spark.topic_offsets import (
    Offsets,
    from_json,
    new_partitions,
    plan_end,
    ranges,
    to_json,
)
from shoal.spark.topic_stream_options import SOURCE_NAME as NAME
from shoal.spark.topic_stream_options import StreamOptions

log = logging.getLogger(__name__)


class DataLossError(RuntimeError):
    """Records the stream was to read are gone (`failOnDataLoss=true`)."""


DATA_LOSS_HINT = (
    "Set option failOnDataLoss=false to skip what is gone and go on (as with Spark's Kafka source)."
)


class TopicStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """See the module docstring."""

    def __init__(self, options: StreamOptions) -> None:
        self.options = options
        self._initial: dict[str, Any] | None = None
        self._cap: Offsets | None = None
        self._latest: dict[str, Any] | None = None
        self._committed: Offsets | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Executors need only the options (driver state stays in the runner)."""
        return {**self.__dict__, "_cap": None, "_latest": None, "_committed": None}

    # ---- driver side (the source runner)

    def initialOffset(self) -> dict[str, Any]:
        if self._initial is None:
            found = resolve_ranges(
                self.options.bootstrap,
                self.options.topics,
                starting=self.options.starting,
                ending="latest",
                isolation_level=self.options.isolation_level,
                security=self.options.security,
            )
            self._initial = to_json({(r.topic, r.partition): r.start for r in found})
            log.info("shoal topic stream %s starts at %s", _topics(self.options), self._initial)
        return self._initial

    def getDefaultReadLimit(self) -> ReadLimit:
        records = self.options.records_per_trigger
        return ReadAllAvailable() if records is None else ReadMaxRows(records)

    def prepareForTriggerAvailableNow(self) -> None:
        _earliest, self._cap = self._bounds()
        log.info("shoal topic stream: AvailableNow reads up to %s", to_json(self._cap))

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = from_json(start)
        self._commit_to_group(begin)  # the batch that ended at `start` is committed
        earliest, latest = self._bounds()
        self._latest = to_json(latest)
        plan = plan_end(
            start=begin,
            earliest=earliest,
            latest=latest,
            records_max=self._records_max(limit),
            cap=self._cap,
        )
        if plan.losses:
            self._data_lost(plan.losses)
        return start if plan.end == begin else to_json(plan.end)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return self._latest

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[InputPartition]:
        begin, finish = from_json(start), from_json(end)
        new = new_partitions(begin, finish)
        earliest_of_new = self._offsets_at(new, EARLIEST) if new else {}
        found = [
            OffsetRange(r.topic, r.partition, r.start, r.end)
            for r in ranges(begin, finish, earliest_of_new)
        ]
        return list(
            split_ranges(
                found,
                min_partitions=self.options.min_partitions,
                max_records_per_partition=self.options.max_records_per_partition,
            )
        )

    def commit(self, end: dict[str, Any]) -> None:
        self._commit_to_group(from_json(end))

    def stop(self) -> None:
        """Nothing to release: clients are per process (`cluster.client_for`)."""

    def _records_max(self, limit: ReadLimit) -> int | None:
        if isinstance(limit, ReadAllAvailable):
            return None
        max_rows = getattr(limit, "max_rows", None)
        if isinstance(max_rows, int) and max_rows > 0:
            return max_rows
        return self.options.records_per_trigger

    def _bounds(self) -> tuple[Offsets, Offsets]:
        """Earliest and latest offset of every partition the topics have now (a topic
        that no longer exists has none)."""
        client = cluster.client_for(self.options.bootstrap, self.options.security)
        partitions: list[TopicPartition] = []
        for topic in self.options.topics:
            try:
                ids = cluster.partitions(client, [topic])[topic]
            except KafkaError as exc:
                if exc.code != ErrorCode.unknown_topic_or_partition:
                    raise
                log.warning("shoal topic stream: topic %r does not exist: %s", topic, exc)
                continue
            partitions.extend((topic, p) for p in ids)
        return self._offsets_at(partitions, EARLIEST), self._offsets_at(partitions, LATEST)

    def _offsets_at(self, partitions: list[TopicPartition], timestamp: int) -> Offsets:
        client = cluster.client_for(self.options.bootstrap, self.options.security)
        found: Offsets = {}
        for topic in sorted({t for t, _ in partitions}):
            wanted = {p: timestamp for t, p in partitions if t == topic}
            found_offsets = cluster.list_offsets(
                client, topic, wanted, isolation_level=self.options.isolation_level
            )
            for p, offset in found_offsets.items():
                found[(topic, p)] = offset
        return found

    def _data_lost(self, losses: tuple[str, ...]) -> None:
        if self.options.fail_on_data_loss:
            raise DataLossError(
                "shoal topic stream: data loss: " + "; ".join(losses) + ". " + DATA_LOSS_HINT
            )
        for loss in losses:
            log.warning("shoal topic stream: data loss (failOnDataLoss=false): %s", loss)

    def _commit_to_group(self, offsets: Offsets) -> None:
        group = self.options.commit_group
        if group is None or not offsets or offsets == self._committed:
            return
        try:
            commit_offsets(
                cluster.client_for(self.options.bootstrap, self.options.security), group, offsets
            )
        except ClientError as exc:
            log.warning(
                "shoal topic stream: could not commit %s to consumer group %r (commitToGroup; "
                "the stream goes on, the group's lag is stale): %s",
                to_json(offsets),
                group,
                exc,
            )
            return
        self._committed = dict(offsets)
        log.info("shoal topic stream: committed %s to consumer group %r", to_json(offsets), group)

    # ---- executor side

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, OffsetRange):
            return  # Spark's stand-in partition when a batch has nothing to read
        yield from read_stream_range(self.options, partition)


def read_stream_range(options: StreamOptions, task: OffsetRange) -> Iterator[pa.RecordBatch]:
    """`read_range` over the task's range; records gone from the log fail the task
    (DataLossError) or, with `failOnDataLoss=false`, are skipped with a warning."""
    offset = task.start
    while offset < task.end:
        try:
            for batch in read_range(
                options.bootstrap,
                task.topic,
                task.partition,
                offset,
                task.end,
                isolation_level=options.isolation_level,
                max_rows_per_batch=options.max_rows_per_batch,
                fetch_max_bytes=options.fetch_max_bytes,
                include_headers=options.include_headers,
                security=options.security,
            ):
                if batch.num_rows:
                    offset = int(batch.column("offset")[-1].as_py()) + 1
                yield batch
            return
        except OffsetRangeError as exc:
            if options.fail_on_data_loss:
                raise DataLossError(f"shoal topic stream: {exc}. {DATA_LOSS_HINT}") from exc
            client = cluster.client_for(options.bootstrap, options.security)
            first = cluster.list_offsets(client, task.topic, {task.partition: EARLIEST})
            log_start = first[task.partition]
            log.warning(
                "shoal topic stream: skipping lost records of %s-%d (failOnDataLoss=false): %s",
                task.topic,
                task.partition,
                exc,
            )
            if log_start <= offset:
                return  # the log ends before the range does (truncated): nothing to read
            offset = log_start


def _topics(options: StreamOptions) -> str:
    return ",".join(options.topics)


__all__ = ["NAME", "DataLossError", "TopicStreamReader", "read_stream_range"]
