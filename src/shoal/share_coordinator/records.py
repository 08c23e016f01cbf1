"""The records of `__share_group_state`, as kio entity dataclasses.

Two record types, each a key and a value (or no value: a tombstone), mirroring
Apache Kafka's schemas (`share-coordinator/src/main/resources/common/message/
Share{Snapshot,Update}{Key,Value}.json`) field for field and in the same order, so
`kio.serial` writes exactly Kafka's bytes (see `codec`):

- type 0 `ShareSnapshotKey` -> `ShareSnapshotValue`: the whole state of one
  share-partition (SnapshotEpoch, StateEpoch, LeaderEpoch, StartOffset,
  DeliveryCompleteCount tagged 0 default -1, CreateTimestamp, WriteTimestamp,
  StateBatches).
- type 1 `ShareUpdateKey` -> `ShareUpdateValue`: a delta on top of the latest
  snapshot (SnapshotEpoch, LeaderEpoch, StartOffset with -1 = unchanged,
  DeliveryCompleteCount tagged 0 with -1 = unchanged, the changed StateBatches).

Keys are not flexible (a record type then GroupId, TopicId, Partition); values are
flexible version 0. Names are the schema names in snake case.

Invariants: a `ShareCoordinatorRecord` pairs a key with the value of its own type;
state batches inside a value are sorted and disjoint (the shard writes them merged).
This module defines no `from __future__ import annotations`: kio reads the field
types at runtime, as in its generated code.
"""

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from kio.static.constants import EntityType
from kio.static.primitive import i8, i16, i32, i64

SHARE_SNAPSHOT_RECORD_TYPE = 0
SHARE_UPDATE_RECORD_TYPE = 1
VALUE_VERSION = 0
"""The only value version of both record types."""


# ---- shared nested struct -------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class StateBatchEntry:
    """`StateBatch {FirstOffset, LastOffset, DeliveryState, DeliveryCount}` of both
    values (Kafka generates one class per value; the bytes are the same)."""

    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    first_offset: i64 = field(metadata={"kafka_type": "int64"})
    last_offset: i64 = field(metadata={"kafka_type": "int64"})
    delivery_state: i8 = field(metadata={"kafka_type": "int8"})
    """0 AVAILABLE, 2 ACKNOWLEDGED, 4 ARCHIVED."""
    delivery_count: i16 = field(metadata={"kafka_type": "int16"})


# ---- type 0: ShareSnapshot ------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareSnapshotKey:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    RECORD_TYPE: ClassVar[int] = SHARE_SNAPSHOT_RECORD_TYPE
    group_id: str = field(metadata={"kafka_type": "string"})
    topic_id: uuid.UUID = field(metadata={"kafka_type": "uuid"})
    partition: i32 = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareSnapshotValue:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(VALUE_VERSION)
    __flexible__: ClassVar[bool] = True
    snapshot_epoch: i32 = field(metadata={"kafka_type": "int32"})
    state_epoch: i32 = field(metadata={"kafka_type": "int32"})
    leader_epoch: i32 = field(metadata={"kafka_type": "int32"})
    start_offset: i64 = field(metadata={"kafka_type": "int64"})
    delivery_complete_count: i32 = field(
        metadata={"kafka_type": "int32", "tag": 0}, default=i32(-1)
    )
    """Offsets at or above the start offset whose delivery is complete (KIP-1226)."""
    create_timestamp: i64 = field(metadata={"kafka_type": "int64"})
    """When an RPC last wrote a snapshot of this key (epoch ms)."""
    write_timestamp: i64 = field(metadata={"kafka_type": "int64"})
    """When any snapshot of this key was last written, cold snapshots included."""
    state_batches: tuple[StateBatchEntry, ...]


# ---- type 1: ShareUpdate --------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareUpdateKey:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    RECORD_TYPE: ClassVar[int] = SHARE_UPDATE_RECORD_TYPE
    group_id: str = field(metadata={"kafka_type": "string"})
    topic_id: uuid.UUID = field(metadata={"kafka_type": "uuid"})
    partition: i32 = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareUpdateValue:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(VALUE_VERSION)
    __flexible__: ClassVar[bool] = True
    snapshot_epoch: i32 = field(metadata={"kafka_type": "int32"})
    """The snapshot this update applies on top of."""
    leader_epoch: i32 = field(metadata={"kafka_type": "int32"})
    start_offset: i64 = field(metadata={"kafka_type": "int64"})
    """-1: the start offset is not changing."""
    delivery_complete_count: i32 = field(
        metadata={"kafka_type": "int32", "tag": 0}, default=i32(-1)
    )
    """-1: not changing."""
    state_batches: tuple[StateBatchEntry, ...]
    """The changed ranges only."""


# ---- the record -------------------------------------------------------------------------

ShareRecordKey = ShareSnapshotKey | ShareUpdateKey
ShareRecordValue = ShareSnapshotValue | ShareUpdateValue

_VALUE_TYPE_OF_KEY: dict[type, type] = {
    ShareSnapshotKey: ShareSnapshotValue,
    ShareUpdateKey: ShareUpdateValue,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareCoordinatorRecord:
    """One record: a key and its value, or `value=None` for a tombstone."""

    key: ShareRecordKey
    value: ShareRecordValue | None

    def __post_init__(self) -> None:
        expected = _VALUE_TYPE_OF_KEY[type(self.key)]
        assert self.value is None or isinstance(self.value, expected), (
            f"{type(self.value).__name__} is not the value of {type(self.key).__name__}"
        )

    @property
    def record_type(self) -> int:
        """The int16 written before the key struct on `__share_group_state`."""
        return self.key.RECORD_TYPE

    @property
    def is_tombstone(self) -> bool:
        return self.value is None
