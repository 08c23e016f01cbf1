"""The `shoal-share` source's offsets: acquired record spans, the offset JSON Spark
checkpoints, and its split into Spark tasks.

A micro-batch of the share-group source is the set of records the driver's member
acquired for it. Its end offset names them:

    {"v": 1, "seq": n, "arch": k, "acq": {topic: {"partition": [[first, last, count], ...]}}}

`seq` numbers the batches (so two ends are never equal as text), `arch` is the running
count of records this query's replays found archived (see share_source.py), and `acq`
lists, per topic-partition, the acquired offset ranges with their delivery counts.
Topics and partitions are sorted and adjacent spans with the same delivery count are
merged, so the same batch always renders to the same text. The initial offset is
seq 0 with nothing acquired.

Invariants of a `Spans` value (checked by `check_spans`): per topic-partition the spans
are sorted, non-empty (first <= last), non-overlapping, with first >= 0 and delivery
count >= 1.

`split` cuts a batch into at most `parts` chunks of nearly equal record counts,
independent of how many topic-partitions the records come from: one partition can feed
many tasks. Spans and their arithmetic are the client's (`shoal.client.ranges`); here
partitions are named by topic name, as the offset JSON names them. Everything here is
pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from shoal.client.ranges import Span, normalized, record_count

OFFSET_FORMAT_VERSION = 1


class TopicPartition(NamedTuple):
    topic: str
    partition: int


Spans = Mapping[TopicPartition, Sequence[Span]]


class OffsetFormatError(ValueError):
    """An offset JSON this source cannot read (another source's, or corrupted)."""


def check_spans(spans: Spans) -> None:
    """Raise OffsetFormatError unless `spans` keeps the module's invariants."""
    for tp, items in spans.items():
        previous_last = -1
        for span in items:
            if span.first > span.last or span.first < 0 or span.delivery_count < 1:
                raise OffsetFormatError(f"bad span {list(span)} of {tp.topic}-{tp.partition}")
            if span.first <= previous_last:
                raise OffsetFormatError(f"overlapping spans of {tp.topic}-{tp.partition}")
            previous_last = span.last


def covers(outer: Spans, inner: Spans) -> bool:
    """Whether every offset of `inner` lies in `outer` for the same topic-partition.

    Only offsets count, never delivery counts: a batch the driver planned matches the
    end offset Spark checkpointed for it (share_driver.py, at stop) whatever counts
    either names, and a replay redelivers with higher counts. So adjacent spans of
    `outer` at different delivery counts (which the offset JSON keeps apart) cover a
    span of `inner` that runs across them."""
    for tp, items in inner.items():
        around = _offset_runs(outer.get(tp, ()))
        i = 0
        for span in sorted(items):
            while i < len(around) and around[i][1] < span.first:
                i += 1
            if i == len(around) or around[i][0] > span.first or around[i][1] < span.last:
                return False
    return True


def _offset_runs(spans: Sequence[Span]) -> list[tuple[int, int]]:
    """The maximal runs of consecutive offsets (first, last) that `spans` hold, their
    delivery counts dropped."""
    runs: list[tuple[int, int]] = []
    for span in sorted(spans):
        if runs and span.first <= runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], max(runs[-1][1], span.last))
        else:
            runs.append((span.first, span.last))
    return runs


