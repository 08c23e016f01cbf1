"""Which partition of a coordinator topic owns a key: Kafka's placement, bit for bit.

Kafka places a group id (on `__consumer_offsets`) and a share-partition key
`groupId:topicId:partition` (on `__share_group_state`) with Java's `String.hashCode`
made non-negative the Kafka way (`Utils.abs`: Integer.MIN_VALUE -> 0, else the
absolute value) modulo the topic's partition count (docs/design/coordinators.md §2.1).
`Placement` is that rule for one topic, over a coordinator's own key type; the
coordinator runtime asks it (coordinator/runtime.py, `partition_of`).
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

_INT32_MIN = -(2**31)


def java_string_hash(text: str) -> int:
    """Java's `String.hashCode` (over UTF-16 code units) as a signed int32."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def partition_for(key: str, partitions: int) -> int:
    """The partition of a coordinator topic with `partitions` partitions owning `key`."""
    assert partitions >= 1, partitions
    h = java_string_hash(key)
    return (0 if h == _INT32_MIN else abs(h)) % partitions


def share_partition_key(group_id: str, topic_id: uuid.UUID, partition: int) -> str:
    """The share coordinator key `groupId:topicId:partition`, the topic id in Kafka's
    URL-safe base64 without padding."""
    encoded = base64.urlsafe_b64encode(topic_id.bytes).decode("ascii").rstrip("=")
    return f"{group_id}:{encoded}:{partition}"


K = TypeVar("K", bound=Hashable)


class Placement(Generic[K]):
    """Which partition of a coordinator topic with `partitions` partitions owns a key:
    `partition_for(key_text(key), partitions)`. Keys whose text is dear to build (a
    share-partition key's base64 topic id) are asked about on every write, so up to
    `kept` answers are kept, the oldest dropped first (`kept=0`: none kept)."""

    __slots__ = ("_kept", "_key_text", "_partitions", "_placements")

    def __init__(self, partitions: int, *, key_text: Callable[[K], str], kept: int = 0) -> None:
        assert partitions >= 1, partitions
        assert kept >= 0, kept
        self._partitions = partitions
        self._key_text = key_text
        self._kept = kept
        self._placements: dict[K, int] = {}

    @property
    def partitions(self) -> int:
        return self._partitions

    def partition_of(self, key: K) -> int:
        placements = self._placements
        partition = placements.get(key)
        if partition is None:
            partition = partition_for(self._key_text(key), self._partitions)
            if self._kept:
                if len(placements) >= self._kept:
                    del placements[next(iter(placements))]
                placements[key] = partition
        return partition

    def __len__(self) -> int:
        """How many answers are kept."""
        return len(self._placements)
