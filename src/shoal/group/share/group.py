"""The durable state of one share group, and how each record changes it.

`ShareGroup` is what replaying records 10-15 builds: the group epoch and metadata
hash (11), the assignment epoch (12), the members with their subscription (10) and
current assignment (14), the target assignment (13), and which share-partitions
have state (15: initializing, initialized, deleting topics). Nothing else changes
it: `apply(group, record)` is the only writer, and the shard calls it only from
`replay`.

Replay is lenient in the way a compacted `__consumer_offsets` requires: a value
creates what it refers to (a member's assignment may be replayed before its
metadata once older records are compacted away) and a tombstone of something absent
is a no-op. The group state is therefore a function of the last record of each key.

Derived state: Empty without members, Stable with members (Dead is shown by the
shard while a deletion is in progress).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace

from shoal.group import records as r
from shoal.group.topic_image import Assignment, from_topic_partitions, normalise

LEAVE_GROUP_MEMBER_EPOCH = -1

STATE_EMPTY = "Empty"
STATE_STABLE = "Stable"
STATE_DEAD = "Dead"


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupMember:
    """A member as persisted by records 10 (metadata) and 14 (current assignment)."""

    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: int = r.MEMBER_STATE_STABLE
    assigned_partitions: Assignment = field(default_factory=dict)

    def metadata_value(self) -> r.ShareGroupMemberMetadataValue:
        return r.ShareGroupMemberMetadataValue(
            rack_id=self.rack_id,
            client_id=self.client_id,
            client_host=self.client_host,
            subscribed_topic_names=tuple(sorted(self.subscribed_topic_names)),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicState:
    """A topic's entry in record 15's initializing or initialized list."""

    name: str
    partitions: frozenset[int]


@dataclass(frozen=True, slots=True, kw_only=True)
class StatePartitionMetadata:
    """Record 15: which share-partitions of the group have state."""

    initializing: dict[uuid.UUID, TopicState] = field(default_factory=dict)
    initialized: dict[uuid.UUID, TopicState] = field(default_factory=dict)
    deleting: dict[uuid.UUID, str] = field(default_factory=dict)

    @property
    def is_empty(self) -> bool:
        return not (self.initializing or self.initialized or self.deleting)

    def initialized_partitions(self, topic_id: uuid.UUID) -> frozenset[int]:
        entry = self.initialized.get(topic_id)
        return entry.partitions if entry is not None else frozenset()

    def initializing_partitions(self, topic_id: uuid.UUID) -> frozenset[int]:
        entry = self.initializing.get(topic_id)
        return entry.partitions if entry is not None else frozenset()

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        for entries in (self.initialized, self.initializing):
            if topic_id in entries:
                return entries[topic_id].name
        return self.deleting.get(topic_id)

    def to_value(self) -> r.ShareGroupStatePartitionMetadataValue:
        def infos(entries: dict[uuid.UUID, TopicState]) -> tuple[r.TopicPartitionsInfo, ...]:
            return tuple(
                r.TopicPartitionsInfo(
                    topic_id=topic_id,
                    topic_name=entry.name,
                    partitions=tuple(sorted(entry.partitions)),
                )
                for topic_id, entry in sorted(entries.items())
                if entry.partitions
            )

        return r.ShareGroupStatePartitionMetadataValue(
            initializing_topics=infos(self.initializing),
            initialized_topics=infos(self.initialized),
            deleting_topics=tuple(
                r.TopicInfo(topic_id=topic_id, topic_name=name)
                for topic_id, name in sorted(self.deleting.items())
            ),
        )

    @classmethod
    def from_value(cls, value: r.ShareGroupStatePartitionMetadataValue) -> StatePartitionMetadata:
        def entries(infos: tuple[r.TopicPartitionsInfo, ...]) -> dict[uuid.UUID, TopicState]:
            result: dict[uuid.UUID, TopicState] = {}
            for info in infos:
                previous = result.get(info.topic_id)
                partitions = frozenset(info.partitions) | (
                    previous.partitions if previous else frozenset()
                )
                result[info.topic_id] = TopicState(name=info.topic_name, partitions=partitions)
            return result

        return cls(
            initializing=entries(value.initializing_topics),
            initialized=entries(value.initialized_topics),
            deleting={info.topic_id: info.topic_name for info in value.deleting_topics},
        )


@dataclass(slots=True, kw_only=True)
class ShareGroup:
    """One share group's replayed state. Mutated only by `apply`."""

    group_id: str
    group_epoch: int = 0
    metadata_hash: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareGroupMember] = field(default_factory=dict)
    target_assignment: dict[str, Assignment] = field(default_factory=dict)
    state_metadata: StatePartitionMetadata = field(default_factory=StatePartitionMetadata)

    @property
    def state(self) -> str:
        return STATE_STABLE if self.members else STATE_EMPTY

    @property
    def is_empty(self) -> bool:
        return not self.members

    def subscribed_topic_names(self) -> frozenset[str]:
        names: set[str] = set()
        for member in self.members.values():
            names |= member.subscribed_topic_names
        return frozenset(names)


