"""ReadShareGroupState (84) v0 against a broker process.

Conformance (docs/design/conformance.md): 63 (read of an uninitialised key ->
INVALID_REQUEST), 69 (a higher leader epoch is recorded: a later lower one is
FENCED_LEADER_EPOCH); negative partition or leader epoch -> INVALID_REQUEST, unknown
topic -> UNKNOWN_TOPIC_OR_PARTITION, refused partitions answer StartOffset -1; the
broker's own share groups are read through the same persister.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.client.aio import Connection
from shoal.protocol.share import AcknowledgeType
from tests.support.broker import BrokerProcess
from tests.support.share_admin import Consumer, state_request, state_results
from tests.support.share_wire import produce_values, set_group_configs
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1, with_connection

INITIALIZE, READ = 83, 84


def read(
    broker: BrokerProcess,
    group: str,
    topic_id: uuid.UUID | None,
    partition: int = 0,
    leader_epoch: int = 0,
) -> Any:
    request = state_request(
        READ, group, {topic_id: [{"partition": partition, "leader_epoch": leader_epoch}]}
    )
    [result] = state_results(call1(broker.bootstrap, request)).values()
    return result


def test_63_69_uninitialised_then_leader_epochs(broker: BrokerProcess) -> None:
    topic_id = create_topic(broker.bootstrap, topic_name("rsgs"))
    group = topic_name("rsgs-group")
    missing = read(broker, group, topic_id)
    assert (missing.error_code, missing.start_offset, missing.state_batches) == (
        ErrorCode.invalid_request,
        -1,
        (),
    )
    init = state_request(
        INITIALIZE, group, {topic_id: [{"partition": 0, "state_epoch": 4, "start_offset": 9}]}
    )
    assert state_results(call1(broker.bootstrap, init))[(topic_id, 0)].error_code == 0
    found = read(broker, group, topic_id, leader_epoch=5)
    assert (found.error_code, found.state_epoch, found.start_offset) == (ErrorCode.none, 4, 9)
    assert read(broker, group, topic_id, leader_epoch=4).error_code == (
        ErrorCode.fenced_leader_epoch
    )
    assert read(broker, group, topic_id, leader_epoch=5).error_code == ErrorCode.none


@pytest.mark.parametrize(
    ("case", "partition", "leader_epoch", "expected"),
    [
        ("negative partition", -1, 0, ErrorCode.invalid_request),
        ("negative leader epoch", 0, -1, ErrorCode.invalid_request),
        ("partition beyond the topic", 1, 0, ErrorCode.unknown_topic_or_partition),
    ],
)
def test_validation(
    broker: BrokerProcess, case: str, partition: int, leader_epoch: int, expected: ErrorCode
) -> None:
    topic_id = create_topic(broker.bootstrap, topic_name("rsgs-v"))
    result = read(broker, topic_name("rsgs-group"), topic_id, partition, leader_epoch)
    assert (result.error_code, bool(result.error_message)) == (expected, True), case
    assert read(broker, "g", None).error_code == ErrorCode.invalid_request
    assert read(broker, "g", uuid.uuid4()).error_code == ErrorCode.unknown_topic_or_partition


def test_reads_the_state_of_the_brokers_own_share_groups(broker: BrokerProcess) -> None:
    topic, group = topic_name("rsgs-own"), topic_name("rsgs-group")
    topic_id = create_topic(broker.bootstrap, topic)
    set_group_configs(broker.bootstrap, group, {"share.auto.offset.reset": "earliest"})
    produce_values(broker.bootstrap, topic, 4)
    tp = (topic_id, 0)

    async def go(conn: Connection) -> None:
        consumer = Consumer(conn, group)
        await consumer.join(topic)
        assert await consumer.acquire([tp]) == {tp: [(0, 3, 1)]}
        await consumer.acknowledge({tp: [(1, 2, (AcknowledgeType.ACCEPT,))]})

    with_connection(broker.bootstrap, go)
    state = read(broker, group, topic_id)
    assert state.error_code == ErrorCode.none
    assert state.state_epoch >= 1
    acknowledged = [
        (b.first_offset, b.last_offset) for b in state.state_batches if b.delivery_state == 2
    ]
    assert acknowledged == [(1, 2)]
