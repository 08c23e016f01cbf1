"""Topic metadata as the group coordinator sees it, and assignment value helpers.

The shard does not read the log: the runtime tells it the current topics (name,
topic id, partition count) through `GroupCoordinatorShard.on_topics_changed`. This
module holds that image, the group's metadata hash (Kafka's `MetadataHash`: a value
that changes when a subscribed topic appears, disappears, is recreated or grows),
and the one representation of an assignment used everywhere in the package:
`Assignment` = topic id -> frozenset of partitions, never holding an empty set.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from shoal.group import records as r
from shoal.group.records import TopicPartitions

Assignment = Mapping[uuid.UUID, frozenset[int]]
"""Topic id -> assigned partitions (normalised: no empty sets)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicMetadata:
    """One topic of the cluster."""

    topic_id: uuid.UUID
    name: str
    partition_count: int


class TopicImage:
    """The topics the shard knows, looked up by name or by id. Immutable."""

    __slots__ = ("_by_id", "_by_name")

    def __init__(self, topics: Iterable[TopicMetadata] = ()) -> None:
        self._by_name: dict[str, TopicMetadata] = {}
        self._by_id: dict[uuid.UUID, TopicMetadata] = {}
        for topic in topics:
            assert topic.partition_count >= 0, topic
            self._by_name[topic.name] = topic
            self._by_id[topic.topic_id] = topic

    def by_name(self, name: str) -> TopicMetadata | None:
        return self._by_name.get(name)

    def by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        return self._by_id.get(topic_id)

    def topics(self) -> list[TopicMetadata]:
        return sorted(self._by_id.values(), key=lambda t: t.name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TopicImage) and self._by_id == other._by_id

    def __hash__(self) -> int:  # pragma: no cover - images are not used as keys
        return hash(frozenset(self._by_id))


def metadata_hash(*, subscribed_topic_names: Iterable[str], image: TopicImage) -> int:
    """A signed int64 over (name, id, partition count) of the subscribed topics that
    exist; 0 when none does (as Kafka). Names without a topic are ignored."""
    entries = sorted(
        (topic.name, topic.topic_id.bytes, topic.partition_count)
        for name in set(subscribed_topic_names)
        if (topic := image.by_name(name)) is not None
    )
    if not entries:
        return 0
    digest = hashlib.blake2b(digest_size=8)
    for name, id_bytes, partition_count in entries:
        encoded = name.encode()
        digest.update(len(encoded).to_bytes(2, "big") + encoded)
        digest.update(id_bytes + partition_count.to_bytes(4, "big"))
    return int.from_bytes(digest.digest(), "big", signed=True)


def normalise(assignment: Mapping[uuid.UUID, Iterable[int]]) -> dict[uuid.UUID, frozenset[int]]:
    """A copy with frozensets and without empty topics."""
    result: dict[uuid.UUID, frozenset[int]] = {}
    for topic_id, partitions in assignment.items():
        frozen = frozenset(partitions)
        if frozen:
            result[topic_id] = frozen
    return result


def to_topic_partitions(assignment: Assignment) -> tuple[TopicPartitions, ...]:
    """Record / response form: topics by id, partitions ascending."""
    return tuple(
        TopicPartitions(topic_id=topic_id, partitions=tuple(sorted(partitions)))
        for topic_id, partitions in sorted(assignment.items())
        if partitions
    )


def target_records(
    *,
    members: Iterable[str],
    current_target: Mapping[str, Assignment],
    new_target: Mapping[str, Assignment],
    member_record: Callable[[str, Assignment | None], r.CoordinatorRecord],
    epoch_record: r.CoordinatorRecord,
) -> list[r.CoordinatorRecord]:
    """The records that move a group's target assignment from `current_target` to
    `new_target`, for share and consumer groups alike: a tombstone for each member
    gone, a record for each member whose target is new or changed, then the
    assignment epoch. `member_record(member_id, None)` is a tombstone."""
    wanted = set(members)
    records = [member_record(m, None) for m in sorted(set(current_target) - wanted)]
    for member_id in sorted(wanted):
        assigned = new_target.get(member_id, {})
        if current_target.get(member_id) != assigned:
            records.append(member_record(member_id, assigned))
    records.append(epoch_record)
    return records


def from_topic_partitions(topics: Iterable[TopicPartitions]) -> dict[uuid.UUID, frozenset[int]]:
    merged: dict[uuid.UUID, set[int]] = {}
    for topic in topics:
        merged.setdefault(topic.topic_id, set()).update(topic.partitions)
    return normalise(merged)


def partition_count(assignment: Assignment) -> int:
    return sum(len(partitions) for partitions in assignment.values())
