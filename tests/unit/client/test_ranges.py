"""Offset ranges of share-group records (client/ranges.py): span arithmetic shared by
the share member and the Spark share source."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from shoal.client.ranges import Span, TopicIdPartition, merge, normalized, split_by

TP = TopicIdPartition(uuid.UUID(int=1), 0)


def test_split_by_cuts_spans_at_range_edges_and_keeps_counts() -> None:
    inside, outside = split_by([Span(0, 9, 2), Span(20, 25, 1)], [Span(3, 4, 9), Span(8, 21, 9)])
    assert inside == [Span(3, 4, 2), Span(8, 9, 2), Span(20, 21, 1)]
    assert outside == [Span(0, 2, 2), Span(5, 7, 2), Span(22, 25, 1)]


@given(
    st.lists(st.integers(0, 60), unique=True, max_size=30),
    st.lists(st.integers(0, 60), unique=True, max_size=30),
)
def test_split_by_is_a_partition_of_the_offsets(held: list[int], ranges: list[int]) -> None:
    def spans(offsets: list[int]) -> list[Span]:
        return [Span(o, o, 1) for o in sorted(offsets)]

    inside, outside = split_by(spans(held), spans(ranges))
    assert {s.first for s in inside} == set(held) & set(ranges)
    assert {s.first for s in outside} == set(held) - set(ranges)


def test_adjacent_spans_merge_only_with_equal_delivery_counts() -> None:
    merged = normalized({TP: [Span(0, 4, 1), Span(5, 9, 1), Span(10, 12, 2), Span(14, 15, 2)]})
    assert merged == {TP: (Span(0, 9, 1), Span(10, 12, 2), Span(14, 15, 2))}


def test_normalized_keys_partitions_any_way() -> None:
    """The Spark source names partitions by topic name; the same arithmetic applies."""
    assert normalized({("b", 0): [Span(3, 3)], ("a", 1): [Span(1, 2)], ("c", 0): []}) == {
        ("a", 1): (Span(1, 2),),
        ("b", 0): (Span(3, 3),),
    }


def test_merge_lays_new_spans_over_old_ones() -> None:
    assert merge([Span(0, 9, 1)], [Span(3, 4, 2)]) == [Span(0, 2, 1), Span(3, 4, 2), Span(5, 9, 1)]
    assert merge([Span(0, 1, 1)], [Span(5, 6, 1)]) == [Span(0, 1, 1), Span(5, 6, 1)]
