"""The records of `__share_group_state`: kio entities, `CODEC`, and their builders.

The record model is `shoal.coordinator.records`' (a key entity and a value entity,
or no value: a tombstone; framed by `RecordCodec`). Two record types mirror Apache
Kafka's schemas (`share-coordinator/src/main/resources/common/message/
Share{Snapshot,Update}{Key,Value}.json`) field for field and in the same order:

- type 0 `ShareSnapshotKey` -> `ShareSnapshotValue`: the whole state of one
  share-partition (SnapshotEpoch, StateEpoch, LeaderEpoch, StartOffset,
  DeliveryCompleteCount tagged 0 default -1, CreateTimestamp, WriteTimestamp,
  StateBatches).
- type 1 `ShareUpdateKey` -> `ShareUpdateValue`: a delta on top of the latest
  snapshot (SnapshotEpoch, LeaderEpoch, StartOffset with -1 = unchanged,
  DeliveryCompleteCount tagged 0 with -1 = unchanged, the changed StateBatches).

Keys are not flexible (a record type then GroupId, TopicId, Partition); values are
flexible version 0. Names are the schema names in snake case. StateBatch carries one
Shoal extension, the tagged `dlq_reason` (tag `SHOAL_TAG_DLQ_REASON`, written only on
ARCHIVING batches; see `state`): without it the bytes are Kafka's.

The builders (`snapshot_record`, `update_record`, `tombstone`, `snapshot_key`,
`update_key`, `state_batch_entries`, `state_batches_of`) translate between the
records and the words of `state` (`SharePartitionKey`, `StateBatch`); the shard
writes records only through them. Invariant: state batches inside a value are sorted and disjoint
(the shard writes them merged).

No `from __future__ import annotations`: kio reads the field types at run time, as
in its generated code.
"""

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import ClassVar

from shoal.coordinator import records
from shoal.share_coordinator.state import DLQ_REASON_UNKNOWN, SharePartitionKey, StateBatch

# ---- shared nested struct -------------------------------------------------------------

SHOAL_TAG_DLQ_REASON = 30_000
"""Tag of StateBatch's `dlq_reason`, a Shoal extension; far above any tag Kafka uses
(Kafka reads past tags it does not know, so its tools still read the records)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StateBatchEntry(records.NestedStruct):
    """`StateBatch {FirstOffset, LastOffset, DeliveryState, DeliveryCount}` of both
    values (Kafka generates one class per value; the bytes are the same)."""

    first_offset: int = field(metadata={"kafka_type": "int64"})
    last_offset: int = field(metadata={"kafka_type": "int64"})
    delivery_state: int = field(metadata={"kafka_type": "int8"})
    """0 AVAILABLE, 2 ACKNOWLEDGED, 3 ARCHIVING, 4 ARCHIVED."""
    delivery_count: int = field(metadata={"kafka_type": "int16"})
    dlq_reason: int = field(
        metadata={"kafka_type": "int8", "tag": SHOAL_TAG_DLQ_REASON}, default=DLQ_REASON_UNKNOWN
    )
    """Shoal's extension: why an ARCHIVING batch awaits its dead-letter copy
    (`state.DLQ_REASON_*`); written only when not 0, so other batches' bytes are
    Kafka's, and a batch written without it reads as 0."""