def apply(group: ShareGroup, record: r.CoordinatorRecord) -> None:
    """Change `group` by one of its share-group records (types 10, 12-15; type 11
    is handled by the shard, which owns group creation and removal)."""
    key, value = record.key, record.value
    match key:
        case r.ShareGroupMemberMetadataKey(member_id=member_id):
            _apply_member_metadata(group, member_id, value)
        case r.ShareGroupTargetAssignmentMetadataKey():
            if value is None:
                group.assignment_epoch = -1
            else:
                assert isinstance(value, r.ShareGroupTargetAssignmentMetadataValue)
                group.assignment_epoch = value.assignment_epoch
        case r.ShareGroupTargetAssignmentMemberKey(member_id=member_id):
            if value is None:
                group.target_assignment.pop(member_id, None)
            else:
                assert isinstance(value, r.ShareGroupTargetAssignmentMemberValue)
                group.target_assignment[member_id] = from_topic_partitions(value.topic_partitions)
        case r.ShareGroupCurrentMemberAssignmentKey(member_id=member_id):
            _apply_current_assignment(group, member_id, value)
        case r.ShareGroupStatePartitionMetadataKey():
            if value is None:
                group.state_metadata = StatePartitionMetadata()
            else:
                assert isinstance(value, r.ShareGroupStatePartitionMetadataValue)
                group.state_metadata = StatePartitionMetadata.from_value(value)
        case _:
            raise AssertionError(f"not a share-group member record: {key!r}")


def _apply_member_metadata(group: ShareGroup, member_id: str, value: r.RecordValue | None) -> None:
    if value is None:
        group.members.pop(member_id, None)
        return
    assert isinstance(value, r.ShareGroupMemberMetadataValue)
    old = group.members.get(member_id, ShareGroupMember(member_id=member_id))
    group.members[member_id] = replace(
        old,
        rack_id=value.rack_id,
        client_id=value.client_id,
        client_host=value.client_host,
        subscribed_topic_names=frozenset(value.subscribed_topic_names),
    )


def _apply_current_assignment(
    group: ShareGroup, member_id: str, value: r.RecordValue | None
) -> None:
    old = group.members.get(member_id)
    if value is None:
        if old is not None:
            group.members[member_id] = replace(
                old,
                member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                assigned_partitions={},
            )
        return
    assert isinstance(value, r.ShareGroupCurrentMemberAssignmentValue)
    base = old if old is not None else ShareGroupMember(member_id=member_id)
    group.members[member_id] = replace(
        base,
        member_epoch=value.member_epoch,
        previous_member_epoch=value.previous_member_epoch,
        state=value.state,
        assigned_partitions=normalise(from_topic_partitions(value.assigned_partitions)),
    )
