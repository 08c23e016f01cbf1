"""Bytes of the group coordinator's records on `__consumer_offsets`, Kafka's exactly.

Owns the wire form of the typed records in `records.py` (types 3 and 10-15):

    key   = int16 record type | key struct   (non-flexible: int16-length strings)
    value = int16 version (0) | value struct (flexible: compact strings and arrays,
                                              a tagged-field section per struct)
    value = None                             a tombstone

Each struct is a kio-style entity dataclass below (`kafka_type` metadata on every
field, `__flexible__` as in Kafka's schema), read and written by kio's
`entity_reader`/`entity_writer`: no field is coded by hand. The entities mirror Kafka
4.2's `group-coordinator/src/main/resources/common/message/*.json` field for field, in
order; Kafka's per-message copies of one nested shape (TopicPartition,
TopicPartitions) share one entity here, as their bytes are identical. Kafka 4.3's
tagged AssignmentTimestamp of type 12 is not written; like any tagged field not
declared here it is refused on read (kio reads declared tags only).

Decoding is strict: a known type whose bytes do not parse, leave bytes over or carry
an unknown value version raises `RecordDecodeError`; a type this codec does not know
(offset commits, consumer or streams group records, ...) raises
`UnknownRecordType`, which loading logs and skips, as Kafka's loader does. A zero
topic id reads back as the zero UUID (kio reads it as None).
"""

# No `from __future__ import annotations`: kio reads the entities' field types at
# run time, as in its generated schema modules.
import dataclasses
import io
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kio.serial import entity_reader, entity_writer
from kio.serial.readers import read_int16
from kio.serial.writers import write_int16
from kio.static.constants import EntityType
from kio.static.primitive import i8, i16, i32, i64

from shoal.coordinator.log_sink import UnknownRecordType
from shoal.group import records as rec

_ZERO_UUID = uuid.UUID(int=0)


class RecordDecodeError(ValueError):
    """The bytes of a known record type are not a valid record."""


# ---- keys (flexibleVersions "none") -------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupKey:
    """ConsumerGroupMetadataKey (3), ShareGroupMetadataKey (11),
    ShareGroupTargetAssignmentMetadataKey (12), ShareGroupStatePartitionMetadataKey
    (15): the same one field."""

    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    group_id: str = field(metadata={"kafka_type": "string"})


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupMemberKey:
    """ShareGroupMemberMetadataKey (10), ShareGroupTargetAssignmentMemberKey (13),
    ShareGroupCurrentMemberAssignmentKey (14)."""

    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    group_id: str = field(metadata={"kafka_type": "string"})
    member_id: str = field(metadata={"kafka_type": "string"})


# ---- nested structs of the values (flexible) ------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPartitions:
    """`{TopicId, Partitions}` of types 13 (TopicPartition) and 14 (TopicPartitions)."""

    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    partitions: tuple[i32, ...] = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPartitionsInfo:
    """`TopicPartitionsInfo` of type 15."""

    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    topic_name: str = field(metadata={"kafka_type": "string"})
    partitions: tuple[i32, ...] = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicInfo:
    """`TopicInfo` of type 15."""

    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    topic_name: str = field(metadata={"kafka_type": "string"})


