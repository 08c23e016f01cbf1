"""The share source's offset JSON and its split into Spark tasks (share_offsets.py)."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from shoal.client.ranges import Span, record_count
from shoal.spark.share_offsets import (
    INITIAL_OFFSET,
    OffsetFormatError,
    ShareOffset,
    TopicPartition,
    covers,
    split,
)

A0 = TopicPartition("a", 0)
A1 = TopicPartition("a", 1)
B0 = TopicPartition("b", 0)


def test_offset_json_round_trips_through_json_text() -> None:
    offset = ShareOffset(
        seq=7, archived=2, spans={A1: (Span(5, 9, 1),), A0: (Span(0, 3, 2), Span(10, 10, 1))}
    )
    text = json.dumps(offset.to_json())
    assert text == (
        '{"v": 1, "seq": 7, "arch": 2, "acq": {"a": {"0": [[0, 3, 2], [10, 10, 1]], '
        '"1": [[5, 9, 1]]}}}'
    )
    assert ShareOffset.from_json(json.loads(text)) == offset


def test_same_batch_renders_to_same_text_whatever_the_order() -> None:
    one = ShareOffset(seq=1, spans={B0: (Span(3, 4, 1), Span(0, 2, 1)), A0: (Span(1, 1, 1),)})
    two = ShareOffset(seq=1, spans={A0: (Span(1, 1, 1),), B0: (Span(0, 4, 1),)})
    assert json.dumps(one.to_json()) == json.dumps(two.to_json())


def test_initial_offset_has_nothing_acquired() -> None:
    assert INITIAL_OFFSET.to_json() == {"v": 1, "seq": 0, "arch": 0, "acq": {}}
    assert ShareOffset.from_json(INITIAL_OFFSET.to_json()).record_count == 0


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"startingOffsets": "earliest"}, "not a shoal-share offset"),
        ({"v": 2, "seq": 1, "acq": {}}, "not a shoal-share offset"),
        ({"v": 1, "seq": -1, "acq": {}}, "bad seq"),
        ({"v": 1, "seq": True, "acq": {}}, "bad seq"),
        ({"v": 1, "seq": 1, "acq": []}, "bad acq"),
        ({"v": 1, "seq": 1, "acq": {"a": {"x": [[0, 1, 1]]}}}, "bad partition"),
        ({"v": 1, "seq": 1, "acq": {"a": {"0": [[0, 1]]}}}, "bad span"),
        ({"v": 1, "seq": 1, "acq": {"a": {"0": [[3, 1, 1]]}}}, "bad span"),
        ({"v": 1, "seq": 1, "acq": {"a": {"0": [[0, 1, 0]]}}}, "bad span"),
        ({"v": 1, "seq": 1, "acq": {"a": {"0": [[0, 5, 1], [5, 6, 1]]}}}, "overlapping"),
    ],
)
def test_unreadable_offsets_are_refused_with_the_reason(value: object, message: str) -> None:
    with pytest.raises(OffsetFormatError, match=message):
        ShareOffset.from_json(value)  # type: ignore[arg-type]


def test_split_feeds_many_tasks_from_one_partition() -> None:
    chunks = split({A0: (Span(100, 199, 1),)}, 4)
    assert [[(p.topic, p.partition, p.spans) for p in chunk] for chunk in chunks] == [
        [("a", 0, (Span(100, 124, 1),))],
        [("a", 0, (Span(125, 149, 1),))],
        [("a", 0, (Span(150, 174, 1),))],
        [("a", 0, (Span(175, 199, 1),))],
    ]
    assert chunks[1][0].start_offset == 125
    assert chunks[1][0].end_offset == 150


def test_split_never_makes_empty_tasks() -> None:
    assert len(split({A0: (Span(0, 2, 1),)}, 8)) == 3
    assert split({}, 8) == []


def test_a_chunk_may_span_partitions_and_keeps_holes_out() -> None:
    chunks = split({A0: (Span(0, 1, 1), Span(5, 6, 3)), B0: (Span(0, 3, 1),)}, 2)
    assert [[(p.topic, p.partition, p.spans) for p in chunk] for chunk in chunks] == [
        [("a", 0, (Span(0, 1, 1), Span(5, 6, 3)))],
        [("b", 0, (Span(0, 3, 1),))],
    ]


spans_strategy = st.dictionaries(
    st.sampled_from([A0, A1, B0]),
    st.lists(st.tuples(st.integers(0, 40), st.integers(1, 5), st.integers(1, 3)), max_size=6),
    max_size=3,
)


def _as_spans(
    raw: dict[TopicPartition, list[tuple[int, int, int]]],
) -> dict[TopicPartition, list[Span]]:
    out: dict[TopicPartition, list[Span]] = {}
    for tp, items in raw.items():
        next_first, spans = 0, []
        for gap, size, count in items:
            first = next_first + gap
            spans.append(Span(first, first + size - 1, count))
            next_first = first + size
        out[tp] = spans
    return out


@given(spans_strategy, st.integers(1, 12))
def test_split_covers_every_record_once_in_balanced_chunks(raw: dict, parts: int) -> None:
    spans = _as_spans(raw)
    chunks = split(spans, parts)
    total = record_count(spans)
    assert len(chunks) == min(parts, total)
    sizes = [sum(s.size for p in chunk for s in p.spans) for chunk in chunks]
    assert not sizes or max(sizes) - min(sizes) <= 1
    seen = [
        (p.topic, p.partition, o, s.delivery_count)
        for c in chunks
        for p in c
        for s in p.spans
        for o in range(s.first, s.last + 1)
    ]
    expected = [
        (tp.topic, tp.partition, o, s.delivery_count)
        for tp, items in sorted(spans.items())
        for s in items
        for o in range(s.first, s.last + 1)
    ]
    assert seen == expected


def test_covers_ignores_delivery_counts_and_needs_every_offset() -> None:
    outer = {A0: (Span(0, 9, 1), Span(20, 29, 2)), A1: (Span(5, 5, 1),)}
    assert covers(outer, {A0: (Span(2, 4, 3), Span(20, 29, 3))})  # a replay's subset
    assert covers(outer, {A1: (Span(5, 5, 2),)})
    assert covers(outer, {})
    assert not covers(outer, {A0: (Span(8, 12, 1),)})  # runs past a span
    assert not covers(outer, {A0: (Span(10, 10, 1),)})  # in a hole
    assert not covers(outer, {B0: (Span(0, 0, 1),)})  # another partition
    assert not covers({}, {A0: (Span(0, 0, 1),)})


def test_covers_joins_adjacent_spans_at_different_delivery_counts() -> None:
    """The offset JSON keeps [0-0 count 1] and [1-1 count 2] apart; they still cover
    [0-1] (at any count: a replay re-acquires them at new ones)."""
    outer = {A0: (Span(0, 0, 1), Span(1, 1, 2))}
    assert covers(outer, {A0: (Span(0, 1, 1),)})
    assert covers(outer, {A0: (Span(0, 1, 3),)})
    assert not covers(outer, {A0: (Span(0, 2, 1),)})
    assert not covers({A0: (Span(0, 0, 1), Span(2, 2, 2))}, {A0: (Span(0, 2, 1),)})


dense_spans_strategy = st.dictionaries(
    st.sampled_from([A0, A1]),
    st.lists(st.tuples(st.integers(0, 2), st.integers(1, 4), st.integers(1, 3)), max_size=6),
    max_size=2,
)
"""Spans with small gaps, so adjacent spans at different delivery counts are common."""


@given(dense_spans_strategy, dense_spans_strategy)
# [0-0 count 1] and [1-1 count 2] against [0-1] (gap, size, count triples)
@example({A0: [(0, 1, 1), (0, 1, 2)]}, {A0: [(0, 2, 1)]})
def test_covers_is_offset_set_inclusion(raw_outer: dict, raw_inner: dict) -> None:
    outer, inner = _as_spans(raw_outer), _as_spans(raw_inner)

    def offsets(spans: dict[TopicPartition, list[Span]]) -> set[tuple[TopicPartition, int]]:
        return {
            (tp, o)
            for tp, items in spans.items()
            for s in items
            for o in range(s.first, s.last + 1)
        }

    assert covers(outer, inner) == (offsets(inner) <= offsets(outer))
