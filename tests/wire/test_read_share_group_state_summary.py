"""ReadShareGroupStateSummary (87) v0-v1 against a broker process.

Conformance (docs/design/conformance.md): 70 (an unknown key -> StartOffset -1,
DeliveryCompleteCount -1, epochs 0, no error); v0 has no DeliveryCompleteCount; the
summary of a share group reset with AlterShareGroupOffsets shows the new state epoch
and start offset; negative partition or leader epoch -> INVALID_REQUEST, unknown
topic -> UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from tests.support.broker import BrokerProcess
from tests.support.share_admin import alter_offsets, state_request, state_results
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1

SUMMARY = 87


def summary(
    broker: BrokerProcess,
    group: str,
    topic_id: uuid.UUID | None,
    *,
    partition: int = 0,
    leader_epoch: int = 0,
    version: int = 1,
) -> Any:
    request = state_request(
        SUMMARY,
        group,
        {topic_id: [{"partition": partition, "leader_epoch": leader_epoch}]},
        version=version,
    )
    [result] = state_results(call1(broker.bootstrap, request)).values()
    return result


def test_70_unknown_key(broker: BrokerProcess) -> None:
    topic_id = create_topic(broker.bootstrap, topic_name("rsgss"))
    result = summary(broker, topic_name("rsgss-group"), topic_id)
    assert (
        result.error_code,
        result.start_offset,
        result.delivery_complete_count,
        result.state_epoch,
        result.leader_epoch,
    ) == (ErrorCode.none, -1, -1, 0, 0)
    v0 = summary(broker, topic_name("rsgss-group"), topic_id, version=0)
    assert v0.error_code == ErrorCode.none and not hasattr(v0, "delivery_complete_count")


def test_summary_of_a_reset_share_group(broker: BrokerProcess) -> None:
    topic, group = topic_name("rsgss-reset"), topic_name("rsgss-group")
    topic_id = create_topic(broker.bootstrap, topic)
    assert alter_offsets(broker.bootstrap, group, {topic: {0: 6}}) == (
        ErrorCode.none,
        {topic: {0: ErrorCode.none}},
    )
    result = summary(broker, group, topic_id)
    assert (result.error_code, result.start_offset, result.delivery_complete_count) == (
        ErrorCode.none,
        6,
        0,
    )
    assert result.state_epoch >= 1


def test_validation(broker: BrokerProcess) -> None:
    topic_id = create_topic(broker.bootstrap, topic_name("rsgss-v"))
    assert summary(broker, "g", topic_id, partition=-1).error_code == ErrorCode.invalid_request
    assert summary(broker, "g", topic_id, leader_epoch=-1).error_code == ErrorCode.invalid_request
    assert summary(broker, "g", None).error_code == ErrorCode.invalid_request
    assert summary(broker, "g", uuid.uuid4()).error_code == ErrorCode.unknown_topic_or_partition
    refused = summary(broker, "g", topic_id, partition=3)
    assert (refused.error_code, refused.start_offset, refused.delivery_complete_count) == (
        ErrorCode.unknown_topic_or_partition,
        -1,
        -1,
    )
