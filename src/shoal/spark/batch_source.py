"""`format("shoal")`: the batch source (topics by offset range), the entry point of the
topic stream (`readStream`, `topic_stream`) and of the sink.

Reading: `spark.read.format("shoal").option("bootstrap.servers", ...).option("topic",
...).load()`. On the driver, `schema()` and `reader()` check the options and that the
brokers answer; `reader()` resolves `startingOffsets`/`endingOffsets` with ListOffsets
(as Spark's Kafka source: "earliest", "latest" or JSON per partition, -2 earliest and
-1 latest) and splits each partition's range into `OffsetRange` tasks (one per
partition by default; more with `minPartitions` or `maxRecordsPerPartition`), both in
`offset_ranges`, which the topic stream plans its micro-batches with too.
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

from collections.abc import Iterator, Mapping
from typing import Final

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

from shoal.spark.cluster import EARLIEST, LATEST
from shoal.spark.offset_ranges import OffsetRange, resolve_ranges, split_ranges
from shoal.spark.options import (
    BOOTSTRAP_SERVERS,
    FETCH_MAX_BYTES,
    INCLUDE_HEADERS,
    MAX_RECORDS_PER_PARTITION,
    MAX_ROWS_PER_BATCH,
    MIN_PARTITIONS,
    OFFSETS_HELP,
    READ_UNCOMMITTED,
    TOPICS,
    OffsetSpec,
    OptionError,
    OptionSpec,
    ParsedOptions,
    isolation_level_option,
    parse_offsets,
    parse_options,
    require_reachable,
)
from shoal.spark.reading import SCHEMA_DDL, SCHEMA_DDL_WITHOUT_HEADERS, read_range
from shoal.spark.sink import ShoalBatchWriter, ShoalStreamWriter
from shoal.spark.topic_stream import TopicStreamReader
from shoal.spark.topic_stream_options import SOURCE_NAME, STREAM_OPTIONS, parse_stream_options

NAME: Final = SOURCE_NAME

STARTING_OFFSETS: Final = OptionSpec[OffsetSpec](
    "startingOffsets", parse_offsets, "earliest", help=OFFSETS_HELP
)
ENDING_OFFSETS: Final = OptionSpec[OffsetSpec](
    "endingOffsets", parse_offsets, "latest", help=OFFSETS_HELP
)
ISOLATION_LEVEL: Final = isolation_level_option(READ_UNCOMMITTED)

READ_OPTIONS: Final = (
    BOOTSTRAP_SERVERS,
    TOPICS,
    STARTING_OFFSETS,
    ENDING_OFFSETS,
    MIN_PARTITIONS,
    MAX_RECORDS_PER_PARTITION,
    FETCH_MAX_BYTES,
    MAX_ROWS_PER_BATCH,
    INCLUDE_HEADERS,
    ISOLATION_LEVEL,
)


class ShoalDataSource(DataSource):
    """Batch and streaming reads of topics, batch and streaming writes to them."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        options = parse_options(self.options, STREAM_OPTIONS, source=NAME)
        require_reachable(options.value(BOOTSTRAP_SERVERS), security=options.security)
        return SCHEMA_DDL if options.value(INCLUDE_HEADERS) else SCHEMA_DDL_WITHOUT_HEADERS

    def reader(self, schema: StructType) -> DataSourceReader:
        return ShoalBatchReader(read_options(self.options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return TopicStreamReader(parse_stream_options(self.options))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return ShoalBatchWriter.create(self.options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return ShoalStreamWriter.create(self.options, schema)


def read_options(raw: Mapping[str, str]) -> ParsedOptions:
    """The parsed read options, with the batch-only rules of Spark's Kafka source and a
    reachability check of the bootstrap servers."""
    options = parse_options(raw, READ_OPTIONS, source=NAME)
    _reject(options.value(STARTING_OFFSETS), STARTING_OFFSETS.name, "latest", LATEST)
    _reject(options.value(ENDING_OFFSETS), ENDING_OFFSETS.name, "earliest", EARLIEST)
    require_reachable(options.value(BOOTSTRAP_SERVERS), security=options.security)
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


class ShoalBatchReader(DataSourceReader):
    """Plans the offset ranges on the driver; reads one range per task."""

    def __init__(self, options: ParsedOptions) -> None:
        self._bootstrap = options.value(BOOTSTRAP_SERVERS)
        self._fetch_max_bytes = options.value(FETCH_MAX_BYTES)
        self._max_rows_per_batch = options.value(MAX_ROWS_PER_BATCH)
        self._include_headers = options.value(INCLUDE_HEADERS)
        self._isolation_level = options.value(ISOLATION_LEVEL)
        self._security = options.security
        ranges = resolve_ranges(
            self._bootstrap,
            options.value(TOPICS),
            starting=options.value(STARTING_OFFSETS),
            ending=options.value(ENDING_OFFSETS),
            isolation_level=self._isolation_level,
            security=self._security,
        )
        self._ranges = split_ranges(
            ranges,
            min_partitions=options.value(MIN_PARTITIONS),
            max_records_per_partition=options.value(MAX_RECORDS_PER_PARTITION),
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
