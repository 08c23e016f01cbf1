"""Where the group coordinator's records live: `__consumer_offsets`.

`open_group_log` ensures the topic (`offsets.topic.num.partitions` partitions,
`offsets.topic.segment.bytes` segments; see coordinator/internal_topics.py) and
returns the sink the group coordinator writes through and the records to replay at
start-up. Shoal runs one group-coordinator shard over every partition, so the sink
routes each record to the partition owning its group, `partition_for(group_id, n)`
as Kafka places groups: a group's records stay in order within one partition.

Replay goes partition by partition, each in offset order; records of different
groups do not depend on one another, so that order rebuilds every group as written.
Replayed records carry `NO_OFFSET`, as live writes through the routed sink do, so a
loaded shard sees exactly what the live one saw.
"""

from __future__ import annotations

from collections.abc import Iterator

from shoal.clock import Clock
from shoal.config import BrokerConfig
from shoal.coordinator.internal_topics import ensure_internal_topic
from shoal.coordinator.log_sink import LogRecordSink, RoutedRecordSink, read_log
from shoal.coordinator.placement import partition_for
from shoal.coordinator.runtime import NO_OFFSET
from shoal.group.records import CODEC, CoordinatorRecord
from shoal.log.manager import LogManager
from shoal.log.partition import PartitionLog

GROUP_METADATA_TOPIC = "__consumer_offsets"


def open_group_log(
    logs: LogManager, config: BrokerConfig, clock: Clock
) -> tuple[RoutedRecordSink[CoordinatorRecord], Iterator[tuple[int, CoordinatorRecord]]]:
    """The routed sink over `__consumer_offsets` and the records it holds (lazily
    read: iterate before the first append). Raises `LogError` if the topic cannot be
    created or opened; iterating raises `CoordinatorLogCorrupt` on a bad record."""
    partitions = ensure_internal_topic(
        logs,
        name=GROUP_METADATA_TOPIC,
        partitions=config.get_int("offsets.topic.num.partitions"),
        configs={"segment.bytes": config.get_int("offsets.topic.segment.bytes")},
    )
    count = len(partitions)

    def route(record: CoordinatorRecord) -> int:
        return partition_for(record.key.group_id, count)

    sink = RoutedRecordSink(
        sinks=[LogRecordSink(log=log, encode=CODEC.encode, clock=clock) for log in partitions],
        route=route,
    )
    replay = _replay(partitions, buffer_bytes=config.get_int("offsets.load.buffer.size"))
    return sink, replay


def _replay(
    partitions: list[PartitionLog], *, buffer_bytes: int
) -> Iterator[tuple[int, CoordinatorRecord]]:
    for log in partitions:
        for _offset, record in read_log(log, CODEC.decode, buffer_bytes=buffer_bytes):
            yield NO_OFFSET, record
