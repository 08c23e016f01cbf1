"""The group coordinator's record bytes: every record type round-trips, a few records
are pinned byte for byte to Kafka's layout, and bad bytes are refused."""

from __future__ import annotations

import uuid

import pytest

from shoal.coordinator.records import RecordDecodeError, UnknownRecordType
from shoal.group import records as r

encode_record, decode_record = r.CODEC.encode, r.CODEC.decode

T1 = uuid.UUID("00000000-0000-0000-0000-000000000001")
T2 = uuid.UUID("ffffffff-ffff-ffff-ffff-fffffffffffe")
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

SAMPLES: list[r.CoordinatorRecord] = [
    r.CoordinatorRecord(
        key=r.ConsumerGroupMetadataKey(group_id="consumers"),
        value=r.ConsumerGroupMetadataValue(epoch=4, metadata_hash=0),
    ),
    r.CoordinatorRecord(
        key=r.ConsumerGroupMetadataKey(group_id="consumers"),
        value=r.ConsumerGroupMetadataValue(epoch=INT32_MAX, metadata_hash=INT64_MIN),
    ),
    r.CoordinatorRecord(
        key=r.ShareGroupMemberMetadataKey(group_id="g", member_id="m-1"),
        value=r.ShareGroupMemberMetadataValue(
            rack_id=None, client_id="rdkafka", client_host="/127.0.0.1", subscribed_topic_names=()
        ),
    ),
    r.CoordinatorRecord(
        key=r.ShareGroupMemberMetadataKey(group_id="grüppe", member_id="ünïcode-✓"),
        value=r.ShareGroupMemberMetadataValue(
            rack_id="",
            client_id="",
            client_host="/::1",
            subscribed_topic_names=("a", "b" * 249, "tópico"),
        ),
    ),
    r.CoordinatorRecord(
        key=r.ShareGroupMetadataKey(group_id="g"),
        value=r.ShareGroupMetadataValue(epoch=INT32_MIN, metadata_hash=INT64_MAX),
    ),
    r.CoordinatorRecord(
        key=r.ShareGroupTargetAssignmentMetadataKey(group_id="g"),
        value=r.ShareGroupTargetAssignmentMetadataValue(assignment_epoch=17),
    ),
    r.CoordinatorRecord(
        key=r.ShareGroupTargetAssignmentMemberKey(group_id="g", member_id="m"),
        value=r.ShareGroupTargetAssignmentMemberValue(
            topic_partitions=(
                r.TopicPartitions(topic_id=T1, partitions=(0, 1, INT32_MAX)),
                r.TopicPartitions(topic_id=T2, partitions=()),
            )
        ),
    ),
    r.CoordinatorRecord(
        key=r.ShareGroupTargetAssignmentMemberKey(group_id="g", member_id="m"),
        value=r.ShareGroupTargetAssignmentMemberValue(topic_partitions=()),
    ),
    r.CoordinatorRecord(
        key=r.ShareGroupCurrentMemberAssignmentKey(group_id="g", member_id="m"),
        value=r.ShareGroupCurrentMemberAssignmentValue(
            member_epoch=3,
            previous_member_epoch=-1,
            state=r.MEMBER_STATE_STABLE,
            assigned_partitions=(r.TopicPartitions(topic_id=T1, partitions=tuple(range(50))),),
        ),
    ),
    r.CoordinatorRecord(
        key=r.ShareGroupStatePartitionMetadataKey(group_id="g"),
        value=r.ShareGroupStatePartitionMetadataValue(
            initializing_topics=(
                r.TopicPartitionsInfo(topic_id=T2, topic_name="new", partitions=(3,)),
            ),
            initialized_topics=(
                r.TopicPartitionsInfo(topic_id=T1, topic_name="orders", partitions=(0, 1, 2)),
            ),
            deleting_topics=(r.TopicInfo(topic_id=T2, topic_name="gone"),),
        ),
    ),
    r.CoordinatorRecord(
        key=r.ShareGroupStatePartitionMetadataKey(group_id="g"),
        value=r.ShareGroupStatePartitionMetadataValue(
            initializing_topics=(), initialized_topics=(), deleting_topics=()
        ),
    ),
]

