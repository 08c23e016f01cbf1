"""The bytes of `__share_group_state` records: every record round-trips, a snapshot and
an update are pinned byte for byte to Kafka's layout, and bad bytes are refused."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shoal.coordinator.records import RecordDecodeError, UnknownRecordType
from shoal.share_coordinator.records import (
    CODEC,
    SHOAL_TAG_DLQ_REASON,
    ShareCoordinatorRecord,
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareUpdateKey,
    ShareUpdateValue,
    StateBatchEntry,
)
from shoal.share_coordinator.state import DLQ_REASON_REJECTED, DLQ_REASON_UNKNOWN

encode, decode = CODEC.encode, CODEC.decode

TOPIC = uuid.UUID("0102030405060708090a0b0c0d0e0f10")
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def entry(first: int, last: int, state: int, count: int) -> StateBatchEntry:
    return StateBatchEntry(
        first_offset=first,
        last_offset=last,
        delivery_state=state,
        delivery_count=count,
    )


def snapshot_key(
    group: str = "g", topic: uuid.UUID = TOPIC, partition: int = 3
) -> ShareSnapshotKey:
    return ShareSnapshotKey(group_id=group, topic_id=topic, partition=partition)


def update_key(group: str = "g", topic: uuid.UUID = TOPIC, partition: int = 3) -> ShareUpdateKey:
    return ShareUpdateKey(group_id=group, topic_id=topic, partition=partition)


SMALL_SNAPSHOT = ShareCoordinatorRecord(
    key=snapshot_key(),
    value=ShareSnapshotValue(
        snapshot_epoch=1,
        state_epoch=2,
        leader_epoch=3,
        start_offset=10,
        delivery_complete_count=5,
        create_timestamp=0x10,
        write_timestamp=0x20,
        state_batches=(entry(10, 14, 2, 1),),
    ),
)

SMALL_UPDATE = ShareCoordinatorRecord(
    key=update_key(),
    value=ShareUpdateValue(
        snapshot_epoch=1,
        leader_epoch=3,
        start_offset=-1,
        state_batches=(),
    ),
)

SAMPLES = [
    SMALL_SNAPSHOT,
    SMALL_UPDATE,
    ShareCoordinatorRecord(key=snapshot_key(), value=None),
    ShareCoordinatorRecord(key=update_key("grüppe-✓", uuid.UUID(int=2**128 - 1), 0), value=None),
    ShareCoordinatorRecord(
        key=snapshot_key("", uuid.UUID(int=1), INT32_MAX),
        value=ShareSnapshotValue(
            snapshot_epoch=INT32_MAX,
            state_epoch=INT32_MIN,
            leader_epoch=-1,
            start_offset=INT64_MAX,
            create_timestamp=INT64_MIN,
            write_timestamp=-1,
            state_batches=(entry(0, 0, 0, 0), entry(1, INT64_MAX, 4, 2**15 - 1)),
        ),
    ),
    ShareCoordinatorRecord(
        key=update_key(),
        value=ShareUpdateValue(
            snapshot_epoch=0,
            leader_epoch=7,
            start_offset=12,
            delivery_complete_count=INT32_MAX,
            state_batches=(entry(12, 20, 2, 3), entry(30, 31, 0, 1)),
        ),
    ),
]


@pytest.mark.parametrize("record", SAMPLES, ids=lambda r: f"{type(r.key).__name__}-{r.value}")
def test_every_sample_round_trips(record: ShareCoordinatorRecord) -> None:
    key, value = encode(record)
    assert (value is None) == record.is_tombstone
    assert decode(key, value) == record


def test_small_snapshot_is_kafkas_bytes() -> None:
    """Key: int16 type 0, then GroupId (int16 length), TopicId (16 bytes), Partition
    (int32), not flexible. Value: int16 version 0, then SnapshotEpoch, StateEpoch,
    LeaderEpoch (int32), StartOffset, CreateTimestamp, WriteTimestamp (int64), the
    StateBatches compact array (length + 1 as an unsigned varint; each batch
    FirstOffset, LastOffset int64, DeliveryState int8, DeliveryCount int16, no tagged
    fields), then the tagged fields: one, tag 0 (DeliveryCompleteCount), 4 bytes."""
    expected_key = bytes.fromhex(
        "0000"  # record type 0: ShareSnapshot
        "0001"
        "67"  # GroupId "g"
        "0102030405060708090a0b0c0d0e0f10"  # TopicId
        "00000003"  # Partition
    )
    expected_value = bytes.fromhex(
        "0000"  # value version 0
        "00000001"  # SnapshotEpoch
        "00000002"  # StateEpoch
        "00000003"  # LeaderEpoch
        "000000000000000a"  # StartOffset 10
        "0000000000000010"  # CreateTimestamp
        "0000000000000020"  # WriteTimestamp
        "02"  # StateBatches: 1 entry
        "000000000000000a"
        "000000000000000e"
        "02"
        "0001"
        "00"  # 10-14 ACKNOWLEDGED x1
        "01"
        "00"
        "04"
        "00000005"  # tagged fields: DeliveryCompleteCount 5
    )
    assert encode(SMALL_SNAPSHOT) == (expected_key, expected_value)
    assert decode(expected_key, expected_value) == SMALL_SNAPSHOT


def test_small_update_is_kafkas_bytes() -> None:
    """DeliveryCompleteCount at its default (-1) is left out of the tagged fields;
    type 1 keys carry the same struct as type 0."""
    expected_key = bytes.fromhex("00010001670102030405060708090a0b0c0d0e0f1000000003")
    expected_value = bytes.fromhex(
        "0000"  # value version 0
        "00000001"  # SnapshotEpoch
        "00000003"  # LeaderEpoch
        "ffffffffffffffff"  # StartOffset -1: unchanged
        "01"  # StateBatches: empty
        "00"  # no tagged fields
    )
    assert encode(SMALL_UPDATE) == (expected_key, expected_value)


def test_an_archiving_batch_carries_its_dlq_reason_as_shoals_tagged_field() -> None:
    """The one Shoal extension of these records: an ARCHIVING (3) batch's DLQ reason,
    tagged 30000 (an unsigned varint, 3 bytes) in the StateBatch's tagged fields; a
    batch without it (old state, other states) reads as reason 0."""
    old_bytes = bytes.fromhex(
        "0000"  # value version 0
        "00000001"  # SnapshotEpoch
        "00000003"  # LeaderEpoch
        "ffffffffffffffff"  # StartOffset -1: unchanged
        "02"  # StateBatches: 1 entry
        "0000000000000007"
        "0000000000000007"
        "03"
        "0005"  # 7-7 ARCHIVING x5
        "00"  # no tagged fields in the batch
        "00"  # none in the value
    )
    key = bytes.fromhex("00010001670102030405060708090a0b0c0d0e0f1000000003")
    old = decode(key, old_bytes)
    assert old.value is not None
    (batch,) = old.value.state_batches
    assert (batch.delivery_state, batch.dlq_reason) == (3, DLQ_REASON_UNKNOWN)
    assert SHOAL_TAG_DLQ_REASON == 30_000
    rejected = replace(
        old,
        value=replace(old.value, state_batches=(replace(batch, dlq_reason=DLQ_REASON_REJECTED),)),
    )
    new_bytes = old_bytes[:-2] + bytes.fromhex(
        "01"  # one tagged field in the batch
        "b0ea01"  # tag 30000
        "01"  # 1 byte
        "01"  # rejected
        "00"  # none in the value
    )
    assert encode(rejected) == (key, new_bytes)
    assert decode(key, new_bytes) == rejected


_entries = st.lists(
    st.builds(
        entry,
        st.integers(0, INT64_MAX),
        st.integers(0, INT64_MAX),
        st.sampled_from([0, 2, 4]),
        st.integers(0, 2**15 - 1),
    ),
    max_size=4,
)
_keys = st.tuples(
    st.text(max_size=20), st.uuids().filter(lambda u: u.int != 0), st.integers(0, INT32_MAX)
)
_int32 = st.integers(INT32_MIN, INT32_MAX)
_int64 = st.integers(INT64_MIN, INT64_MAX)


@st.composite
def _records(draw: st.DrawFn) -> ShareCoordinatorRecord:
    group, topic, partition = draw(_keys)
    if draw(st.booleans()):
        key = snapshot_key(group, topic, partition)
        value = ShareSnapshotValue(
            snapshot_epoch=draw(_int32),
            state_epoch=draw(_int32),
            leader_epoch=draw(_int32),
            start_offset=draw(_int64),
            delivery_complete_count=draw(_int32),
            create_timestamp=draw(_int64),
            write_timestamp=draw(_int64),
            state_batches=tuple(draw(_entries)),
        )
        return ShareCoordinatorRecord(key=key, value=None if draw(st.booleans()) else value)
    update = ShareUpdateValue(
        snapshot_epoch=draw(_int32),
        leader_epoch=draw(_int32),
        start_offset=draw(_int64),
        delivery_complete_count=draw(_int32),
        state_batches=tuple(draw(_entries)),
    )
    key_u = update_key(group, topic, partition)
    return ShareCoordinatorRecord(key=key_u, value=None if draw(st.booleans()) else update)


@given(_records())
def test_any_record_round_trips(record: ShareCoordinatorRecord) -> None:
    assert decode(*encode(record)) == record


def test_unknown_record_type_is_skippable() -> None:
    """A key of another type (a newer Kafka's, another coordinator's) raises the error
    the log loader skips."""
    key, value = encode(SMALL_SNAPSHOT)
    with pytest.raises(UnknownRecordType) as raised:
        decode(b"\x00\x02" + key[2:], value)
    assert raised.value.record_type == 2


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda k, v: (k[:1], v), "no record type"),
        (lambda k, v: (k[:-1], v), "malformed ShareSnapshotKey"),
        (lambda k, v: (k + b"\x00", v), "left over"),
        (lambda k, v: (k, b"\x00\x01" + v[2:]), "value version 1"),
        (lambda k, v: (k, v[:-3]), "malformed ShareSnapshotValue"),
        (lambda k, v: (k, v + b"\x00"), "left over"),
        (lambda k, v: (k[:5] + bytes(16) + k[21:], v), "null topic id"),
    ],
)
def test_bad_bytes_are_refused(mangle: object, message: str) -> None:
    key, value = encode(SMALL_SNAPSHOT)
    assert value is not None
    bad_key, bad_value = mangle(key, value)  # type: ignore[operator]
    with pytest.raises(RecordDecodeError, match=message):
        decode(bad_key, bad_value)