# ---- values (flexibleVersions "0+", version 0) ---------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupMetadataValue:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    epoch: i32 = field(metadata={"kafka_type": "int32"})
    metadata_hash: i64 = field(metadata={"kafka_type": "int64", "tag": 0}, default=i64(0))
    """Tagged (tag 0, default 0) since Kafka 4.1 (KIP-1101)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupMemberMetadataValue:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    rack_id: str | None = field(metadata={"kafka_type": "string"})
    client_id: str = field(metadata={"kafka_type": "string"})
    client_host: str = field(metadata={"kafka_type": "string"})
    subscribed_topic_names: tuple[str, ...] = field(metadata={"kafka_type": "string"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupMetadataValue:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    epoch: i32 = field(metadata={"kafka_type": "int32"})
    metadata_hash: i64 = field(metadata={"kafka_type": "int64"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupTargetAssignmentMetadataValue:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    assignment_epoch: i32 = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupTargetAssignmentMemberValue:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    topic_partitions: tuple[TopicPartitions, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupCurrentMemberAssignmentValue:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    member_epoch: i32 = field(metadata={"kafka_type": "int32"})
    previous_member_epoch: i32 = field(metadata={"kafka_type": "int32"})
    state: i8 = field(metadata={"kafka_type": "int8"})
    assigned_partitions: tuple[TopicPartitions, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupStatePartitionMetadataValue:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    initializing_topics: tuple[TopicPartitionsInfo, ...]
    initialized_topics: tuple[TopicPartitionsInfo, ...]
    deleting_topics: tuple[TopicInfo, ...]


# ---- domain <-> entity ----------------------------------------------------------------


def _topic_partitions_out(items: tuple[rec.TopicPartitions, ...]) -> tuple[TopicPartitions, ...]:
    return tuple(
        TopicPartitions(topic_id=t.topic_id, partitions=tuple(i32(p) for p in t.partitions))
        for t in items
    )


def _topic_partitions_in(items: tuple[TopicPartitions, ...]) -> tuple[rec.TopicPartitions, ...]:
    return tuple(
        rec.TopicPartitions(
            topic_id=t.topic_id or _ZERO_UUID, partitions=tuple(int(p) for p in t.partitions)
        )
        for t in items
    )


def _infos_out(items: tuple[rec.TopicPartitionsInfo, ...]) -> tuple[TopicPartitionsInfo, ...]:
    return tuple(
        TopicPartitionsInfo(
            topic_id=t.topic_id,
            topic_name=t.topic_name,
            partitions=tuple(i32(p) for p in t.partitions),
        )
        for t in items
    )


def _infos_in(items: tuple[TopicPartitionsInfo, ...]) -> tuple[rec.TopicPartitionsInfo, ...]:
    return tuple(
        rec.TopicPartitionsInfo(
            topic_id=t.topic_id or _ZERO_UUID,
            topic_name=t.topic_name,
            partitions=tuple(int(p) for p in t.partitions),
        )
        for t in items
    )


def _value_out(value: rec.RecordValue) -> Any:
    match value:
        case rec.ConsumerGroupMetadataValue():
            return ConsumerGroupMetadataValue(
                epoch=i32(value.epoch), metadata_hash=i64(value.metadata_hash)
            )
        case rec.ShareGroupMemberMetadataValue():
            return ShareGroupMemberMetadataValue(
                rack_id=value.rack_id,
                client_id=value.client_id,
                client_host=value.client_host,
                subscribed_topic_names=value.subscribed_topic_names,
            )
        case rec.ShareGroupMetadataValue():
            return ShareGroupMetadataValue(
                epoch=i32(value.epoch), metadata_hash=i64(value.metadata_hash)
            )
        case rec.ShareGroupTargetAssignmentMetadataValue():
            return ShareGroupTargetAssignmentMetadataValue(
                assignment_epoch=i32(value.assignment_epoch)
            )
        case rec.ShareGroupTargetAssignmentMemberValue():
            return ShareGroupTargetAssignmentMemberValue(
                topic_partitions=_topic_partitions_out(value.topic_partitions)
            )
        case rec.ShareGroupCurrentMemberAssignmentValue():
            return ShareGroupCurrentMemberAssignmentValue(
                member_epoch=i32(value.member_epoch),
                previous_member_epoch=i32(value.previous_member_epoch),
                state=i8(value.state),
                assigned_partitions=_topic_partitions_out(value.assigned_partitions),
            )
        case rec.ShareGroupStatePartitionMetadataValue():
            return ShareGroupStatePartitionMetadataValue(
                initializing_topics=_infos_out(value.initializing_topics),
                initialized_topics=_infos_out(value.initialized_topics),
                deleting_topics=tuple(
                    TopicInfo(topic_id=t.topic_id, topic_name=t.topic_name)
                    for t in value.deleting_topics
                ),
            )
    raise AssertionError(f"no wire form for {type(value).__name__}")


def _consumer_group_metadata_in(v: ConsumerGroupMetadataValue) -> rec.RecordValue:
    return rec.ConsumerGroupMetadataValue(epoch=int(v.epoch), metadata_hash=int(v.metadata_hash))


def _member_metadata_in(v: ShareGroupMemberMetadataValue) -> rec.RecordValue:
    return rec.ShareGroupMemberMetadataValue(
        rack_id=v.rack_id,
        client_id=v.client_id,
        client_host=v.client_host,
        subscribed_topic_names=tuple(v.subscribed_topic_names),
    )


def _group_metadata_in(v: ShareGroupMetadataValue) -> rec.RecordValue:
    return rec.ShareGroupMetadataValue(epoch=int(v.epoch), metadata_hash=int(v.metadata_hash))


def _target_metadata_in(v: ShareGroupTargetAssignmentMetadataValue) -> rec.RecordValue:
    return rec.ShareGroupTargetAssignmentMetadataValue(assignment_epoch=int(v.assignment_epoch))


def _target_member_in(v: ShareGroupTargetAssignmentMemberValue) -> rec.RecordValue:
    return rec.ShareGroupTargetAssignmentMemberValue(
        topic_partitions=_topic_partitions_in(v.topic_partitions)
    )


def _current_assignment_in(v: ShareGroupCurrentMemberAssignmentValue) -> rec.RecordValue:
    return rec.ShareGroupCurrentMemberAssignmentValue(
        member_epoch=int(v.member_epoch),
        previous_member_epoch=int(v.previous_member_epoch),
        state=int(v.state),
        assigned_partitions=_topic_partitions_in(v.assigned_partitions),
    )


def _state_partition_metadata_in(v: ShareGroupStatePartitionMetadataValue) -> rec.RecordValue:
    return rec.ShareGroupStatePartitionMetadataValue(
        initializing_topics=_infos_in(v.initializing_topics),
        initialized_topics=_infos_in(v.initialized_topics),
        deleting_topics=tuple(
            rec.TopicInfo(topic_id=t.topic_id or _ZERO_UUID, topic_name=t.topic_name)
            for t in v.deleting_topics
        ),
    )


@dataclass(frozen=True, slots=True)
class _RecordType:
    """How one record type maps between its typed record and its entities."""

    key_domain: type
    key_entity: type
    value_entity: type
    value_in: Callable[[Any], rec.RecordValue]


_TYPES: dict[int, _RecordType] = {
    rec.ConsumerGroupMetadataKey.TYPE: _RecordType(
        rec.ConsumerGroupMetadataKey,
        GroupKey,
        ConsumerGroupMetadataValue,
        _consumer_group_metadata_in,
    ),
    rec.ShareGroupMemberMetadataKey.TYPE: _RecordType(
        rec.ShareGroupMemberMetadataKey,
        GroupMemberKey,
        ShareGroupMemberMetadataValue,
        _member_metadata_in,
    ),
    rec.ShareGroupMetadataKey.TYPE: _RecordType(
        rec.ShareGroupMetadataKey, GroupKey, ShareGroupMetadataValue, _group_metadata_in
    ),
    rec.ShareGroupTargetAssignmentMetadataKey.TYPE: _RecordType(
        rec.ShareGroupTargetAssignmentMetadataKey,
        GroupKey,
        ShareGroupTargetAssignmentMetadataValue,
        _target_metadata_in,
    ),
    rec.ShareGroupTargetAssignmentMemberKey.TYPE: _RecordType(
        rec.ShareGroupTargetAssignmentMemberKey,
        GroupMemberKey,
        ShareGroupTargetAssignmentMemberValue,
        _target_member_in,
    ),
    rec.ShareGroupCurrentMemberAssignmentKey.TYPE: _RecordType(
        rec.ShareGroupCurrentMemberAssignmentKey,
        GroupMemberKey,
        ShareGroupCurrentMemberAssignmentValue,
        _current_assignment_in,
    ),
    rec.ShareGroupStatePartitionMetadataKey.TYPE: _RecordType(
        rec.ShareGroupStatePartitionMetadataKey,
        GroupKey,
        ShareGroupStatePartitionMetadataValue,
        _state_partition_metadata_in,
    ),
}

_VALUE_VERSION = 0
"""The only value version of every type here (Kafka's validVersions "0")."""


# ---- framing --------------------------------------------------------------------------


def _framed(prefix: int, entity: Any) -> bytes:
    buffer = io.BytesIO()
    write_int16(buffer, i16(prefix))
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def _unframed(data: bytes, entity_type: type, what: str) -> Any:
    entity: Any
    try:
        entity, size = entity_reader(entity_type)(data, 2)
    except KeyError as exc:  # kio's reader knows only the declared tags
        raise RecordDecodeError(f"{what} carries an unknown tagged field: {exc}") from exc
    if 2 + size != len(data):
        raise RecordDecodeError(f"{what} has {len(data) - 2 - size} bytes left over")
    return entity


def encode_record(record: rec.CoordinatorRecord) -> tuple[bytes, bytes | None]:
    """The (key, value) bytes of `record`; value None for a tombstone."""
    key = record.key
    spec = _TYPES[key.TYPE]
    key_entity = spec.key_entity(
        **{f.name: getattr(key, f.name) for f in dataclasses.fields(spec.key_entity)}
    )
    key_bytes = _framed(key.TYPE, key_entity)
    if record.value is None:
        return key_bytes, None
    return key_bytes, _framed(_VALUE_VERSION, _value_out(record.value))


def decode_record(key: bytes, value: bytes | None) -> rec.CoordinatorRecord:
    """The record whose bytes are `key` and `value`. Raises `UnknownRecordType` for a
    type not listed here, `RecordDecodeError` (or kio's `SerialError`) for bad bytes."""
    if len(key) < 2:
        raise RecordDecodeError(f"record key of {len(key)} bytes has no record type")
    record_type, _ = read_int16(key, 0)
    spec = _TYPES.get(record_type)
    if spec is None:
        raise UnknownRecordType(f"record type {record_type} is not a group coordinator record")
    what = f"{spec.key_domain.__name__}"
    key_entity = _unframed(key, spec.key_entity, what)
    domain_key = spec.key_domain(
        **{f.name: getattr(key_entity, f.name) for f in dataclasses.fields(spec.key_entity)}
    )
    if value is None:
        return rec.CoordinatorRecord(key=domain_key, value=None)
    if len(value) < 2:
        raise RecordDecodeError(f"{what} value of {len(value)} bytes has no version")
    version, _ = read_int16(value, 0)
    if version != _VALUE_VERSION:
        raise RecordDecodeError(f"{what} value version {version} is not {_VALUE_VERSION}")
    value_entity = _unframed(value, spec.value_entity, f"{what} value")
    return rec.CoordinatorRecord(key=domain_key, value=spec.value_in(value_entity))
