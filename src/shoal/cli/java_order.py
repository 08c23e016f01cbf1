"""The order in which a `java.util.HashMap` of string keys iterates, for output that
Kafka's tools print straight from such a map.

`kafka-topics --describe` prints a topic's configs in the order of the Admin client's
`Config` (a HashMap filled in the DescribeConfigs answer's order) and the topics in the
order of `DescribeTopicsResult.allTopicNames()` (a HashMap sized for the topics); the
group tools list groups from a HashMap too, and print a reset plan from HashMaps of
groups and of TopicPartitions. To print what Kafka's tools print, Shoal's tools order
them the same way.

A HashMap keeps its entries in a power-of-two table of buckets, a key's bucket being
its `String.hashCode()` spread (`h ^ (h >>> 16)`) masked by the table size less one;
the table doubles whenever the entry count passes three quarters of it, and a
resize keeps the relative order of the keys that share a bucket. So the iteration is
the keys sorted by their bucket in the final table, insertion order breaking ties.
(A bucket of eight or more keys becomes a tree whose order this does not model; it
takes dozens of colliding keys, which topic and config names do not produce.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from shoal.client.metadata import TopicPartition

K = TypeVar("K")
DEFAULT_CAPACITY = 16
"""`new HashMap<>()`'s initial table size."""
_MASK = 0xFFFFFFFF


def java_string_hash_code(text: str) -> int:
    """Java's `String.hashCode()`: the 31-polynomial over UTF-16 code units, as an
    unsigned 32-bit number."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & _MASK
    return h


def _spread(h: int) -> int:
    return h ^ (h >> 16)


def string_hash(text: str) -> int:
    """A string key's hash as HashMap spreads it (`h ^ (h >>> 16)`)."""
    return _spread(java_string_hash_code(text))


def topic_partition_hash(tp: TopicPartition) -> int:
    """A `TopicPartition` key's hash as HashMap spreads it (Kafka's
    TopicPartition.hashCode: 31 * (31 + partition) + topic.hashCode())."""
    topic, partition = tp
    return _spread((31 * (31 + partition) + java_string_hash_code(topic)) & _MASK)


def hash_map_order(keys: Iterable[str], *, capacity: int | None = None) -> list[str]:
    """`keys` (distinct, in insertion order) in the order a HashMap created with
    `capacity` (None: the default constructor) iterates them."""
    return _ordered(list(keys), string_hash, capacity)


def described_topics_order(names: Iterable[str]) -> list[str]:
    """The order of the Admin client's `describeTopics(names).allTopicNames()` for
    names asked in sorted order (as kafka-topics asks them): the names go into a
    HashMap sized for them, which is copied (`new HashMap<>(map)`, a table for
    size / 0.75 + 1) and read into a last one sized for them again; keys sharing a
    bucket keep the order of the map they came from."""
    keys = sorted(names)
    sized = len(keys)
    futures = hash_map_order(keys, capacity=sized)
    copied = hash_map_order(futures, capacity=int(sized / 0.75 + 1))
    return hash_map_order(copied, capacity=sized)


def partition_order(
    partitions: Iterable[TopicPartition], *, capacity: int | None = None
) -> list[TopicPartition]:
    """The same for a HashMap keyed by TopicPartition (a reset plan's partitions)."""
    return _ordered(list(partitions), topic_partition_hash, capacity)


def _ordered(keys: list[K], hash_of: Callable[[K], int], capacity: int | None) -> list[K]:
    size = DEFAULT_CAPACITY if capacity is None else _table_size_for(capacity)
    for count in range(1, len(keys) + 1):
        if count > size * 3 // 4:
            size *= 2
    return sorted(keys, key=lambda key: hash_of(key) & (size - 1))


def _table_size_for(capacity: int) -> int:
    """HashMap.tableSizeFor: the least power of two at least `capacity` (1 for 0)."""
    size = 1
    while size < capacity:
        size *= 2
    return size


def quota_entity_order(
    entities: Iterable[Sequence[tuple[str, str | None]]], *, capacity: int
) -> list[Sequence[tuple[str, str | None]]]:
    """Client quota entities ((entity type, name or None), ...) in the order of the
    Admin client's `HashMap<ClientQuotaEntity, ...>` sized `capacity`: an entity hashes
    as `Objects.hash(entries)`, its entries' map hash (the sum of key hash XOR value
    hash, 0 for a null value) plus 31."""

    def entity_hash(entity: Sequence[tuple[str, str | None]]) -> int:
        total = sum(
            java_string_hash_code(kind) ^ (0 if name is None else java_string_hash_code(name))
            for kind, name in entity
        )
        return _spread((31 + total) & _MASK)

    return _ordered(list(entities), entity_hash, capacity)
