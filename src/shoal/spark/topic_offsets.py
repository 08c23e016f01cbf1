"""Offset arithmetic of the `readStream.format("shoal")` topic stream (pure; no pyspark,
no I/O), so that it is testable without Spark or a broker.

A stream offset is a position per topic-partition: the next offset to read. Its JSON
is Spark's Kafka source's, compact: `{"orders": {"0": 23, "1": 40}}`. Spark compares
offsets as JSON text and keeps 100 of them in the checkpoint, so `to_json` writes
topics and partitions in one order and `plan_end` hands back `start` itself when a
trigger finds nothing new.

`plan_end` decides where the next micro-batch ends, from where it starts and the
partitions' log bounds (ListOffsets earliest and latest) the source asked for:

- a partition not in `start` is new (CreatePartitions, or a topic created after the
  query started): it is read from its earliest offset;
- a partition in `start` that the topics no longer have (topic deleted) is dropped,
  and that is a data loss;
- `start` below the log start offset (records deleted or expired before they were
  read) is a data loss; the batch reads from the log start;
- `start` above the log end offset (the topic was deleted and recreated, or
  truncated) is a data loss; the partition's position goes back to the log end;
- `cap` (AvailableNow: the log end offsets recorded by `prepareForTriggerAvailableNow`)
  bounds every end; partitions not in `cap` are not read;
- `records_max` (`maxOffsetsPerTrigger`) is split across the partitions with new
  records in proportion to their backlog, as Spark's Kafka source does: each gets
  `floor(records_max * backlog / total)` offsets, but at least one, so a small
  partition is never starved (the sum may therefore exceed `records_max` by up to the
  number of partitions).

Data losses come back as messages; the source fails on them or logs them
(`failOnDataLoss`). `ranges` turns (start, end) into the offset ranges of a batch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shoal.client.metadata import TopicPartition

Offsets = dict[TopicPartition, int]
"""The next offset to read of each topic-partition."""


class OffsetFormatError(ValueError):
    """A stream offset JSON that is not the topic stream's (e.g. another source's)."""


def to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """`{topic: {partition: offset}}`, topics by name and partitions by number."""
    document: dict[str, dict[str, int]] = {}
    for topic, partition in sorted(offsets):
        document.setdefault(topic, {})[str(partition)] = offsets[(topic, partition)]
    return document


def from_json(document: Any) -> Offsets:
    """The offsets of a `to_json` document; OffsetFormatError when it is not one."""
    if not isinstance(document, dict):
        raise OffsetFormatError(f"a topic stream offset is a JSON object, not {document!r}")
    offsets: Offsets = {}
    for topic, partitions in document.items():
        if not isinstance(topic, str) or not isinstance(partitions, dict):
            raise OffsetFormatError(f"topic {topic!r} must map to an object of partitions")
        for partition, offset in partitions.items():
            if not str(partition).isdigit():
                raise OffsetFormatError(f"partition {partition!r} of {topic!r} is not a number")
            if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
                raise OffsetFormatError(f"offset of {topic}-{partition} must be an integer >= 0")
            offsets[(topic, int(partition))] = offset
    return offsets


@dataclass(frozen=True, slots=True)
class Plan:
    end: Offsets
    """Where the batch ends (the next batch's start), for every partition read."""
    losses: tuple[str, ...]
    """What was lost between the batches, one message per partition."""


def plan_end(
    *,
    start: Mapping[TopicPartition, int],
    earliest: Mapping[TopicPartition, int],
    latest: Mapping[TopicPartition, int],
    records_max: int | None = None,
    cap: Mapping[TopicPartition, int] | None = None,
) -> Plan:
    """The end of the batch starting at `start` (see the module docstring).
    `earliest` and `latest` have the same partitions: every partition of the topics."""
    assert earliest.keys() == latest.keys(), "bounds of different partitions"
    assert records_max is None or records_max > 0
    losses = [
        f"{topic}-{partition} no longer exists; records from offset {offset} on may have "
        "been lost (topic deleted?)"
        for (topic, partition), offset in sorted(start.items())
        if (topic, partition) not in latest
    ]
    begins: Offsets = {}
    targets: Offsets = {}
    for tp in sorted(latest):
        first, last = earliest[tp], latest[tp]
        begin = start.get(tp, first)
        if begin > last:
            losses.append(
                f"{tp[0]}-{tp[1]} was at offset {begin} but its log now ends at {last}; "
                "records may have been lost (topic recreated or truncated?)"
            )
            begin = last
        elif begin < first:
            losses.append(
                f"{tp[0]}-{tp[1]}: offsets [{begin}, {first}) were deleted before they were "
                f"read; the log now starts at {first}"
            )
            begin = first
        target = last if cap is None else min(last, cap.get(tp, begin))
        begins[tp], targets[tp] = begin, max(begin, target)
    end = _rate_limited(begins, targets, records_max) if records_max is not None else targets
    return Plan(end=end, losses=tuple(losses))


def _rate_limited(begins: Offsets, targets: Offsets, records_max: int) -> Offsets:
    backlog = {tp: targets[tp] - begins[tp] for tp in targets if targets[tp] > begins[tp]}
    total = sum(backlog.values())
    if total <= records_max:
        return dict(targets)
    end = dict(begins)
    for tp, size in backlog.items():
        share = records_max * size / total
        end[tp] = begins[tp] + min(size, max(1, math.floor(share)))
    return end


@dataclass(frozen=True, slots=True)
class Range:
    """Offsets [start, end) of one partition read by a batch."""

    topic: str
    partition: int
    start: int
    end: int


def ranges(
    start: Mapping[TopicPartition, int],
    end: Mapping[TopicPartition, int],
    earliest_of_new: Mapping[TopicPartition, int],
) -> list[Range]:
    """The non-empty ranges of the batch from `start` to `end`; a partition new in
    `end` starts at its `earliest_of_new` offset; one whose end went back (a data loss
    `plan_end` reported) reads nothing."""
    found = []
    for tp in sorted(end):
        begin = start[tp] if tp in start else earliest_of_new[tp]
        if end[tp] > begin:
            found.append(Range(tp[0], tp[1], begin, end[tp]))
    return found


def new_partitions(
    start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int]
) -> list[TopicPartition]:
    """Partitions of `end` that `start` does not have."""
    return sorted(tp for tp in end if tp not in start)
