"""The simple share assignor (group/simple_assignor.py).

Conformance items covered: 54, 55 (at the assignor level; the shard-level versions
are in test_heartbeat.py).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.group.simple_assignor import assign
from shoal.group.topic_image import Assignment

A = uuid.UUID(int=0xA)
B = uuid.UUID(int=0xB)

Result = Mapping[str, Assignment]


def load(result: Result, member: str, topic: uuid.UUID | None = None) -> int:
    return sum(len(ps) for t, ps in result[member].items() if topic is None or t == topic)


def holders(result: Result, topic: uuid.UUID, partition: int) -> int:
    return sum(1 for a in result.values() if partition in a.get(topic, frozenset()))


def test_54_two_members_four_partitions_get_two_each() -> None:
    """Conformance 54: 2 members x 4 partitions -> 2 each, no partition shared."""
    result = assign(subscriptions={"m1": {A}, "m2": {A}}, current={}, assignable={A: range(4)})
    assert load(result, "m1") == load(result, "m2") == 2
    assert all(holders(result, A, p) == 1 for p in range(4))


def test_54_four_members_one_partition_all_share_it() -> None:
    """Conformance 54: 4 members x 1 partition -> every member gets it."""
    members = {f"m{i}": {A} for i in range(4)}
    result = assign(subscriptions=members, current={}, assignable={A: [0]})
    assert all(result[m] == {A: frozenset({0})} for m in members)


def test_three_members_two_partitions_each_one_shared_by_one_or_two() -> None:
    members = {f"m{i}": {A} for i in range(3)}
    result = assign(subscriptions=members, current={}, assignable={A: [0, 1]})
    assert all(load(result, m) == 1 for m in members)
    assert sorted(holders(result, A, p) for p in (0, 1)) == [1, 2]


def test_sticky_when_a_member_joins_a_balanced_group() -> None:
    current = {"m1": {A: frozenset({0, 1})}, "m2": {A: frozenset({2, 3})}}
    result = assign(
        subscriptions={"m1": {A}, "m2": {A}, "m3": {A}}, current=current, assignable={A: range(4)}
    )
    moved = sum(len(current[m][A] - result[m].get(A, frozenset())) for m in current)
    assert moved == 1
    assert load(result, "m3") == 1
    assert sorted(load(result, m) for m in result) == [1, 1, 2]


def test_sticky_when_a_member_leaves() -> None:
    current = {
        "m1": {A: frozenset({0, 1})},
        "m2": {A: frozenset({2})},
        "m3": {A: frozenset({3})},
    }
    result = assign(subscriptions={"m1": {A}, "m3": {A}}, current=current, assignable={A: range(4)})
    assert result["m1"][A] == {0, 1}
    assert result["m3"][A] == {2, 3}


def test_balanced_assignment_is_kept_as_it_is() -> None:
    current = {"m1": {A: frozenset({1, 3})}, "m2": {A: frozenset({0, 2})}}
    result = assign(subscriptions={"m1": {A}, "m2": {A}}, current=current, assignable={A: range(4)})
    assert result == current


def test_sharing_members_stay_on_their_partition() -> None:
    current = {f"m{i}": {A: frozenset({i % 2})} for i in range(4)}
    result = assign(
        subscriptions={m: {A} for m in current}, current=current, assignable={A: [0, 1]}
    )
    assert result == current


def test_55_mixed_subscriptions_are_balanced_per_topic() -> None:
    """Conformance 55: C1 on {A, B}, C2 on {A}, C3 on {B}: each topic is split between
    its two subscribers."""
    result = assign(
        subscriptions={"c1": {A, B}, "c2": {A}, "c3": {B}},
        current={},
        assignable={A: range(4), B: range(4)},
    )
    assert load(result, "c1", A) == load(result, "c2", A) == 2
    assert load(result, "c1", B) == load(result, "c3", B) == 2
    assert B not in result["c2"] and A not in result["c3"]
    assert all(holders(result, t, p) == 1 for t in (A, B) for p in range(4))


def test_same_subscriptions_pool_the_topics() -> None:
    """Two members on two one-partition topics: M <= P over the pool, one each."""
    result = assign(
        subscriptions={"m1": {A, B}, "m2": {A, B}}, current={}, assignable={A: [0], B: [0]}
    )
    assert load(result, "m1") == load(result, "m2") == 1


def test_only_assignable_partitions_are_assigned() -> None:
    result = assign(subscriptions={"m1": {A, B}}, current={}, assignable={A: [1], B: []})
    assert result == {"m1": {A: frozenset({1})}}


def test_unsubscribed_topics_are_dropped_from_the_current_assignment() -> None:
    current = {"m1": {A: frozenset({0}), B: frozenset({0})}}
    result = assign(subscriptions={"m1": {A}}, current=current, assignable={A: [0], B: [0]})
    assert result == {"m1": {A: frozenset({0})}}


def test_no_members_no_assignment() -> None:
    assert assign(subscriptions={}, current={}, assignable={A: [0]}) == {}


TOPICS = [uuid.UUID(int=i + 1) for i in range(4)]


@st.composite
def scenarios(
    draw: st.DrawFn,
) -> tuple[dict[str, set[uuid.UUID]], dict[uuid.UUID, list[int]], dict[str, Assignment]]:
    member_count = draw(st.integers(min_value=1, max_value=9))
    members = [f"m{i:02d}" for i in range(member_count)]
    topics = TOPICS[: draw(st.integers(min_value=1, max_value=len(TOPICS)))]
    assignable = {
        t: sorted(draw(st.sets(st.integers(min_value=0, max_value=11), max_size=8))) for t in topics
    }
    same = draw(st.booleans())
    if same:
        subscription = draw(st.sets(st.sampled_from(topics), min_size=1))
        subscriptions = {m: set(subscription) for m in members}
    else:
        subscriptions = {m: draw(st.sets(st.sampled_from(topics), min_size=1)) for m in members}
    current: dict[str, Assignment] = {
        m: {
            t: frozenset(draw(st.sets(st.integers(min_value=0, max_value=11), max_size=4)))
            for t in draw(st.sets(st.sampled_from(topics), max_size=2))
        }
        for m in draw(st.sets(st.sampled_from(members)))
    }
    return subscriptions, assignable, current


def _check_pool(result: Result, subscribers: list[str], pool: list[tuple[uuid.UUID, int]]) -> None:
    m, p = len(subscribers), len(pool)
    if p == 0:
        return
    sharing = Counter(
        tp for member in subscribers for tp in pool if tp[1] in result[member].get(tp[0], ())
    )
    loads = [
        sum(1 for t, part in pool if part in result[member].get(t, ())) for member in subscribers
    ]
    if m <= p:
        assert all(sharing[tp] == 1 for tp in pool)
        assert max(loads) - min(loads) <= 1
    else:
        assert all(count == 1 for count in loads)
        counts = [sharing[tp] for tp in pool]
        assert max(counts) - min(counts) <= 1


@settings(max_examples=150, deadline=None)
@given(scenarios())
def test_property_covered_subscribed_and_balanced(
    scenario: tuple[dict[str, set[uuid.UUID]], dict[uuid.UUID, list[int]], dict[str, Assignment]],
) -> None:
    """Every subscribed assignable partition goes to at least one subscriber, nobody
    gets an unsubscribed or unassignable partition, and loads are balanced within
    one in each pool (the whole group when subscriptions are equal, else per topic)."""
    subscriptions, assignable, current = scenario
    result = assign(subscriptions=subscriptions, current=current, assignable=assignable)
    assert set(result) == set(subscriptions)
    for member, assignment in result.items():
        for topic, partitions in assignment.items():
            assert topic in subscriptions[member]
            assert partitions <= set(assignable[topic])
    for topic, assignable_partitions in assignable.items():
        if any(topic in s for s in subscriptions.values()):
            assert all(holders(result, topic, p) >= 1 for p in assignable_partitions)
    members = sorted(subscriptions)
    if len({frozenset(s) for s in subscriptions.values()}) == 1:
        topics = sorted(subscriptions[members[0]])
        _check_pool(result, members, [(t, p) for t in topics for p in assignable[t]])
    else:
        for topic in sorted({t for s in subscriptions.values() for t in s}):
            subscribers = [m for m in members if topic in subscriptions[m]]
            _check_pool(result, subscribers, [(topic, p) for p in assignable[topic]])
    again = assign(subscriptions=subscriptions, current=result, assignable=assignable)
    assert again == result, "a balanced assignment is stable"
