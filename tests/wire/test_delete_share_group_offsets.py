"""DeleteShareGroupOffsets (92) v0 against a broker process.

Conformance (docs/design/conformance.md): 75 (the topic is gone from
DescribeShareGroupOffsets; a topic without state is UNKNOWN_TOPIC_OR_PARTITION,
"There is no offset information to delete."); group-level refusals (unknown group,
another type, a member, an empty id, `share.version`=0) are top-level errors with no
topic rows; a member joining afterwards starts by `share.auto.offset.reset`.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from shoal.client import requests
from shoal.client.aio import Connection
from shoal.protocol.share import AcknowledgeType
from tests.support.broker import BrokerProcess
from tests.support.share_admin import Consumer, describe_offsets
from tests.support.share_wire import produce_values, set_group_configs
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1, with_connection


def consumed(broker: BrokerProcess, group: str, *topics: str) -> None:
    """A member (earliest) subscribed to `topics` accepts the 3 records of the first
    one's partition 0, then closes its session and leaves: the group is empty."""
    first_id = create_topic(broker.bootstrap, topics[0])
    for other in topics[1:]:
        create_topic(broker.bootstrap, other)
    set_group_configs(broker.bootstrap, group, {"share.auto.offset.reset": "earliest"})
    produce_values(broker.bootstrap, topics[0], 3)
    tp = (first_id, 0)

    async def go(conn: Connection) -> None:
        consumer = Consumer(conn, group)
        await consumer.join(*topics)
        assert await consumer.acquire([tp]) == {tp: [(0, 2, 1)]}
        await consumer.acknowledge({tp: [(0, 2, (AcknowledgeType.ACCEPT,))]})
        await consumer.close_and_leave()

    with_connection(broker.bootstrap, go)


def test_75_deleted_topic_is_gone_and_a_topic_without_state_is_refused(
    broker: BrokerProcess,
) -> None:
    topic, kept, group = topic_name("dsgo"), topic_name("dsgo-kept"), topic_name("dsgo-group")
    consumed(broker, group, topic, kept)
    idle = topic_name("dsgo-idle")
    create_topic(broker.bootstrap, idle)
    missing = topic_name("dsgo-missing")
    assert describe_offsets(broker.bootstrap, group).keys() == {topic, kept}
    response = call1(
        broker.bootstrap,
        requests.delete_share_group_offsets(group, [topic, idle, missing, topic]).build(0),
    )
    assert (response.error_code, response.error_message) == (ErrorCode.none, None)
    rows = [(t.topic_name, t.error_code, t.error_message) for t in response.responses]
    assert rows == [
        (topic, ErrorCode.none, None),
        (idle, ErrorCode.unknown_topic_or_partition, "There is no offset information to delete."),
        (
            missing,
            ErrorCode.unknown_topic_or_partition,
            "This server does not host this topic-partition.",
        ),
    ]
    assert response.responses[0].topic_id is not None
    assert describe_offsets(broker.bootstrap, group).keys() == {kept}
    again = call1(broker.bootstrap, requests.delete_share_group_offsets(group, [topic]).build(0))
    assert [t.error_code for t in again.responses] == [ErrorCode.unknown_topic_or_partition]


def test_a_member_joining_after_the_delete_starts_afresh(broker: BrokerProcess) -> None:
    topic, group = topic_name("dsgo-afresh"), topic_name("dsgo-group")
    consumed(broker, group, topic)
    deleted = call1(broker.bootstrap, requests.delete_share_group_offsets(group, [topic]).build(0))
    assert [t.error_code for t in deleted.responses] == [ErrorCode.none]
    topic_id = deleted.responses[0].topic_id

    async def go(conn: Connection) -> None:
        consumer = Consumer(conn, group)
        await consumer.join(topic)
        tp = (topic_id, 0)
        assert await consumer.acquire([tp]) == {tp: [(0, 2, 1)]}, "earliest: redelivered"
        await consumer.close_and_leave()

    with_connection(broker.bootstrap, go)


def test_group_level_refusals(broker: BrokerProcess) -> None:
    topic, group = topic_name("dsgo-refused"), topic_name("dsgo-group")
    create_topic(broker.bootstrap, topic)
    unknown = call1(broker.bootstrap, requests.delete_share_group_offsets(group, [topic]).build(0))
    assert (unknown.error_code, unknown.error_message, unknown.responses) == (
        ErrorCode.group_id_not_found,
        f"Group {group} not found.",
        (),
    )
    empty_id = call1(broker.bootstrap, requests.delete_share_group_offsets("", [topic]).build(0))
    assert empty_id.error_code == ErrorCode.invalid_group_id

    async def go(conn: Connection) -> None:
        consumer = Consumer(conn, group)
        await consumer.join(topic)
        busy = await conn.request(requests.delete_share_group_offsets(group, [topic]).build(0))
        assert (busy.error_code, busy.error_message, busy.responses) == (
            ErrorCode.non_empty_group,
            "The group is not empty.",
            (),
        )

    with_connection(broker.bootstrap, go)
    assert describe_offsets(broker.bootstrap, group).keys() == {topic}, "nothing deleted"


def test_share_version_zero_answers_unsupported_version(disabled_broker: BrokerProcess) -> None:
    response = call1(
        disabled_broker.bootstrap, requests.delete_share_group_offsets("g", ["t"]).build(0)
    )
    assert (response.error_code, response.responses) == (ErrorCode.unsupported_version, ())
