"""The order in which a `java.util.HashMap` of string keys iterates, for output that
Kafka's tools print straight from such a map.

`kafka-topics --describe` prints a topic's configs in the order of the Admin client's
`Config` (a HashMap filled in the DescribeConfigs answer's order) and the topics in the
order of `DescribeTopicsResult.allTopicNames()` (a HashMap sized for the topics). To
print what Kafka's tool prints, Shoal's tool orders them the same way.

A HashMap keeps its entries in a power-of-two table of buckets, a key's bucket being
its `String.hashCode()` spread (`h ^ (h >>> 16)`) masked by the table size less one;
the table doubles whenever the entry count passes three quarters of it, and a
resize keeps the relative order of the keys that share a bucket. So the iteration is
the keys sorted by their bucket in the final table, insertion order breaking ties.
(A bucket of eight or more keys becomes a tree whose order this does not model; it
takes dozens of colliding keys, which topic and config names do not produce.)
"""

from __future__ import annotations

from collections.abc import Iterable

DEFAULT_CAPACITY = 16
"""`new HashMap<>()`'s initial table size."""


def string_hash(text: str) -> int:
    """Java's `String.hashCode()` (31-polynomial over UTF-16 code units, 32-bit),
    spread as HashMap spreads it, as an unsigned 32-bit number."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h ^ (h >> 16)


def hash_map_order(keys: Iterable[str], *, capacity: int | None = None) -> list[str]:
    """`keys` (distinct, in insertion order) in the order a HashMap created with
    `capacity` (None: the default constructor) iterates them."""
    inserted = list(keys)
    size = DEFAULT_CAPACITY if capacity is None else _table_size_for(capacity)
    for count in range(1, len(inserted) + 1):
        if count > size * 3 // 4:
            size *= 2
    return sorted(inserted, key=lambda key: string_hash(key) & (size - 1))


def _table_size_for(capacity: int) -> int:
    """HashMap.tableSizeFor: the least power of two at least `capacity` (1 for 0)."""
    size = 1
    while size < capacity:
        size *= 2
    return size
