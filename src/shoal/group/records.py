"""The group coordinator's records on `__consumer_offsets`: kio entities and `CODEC`.

The record model is `shoal.coordinator.records`' (a key entity and a value entity,
or no value: a tombstone; framed by `RecordCodec`). The entities here mirror Apache
Kafka 4.2's `group-coordinator/src/main/resources/common/message/*.json` field for
field and in order; names are the schema names in snake case. Keys are not flexible
(int16-length strings), values are flexible version 0 (compact strings and arrays,
a tagged-field section per struct). Kafka's per-message copies of one nested shape
(TopicPartition, TopicPartitions) share one entity here, as their bytes are
identical. Kafka 4.3's tagged AssignmentTimestamp of type 12 is not declared, so a
record carrying it is refused on read.

Types 1 (OffsetCommit) and 2 (GroupMetadata) are classic groups' records, in the
non-flexible version 3 values Kafka 4.2 writes (group/classic/groups.py,
group/committed_offsets.py). Types 3, 5-8 and 16 (resolved regex subscriptions) are
consumer groups (KIP-848, group/consumer/group.py). Type 4
(ConsumerGroupPartitionMetadata) is deprecated since Kafka 4.1 and not written; it, legacy
type 0 commits, type 9 and streams group
records are unknown to `CODEC`: loading logs and skips them. Type 1000
(PendingTxnOffset) is Shoal's own: transactional offsets waiting for their marker
(group/txn_offsets.py).

Invariants: partitions inside a record are sorted ascending and topics sorted by
topic id, so the same state always produces equal records (deterministic replay and
comparable logs); the builders in `share/`
(`membership`, `group`) and `topic_image` keep them.
"""

# No `from __future__ import annotations`: kio reads the entities' field types at
# run time, as in its generated schema modules.
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from kio.static.primitive import i16

from shoal.coordinator import records

# ---- nested structs of the values (flexible) ------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPartitions(records.NestedStruct):
    """`{TopicId, Partitions}` of types 13 (TopicPartition) and 14 (TopicPartitions);
    also the heartbeat's assignment."""

    topic_id: uuid.UUID = field(metadata={"kafka_type": "uuid"})
    partitions: tuple[int, ...] = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPartitionsInfo(records.NestedStruct):
    """`TopicPartitionsInfo {TopicId, TopicName, Partitions}` of type 15."""

    topic_id: uuid.UUID = field(metadata={"kafka_type": "uuid"})
    topic_name: str = field(metadata={"kafka_type": "string"})
    partitions: tuple[int, ...] = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicInfo(records.NestedStruct):
    """`TopicInfo {TopicId, TopicName}` of type 15 (deleting topics)."""

    topic_id: uuid.UUID = field(metadata={"kafka_type": "uuid"})
    topic_name: str = field(metadata={"kafka_type": "string"})


# ---- type 1: OffsetCommit (committed offsets of classic groups) -------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitValue(records.ValueStruct):
    """Version 3, not flexible: what Kafka 4.2 writes for a commit without an
    explicit expire timestamp (version 1 carries ExpireTimestamp, 4 is flexible)."""

    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = False
    offset: int = field(metadata={"kafka_type": "int64"})
    leader_epoch: int = field(metadata={"kafka_type": "int32"})
    metadata: str = field(metadata={"kafka_type": "string"})
    commit_timestamp: int = field(metadata={"kafka_type": "int64"})


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitKey(records.KeyStruct):
    """Schema fields `group`, `topic`, `partition`; `group_id` here, as every key."""

    RECORD_TYPE: ClassVar[int] = 1
    VALUE: ClassVar[type[OffsetCommitValue]] = OffsetCommitValue
    group_id: str = field(metadata={"kafka_type": "string"})
    topic: str = field(metadata={"kafka_type": "string"})
    partition: int = field(metadata={"kafka_type": "int32"})


