"""DescribeShareGroupOffsets (90) v0-v1 against a broker process.

Conformance (docs/design/conformance.md): 72 (an empty partition polled once is
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
from tests.support.wire import call1, open_connection, send, with_connection


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
            # The lag counts the records delivered beyond the start offset; the
            # start offsets themselves are the worked example's test below.
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


def test_worked_example_start_offsets(broker: BrokerProcess) -> None:
    """docs/design/share-partition.md §12 on the wire: DescribeShareGroupOffsets
    answers StartOffset 110 after "C1 accepts 100-109" (step 2), 111 after "C1 accepts
    110" (step 10) and 120 after "C3 accepts 111-112" (step 11): the write that
    completes records at the start of the window carries the start offset it moves to.
    Step 7's lock expiry of 111-112 is played as C1 releasing them (the same transition,
    ACQUIRED -> AVAILABLE keeping delivery count 1, and the same write), so the test
    waits for no timer. Lag = high watermark - start offset - DeliveryCompleteCount."""
    topic = topic_name("dsgo-worked")
    topic_id = create_topic(broker.bootstrap, topic)
    group = topic_name("dsgo-worked-group")  # share.auto.offset.reset = latest
    tp = (topic_id, 0)
    accept, release = (AcknowledgeType.ACCEPT,), (AcknowledgeType.RELEASE,)
    produce_values(broker.bootstrap, topic, 100)  # log end 100 before the group starts

    async def go(conn: Connection) -> None:
        others = [await open_connection(broker.bootstrap) for _ in range(2)]
        try:
            await play(conn, *others)
        finally:
            for other in others:
                await other.close()

    async def play(conn: Connection, conn2: Connection, conn3: Connection) -> None:
        # One connection each: a share session belongs to its connection.
        c1, c2, c3 = Consumer(conn, group), Consumer(conn2, group), Consumer(conn3, group)
        for consumer in (c1, c2, c3):
            await consumer.join(topic)

        async def described() -> tuple[int, int]:
            start, _epoch, lag = (await describe_offsets_on(conn, group))[topic][0]
            return start, lag

        async def produce_batch(count: int) -> None:
            produced = await conn.request(
                requests.produce({(topic, 0): values_batch(count)}).build(9)
            )
            assert produced.responses[0].partition_responses[0].error_code == ErrorCode.none

        # 0: the partition loads at `latest` = 100; nothing is written.
        loaded = await send(conn, fetch_now(group, c1.member.member_id, 0, partitions=[tp]))
        assert loaded.error_code == ErrorCode.none
        c1.session_epoch = 1
        assert await described() == (-1, -1)
        # 1, 2: C1 fetches 100-109 and accepts them.
        await produce_batch(10)
        assert await c1.acquire([tp]) == {tp: [(100, 109, 1)]}
        await c1.acknowledge({tp: [(100, 109, accept)]})
        assert await described() == (110, 0), "step 2"
        # 3: C1 gets 110-112, C2 113-118, C3 119.
        for consumer, count, span in (
            (c1, 3, (110, 112)),
            (c2, 6, (113, 118)),
            (c3, 1, (119, 119)),
        ):
            await produce_batch(count)
            assert await consumer.acquire([tp]) == {tp: [(*span, 1)]}
        # 4: C1 releases 110; 5: C3 accepts 119.
        await c1.acknowledge({tp: [(110, 110, release)]})
        assert await described() == (110, 10)
        await c3.acknowledge({tp: [(119, 119, accept)]})
        assert await described() == (110, 9), "step 5: DeliveryCompleteCount 1"
        # 6: C1 fetches 110 (again) and 120.
        await produce_batch(1)
        assert await c1.acquire([tp]) == {tp: [(110, 110, 2), (120, 120, 1)]}
        # 7: 111-112 become AVAILABLE (played as a release); 8: C2 accepts 113-118.
        await c1.acknowledge({tp: [(111, 112, release)]})
        await c2.acknowledge({tp: [(113, 118, accept)]})
        assert await described() == (110, 4), "step 8: DeliveryCompleteCount 7"
        # 9: C3 fetches 111-112; 10: C1 accepts 110.
        assert await c3.acquire([tp]) == {tp: [(111, 112, 2)]}
        await c1.acknowledge({tp: [(110, 110, accept)]})
        assert await described() == (111, 3), "step 10"
        # 11: C3 accepts 111-112; 120 stays acquired by C1.
        await c3.acknowledge({tp: [(111, 112, accept)]})
        assert await described() == (120, 1), "step 11"

    with_connection(broker.bootstrap, go)
