"""Offset ranges of share-group records, as the client sees them: which partition
(`TopicIdPartition`, by topic id as the share APIs name it) and which records
(`Span`: first..last inclusive, at one delivery count).

Invariant of a span list (checked by `normalized`): sorted, first <= last, no two
spans overlapping. Everything here is pure.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar


class TopicIdPartition(NamedTuple):
    topic_id: uuid.UUID
    partition: int


class Span(NamedTuple):
    """Records `first`..`last` (inclusive), all at one delivery count."""

    first: int
    last: int
    delivery_count: int = 1

    @property
    def size(self) -> int:
        return self.last - self.first + 1


SpanMap = dict[TopicIdPartition, tuple[Span, ...]]
Key = TypeVar("Key", bound=tuple[Any, ...])
"""A partition named any way: by topic id here, by topic name in the Spark source."""


def split_by(spans: Sequence[Span], ranges: Sequence[Span]) -> tuple[list[Span], list[Span]]:
    """(`spans` inside `ranges`, `spans` outside them); delivery counts of `ranges` are
    ignored. Both inputs sorted and non-overlapping."""
    inside: list[Span] = []
    outside: list[Span] = []
    j = 0
    for span in spans:
        first = span.first
        while first <= span.last:
            while j < len(ranges) and ranges[j].last < first:
                j += 1
            if j == len(ranges) or ranges[j].first > span.last:
                outside.append(Span(first, span.last, span.delivery_count))
                break
            r = ranges[j]
            if r.first > first:
                outside.append(Span(first, r.first - 1, span.delivery_count))
                first = r.first
            last = min(span.last, r.last)
            inside.append(Span(first, last, span.delivery_count))
            first = last + 1
    return inside, outside


def merge(spans: Iterable[Span], more: Iterable[Span]) -> list[Span]:
    """`spans` with `more` laid over them (records of `more` win where both have the
    same offset: a record acquired again comes with its new delivery count), sorted."""
    more = sorted(more)
    return sorted([*split_by(sorted(spans), more)[1], *more])


def normalized(spans: Mapping[Key, Iterable[Span]]) -> dict[Key, tuple[Span, ...]]:
    """Sorted by partition and offset, empty entries dropped, adjacent spans with the
    same delivery count merged. Overlaps are a caller bug (asserted)."""
    out: dict[Key, tuple[Span, ...]] = {}
    for tp in sorted(spans):
        merged: list[Span] = []
        for span in sorted(spans[tp]):
            assert span.first <= span.last, f"empty span {span} of {tp}"
            if merged:
                last = merged[-1]
                assert span.first > last.last, f"overlapping spans {last} {span} of {tp}"
                if span.first == last.last + 1 and span.delivery_count == last.delivery_count:
                    merged[-1] = Span(last.first, span.last, last.delivery_count)
                    continue
            merged.append(span)
        if merged:
            out[tp] = tuple(merged)
    return out


def record_count(spans: Mapping[Any, Iterable[Span]]) -> int:
    return sum(span.size for items in spans.values() for span in items)
