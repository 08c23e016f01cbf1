"""DescribeShareGroupOffsets (90) v0-v1 against a broker process.

Conformance (shared/spec/conformance.md): 72 (an empty partition polled once is
described with StartOffset -1), 73 (Lag = high watermark - SPSO -
DeliveryCompleteCount, moving with ACCEPT, REJECT and RELEASE), 57 (describe half: a
partition added to a subscribed topic is initialised at 0); absences are no errors
(unknown group, topic or partition: StartOffset -1), as in Kafka; DeleteTopics drops
the topic's share state in every group and a recreated topic starts afresh;
`share.version`=0 answers UNSUPPORTED_VERSION.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from shoal.client import requests
from shoal.client.aio import Connection
from shoal.protocol.share import AcknowledgeType
from tests.support.batches import values_batch
from tests.support.broker import BrokerProcess
from tests.support.share_admin import (
    Consumer,
    describe_offsets,
    describe_offsets_on,
    describe_offsets_request,
    offsets_of,
)
from tests.support.share_wire import fetch_now, produce_values, set_group_configs
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1, send, with_connection


def earliest_group(broker: BrokerProcess) -> str:
    group = topic_name("dsgo-group")
    set_group_configs(broker.bootstrap, group, {"share.auto.offset.reset": "earliest"})
    return group


def test_72_empty_partition_polled_once_has_no_start_offset(broker: BrokerProcess) -> None:
    """Described while the member's share session is open, as Kafka's test does (an
    unloading share-partition persists the offset it resolved)."""
    topic, group = topic_name("dsgo-empty"), topic_name("dsgo-group")
    topic_id = create_topic(broker.bootstrap, topic)

    async def go(conn: Connection) -> None:
        consumer = Consumer(conn, group)
        await consumer.join(topic)
        # One poll of the empty partition: it loads, acquires nothing.
        response = await conn.request(
            fetch_now(group, consumer.member.member_id, 0, partitions=[(topic_id, 0)]).build(1)
        )
        assert response.error_code == ErrorCode.none
        assert await describe_offsets_on(conn, group) == {topic: {0: (-1, 0, -1)}}

    with_connection(broker.bootstrap, go)


def test_73_lag_moves_with_accept_reject_and_release(broker: BrokerProcess) -> None:
    topic = topic_name("dsgo-lag")
    topic_id = create_topic(broker.bootstrap, topic)
    group = earliest_group(broker)
    produce_values(broker.bootstrap, topic, 10)
    tp = (topic_id, 0)

    async def go(conn: Connection) -> None:
        async def lag() -> int:
            start, _epoch, lag = (await describe_offsets_on(conn, group))[topic][0]
            # The persisted start offset may trail the share-partition's (Kafka's
            # does too); the lag counts the records delivered beyond it either way.
            assert 0 <= start <= 10
            return lag

        consumer = Consumer(conn, group)
        await consumer.join(topic)
        assert await consumer.acquire([tp]) == {tp: [(0, 9, 1)]}
        await consumer.acknowledge({tp: [(0, 3, (AcknowledgeType.ACCEPT,))]})
        assert await lag() == 6
        await consumer.acknowledge({tp: [(4, 5, (AcknowledgeType.RELEASE,))]})
        assert await lag() == 6, "released records are still to deliver"
        await consumer.acknowledge(
            {tp: [(6, 7, (AcknowledgeType.REJECT,)), (8, 9, (AcknowledgeType.ACCEPT,))]}
        )
        assert await lag() == 2, "10 records, 8 of them delivered: 4 and 5 are left"
        assert await consumer.acquire([tp]) == {tp: [(4, 5, 2)]}
        await consumer.acknowledge({tp: [(4, 5, (AcknowledgeType.ACCEPT,))]})
        assert await lag() == 0
        produced = await conn.request(requests.produce({(topic, 0): values_batch(3)}).build(9))
        assert produced.responses[0].partition_responses[0].error_code == ErrorCode.none
        assert await lag() == 3, "new records are lag"
        await consumer.close_and_leave()

    with_connection(broker.bootstrap, go)


def test_v0_has_no_lag_and_unknowns_are_no_errors(broker: BrokerProcess) -> None:
    topic = topic_name("dsgo-v0")
    create_topic(broker.bootstrap, topic, partitions=2)
    group = earliest_group(broker)
    produce_values(broker.bootstrap, topic, 4)

    async def go(conn: Connection) -> None:
        await Consumer(conn, group).join(topic)

    with_connection(broker.bootstrap, go)
    missing_topic, nobody = topic_name("dsgo-missing"), topic_name("dsgo-nobody")
    response = call1(
        broker.bootstrap,
        describe_offsets_request(
            {
                group: {topic: [0, 1, 5], missing_topic: [0]},
                nobody: None,
                topic_name("dsgo-nobody"): {topic: [0]},
            },
            version=0,
        ),
    )
    mine, unknown_all, unknown_named = response.groups
    offsets = offsets_of(mine)
    assert offsets == {
        topic: {0: (-1, 0, -1), 1: (-1, 0, -1), 5: (-1, 0, -1)},
        missing_topic: {0: (-1, 0, -1)},
    }, "initialised at -1, nothing acknowledged yet; v0 carries no lag"
    missing_ids = [t.topic_id for t in mine.topics if t.topic_name == missing_topic]
    assert missing_ids == [None], "the zero topic id (kio reads it as None)"
    assert offsets_of(unknown_all) == {}, "an unknown group has no state: no error"
    assert offsets_of(unknown_named) == {topic: {0: (-1, 0, -1)}}


def test_null_topics_lists_every_initialised_partition(broker: BrokerProcess) -> None:
    a, b = topic_name("dsgo-a"), topic_name("dsgo-b")
    a_id = create_topic(broker.bootstrap, a, partitions=2)
    create_topic(broker.bootstrap, b)
    group = earliest_group(broker)
    produce_values(broker.bootstrap, a, 5)

    async def go(conn: Connection) -> None:
        consumer = Consumer(conn, group)
        await consumer.join(a, b)
        assert await consumer.acquire([(a_id, 0)]) == {(a_id, 0): [(0, 4, 1)]}
        await consumer.acknowledge({(a_id, 0): [(0, 4, (AcknowledgeType.ACCEPT,))]})

    with_connection(broker.bootstrap, go)
    response = call1(broker.bootstrap, describe_offsets_request({group: None}))
    (described,) = response.groups
    assert {t.topic_name: t.topic_id for t in described.topics}[a] == a_id
    offsets = offsets_of(described)
    assert offsets.keys() == {a, b}
    (start, leader_epoch, lag) = offsets[a][0]
    assert (start >= 0, leader_epoch, lag) == (True, 0, 0), "all 5 records delivered"
    assert offsets[a][1] == offsets[b][0] == (-1, 0, -1), "never acknowledged"
    assert call1(broker.bootstrap, describe_offsets_request({group: {}})).groups[0].topics == ()


def test_57_added_partition_is_initialised_at_zero(broker: BrokerProcess) -> None:
    topic = topic_name("dsgo-grown")
    create_topic(broker.bootstrap, topic)
    group = topic_name("dsgo-group")

    async def go(conn: Connection) -> None:
        consumer = Consumer(conn, group)
        await consumer.join(topic)
        grown = await send(conn, requests.create_partitions({topic: 2}))
        assert grown.results[0].error_code == ErrorCode.none
        await consumer.member.beat(conn)

    with_connection(broker.bootstrap, go)
    described = describe_offsets(broker.bootstrap, group)
    assert described[topic][0][0] == -1, "new to the group: share.auto.offset.reset"
    assert described[topic][1] == (0, 0, 0), "added to a known topic: from offset 0"


def test_deleted_topic_loses_its_state_and_a_recreated_one_starts_afresh(
    broker: BrokerProcess,
) -> None:
    topic = topic_name("dsgo-doomed")
    topic_id = create_topic(broker.bootstrap, topic)
    groups = [earliest_group(broker), earliest_group(broker)]
    produce_values(broker.bootstrap, topic, 3)

    async def consume(conn: Connection) -> None:
        for group in groups:
            consumer = Consumer(conn, group)
            await consumer.join(topic)
            assert await consumer.acquire([(topic_id, 0)]) == {(topic_id, 0): [(0, 2, 1)]}
            await consumer.acknowledge({(topic_id, 0): [(0, 2, (AcknowledgeType.ACCEPT,))]})
            await consumer.close_and_leave()

    with_connection(broker.bootstrap, consume)
    for group in groups:
        [(start, _leader_epoch, lag)] = describe_offsets(broker.bootstrap, group)[topic].values()
        assert start >= 0 and lag == 0, "all 3 records delivered"
    deleted = call1(broker.bootstrap, requests.delete_topics([topic]))
    assert deleted.responses[0].error_code == ErrorCode.none
    for group in groups:
        assert describe_offsets(broker.bootstrap, group) == {}
    new_id = create_topic(broker.bootstrap, topic)
    assert new_id != topic_id
    produce_values(broker.bootstrap, topic, 2)

    async def again(conn: Connection) -> None:
        consumer = Consumer(conn, groups[0])
        await consumer.join(topic)
        assert await consumer.acquire([(new_id, 0)]) == {(new_id, 0): [(0, 1, 1)]}

    with_connection(broker.bootstrap, again)
    assert describe_offsets(broker.bootstrap, groups[1]) == {}, "no member: no state"


def test_share_version_zero_answers_unsupported_version(disabled_broker: BrokerProcess) -> None:
    response = call1(
        disabled_broker.bootstrap, describe_offsets_request({"g": None, "h": {"t": [0]}})
    )
    assert [(g.group_id, g.error_code) for g in response.groups] == [
        ("g", ErrorCode.unsupported_version),
        ("h", ErrorCode.unsupported_version),
    ]
    assert all(g.error_message and g.topics == () for g in response.groups)