TOMBSTONES = [
    r.CoordinatorRecord(key=r.ShareGroupMemberMetadataKey(group_id="g", member_id="m"), value=None),
    r.CoordinatorRecord(key=r.ShareGroupMetadataKey(group_id="g"), value=None),
    r.CoordinatorRecord(key=r.ShareGroupTargetAssignmentMetadataKey(group_id="g"), value=None),
    r.CoordinatorRecord(
        key=r.ShareGroupTargetAssignmentMemberKey(group_id="g", member_id="m"), value=None
    ),
    r.CoordinatorRecord(
        key=r.ShareGroupCurrentMemberAssignmentKey(group_id="g", member_id="m"), value=None
    ),
    r.CoordinatorRecord(key=r.ShareGroupStatePartitionMetadataKey(group_id="g"), value=None),
    r.CoordinatorRecord(key=r.ConsumerGroupMetadataKey(group_id="g"), value=None),
]


@pytest.mark.parametrize("record", SAMPLES + TOMBSTONES, ids=lambda rec: type(rec.key).__name__)
def test_every_record_type_round_trips(record: r.CoordinatorRecord) -> None:
    key, value = encode_record(record)
    assert (value is None) == record.is_tombstone
    assert int.from_bytes(key[:2], "big") == record.record_type
    if value is not None:
        assert value[:2] == b"\x00\x00"  # value version 0
    assert decode_record(key, value) == record


def test_the_samples_cover_every_type() -> None:
    assert {rec.record_type for rec in SAMPLES} == {3, 10, 11, 12, 13, 14, 15}
    assert {rec.record_type for rec in TOMBSTONES} == {3, 10, 11, 12, 13, 14, 15}


# Bytes written out by hand from Kafka's schemas: keys are not flexible (int16-length
# strings), values are (compact strings and arrays, length + 1, and a tagged-field
# count after every struct).
PINNED = [
    (
        r.CoordinatorRecord(
            key=r.ShareGroupMetadataKey(group_id="g"),
            value=r.ShareGroupMetadataValue(epoch=5, metadata_hash=7),
        ),
        "000b" + "0001" + "67",
        "0000" + "00000005" + "0000000000000007" + "00",
    ),
    (
        r.CoordinatorRecord(
            key=r.ShareGroupMemberMetadataKey(group_id="g", member_id="m"),
            value=r.ShareGroupMemberMetadataValue(
                rack_id=None, client_id="c", client_host="h", subscribed_topic_names=("t",)
            ),
        ),
        "000a" + "0001" + "67" + "0001" + "6d",
        "0000" + "00" + "0263" + "0268" + "02" + "0274" + "00",
    ),
    (
        r.CoordinatorRecord(
            key=r.ShareGroupTargetAssignmentMemberKey(group_id="g", member_id="m"),
            value=r.ShareGroupTargetAssignmentMemberValue(
                topic_partitions=(r.TopicPartitions(topic_id=T1, partitions=(2,)),)
            ),
        ),
        "000d" + "0001" + "67" + "0001" + "6d",
        "0000" + "02" + T1.hex + "02" + "00000002" + "00" + "00",
    ),
    (
        # MetadataHash is tagged (tag 0) in ConsumerGroupMetadataValue: written only
        # when not 0, as count 1, tag 0, size 8, then the int64.
        r.CoordinatorRecord(
            key=r.ConsumerGroupMetadataKey(group_id="g"),
            value=r.ConsumerGroupMetadataValue(epoch=1, metadata_hash=9),
        ),
        "0003" + "0001" + "67",
        "0000" + "00000001" + "01" + "00" + "08" + "0000000000000009",
    ),
    (
        r.CoordinatorRecord(
            key=r.ConsumerGroupMetadataKey(group_id="g"),
            value=r.ConsumerGroupMetadataValue(epoch=1, metadata_hash=0),
        ),
        "0003" + "0001" + "67",
        "0000" + "00000001" + "00",
    ),
    (
        # ClassicMemberMetadata is a tagged (tag 0) nullable struct: absent when null;
        # else count 1, tag 0, the struct's size, then the struct (SessionTimeoutMs,
        # SupportedProtocols [Name, Metadata], each struct with its tag count).
        r.CoordinatorRecord(
            key=r.ConsumerGroupMemberMetadataKey(group_id="g", member_id="m"),
            value=r.ConsumerGroupMemberMetadataValue(
                instance_id=None,
                rack_id=None,
                client_id="c",
                client_host="h",
                subscribed_topic_names=("t",),
                subscribed_topic_regex=None,
                rebalance_timeout_ms=5,
                server_assignor=None,
                classic_member_metadata=r.ClassicMemberMetadata(
                    session_timeout_ms=10,
                    supported_protocols=(r.ClassicProtocol(name="range", metadata=b"ab"),),
                ),
            ),
        ),
        "0005" + "0001" + "67" + "0001" + "6d",
        "0000"
        + "00"
        + "00"
        + "0263"
        + "0268"
        + "02"
        + "0274"
        + "00"
        + "00000005"
        + "00"
        + "01"
        + "00"
        + "10"
        + "0000000a"
        + "02"
        + "0672616e6765"
        + "036162"
        + "00"
        + "00",
    ),
    (
        r.CoordinatorRecord(key=r.ShareGroupStatePartitionMetadataKey(group_id="ab"), value=None),
        "000f" + "0002" + "6162",
        None,
    ),
]