# ---- type 0: ShareSnapshot ------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareSnapshotValue(records.ValueStruct):
    snapshot_epoch: int = field(metadata={"kafka_type": "int32"})
    state_epoch: int = field(metadata={"kafka_type": "int32"})
    leader_epoch: int = field(metadata={"kafka_type": "int32"})
    start_offset: int = field(metadata={"kafka_type": "int64"})
    delivery_complete_count: int = field(metadata={"kafka_type": "int32", "tag": 0}, default=-1)
    """Offsets at or above the start offset whose delivery is complete (KIP-1226)."""
    create_timestamp: int = field(metadata={"kafka_type": "int64"})
    """When an RPC last wrote a snapshot of this key (epoch ms)."""
    write_timestamp: int = field(metadata={"kafka_type": "int64"})
    """When any snapshot of this key was last written, cold snapshots included."""
    state_batches: tuple[StateBatchEntry, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareSnapshotKey(records.KeyStruct):
    RECORD_TYPE: ClassVar[int] = 0
    VALUE: ClassVar[type[ShareSnapshotValue]] = ShareSnapshotValue
    group_id: str = field(metadata={"kafka_type": "string"})
    topic_id: uuid.UUID = field(metadata={"kafka_type": "uuid"})
    partition: int = field(metadata={"kafka_type": "int32"})


# ---- type 1: ShareUpdate --------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareUpdateValue(records.ValueStruct):
    snapshot_epoch: int = field(metadata={"kafka_type": "int32"})
    """The snapshot this update applies on top of."""
    leader_epoch: int = field(metadata={"kafka_type": "int32"})
    start_offset: int = field(metadata={"kafka_type": "int64"})
    """-1: the start offset is not changing."""
    delivery_complete_count: int = field(metadata={"kafka_type": "int32", "tag": 0}, default=-1)
    """-1: not changing."""
    state_batches: tuple[StateBatchEntry, ...]
    """The changed ranges only."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareUpdateKey(records.KeyStruct):
    RECORD_TYPE: ClassVar[int] = 1
    VALUE: ClassVar[type[ShareUpdateValue]] = ShareUpdateValue
    group_id: str = field(metadata={"kafka_type": "string"})
    topic_id: uuid.UUID = field(metadata={"kafka_type": "uuid"})
    partition: int = field(metadata={"kafka_type": "int32"})


# ---- the record and its codec -----------------------------------------------------------

ShareRecordKey = ShareSnapshotKey | ShareUpdateKey
ShareRecordValue = ShareSnapshotValue | ShareUpdateValue

ShareCoordinatorRecord = records.CoordinatorRecord[ShareRecordKey, ShareRecordValue]
"""A share coordinator record: `ShareCoordinatorRecord(key=..., value=... or None)`."""

CODEC: records.RecordCodec[ShareRecordKey, ShareRecordValue] = records.RecordCodec(
    topic="__share_group_state", keys=(ShareSnapshotKey, ShareUpdateKey)
)
"""Bytes of `__share_group_state` records (types 0 and 1), Kafka's exactly."""


# ---- builders ---------------------------------------------------------------------------
# They build `records.CoordinatorRecord` itself: called through the subscripted alias
# `ShareCoordinatorRecord`, typing tries to set `__orig_class__` on the frozen
# instance and swallows the error it raises, on every state write.


def snapshot_key(key: SharePartitionKey) -> ShareSnapshotKey:
    return ShareSnapshotKey(group_id=key.group_id, topic_id=key.topic_id, partition=key.partition)


def state_batch_entries(batches: Iterable[StateBatch]) -> tuple[StateBatchEntry, ...]:
    return tuple(
        StateBatchEntry(
            first_offset=b.first_offset,
            last_offset=b.last_offset,
            delivery_state=b.delivery_state,
            delivery_count=b.delivery_count,
            dlq_reason=b.dlq_reason,
        )
        for b in batches
    )


def state_batches_of(entries: Iterable[StateBatchEntry]) -> tuple[StateBatch, ...]:
    return tuple(
        StateBatch(e.first_offset, e.last_offset, e.delivery_state, e.delivery_count, e.dlq_reason)
        for e in entries
    )


def snapshot_record(
    key: SharePartitionKey,
    *,
    snapshot_epoch: int,
    state_epoch: int,
    leader_epoch: int,
    start_offset: int,
    delivery_complete_count: int,
    state_batches: Iterable[StateBatch],
    create_timestamp_ms: int,
    write_timestamp_ms: int,
) -> ShareCoordinatorRecord:
    """A ShareSnapshot: the whole state of `key`."""
    value = ShareSnapshotValue(
        snapshot_epoch=snapshot_epoch,
        state_epoch=state_epoch,
        leader_epoch=leader_epoch,
        start_offset=start_offset,
        delivery_complete_count=delivery_complete_count,
        create_timestamp=create_timestamp_ms,
        write_timestamp=write_timestamp_ms,
        state_batches=state_batch_entries(state_batches),
    )
    return records.CoordinatorRecord(key=snapshot_key(key), value=value)


def update_key(key: SharePartitionKey) -> ShareUpdateKey:
    return ShareUpdateKey(group_id=key.group_id, topic_id=key.topic_id, partition=key.partition)


def update_record(
    key: SharePartitionKey,
    *,
    snapshot_epoch: int,
    leader_epoch: int,
    start_offset: int,
    delivery_complete_count: int,
    state_batches: Iterable[StateBatch],
    record_key: ShareUpdateKey | None = None,
) -> ShareCoordinatorRecord:
    """A ShareUpdate: a delta on top of snapshot `snapshot_epoch` of `key`.
    `record_key`, if given, is `update_key(key)` built before: the shard writes the
    same key entity again, whose bytes `CODEC` then finds by identity."""
    if record_key is None:
        record_key = update_key(key)
    value = ShareUpdateValue(
        snapshot_epoch=snapshot_epoch,
        leader_epoch=leader_epoch,
        start_offset=start_offset,
        delivery_complete_count=delivery_complete_count,
        state_batches=state_batch_entries(state_batches) if state_batches else (),
    )
    return records.CoordinatorRecord(key=record_key, value=value)


def tombstone(key: SharePartitionKey) -> ShareCoordinatorRecord:
    """The one tombstone that deletes `key` (on its ShareSnapshot key, as Kafka)."""
    return records.CoordinatorRecord(key=snapshot_key(key), value=None)
