"""Offset ranges of topic partitions, the tasks of the batch source and of each
micro-batch of the topic stream: `resolve_ranges` resolves `startingOffsets` /
`endingOffsets` (Spark's Kafka source's "earliest", "latest" or JSON per partition)
against each partition's log with ListOffsets, and `split_ranges` splits the ranges
into tasks (`minPartitions`, `maxRecordsPerPartition`).

Shared by batch_source.py and topic_stream.py, which both plan ranges this way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

from shoal.client import KafkaError
from shoal.client.security import ClientSecurity
from shoal.spark import cluster
from shoal.spark.cluster import EARLIEST, LATEST
from shoal.spark.options import READ_UNCOMMITTED, OffsetSpec, OptionError


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


def resolve_ranges(
    bootstrap: str,
    topics: tuple[str, ...],
    *,
    starting: OffsetSpec,
    ending: OffsetSpec,
    isolation_level: int = READ_UNCOMMITTED,
    security: ClientSecurity | None = None,
) -> list[OffsetRange]:
    """Every partition of the topics with its [start, end) resolved (`starting` and
    `ending` as the startingOffsets and endingOffsets options give them); OptionError
    when a topic does not exist or an offset is outside the log. "latest" is the last
    stable offset when `isolation_level` is read_committed."""
    client = cluster.client_for(bootstrap, security)
    try:
        found = cluster.partitions(client, topics)
    except KafkaError as exc:
        raise OptionError(f"option 'topic' = {','.join(topics)!r}: {exc}") from exc
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
