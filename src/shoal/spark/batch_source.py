"""`format("shoal")`: the batch source (topics by offset range), the entry point of the
topic stream (`readStream`, `topic_stream`) and of the sink.

Reading: `spark.read.format("shoal").option("bootstrap.servers", ...).option("topic",
...).load()`. On the driver, `schema()` and `reader()` check the options and that the
brokers answer; `reader()` resolves `startingOffsets`/`endingOffsets` with ListOffsets
(as Spark's Kafka source: "earliest", "latest" or JSON per partition, -2 earliest and
-1 latest) and splits each partition's range into `OffsetRange` tasks (one per
partition by default; more with `minPartitions` or `maxRecordsPerPartition`).
Executors run `read()`, which is `reading.read_range` over one range.

`kafka.isolation.level` (or `isolation.level`) defaults to `read_uncommitted` for
batch reads, the Kafka consumer's default, which Spark's Kafka source passes through
unchanged: "latest" is the high watermark and aborted records are rows. With
`read_committed`, "latest" is the last stable offset (ListOffsets with
read_committed) and aborted transactions are dropped. (The stream defaults to
read_committed, unlike Spark's; see `topic_stream_options`.)

Streaming (`spark.readStream.format("shoal")`) is `ShoalDataSource.streamReader()`,
implemented in `shoal.spark.topic_stream`. `schema()` runs for batch and stream reads
alike, so it checks only the options both accept (`topic_stream_options`), and the
readers apply their own rules.

Writing (`df.write` / `writeStream`) is `ShoalDataSource.writer()` /
`streamWriter()`, implemented in `shoal.spark.sink`.

The resolved ranges are fixed when the query is planned, so a task retried or
speculated reads exactly the same records.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.types import StructType

from shoal.client import KafkaError
from shoal.client.security import ClientSecurity
from shoal.spark import cluster
from shoal.spark.cluster import EARLIEST, LATEST
from shoal.spark.options import (
    BOOTSTRAP_SERVERS,
    FETCH_MAX_BYTES,
    INCLUDE_HEADERS,
    MAX_RECORDS_PER_PARTITION,
    MAX_ROWS_PER_BATCH,
    MIN_PARTITIONS,
    OFFSETS_HELP,
    READ_UNCOMMITTED,
    SECURITY,
    TOPICS,
    OffsetSpec,
    OptionError,
    OptionSpec,
    isolation_level_option,
    parse_offsets,
    parse_options,
    require_reachable,
)
from shoal.spark.reading import SCHEMA_DDL, SCHEMA_DDL_WITHOUT_HEADERS, read_range
from shoal.spark.topic_stream_options import STREAM_OPTIONS, parse_stream_options

NAME: Final = "shoal"

READ_OPTIONS: Final = (
    BOOTSTRAP_SERVERS,
    TOPICS,
    OptionSpec("startingOffsets", parse_offsets, "earliest", help=OFFSETS_HELP),
    OptionSpec("endingOffsets", parse_offsets, "latest", help=OFFSETS_HELP),
    MIN_PARTITIONS,
    MAX_RECORDS_PER_PARTITION,
    FETCH_MAX_BYTES,
    MAX_ROWS_PER_BATCH,
    INCLUDE_HEADERS,
    isolation_level_option(READ_UNCOMMITTED),
)


class ShoalDataSource(DataSource):
    """Batch and streaming reads of topics, batch and streaming writes to them."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        options = parse_options(self.options, STREAM_OPTIONS, source=NAME)
        require_reachable(options["bootstrap.servers"], security=options[SECURITY])
        return SCHEMA_DDL if options["includeHeaders"] else SCHEMA_DDL_WITHOUT_HEADERS

    def reader(self, schema: StructType) -> DataSourceReader:
        return ShoalBatchReader(read_options(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from shoal.spark.topic_stream import TopicStreamReader

        return TopicStreamReader(parse_stream_options(self.options))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from shoal.spark.sink import ShoalBatchWriter

        return ShoalBatchWriter.create(self.options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from shoal.spark.sink import ShoalStreamWriter

        return ShoalStreamWriter.create(self.options, schema)


def read_options(raw: Mapping[str, str]) -> dict[str, Any]:
    """The parsed read options, with the batch-only rules of Spark's Kafka source and a
    reachability check of the bootstrap servers."""
    options = parse_options(raw, READ_OPTIONS, source=NAME)
    _reject(options["startingOffsets"], "startingOffsets", "latest", LATEST)
    _reject(options["endingOffsets"], "endingOffsets", "earliest", EARLIEST)
    require_reachable(options["bootstrap.servers"], security=options[SECURITY])
    return options


def _reject(spec: OffsetSpec, option: str, word: str, sentinel: int) -> None:
    if spec == word:
        raise OptionError(f"option '{option}' cannot be \"{word}\" for a batch query")
    if isinstance(spec, dict):
        for topic, partitions in spec.items():
            for partition, offset in partitions.items():
                if offset == sentinel:
                    raise OptionError(
                        f"option '{option}': {topic}-{partition} is {sentinel} (\"{word}\"), "
                        "which a batch query cannot use"
                    )


@dataclass(frozen=True)
class OffsetRange(InputPartition):
    """One task: offsets [start, end) of one partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


class ShoalBatchReader(DataSourceReader):
    """Plans the offset ranges on the driver; reads one range per task."""

    def __init__(self, options: dict[str, Any]) -> None:
        self._bootstrap: str = options["bootstrap.servers"]
        self._fetch_max_bytes: int = options["fetchMaxBytes"]
        self._max_rows_per_batch: int = options["maxRowsPerBatch"]
        self._include_headers: bool = options["includeHeaders"]
        self._isolation_level: int = options["isolation.level"]
        self._security: ClientSecurity = options[SECURITY]
        self._ranges = split_ranges(
            resolve_ranges(self._bootstrap, options),
            min_partitions=options["minPartitions"],
            max_records_per_partition=options["maxRecordsPerPartition"],
        )

    def partitions(self) -> list[InputPartition]:
        return list(self._ranges)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, OffsetRange):
            return  # Spark's stand-in partition when there is nothing to read
        yield from read_range(
            self._bootstrap,
            partition.topic,
            partition.partition,
            partition.start,
            partition.end,
            isolation_level=self._isolation_level,
            max_rows_per_batch=self._max_rows_per_batch,
            fetch_max_bytes=self._fetch_max_bytes,
            include_headers=self._include_headers,
            security=self._security,
        )


def resolve_ranges(bootstrap: str, options: Mapping[str, Any]) -> list[OffsetRange]:
    """Every partition of the topics with its [start, end) resolved; OptionError when
    a topic does not exist or an offset is outside the log. "latest" is the last
    stable offset when `options["isolation.level"]` is read_committed."""
    topics: tuple[str, ...] = options["topic"]
    client = cluster.client_for(bootstrap, options.get(SECURITY))
    try:
        found = cluster.partitions(client, topics)
    except KafkaError as exc:
        raise OptionError(f"option 'topic' = {','.join(topics)!r}: {exc}") from exc
    starting: OffsetSpec = options["startingOffsets"]
    ending: OffsetSpec = options["endingOffsets"]
    isolation_level: int = options.get("isolation.level", READ_UNCOMMITTED)
    for option, spec in (("startingOffsets", starting), ("endingOffsets", ending)):
        _check_covers(option, spec, found)
    ranges = []
    for topic in topics:
        ids = found[topic]
        earliest = cluster.list_offsets(client, topic, dict.fromkeys(ids, EARLIEST))
        latest = cluster.list_offsets(
            client, topic, dict.fromkeys(ids, LATEST), isolation_level=isolation_level
        )
        for partition in ids:
            bounds = (earliest[partition], latest[partition])
            start = _resolve("startingOffsets", starting, topic, partition, bounds)
            end = _resolve("endingOffsets", ending, topic, partition, bounds)
            if start > end:
                raise OptionError(
                    f"startingOffsets {start} is after endingOffsets {end} for {topic}-{partition}"
                )
            ranges.append(OffsetRange(topic, partition, start, end))
    return ranges


def _check_covers(option: str, spec: OffsetSpec, partitions: Mapping[str, list[int]]) -> None:
    """A JSON offset map must name exactly the partitions read (as Spark's Kafka source
    requires for batch queries)."""
    if not isinstance(spec, dict):
        return
    for topic in spec:
        if topic not in partitions:
            raise OptionError(f"option '{option}' names topic {topic!r}, which is not read")
    for topic, ids in partitions.items():
        given = set(spec.get(topic, {}))
        if given != set(ids):
            raise OptionError(
                f"option '{option}' must give an offset for every partition of {topic!r} "
                f"(partitions {sorted(ids)}, given {sorted(given)}); use -2 for earliest"
                + (", -1 for latest" if option == "endingOffsets" else "")
            )


def _resolve(
    option: str, spec: OffsetSpec, topic: str, partition: int, bounds: tuple[int, int]
) -> int:
    earliest, latest = bounds
    if spec == "earliest":
        return earliest
    if spec == "latest":
        return latest
    assert isinstance(spec, dict)
    offset = spec[topic][partition]
    if offset == EARLIEST:
        return earliest
    if offset == LATEST:
        return latest
    if not earliest <= offset <= latest:
        raise OptionError(
            f"option '{option}': offset {offset} of {topic}-{partition} is outside the log "
            f"[{earliest}, {latest}]"
        )
    return offset


def split_ranges(
    ranges: list[OffsetRange],
    *,
    min_partitions: int | None,
    max_records_per_partition: int | None,
) -> list[OffsetRange]:
    """Split non-empty ranges into tasks: a range gets a share of `min_partitions`
    proportional to its size (at least one), and no task exceeds
    `max_records_per_partition` records. Empty ranges are dropped."""
    ranges = [r for r in ranges if r.size > 0]
    total = sum(r.size for r in ranges)
    tasks = []
    for r in ranges:
        parts = 1
        if min_partitions is not None and min_partitions > len(ranges):
            parts = max(1, round(r.size * min_partitions / total))
        if max_records_per_partition is not None:
            parts = max(parts, math.ceil(r.size / max_records_per_partition))
        parts = min(parts, r.size)
        for i in range(parts):
            start = r.start + r.size * i // parts
            end = r.start + r.size * (i + 1) // parts
            tasks.append(OffsetRange(r.topic, r.partition, start, end))
    return tasks