@pytest.mark.parametrize(("record", "key_hex", "value_hex"), PINNED)
def test_pinned_bytes(record: r.CoordinatorRecord, key_hex: str, value_hex: str | None) -> None:
    key, value = encode_record(record)
    assert key.hex() == key_hex
    assert (value.hex() if value is not None else None) == value_hex
    expected_value = bytes.fromhex(value_hex) if value_hex is not None else None
    assert decode_record(bytes.fromhex(key_hex), expected_value) == record


def test_unknown_record_type_is_its_own_error() -> None:
    # Type 0 is the legacy offset commit, 4 and 9 consumer-group records not written.
    for record_type in (0, 4, 9, 99):
        with pytest.raises(UnknownRecordType, match=f"record type {record_type}"):
            decode_record(record_type.to_bytes(2, "big") + b"\x00\x01g", b"\x00\x00")


def test_unknown_value_version_is_refused() -> None:
    key, value = encode_record(SAMPLES[4])
    assert value is not None
    with pytest.raises(RecordDecodeError, match="value version 1"):
        decode_record(key, b"\x00\x01" + value[2:])


def test_leftover_bytes_are_refused() -> None:
    key, value = encode_record(SAMPLES[4])
    with pytest.raises(RecordDecodeError, match="left over"):
        decode_record(key + b"\x00", value)
    assert value is not None
    with pytest.raises(RecordDecodeError, match="left over"):
        decode_record(key, value + b"\x00")


def test_truncated_bytes_are_refused() -> None:
    key, value = encode_record(SAMPLES[6])
    assert value is not None
    with pytest.raises(RecordDecodeError, match="no record type"):
        decode_record(b"\x00", value)
    with pytest.raises(RecordDecodeError, match="no version"):
        decode_record(key, b"\x00")
    with pytest.raises(RecordDecodeError, match="malformed ShareGroupTargetAssignmentMemberKey"):
        decode_record(key[:-1], value)
    with pytest.raises(RecordDecodeError, match="malformed ShareGroupTargetAssignmentMemberValue"):
        decode_record(key, value[:-3])


def test_undeclared_tagged_field_is_refused() -> None:
    # Kafka 4.3 adds AssignmentTimestamp (tag 0) to type 12; 4.2's schema has no tags.
    record = r.CoordinatorRecord(
        key=r.ShareGroupTargetAssignmentMetadataKey(group_id="g"),
        value=r.ShareGroupTargetAssignmentMetadataValue(assignment_epoch=3),
    )
    key, value = encode_record(record)
    assert value is not None and value.hex() == "0000" + "00000003" + "00"
    with_tag = value[:-1] + bytes([1, 0, 8]) + (1234).to_bytes(8, "big")
    with pytest.raises(RecordDecodeError, match="unknown tagged field"):
        decode_record(key, with_tag)


def test_regular_expression_record_is_kafkas() -> None:
    """Type 16 as a Kafka 4.2.2 broker wrote it (group rx2-g, regex rx2-.*, topics
    rx2-a and rx2-b, version 1507), decoded and encoded back to the same bytes."""
    key = bytes.fromhex("001000057278322d6700067278322d2e2a")
    value = bytes.fromhex("000003067278322d61067278322d6200000000000005e3000001a224515d6d00")
    record = decode_record(key, value)
    assert record == r.CoordinatorRecord(
        key=r.ConsumerGroupRegularExpressionKey(group_id="rx2-g", regular_expression="rx2-.*"),
        value=r.ConsumerGroupRegularExpressionValue(
            topics=("rx2-a", "rx2-b"), version=1507, timestamp=0x1A224515D6D
        ),
    )
    assert encode_record(record) == (key, value)
