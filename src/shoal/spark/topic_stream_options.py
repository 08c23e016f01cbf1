"""Options of `spark.readStream.format("shoal")`, parsed and checked (pure; no pyspark).

Spark's Kafka source's names and meanings, where it has them:

- `bootstrap.servers` (or `kafka.bootstrap.servers`), required: the brokers.
- `subscribe` (or `topic`, `topics`), required: a topic or a comma-separated list.
- `startingOffsets` (`latest`): where a new query starts: `earliest`, `latest` or JSON
  `{"t":{"0":23,"1":-2}}` (-2 earliest, -1 latest; every partition of the topics).
  Ignored once the checkpoint has an offset.
- `maxOffsetsPerTrigger` (none): records per micro-batch at most, split across the
  partitions by backlog.
- `minPartitions` (one task per partition with records): Spark tasks per micro-batch at
  least (big ranges are split); `maxRecordsPerPartition` (none): records per task at most.
- `failOnDataLoss` (`true`): fail the query when records were deleted (or a partition
  went away) before it read them; `false` logs and skips them.
- `includeHeaders` (`true`, Spark's default is false): the `headers` column; `false`
  drops it.
- `commitToGroup` (none): a consumer group the end offsets of finished batches are
  committed to (topic_stream.py says when).
- `fetchMaxBytes`, `maxRowsPerBatch` (8 MiB, 65536): as for the batch source.
- `kafka.isolation.level` (or `isolation.level`; `read_committed`): `read_committed`
  plans batches up to each partition's last stable offset and drops aborted
  transactions; `read_uncommitted` reads up to the high watermark, aborted records
  included. Transaction markers are never rows. Spark's Kafka source leaves this to
  the Kafka consumer's default (read_uncommitted); Shoal's stream defaults to
  read_committed, so it never emits records of an aborted or open
  transaction unless asked to.

`endingOffsets` is refused, as Spark's Kafka source refuses it for streams: a stream
reads on, and `trigger(availableNow=True)` stops at the end offsets the topics have
when the query starts. Every problem raises `OptionError` naming the option.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from shoal.client.security import ClientSecurity
from shoal.spark.options import (
    BOOTSTRAP_SERVERS,
    FETCH_BYTES_DEFAULT,
    FETCH_MAX_BYTES,
    INCLUDE_HEADERS,
    MAX_RECORDS_PER_PARTITION,
    MAX_ROWS_PER_BATCH,
    MAX_ROWS_PER_BATCH_DEFAULT,
    MIN_PARTITIONS,
    OFFSETS_HELP,
    READ_COMMITTED,
    TOPICS,
    OffsetSpec,
    OptionError,
    OptionSpec,
    int_parser,
    isolation_level_option,
    parse_bool,
    parse_group_id,
    parse_offsets,
    parse_options,
)

SOURCE_NAME: Final = "shoal"
RECORDS_PER_TRIGGER_MAX: Final = 2**31 - 1
"""Ceiling of `maxOffsetsPerTrigger` (Spark's `ReadMaxRows` holds an int)."""

STARTING_OFFSETS: Final = OptionSpec[OffsetSpec](
    "startingOffsets", parse_offsets, "latest", help=OFFSETS_HELP
)
ENDING_OFFSETS: Final = OptionSpec[OffsetSpec | None](
    "endingOffsets", parse_offsets, None, help=OFFSETS_HELP
)
RECORDS_PER_TRIGGER: Final = OptionSpec[int | None](
    "maxOffsetsPerTrigger",
    int_parser(1, RECORDS_PER_TRIGGER_MAX),
    None,
    help="a positive number of records per micro-batch",
)
FAIL_ON_DATA_LOSS: Final = OptionSpec("failOnDataLoss", parse_bool, True, help="true or false")
COMMIT_TO_GROUP: Final = OptionSpec[str | None](
    "commitToGroup", parse_group_id, None, help="a consumer group id"
)
ISOLATION_LEVEL: Final = isolation_level_option(READ_COMMITTED)

STREAM_OPTIONS: Final = (
    BOOTSTRAP_SERVERS,
    TOPICS,
    STARTING_OFFSETS,
    ENDING_OFFSETS,
    RECORDS_PER_TRIGGER,
    MIN_PARTITIONS,
    MAX_RECORDS_PER_PARTITION,
    FAIL_ON_DATA_LOSS,
    INCLUDE_HEADERS,
    COMMIT_TO_GROUP,
    FETCH_MAX_BYTES,
    MAX_ROWS_PER_BATCH,
    ISOLATION_LEVEL,
)


@dataclass(frozen=True, slots=True)
class StreamOptions:
    bootstrap: str
    topics: tuple[str, ...]
    starting: OffsetSpec = "latest"
    records_per_trigger: int | None = None
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = True
    commit_group: str | None = None
    fetch_max_bytes: int = FETCH_BYTES_DEFAULT
    max_rows_per_batch: int = MAX_ROWS_PER_BATCH_DEFAULT
    isolation_level: int = READ_COMMITTED
    security: ClientSecurity = field(default_factory=ClientSecurity)
    """From the `kafka.`-prefixed security options."""


def parse_stream_options(raw: Mapping[str, str]) -> StreamOptions:
    """The stream's options; OptionError naming the option when one is wrong."""
    parsed = parse_options(raw, STREAM_OPTIONS, source=SOURCE_NAME)
    if parsed.value(ENDING_OFFSETS) is not None:
        raise OptionError(
            "option 'endingOffsets' is not valid in streaming queries (as in Spark's Kafka "
            "source): a stream reads on; with trigger(availableNow=True) it stops at the end "
            "offsets the topics have when the query starts. For a fixed range use spark.read"
        )
    return StreamOptions(
        bootstrap=parsed.value(BOOTSTRAP_SERVERS),
        topics=parsed.value(TOPICS),
        starting=parsed.value(STARTING_OFFSETS),
        records_per_trigger=parsed.value(RECORDS_PER_TRIGGER),
        min_partitions=parsed.value(MIN_PARTITIONS),
        max_records_per_partition=parsed.value(MAX_RECORDS_PER_PARTITION),
        fail_on_data_loss=parsed.value(FAIL_ON_DATA_LOSS),
        include_headers=parsed.value(INCLUDE_HEADERS),
        commit_group=parsed.value(COMMIT_TO_GROUP),
        fetch_max_bytes=parsed.value(FETCH_MAX_BYTES),
        max_rows_per_batch=parsed.value(MAX_ROWS_PER_BATCH),
        isolation_level=parsed.value(ISOLATION_LEVEL),
        security=parsed.security,
    )