@dataclass(frozen=True, slots=True)
class ShareOffset:
    """One end offset of the share source (see the module docstring)."""

    seq: int = 0
    archived: int = 0
    spans: Mapping[TopicPartition, tuple[Span, ...]] = field(default_factory=dict)

    @property
    def record_count(self) -> int:
        return record_count(self.spans)

    def to_json(self) -> dict[str, Any]:
        spans = normalized(self.spans)
        acquired: dict[str, dict[str, list[list[int]]]] = {}
        for tp, items in spans.items():
            acquired.setdefault(tp.topic, {})[str(tp.partition)] = [list(s) for s in items]
        return {"v": OFFSET_FORMAT_VERSION, "seq": self.seq, "arch": self.archived, "acq": acquired}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> ShareOffset:
        """Parse an offset Spark handed back; OffsetFormatError says what is wrong."""
        if not isinstance(value, Mapping) or value.get("v") != OFFSET_FORMAT_VERSION:
            raise OffsetFormatError(
                f"not a shoal-share offset of format {OFFSET_FORMAT_VERSION}: {value!r:.200}"
                " (was the checkpoint written by another source?)"
            )
        seq, archived, acquired = value.get("seq"), value.get("arch", 0), value.get("acq")
        if (
            not isinstance(seq, int)
            or not isinstance(archived, int)
            or isinstance(seq, bool)
            or isinstance(archived, bool)
            or min(seq, archived) < 0
        ):
            raise OffsetFormatError(f"bad seq/arch in shoal-share offset {value!r:.200}")
        if not isinstance(acquired, Mapping):
            raise OffsetFormatError(f"bad acq in shoal-share offset {value!r:.200}")
        spans: dict[TopicPartition, list[Span]] = {}
        for topic, partitions in acquired.items():
            if not isinstance(topic, str) or not isinstance(partitions, Mapping):
                raise OffsetFormatError(f"bad topic entry {topic!r} in shoal-share offset")
            for partition, items in partitions.items():
                tp = TopicPartition(topic, _partition_index(partition))
                spans[tp] = [_span(item, tp) for item in _list(items, tp)]
        check_spans(spans)
        return cls(seq=seq, archived=archived, spans=normalized(spans))


INITIAL_OFFSET = ShareOffset()


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _partition_index(value: object) -> int:
    try:
        index = int(str(value))
    except ValueError:
        raise OffsetFormatError(f"bad partition {value!r} in shoal-share offset") from None
    if index < 0:
        raise OffsetFormatError(f"bad partition {value!r} in shoal-share offset")
    return index


def _list(value: object, tp: TopicPartition) -> list[Any]:
    if not isinstance(value, list):
        raise OffsetFormatError(f"bad spans of {tp.topic}-{tp.partition} in shoal-share offset")
    return value


def _span(item: object, tp: TopicPartition) -> Span:
    if not isinstance(item, list) or len(item) != 3 or not all(_is_int(v) for v in item):
        raise OffsetFormatError(f"bad span {item!r} of {tp.topic}-{tp.partition}")
    return Span(item[0], item[1], item[2])


# ---- splitting a batch into Spark tasks ---------------------------------------------


@dataclass(frozen=True, slots=True)
class ChunkPart:
    """The spans of one topic-partition that one Spark task reads."""

    topic: str
    partition: int
    spans: tuple[Span, ...]

    @property
    def start_offset(self) -> int:
        return self.spans[0].first

    @property
    def end_offset(self) -> int:
        """Exclusive."""
        return self.spans[-1].last + 1


def split(spans: Spans, parts: int) -> list[tuple[ChunkPart, ...]]:
    """At most `parts` chunks (fewer only when there are fewer records), covering every
    record once, in topic-partition and offset order, sizes differing by at most one."""
    assert parts >= 1, parts
    total = record_count(spans)
    chunks = min(parts, total)
    if chunks == 0:
        return []
    sizes = [total // chunks + (1 if i < total % chunks else 0) for i in range(chunks)]
    result: list[tuple[ChunkPart, ...]] = []
    current: list[ChunkPart] = []
    room = sizes[0]
    for tp, items in normalized(spans).items():
        taken: list[Span] = []
        for span in items:
            first = span.first
            while first <= span.last:
                last = min(span.last, first + room - 1)
                taken.append(Span(first, last, span.delivery_count))
                room -= last - first + 1
                first = last + 1
                if room == 0:
                    current.append(ChunkPart(tp.topic, tp.partition, tuple(taken)))
                    taken = []
                    result.append(tuple(current))
                    current = []
                    room = sizes[len(result)] if len(result) < chunks else 0
        if taken:
            current.append(ChunkPart(tp.topic, tp.partition, tuple(taken)))
    assert not current and len(result) == chunks, (current, len(result), chunks)
    return result
