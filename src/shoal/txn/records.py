"""The records of `__transaction_state`: Kafka's TransactionLog key and value as kio
entities, `CODEC`, and the builders between them and `TxnMetadata`.

One record type mirrors Apache Kafka's schemas (`transaction-coordinator/src/main/
resources/common/message/TransactionLog{Key,Value}.json`) field for field and in order:

- type 0 `TransactionLogKey {TransactionalId}` (not flexible);
- `TransactionLogValue` version 1 (flexible): ProducerId, PreviousProducerId (tag 0,
  default -1), NextProducerId (tag 1, default -1), ProducerEpoch, TransactionTimeoutMs,
  TransactionStatus (int8, `TxnState`), TransactionPartitions (nullable
  `[]{Topic, PartitionIds []int32}`), TransactionLastUpdateTimestampMs,
  TransactionStartTimestampMs, ClientTransactionVersion (tag 2, default 0).

Shoal always writes value version 1 (Kafka writes 0 for transaction version 1
clients; Shoal reads only what it writes). A tombstone removes a transactional id
(written when `transactional.id.expiration.ms` has passed).

No `from __future__ import annotations`: kio reads the field types at run time.
"""

from dataclasses import dataclass, field
from itertools import groupby
from typing import ClassVar

from kio.static.primitive import i16

from shoal.coordinator import records
from shoal.txn.state import TopicPartition, TxnMetadata, TxnState


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionsSchema(records.NestedStruct):
    topic: str = field(metadata={"kafka_type": "string"})
    partition_ids: tuple[int, ...] = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionLogValue(records.ValueStruct):
    __version__: ClassVar[i16] = i16(1)
    producer_id: int = field(metadata={"kafka_type": "int64"})
    previous_producer_id: int = field(metadata={"kafka_type": "int64", "tag": 0}, default=-1)
    next_producer_id: int = field(metadata={"kafka_type": "int64", "tag": 1}, default=-1)
    producer_epoch: int = field(metadata={"kafka_type": "int16"})
    transaction_timeout_ms: int = field(metadata={"kafka_type": "int32"})
    transaction_status: int = field(metadata={"kafka_type": "int8"})
    transaction_partitions: tuple[PartitionsSchema, ...] | None
    transaction_last_update_timestamp_ms: int = field(metadata={"kafka_type": "int64"})
    transaction_start_timestamp_ms: int = field(metadata={"kafka_type": "int64"})
    client_transaction_version: int = field(metadata={"kafka_type": "int16", "tag": 2}, default=0)


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionLogKey(records.KeyStruct):
    RECORD_TYPE: ClassVar[int] = 0
    VALUE: ClassVar[type[TransactionLogValue]] = TransactionLogValue
    transactional_id: str = field(metadata={"kafka_type": "string"})


TxnRecord = records.CoordinatorRecord[TransactionLogKey, TransactionLogValue]
"""A `__transaction_state` record: `TxnRecord(key=..., value=... or None)`."""

CODEC: records.RecordCodec[TransactionLogKey, TransactionLogValue] = records.RecordCodec(
    topic="__transaction_state", keys=(TransactionLogKey,)
)
"""Bytes of `__transaction_state` records, Kafka's exactly (value version 1)."""


def metadata_record(metadata: TxnMetadata) -> TxnRecord:
    """The record that makes `metadata` the state of its transactional id."""
    ordered = sorted(metadata.partitions)
    partitions = tuple(
        PartitionsSchema(topic=topic, partition_ids=tuple(p for _t, p in group))
        for topic, group in groupby(ordered, key=lambda tp: tp[0])
    )
    value = TransactionLogValue(
        producer_id=metadata.producer_id,
        previous_producer_id=metadata.previous_producer_id,
        next_producer_id=metadata.next_producer_id,
        producer_epoch=metadata.producer_epoch,
        transaction_timeout_ms=metadata.timeout_ms,
        transaction_status=int(metadata.state),
        transaction_partitions=partitions,
        transaction_last_update_timestamp_ms=metadata.last_update_ms,
        transaction_start_timestamp_ms=metadata.start_ms,
        client_transaction_version=metadata.client_transaction_version,
    )
    return TxnRecord(key=TransactionLogKey(transactional_id=metadata.transactional_id), value=value)


def tombstone(transactional_id: str) -> TxnRecord:
    return TxnRecord(key=TransactionLogKey(transactional_id=transactional_id), value=None)


def metadata_of(record: TxnRecord) -> TxnMetadata:
    """The state a (non-tombstone) record sets."""
    value = record.value
    assert value is not None, "a tombstone has no metadata"
    partitions: set[TopicPartition] = set()
    for entry in value.transaction_partitions or ():
        partitions.update((entry.topic, p) for p in entry.partition_ids)
    return TxnMetadata(
        transactional_id=record.key.transactional_id,
        producer_id=value.producer_id,
        previous_producer_id=value.previous_producer_id,
        next_producer_id=value.next_producer_id,
        producer_epoch=value.producer_epoch,
        timeout_ms=value.transaction_timeout_ms,
        state=TxnState(value.transaction_status),
        partitions=frozenset(partitions),
        last_update_ms=value.transaction_last_update_timestamp_ms,
        start_ms=value.transaction_start_timestamp_ms,
        client_transaction_version=value.client_transaction_version,
    )
