"""Planning an offset reset, for `shoal share-groups` and `shoal consumer-groups`:
which partitions a `--topic`/`--all-topics` scope names (each must exist, Kafka's
checkAllTopicPartitionsValid), and the new offset of each from a scenario
(--to-earliest, --to-latest, --to-datetime, --to-offset), read with ListOffsets.
Offsets given outright (--to-offset, --shift-by, --from-file) are clamped into
[log start, log end] with Kafka's notice on stderr; a --to-datetime past a
partition's last record falls back to the log end with Kafka's warning.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping

from shoal.cli.kafka_options import ToolFailed
from shoal.cli.topic_admin import describe_topics, list_offsets
from shoal.client import Client
from shoal.client.metadata import TopicPartition
from shoal.client.requests import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP


def expand_partitions(
    client: Client,
    scope: Mapping[str, tuple[int, ...] | None],
    listed: Iterable[TopicPartition] = (),
) -> list[TopicPartition]:
    """The partitions of `scope` ({topic: partitions, or None for every one}) and
    `listed`, sorted; an unknown topic raises its error, a missing partition
    ToolFailed naming it."""
    listed = list(listed)
    topics = sorted({*scope, *(t for t, _ in listed)})
    if not topics:
        return []
    found, failed = describe_topics(client, topics)
    if failed:
        raise next(iter(failed.values()))
    wanted = list(listed)
    for topic, partitions in scope.items():
        every = sorted(found[topic].partitions)
        wanted += [(topic, p) for p in (every if partitions is None else partitions)]
    missing = [f"{t}-{p}" for t, p in wanted if t not in found or p not in found[t].partitions]
    if missing:
        raise ToolFailed(f'The partitions "{",".join(missing)}" do not exist')
    return sorted(set(wanted))


def new_offsets(
    client: Client, args: argparse.Namespace, partitions: list[TopicPartition]
) -> dict[TopicPartition, int]:
    """The new offset of each partition for the scenario on `args` (--to-earliest,
    --to-latest, `reset_timestamp_ms`, else --to-offset)."""
    if args.to_earliest:
        return list_offsets(client, partitions, EARLIEST_TIMESTAMP)
    if args.to_latest:
        return list_offsets(client, partitions, LATEST_TIMESTAMP)
    if args.reset_timestamp_ms is not None:
        return _offsets_for_time(client, partitions, args.reset_timestamp_ms)
    return clamped(client, {tp: int(args.to_offset) for tp in partitions})


def _offsets_for_time(
    client: Client, partitions: list[TopicPartition], timestamp_ms: int
) -> dict[TopicPartition, int]:
    found = list_offsets(client, partitions, timestamp_ms)
    empty = [tp for tp in partitions if found.get(tp, -1) < 0]
    for topic, partition in empty:
        print(
            f"Warn: Partition {partition} from topic {topic} is empty. "
            "Falling back to latest known offset.",
            file=sys.stderr,
        )
    if empty:
        found.update(list_offsets(client, empty, LATEST_TIMESTAMP))
    return found


def clamped(client: Client, wanted: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """--to-offset, --shift-by, --from-file: each offset moved into [log start, log
    end] as Kafka does, with a notice for each one moved."""
    partitions = sorted(wanted)
    starts = list_offsets(client, partitions, EARLIEST_TIMESTAMP)
    ends = list_offsets(client, partitions, LATEST_TIMESTAMP)
    out = {}
    for topic, partition in partitions:
        start, end = starts[(topic, partition)], ends[(topic, partition)]
        offset = wanted[(topic, partition)]
        chosen = offset
        if offset > end:
            chosen = end
            side = "higher than latest"
        elif offset < start:
            chosen = start
            side = "lower than earliest"
        if chosen != offset:
            print(
                f"New offset ({offset}) is {side} offset for topic partition "
                f"{topic}-{partition}. Value will be set to {chosen}.",
                file=sys.stderr,
            )
        out[(topic, partition)] = chosen
    return out
