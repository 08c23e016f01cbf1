"""Record entities mirror Kafka's `__consumer_offsets` share-group schemas, and the
settings read the broker config.

Conformance items covered: none directly (the record layout behind 46-62).
"""

from __future__ import annotations

import dataclasses
import re
import uuid

import pytest

from shoal.config import BrokerConfig
from shoal.group import ShareGroupSettings
from shoal.group import records as r
from shoal.group.settings import GroupSettings
from shoal.group.share.group import StatePartitionMetadata, TopicState


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


# Field names, in order, from group-coordinator/src/main/resources/common/message/*.json.
KAFKA_SCHEMAS: dict[type, tuple[int | None, list[str]]] = {
    r.ShareGroupMemberMetadataKey: (10, ["GroupId", "MemberId"]),
    r.ShareGroupMemberMetadataValue: (
        None,
        ["RackId", "ClientId", "ClientHost", "SubscribedTopicNames"],
    ),
    r.ShareGroupMetadataKey: (11, ["GroupId"]),
    r.ShareGroupMetadataValue: (None, ["Epoch", "MetadataHash"]),
    r.ShareGroupTargetAssignmentMetadataKey: (12, ["GroupId"]),
    r.ShareGroupTargetAssignmentMetadataValue: (None, ["AssignmentEpoch"]),
    r.ShareGroupTargetAssignmentMemberKey: (13, ["GroupId", "MemberId"]),
    r.ShareGroupTargetAssignmentMemberValue: (None, ["TopicPartitions"]),
    r.ShareGroupCurrentMemberAssignmentKey: (14, ["GroupId", "MemberId"]),
    r.ShareGroupCurrentMemberAssignmentValue: (
        None,
        ["MemberEpoch", "PreviousMemberEpoch", "State", "AssignedPartitions"],
    ),
    r.ShareGroupStatePartitionMetadataKey: (15, ["GroupId"]),
    r.ShareGroupStatePartitionMetadataValue: (
        None,
        ["InitializingTopics", "InitializedTopics", "DeletingTopics"],
    ),
    r.TopicPartitions: (None, ["TopicId", "Partitions"]),
    r.TopicPartitionsInfo: (None, ["TopicId", "TopicName", "Partitions"]),
    r.TopicInfo: (None, ["TopicId", "TopicName"]),
}


@pytest.mark.parametrize("cls", list(KAFKA_SCHEMAS), ids=lambda c: c.__name__)
def test_records_mirror_kafka_schemas(cls: type) -> None:
    record_type, fields = KAFKA_SCHEMAS[cls]
    assert [f.name for f in dataclasses.fields(cls)] == [snake(f) for f in fields]
    if record_type is not None:
        assert record_type == cls.RECORD_TYPE  # type: ignore[attr-defined]
        assert cls.VALUE.__name__ == cls.__name__.removesuffix("Key") + "Value"  # type: ignore[attr-defined]
    if cls.__name__.endswith("Value"):
        assert cls.__version__ == 0  # type: ignore[attr-defined]


def test_record_checks_its_value_type() -> None:
    key = r.ShareGroupMetadataKey(group_id="g")
    record = r.CoordinatorRecord(key=key, value=r.ShareGroupMetadataValue(epoch=1, metadata_hash=0))
    assert record.record_type == 11 and not record.is_tombstone
    assert r.CoordinatorRecord(key=key, value=None).is_tombstone
    with pytest.raises(AssertionError):
        r.CoordinatorRecord(
            key=key, value=r.ShareGroupTargetAssignmentMetadataValue(assignment_epoch=1)
        )


def test_state_partition_metadata_round_trips_sorted() -> None:
    a, b = uuid.UUID(int=2), uuid.UUID(int=1)
    metadata = StatePartitionMetadata(
        initializing={a: TopicState(name="a", partitions=frozenset({3, 1}))},
        initialized={
            b: TopicState(name="b", partitions=frozenset({0})),
            a: TopicState(name="a", partitions=frozenset({0})),
        },
        deleting={uuid.UUID(int=9): "gone"},
    )
    value = metadata.to_value()
    assert [t.topic_id for t in value.initialized_topics] == [b, a]
    assert value.initializing_topics[0].partitions == (1, 3)
    assert StatePartitionMetadata.from_value(value) == metadata


def test_settings_from_broker_config_and_group_overrides() -> None:
    broker = BrokerConfig.from_raw(
        {"group.share.max.size": "7", "group.share.initialize.retry.interval.ms": "1000"}
    )
    settings = ShareGroupSettings.from_broker_config(broker)
    assert (settings.max_size, settings.initialize_retry_interval_ms) == (7, 1000)
    assert (settings.session_timeout_ms, settings.heartbeat_interval_ms) == (45_000, 5_000)
    overrides: dict[str, dict[str, object]] = {
        "low": {"share.session.timeout.ms": 1, "share.heartbeat.interval.ms": 6_000},
        "high": {"share.session.timeout.ms": "90000", "share.heartbeat.interval.ms": None},
    }
    effective = GroupSettings(broker=settings, group_configs=overrides)
    assert effective.session_timeout_ms("low") == 45_000  # clamped to the broker minimum
    assert effective.heartbeat_interval_ms("low") == 6_000
    assert effective.session_timeout_ms("high") == 60_000  # clamped to the broker maximum
    assert effective.heartbeat_interval_ms("high") == 5_000
    by_call = GroupSettings(broker=settings, group_configs=lambda g: overrides.get(g, {}))
    assert (
        by_call.heartbeat_interval_ms("low") == 6_000 and by_call.session_timeout_ms("x") == 45_000
    )