# ---- type 1000: Shoal's pending transactional offset commits -------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingTxnOffsetValue(records.ValueStruct):
    """An offset a transaction committed (TxnOffsetCommit), pending its marker."""

    producer_epoch: int = field(metadata={"kafka_type": "int16"})
    offset: int = field(metadata={"kafka_type": "int64"})
    leader_epoch: int = field(metadata={"kafka_type": "int32"})
    metadata: str = field(metadata={"kafka_type": "string"})
    commit_timestamp: int = field(metadata={"kafka_type": "int64"})


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingTxnOffsetKey(records.KeyStruct):
    """Shoal's own record type (Kafka writes OffsetCommit records in a transactional
    batch instead; group/txn_offsets.py says why): one partition's pending offset of
    one producer id in one group. A tombstone drops it (marker written, or the
    group or topic deleted)."""

    RECORD_TYPE: ClassVar[int] = 1000
    VALUE: ClassVar[type[PendingTxnOffsetValue]] = PendingTxnOffsetValue
    group_id: str = field(metadata={"kafka_type": "string"})
    producer_id: int = field(metadata={"kafka_type": "int64"})
    topic: str = field(metadata={"kafka_type": "string"})
    partition: int = field(metadata={"kafka_type": "int32"})


# ---- type 2: GroupMetadata (classic groups) -------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberMetadata(records.NestedStruct):
    """A classic member in GroupMetadataValue version 3 (not flexible)."""

    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = False
    member_id: str = field(metadata={"kafka_type": "string"})
    group_instance_id: str | None = field(metadata={"kafka_type": "string"})
    client_id: str = field(metadata={"kafka_type": "string"})
    client_host: str = field(metadata={"kafka_type": "string"})
    rebalance_timeout: int = field(metadata={"kafka_type": "int32"})
    session_timeout: int = field(metadata={"kafka_type": "int32"})
    subscription: bytes = field(metadata={"kafka_type": "bytes"})
    assignment: bytes = field(metadata={"kafka_type": "bytes"})


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupMetadataValue(records.ValueStruct):
    """Version 3, not flexible, as Kafka 4.2 writes it."""

    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = False
    protocol_type: str = field(metadata={"kafka_type": "string"})
    generation: int = field(metadata={"kafka_type": "int32"})
    protocol: str | None = field(metadata={"kafka_type": "string"})
    leader: str | None = field(metadata={"kafka_type": "string"})
    current_state_timestamp: int = field(metadata={"kafka_type": "int64"})
    members: tuple[MemberMetadata, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupMetadataKey(records.KeyStruct):
    """Schema field `group`; `group_id` here, as every key."""

    RECORD_TYPE: ClassVar[int] = 2
    VALUE: ClassVar[type[GroupMetadataValue]] = GroupMetadataValue
    group_id: str = field(metadata={"kafka_type": "string"})


# ---- type 3: ConsumerGroupMetadata (namespace only) -------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupMetadataValue(records.ValueStruct):
    epoch: int = field(metadata={"kafka_type": "int32"})
    metadata_hash: int = field(metadata={"kafka_type": "int64", "tag": 0}, default=0)
    """Tagged (tag 0, default 0) since Kafka 4.1 (KIP-1101)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupMetadataKey(records.KeyStruct):
    RECORD_TYPE: ClassVar[int] = 3
    VALUE: ClassVar[type[ConsumerGroupMetadataValue]] = ConsumerGroupMetadataValue
    group_id: str = field(metadata={"kafka_type": "string"})


# ---- type 5: ConsumerGroupMemberMetadata ------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassicProtocol(records.NestedStruct):
    """`ClassicProtocol {Name, Metadata}`: one JoinGroup protocol of a classic member."""

    name: str = field(metadata={"kafka_type": "string"})
    metadata: bytes = field(metadata={"kafka_type": "bytes"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassicMemberMetadata(records.NestedStruct):
    """`ClassicMemberMetadata {SessionTimeoutMs, SupportedProtocols}`: set on a member
    of a consumer group that speaks the classic protocol (upgrade/downgrade)."""

    session_timeout_ms: int = field(metadata={"kafka_type": "int32"})
    supported_protocols: tuple[ClassicProtocol, ...]


# kio reads a tagged struct only when its annotation is the bare struct type (a null
# tagged field is simply absent); type checkers see the nullable field it really is.
if TYPE_CHECKING:
    _NullableClassicMemberMetadata = ClassicMemberMetadata | None
else:
    _NullableClassicMemberMetadata = ClassicMemberMetadata


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupMemberMetadataValue(records.ValueStruct):
    """Kafka 4.2's schema, with the tagged ClassicMemberMetadata (tag 0, null for a
    member that speaks the consumer protocol)."""

    instance_id: str | None = field(metadata={"kafka_type": "string"})
    rack_id: str | None = field(metadata={"kafka_type": "string"})
    client_id: str = field(metadata={"kafka_type": "string"})
    client_host: str = field(metadata={"kafka_type": "string"})
    subscribed_topic_names: tuple[str, ...] = field(metadata={"kafka_type": "string"})
    subscribed_topic_regex: str | None = field(metadata={"kafka_type": "string"})
    rebalance_timeout_ms: int = field(metadata={"kafka_type": "int32"})
    server_assignor: str | None = field(metadata={"kafka_type": "string"})
    classic_member_metadata: _NullableClassicMemberMetadata = field(
        metadata={"tag": 0}, default=None
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupMemberMetadataKey(records.KeyStruct):
    RECORD_TYPE: ClassVar[int] = 5
    VALUE: ClassVar[type[ConsumerGroupMemberMetadataValue]] = ConsumerGroupMemberMetadataValue
    group_id: str = field(metadata={"kafka_type": "string"})
    member_id: str = field(metadata={"kafka_type": "string"})


# ---- type 6: ConsumerGroupTargetAssignmentMetadata -------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupTargetAssignmentMetadataValue(records.ValueStruct):
    assignment_epoch: int = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupTargetAssignmentMetadataKey(records.KeyStruct):
    RECORD_TYPE: ClassVar[int] = 6
    VALUE: ClassVar[type[ConsumerGroupTargetAssignmentMetadataValue]] = (
        ConsumerGroupTargetAssignmentMetadataValue
    )
    group_id: str = field(metadata={"kafka_type": "string"})


# ---- type 7: ConsumerGroupTargetAssignmentMember ---------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupTargetAssignmentMemberValue(records.ValueStruct):
    topic_partitions: tuple[TopicPartitions, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupTargetAssignmentMemberKey(records.KeyStruct):
    RECORD_TYPE: ClassVar[int] = 7
    VALUE: ClassVar[type[ConsumerGroupTargetAssignmentMemberValue]] = (
        ConsumerGroupTargetAssignmentMemberValue
    )
    group_id: str = field(metadata={"kafka_type": "string"})
    member_id: str = field(metadata={"kafka_type": "string"})


# ---- type 8: ConsumerGroupCurrentMemberAssignment --------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupCurrentMemberAssignmentValue(records.ValueStruct):
    """Without 4.3's tagged AssignmentEpochs of TopicPartitions."""

    member_epoch: int = field(metadata={"kafka_type": "int32"})
    previous_member_epoch: int = field(metadata={"kafka_type": "int32"})
    state: int = field(metadata={"kafka_type": "int8"})
    assigned_partitions: tuple[TopicPartitions, ...]
    partitions_pending_revocation: tuple[TopicPartitions, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupCurrentMemberAssignmentKey(records.KeyStruct):
    RECORD_TYPE: ClassVar[int] = 8
    VALUE: ClassVar[type[ConsumerGroupCurrentMemberAssignmentValue]] = (
        ConsumerGroupCurrentMemberAssignmentValue
    )
    group_id: str = field(metadata={"kafka_type": "string"})
    member_id: str = field(metadata={"kafka_type": "string"})


# ---- type 16: ConsumerGroupRegularExpression ------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupRegularExpressionValue(records.ValueStruct):
    """A regex subscription of the group, resolved: the topics it matched, the topic
    image version it was resolved against and when (ms since the epoch)."""

    topics: tuple[str, ...] = field(metadata={"kafka_type": "string"})
    version: int = field(metadata={"kafka_type": "int64"})
    timestamp: int = field(metadata={"kafka_type": "int64"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupRegularExpressionKey(records.KeyStruct):
    RECORD_TYPE: ClassVar[int] = 16
    VALUE: ClassVar[type[ConsumerGroupRegularExpressionValue]] = ConsumerGroupRegularExpressionValue
    group_id: str = field(metadata={"kafka_type": "string"})
    regular_expression: str = field(metadata={"kafka_type": "string"})


# ---- type 10: ShareGroupMemberMetadata --------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupMemberMetadataValue(records.ValueStruct):
    rack_id: str | None = field(metadata={"kafka_type": "string"})
    client_id: str = field(metadata={"kafka_type": "string"})
    client_host: str = field(metadata={"kafka_type": "string"})
    subscribed_topic_names: tuple[str, ...] = field(metadata={"kafka_type": "string"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupMemberMetadataKey(records.KeyStruct):
    RECORD_TYPE: ClassVar[int] = 10
    VALUE: ClassVar[type[ShareGroupMemberMetadataValue]] = ShareGroupMemberMetadataValue
    group_id: str = field(metadata={"kafka_type": "string"})
    member_id: str = field(metadata={"kafka_type": "string"})


# ---- type 11: ShareGroupMetadata --------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupMetadataValue(records.ValueStruct):
    epoch: int = field(metadata={"kafka_type": "int32"})
    metadata_hash: int = field(metadata={"kafka_type": "int64"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupMetadataKey(records.KeyStruct):
    RECORD_TYPE: ClassVar[int] = 11
    VALUE: ClassVar[type[ShareGroupMetadataValue]] = ShareGroupMetadataValue
    group_id: str = field(metadata={"kafka_type": "string"})


# ---- type 12: ShareGroupTargetAssignmentMetadata ----------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupTargetAssignmentMetadataValue(records.ValueStruct):
    """Kafka 4.3 adds a tagged AssignmentTimestamp (tag 0); Shoal writes 4.2's form."""

    assignment_epoch: int = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupTargetAssignmentMetadataKey(records.KeyStruct):
    RECORD_TYPE: ClassVar[int] = 12
    VALUE: ClassVar[type[ShareGroupTargetAssignmentMetadataValue]] = (
        ShareGroupTargetAssignmentMetadataValue
    )
    group_id: str = field(metadata={"kafka_type": "string"})


# ---- type 13: ShareGroupTargetAssignmentMember ------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupTargetAssignmentMemberValue(records.ValueStruct):
    topic_partitions: tuple[TopicPartitions, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupTargetAssignmentMemberKey(records.KeyStruct):
    RECORD_TYPE: ClassVar[int] = 13
    VALUE: ClassVar[type[ShareGroupTargetAssignmentMemberValue]] = (
        ShareGroupTargetAssignmentMemberValue
    )
    group_id: str = field(metadata={"kafka_type": "string"})
    member_id: str = field(metadata={"kafka_type": "string"})


# ---- type 14: ShareGroupCurrentMemberAssignment -----------------------------------

MEMBER_STATE_STABLE = 0
"""Kafka's `MemberState.STABLE`: share members move straight to their target."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupCurrentMemberAssignmentValue(records.ValueStruct):
    member_epoch: int = field(metadata={"kafka_type": "int32"})
    previous_member_epoch: int = field(metadata={"kafka_type": "int32"})
    state: int = field(metadata={"kafka_type": "int8"})
    assigned_partitions: tuple[TopicPartitions, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupCurrentMemberAssignmentKey(records.KeyStruct):
    RECORD_TYPE: ClassVar[int] = 14
    VALUE: ClassVar[type[ShareGroupCurrentMemberAssignmentValue]] = (
        ShareGroupCurrentMemberAssignmentValue
    )
    group_id: str = field(metadata={"kafka_type": "string"})
    member_id: str = field(metadata={"kafka_type": "string"})


# ---- type 15: ShareGroupStatePartitionMetadata ------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupStatePartitionMetadataValue(records.ValueStruct):
    initializing_topics: tuple[TopicPartitionsInfo, ...]
    initialized_topics: tuple[TopicPartitionsInfo, ...]
    deleting_topics: tuple[TopicInfo, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupStatePartitionMetadataKey(records.KeyStruct):
    RECORD_TYPE: ClassVar[int] = 15
    VALUE: ClassVar[type[ShareGroupStatePartitionMetadataValue]] = (
        ShareGroupStatePartitionMetadataValue
    )
    group_id: str = field(metadata={"kafka_type": "string"})


# ---- the record and its codec ---------------------------------------------------------

RecordKey = (
    OffsetCommitKey
    | PendingTxnOffsetKey
    | GroupMetadataKey
    | ConsumerGroupMetadataKey
    | ConsumerGroupMemberMetadataKey
    | ConsumerGroupTargetAssignmentMetadataKey
    | ConsumerGroupTargetAssignmentMemberKey
    | ConsumerGroupCurrentMemberAssignmentKey
    | ConsumerGroupRegularExpressionKey
    | ShareGroupMemberMetadataKey
    | ShareGroupMetadataKey
    | ShareGroupTargetAssignmentMetadataKey
    | ShareGroupTargetAssignmentMemberKey
    | ShareGroupCurrentMemberAssignmentKey
    | ShareGroupStatePartitionMetadataKey
)
RecordValue = (
    OffsetCommitValue
    | PendingTxnOffsetValue
    | GroupMetadataValue
    | ConsumerGroupMetadataValue
    | ConsumerGroupMemberMetadataValue
    | ConsumerGroupTargetAssignmentMetadataValue
    | ConsumerGroupTargetAssignmentMemberValue
    | ConsumerGroupCurrentMemberAssignmentValue
    | ConsumerGroupRegularExpressionValue
    | ShareGroupMemberMetadataValue
    | ShareGroupMetadataValue
    | ShareGroupTargetAssignmentMetadataValue
    | ShareGroupTargetAssignmentMemberValue
    | ShareGroupCurrentMemberAssignmentValue
    | ShareGroupStatePartitionMetadataValue
)

CoordinatorRecord = records.CoordinatorRecord[RecordKey, RecordValue]
"""A group coordinator record: `CoordinatorRecord(key=..., value=... or None)`."""

CODEC: records.RecordCodec[RecordKey, RecordValue] = records.RecordCodec(
    topic="__consumer_offsets",
    keys=(
        OffsetCommitKey,
        PendingTxnOffsetKey,
        GroupMetadataKey,
        ConsumerGroupMetadataKey,
        ConsumerGroupMemberMetadataKey,
        ConsumerGroupTargetAssignmentMetadataKey,
        ConsumerGroupTargetAssignmentMemberKey,
        ConsumerGroupCurrentMemberAssignmentKey,
        ConsumerGroupRegularExpressionKey,
        ShareGroupMemberMetadataKey,
        ShareGroupMetadataKey,
        ShareGroupTargetAssignmentMetadataKey,
        ShareGroupTargetAssignmentMemberKey,
        ShareGroupCurrentMemberAssignmentKey,
        ShareGroupStatePartitionMetadataKey,
    ),
)
"""Bytes of the group coordinator's records (types 1-3, 5-8, 10-16), Kafka's exactly,
and Shoal's type 1000 (pending transactional offsets)."""
