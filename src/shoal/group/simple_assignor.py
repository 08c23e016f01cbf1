"""The simple share-group assignor: balance first, then stickiness; no racks.

A pure function of the members' subscriptions, the current target assignment and
the assignable (initialised) partitions of each topic. It follows Apache Kafka's
`SimpleAssignor`:

- **Same subscriptions** (every member subscribes to the same topics): the
  partitions of all subscribed topics form one pool of P partitions for the M
  members (`SimpleHomogeneousAssignmentBuilder`).
- **Mixed subscriptions**: each topic is its own pool, balanced over that topic's
  subscribers, and the per-topic results are combined
  (`SimpleHeterogeneousAssignmentBuilder`).

Within a pool: M <= P gives each partition to exactly one member, member loads
differing by at most one; M > P gives each member exactly one partition, each
partition shared by floor(M/P) or ceil(M/P) members. Current assignments are kept
while they fit those quotas; the members (M <= P) or partitions (M > P) that get the
larger quota are those already holding the most, so a balanced assignment does not
move. Ties break on the member's load from earlier pools, then on member id /
partition number, so the result is deterministic.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping

from shoal.group.topic_image import Assignment

TopicPartition = tuple[uuid.UUID, int]


def assign(
    *,
    subscriptions: Mapping[str, Collection[uuid.UUID]],
    current: Mapping[str, Assignment],
    assignable: Mapping[uuid.UUID, Collection[int]],
    exclusive: bool = False,
) -> dict[str, dict[uuid.UUID, frozenset[int]]]:
    """The new target assignment: every member of `subscriptions` gets an entry
    (possibly empty).

    `exclusive`: a partition goes to at most one member (consumer groups' `uniform`
    assignor); with more members than partitions some members get none.

    `subscriptions`: member id -> subscribed topic ids (existing topics only).
    `current`: the current target assignment (members missing are new).
    `assignable`: topic id -> initialised partitions that may be assigned.
    """
    members = sorted(subscriptions)
    result: dict[str, dict[uuid.UUID, set[int]]] = {member: {} for member in members}
    if not members:
        return {}
    topic_sets = {frozenset(subscriptions[m]) for m in members}
    load: dict[str, int] = dict.fromkeys(members, 0)
    for subscribers, pool in _pools(members, subscriptions, assignable, len(topic_sets) == 1):
        held = _current_holdings(subscribers, current, set(pool))
        for member, partitions in _balance(subscribers, pool, held, load, exclusive).items():
            for topic_id, partition in partitions:
                result[member].setdefault(topic_id, set()).add(partition)
            load[member] += len(partitions)
    return {
        member: {topic_id: frozenset(ps) for topic_id, ps in topics.items() if ps}
        for member, topics in result.items()
    }


def _pools(
    members: list[str],
    subscriptions: Mapping[str, Collection[uuid.UUID]],
    assignable: Mapping[uuid.UUID, Collection[int]],
    homogeneous: bool,
) -> list[tuple[list[str], list[TopicPartition]]]:
    """(subscribers, partitions) groups to balance independently."""
    topics = sorted({t for m in members for t in subscriptions[m]})

    def partitions_of(topic_id: uuid.UUID) -> list[TopicPartition]:
        return [(topic_id, p) for p in sorted(set(assignable.get(topic_id, ())))]

    if homogeneous:
        pool = [tp for topic_id in topics for tp in partitions_of(topic_id)]
        return [(members, pool)]
    return [
        ([m for m in members if topic_id in subscriptions[m]], partitions_of(topic_id))
        for topic_id in topics
    ]


def _current_holdings(
    subscribers: list[str], current: Mapping[str, Assignment], pool: set[TopicPartition]
) -> dict[str, list[TopicPartition]]:
    held: dict[str, list[TopicPartition]] = {}
    for member in subscribers:
        assignment = current.get(member, {})
        held[member] = sorted(
            (topic_id, p)
            for topic_id, partitions in assignment.items()
            for p in partitions
            if (topic_id, p) in pool
        )
    return held


def _balance(
    subscribers: list[str],
    pool: list[TopicPartition],
    held: Mapping[str, list[TopicPartition]],
    load: Mapping[str, int],
    exclusive: bool,
) -> dict[str, list[TopicPartition]]:
    """Assign one pool. Capacities are fixed first (balance), then current holdings
    are kept where capacity allows (stickiness), then the rest is handed out."""
    m, p = len(subscribers), len(pool)
    result: dict[str, list[TopicPartition]] = {member: [] for member in subscribers}
    if m == 0 or p == 0:
        return result
    member_room, partition_room = _capacities(subscribers, pool, held, load, exclusive)
    holders: dict[TopicPartition, set[str]] = {tp: set() for tp in pool}

    def give(member: str, tp: TopicPartition) -> None:
        result[member].append(tp)
        holders[tp].add(member)
        member_room[member] -= 1
        partition_room[tp] -= 1

    # Stickiness: keep what fits.
    for member in subscribers:
        for tp in held[member]:
            if member_room[member] > 0 and partition_room[tp] > 0:
                give(member, tp)
    # Hand out the rest. Total room is equal on both sides and a member with room
    # never already holds a partition with room (M <= P: partitions have room 1;
    # M > P: members have room 1), so this always completes.
    for tp in pool:
        while partition_room[tp] > 0:
            candidates = [s for s in subscribers if member_room[s] > 0 and s not in holders[tp]]
            assert candidates, "assignor capacities out of balance"
            chosen = min(candidates, key=lambda s: (-member_room[s], load[s], s))
            give(chosen, tp)
    assert all(room == 0 for room in member_room.values())
    return result


def _capacities(
    subscribers: list[str],
    pool: list[TopicPartition],
    held: Mapping[str, list[TopicPartition]],
    load: Mapping[str, int],
    exclusive: bool,
) -> tuple[dict[str, int], dict[TopicPartition, int]]:
    """How many partitions each member takes and how many members share each
    partition. The larger quota goes to those already holding the most. Exclusive
    pools with M > P give P members one partition each (base quota 0)."""
    m, p = len(subscribers), len(pool)
    if m <= p or exclusive:
        base, extra = divmod(p, m)
        ranked = sorted(subscribers, key=lambda s: (-len(held[s]), load[s], s))
        member_room = {s: base + (1 if i < extra else 0) for i, s in enumerate(ranked)}
        return member_room, dict.fromkeys(pool, 1)
    base, extra = divmod(m, p)
    holder_count = dict.fromkeys(pool, 0)
    for member in subscribers:
        for tp in held[member]:
            holder_count[tp] += 1
    ranked_partitions = sorted(pool, key=lambda tp: (-holder_count[tp], tp))
    partition_room = {tp: base + (1 if i < extra else 0) for i, tp in enumerate(ranked_partitions)}
    return dict.fromkeys(subscribers, 1), partition_room
