"""The one coordinator record model: a record pairs a key with its own value class, each
coordinator registers its record types with one `RecordCodec`, and the codec keeps the
coordinators apart and refuses what kio reads leniently (a null UUID)."""

from __future__ import annotations

import uuid

import pytest

from shoal.coordinator.records import (
    CoordinatorRecord,
    RecordCodec,
    RecordDecodeError,
    UnknownRecordType,
)
from shoal.group import records as group
from shoal.share_coordinator import records as share
from shoal.share_coordinator.state import SharePartitionKey, StateBatch

KEY = SharePartitionKey("g", uuid.UUID(int=7), 3)
GROUP_EPOCH = group.CoordinatorRecord(
    key=group.ShareGroupMetadataKey(group_id="g"),
    value=group.ShareGroupMetadataValue(epoch=1, metadata_hash=2),
)
SHARE_UPDATE = share.update_record(
    KEY,
    snapshot_epoch=0,
    leader_epoch=1,
    start_offset=-1,
    delivery_complete_count=-1,
    state_batches=(StateBatch(0, 4, 2, 1),),
)


def test_each_coordinator_registers_its_record_types() -> None:
    assert group.CODEC.record_types == {1, 2, 3, 5, 6, 7, 8, 10, 11, 12, 13, 14, 15, 16, 1000}
    assert share.CODEC.record_types == {0, 1}


def test_a_record_pairs_a_key_with_its_own_value_class() -> None:
    assert SHARE_UPDATE.record_type == 1 and not SHARE_UPDATE.is_tombstone
    assert share.tombstone(KEY).is_tombstone
    assert share.tombstone(KEY).record_type == 0
    with pytest.raises(AssertionError, match="ShareUpdateValue is not the value of"):
        CoordinatorRecord(key=share.snapshot_key(KEY), value=SHARE_UPDATE.value)


def test_a_type_is_registered_once() -> None:
    with pytest.raises(AssertionError, match="record type 0 registered twice"):
        RecordCodec(topic="t", keys=(share.ShareSnapshotKey, share.ShareSnapshotKey))


def test_a_codec_writes_only_its_own_records() -> None:
    with pytest.raises(AssertionError, match="not a __share_group_state record"):
        share.CODEC.encode(GROUP_EPOCH)  # type: ignore[arg-type]


def test_each_coordinator_skips_the_others_records() -> None:
    """The loader skips `UnknownRecordType`; it is also a `RecordDecodeError`."""
    snapshot = share.tombstone(KEY)  # type 0: Kafka's legacy offset commit, unknown here
    with pytest.raises(UnknownRecordType, match="not a __consumer_offsets record") as raised:
        group.CODEC.decode(*share.CODEC.encode(snapshot))
    assert raised.value.record_type == 0
    assert isinstance(raised.value, RecordDecodeError)
    with pytest.raises(UnknownRecordType, match="not a __share_group_state record") as raised:
        share.CODEC.decode(*group.CODEC.encode(GROUP_EPOCH))
    assert raised.value.record_type == 11


def test_a_null_uuid_is_refused_in_nested_structs_too() -> None:
    """kio writes the zero UUID and reads it back as None; no coordinator field is
    nullable there, so the codec refuses it wherever it sits."""
    record = group.CoordinatorRecord(
        key=group.ShareGroupTargetAssignmentMemberKey(group_id="g", member_id="m"),
        value=group.ShareGroupTargetAssignmentMemberValue(
            topic_partitions=(group.TopicPartitions(topic_id=uuid.UUID(int=0), partitions=(1,)),)
        ),
    )
    key, value = group.CODEC.encode(record)
    with pytest.raises(RecordDecodeError, match="has a null topic id"):
        group.CODEC.decode(key, value)


def test_builders_and_readers_of_state_batches_are_inverse() -> None:
    batches = (StateBatch(0, 4, 0, 1), StateBatch(5, 9, 4, 3))
    assert share.state_batches_of(share.state_batch_entries(batches)) == batches


def test_kept_key_bytes_are_bounded_and_equal_a_fresh_encoding() -> None:
    """`limits.COORDINATOR_KEY_BYTES_KEPT` (here 2): past the bound the oldest key's
    bytes are dropped, and every encoding equals a codec's that keeps nothing yet."""
    codec = RecordCodec(
        topic="__share_group_state",
        keys=(share.ShareSnapshotKey, share.ShareUpdateKey),
        key_bytes_kept=2,
    )
    keys = [SharePartitionKey("g", uuid.UUID(int=7), p) for p in range(4)]
    records = [share.tombstone(k) for k in keys] + [
        share.update_record(
            k,
            snapshot_epoch=0,
            leader_epoch=1,
            start_offset=-1,
            delivery_complete_count=-1,
            state_batches=(),
        )
        for k in keys
    ]
    for record in [*records, *reversed(records), *records]:
        fresh = RecordCodec(topic="t", keys=(share.ShareSnapshotKey, share.ShareUpdateKey)).encode(
            record
        )
        assert codec.encode(record) == fresh
        assert len(codec._key_bytes) <= 2 and len(codec._key_bytes_by_id) <= 2
        assert codec.decode(*fresh) == record
    assert list(codec._key_bytes) == [records[-2].key, records[-1].key]
