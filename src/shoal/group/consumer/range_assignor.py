"""Kafka's `range` server assignor for consumer groups (`group.consumer.assignors`).

A pure function: per topic, the members subscribing to it, in member-id order, take
contiguous ranges of its partitions; the first P mod M of them take one more. No
stickiness and no racks (the `uniform` assignor, group/simple_assignor.py in exclusive
mode, is the sticky one and the default).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping

from shoal.group.topic_image import Assignment


def range_assign(
    *,
    subscriptions: Mapping[str, Iterable[uuid.UUID]],
    assignable: Mapping[uuid.UUID, Iterable[int]],
) -> dict[str, Assignment]:
    """Kafka's `range`: per topic, its subscribers in member-id order take
    contiguous ranges; the first P mod M members take one more."""
    result: dict[str, dict[uuid.UUID, frozenset[int]]] = {m: {} for m in subscriptions}
    topics = sorted({t for ts in subscriptions.values() for t in ts})
    for topic_id in topics:
        subscribers = sorted(m for m, ts in subscriptions.items() if topic_id in set(ts))
        partitions = sorted(set(assignable.get(topic_id, ())))
        base, extra = divmod(len(partitions), len(subscribers))
        start = 0
        for i, member_id in enumerate(subscribers):
            count = base + (1 if i < extra else 0)
            if count:
                result[member_id][topic_id] = frozenset(partitions[start : start + count])
            start += count
    return {m: dict(a) for m, a in result.items()}
