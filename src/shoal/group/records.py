"""The group coordinator's records on `__consumer_offsets`, as typed dataclasses.

Each record is a key (record type = the key's version on the wire, then the key
struct) and a value (value version 0, then the value struct), or no value: a
tombstone. The share-group types 10-15 mirror Apache Kafka's schemas
(`group-coordinator/src/main/resources/common/message/ShareGroup*.json`) field for
field, in the same order, so a serialiser can write them with Kafka's schemas
unchanged; names are the schema names in snake case. Type 3 (ConsumerGroupMetadata)
is here only so the shard's group-id namespace can hold a consumer group: replaying
it marks the id as taken by another group type.

Invariants: partitions inside a record are sorted ascending and topics sorted by
topic id, so the same state always produces equal records (deterministic replay and
comparable logs).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import ClassVar

# ---- shared structs -------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPartitions:
    """`{TopicId, Partitions}` of records 13 and 14 (also the heartbeat assignment)."""

    topic_id: uuid.UUID
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPartitionsInfo:
    """`TopicPartitionsInfo {TopicId, TopicName, Partitions}` of record 15."""

    topic_id: uuid.UUID
    topic_name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicInfo:
    """`TopicInfo {TopicId, TopicName}` of record 15 (deleting topics)."""

    topic_id: uuid.UUID
    topic_name: str


# ---- type 3: ConsumerGroupMetadata (namespace only) -------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupMetadataKey:
    TYPE: ClassVar[int] = 3
    group_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupMetadataValue:
    VERSION: ClassVar[int] = 0
    epoch: int
    metadata_hash: int = 0


# ---- type 10: ShareGroupMemberMetadata --------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupMemberMetadataKey:
    TYPE: ClassVar[int] = 10
    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupMemberMetadataValue:
    VERSION: ClassVar[int] = 0
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]


# ---- type 11: ShareGroupMetadata --------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupMetadataKey:
    TYPE: ClassVar[int] = 11
    group_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupMetadataValue:
    VERSION: ClassVar[int] = 0
    epoch: int
    metadata_hash: int


# ---- type 12: ShareGroupTargetAssignmentMetadata ----------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupTargetAssignmentMetadataKey:
    TYPE: ClassVar[int] = 12
    group_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupTargetAssignmentMetadataValue:
    """Kafka 4.3 adds a tagged AssignmentTimestamp (tag 0); Shoal writes 4.2's form."""

    VERSION: ClassVar[int] = 0
    assignment_epoch: int


# ---- type 13: ShareGroupTargetAssignmentMember ------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupTargetAssignmentMemberKey:
    TYPE: ClassVar[int] = 13
    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupTargetAssignmentMemberValue:
    VERSION: ClassVar[int] = 0
    topic_partitions: tuple[TopicPartitions, ...]


# ---- type 14: ShareGroupCurrentMemberAssignment -----------------------------------

MEMBER_STATE_STABLE = 0
"""Kafka's `MemberState.STABLE`: share members move straight to their target."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupCurrentMemberAssignmentKey:
    TYPE: ClassVar[int] = 14
    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupCurrentMemberAssignmentValue:
    VERSION: ClassVar[int] = 0
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: tuple[TopicPartitions, ...]


# ---- type 15: ShareGroupStatePartitionMetadata ------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupStatePartitionMetadataKey:
    TYPE: ClassVar[int] = 15
    group_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupStatePartitionMetadataValue:
    VERSION: ClassVar[int] = 0
    initializing_topics: tuple[TopicPartitionsInfo, ...]
    initialized_topics: tuple[TopicPartitionsInfo, ...]
    deleting_topics: tuple[TopicInfo, ...]


# ---- the record ---------------------------------------------------------------------

RecordKey = (
    ConsumerGroupMetadataKey
    | ShareGroupMemberMetadataKey
    | ShareGroupMetadataKey
    | ShareGroupTargetAssignmentMetadataKey
    | ShareGroupTargetAssignmentMemberKey
    | ShareGroupCurrentMemberAssignmentKey
    | ShareGroupStatePartitionMetadataKey
)
RecordValue = (
    ConsumerGroupMetadataValue
    | ShareGroupMemberMetadataValue
    | ShareGroupMetadataValue
    | ShareGroupTargetAssignmentMetadataValue
    | ShareGroupTargetAssignmentMemberValue
    | ShareGroupCurrentMemberAssignmentValue
    | ShareGroupStatePartitionMetadataValue
)

_VALUE_TYPE_OF_KEY: dict[type, type] = {
    ConsumerGroupMetadataKey: ConsumerGroupMetadataValue,
    ShareGroupMemberMetadataKey: ShareGroupMemberMetadataValue,
    ShareGroupMetadataKey: ShareGroupMetadataValue,
    ShareGroupTargetAssignmentMetadataKey: ShareGroupTargetAssignmentMetadataValue,
    ShareGroupTargetAssignmentMemberKey: ShareGroupTargetAssignmentMemberValue,
    ShareGroupCurrentMemberAssignmentKey: ShareGroupCurrentMemberAssignmentValue,
    ShareGroupStatePartitionMetadataKey: ShareGroupStatePartitionMetadataValue,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class CoordinatorRecord:
    """One record: a key and its value, or `value=None` for a tombstone."""

    key: RecordKey
    value: RecordValue | None

    def __post_init__(self) -> None:
        expected = _VALUE_TYPE_OF_KEY[type(self.key)]
        assert self.value is None or isinstance(self.value, expected), (
            f"{type(self.value).__name__} is not the value of {type(self.key).__name__}"
        )

    @property
    def record_type(self) -> int:
        """The int16 written before the key struct on `__consumer_offsets`."""
        return self.key.TYPE

    @property
    def is_tombstone(self) -> bool:
        return self.value is None
