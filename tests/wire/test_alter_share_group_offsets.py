"""AlterShareGroupOffsets (91) v0 against a broker process.

Conformance (docs/design/conformance.md): 74 (a group with a member -> NON_EMPTY_GROUP;
an empty group reset to 0 -> group epoch + 1, the next member reads from 0 with
delivery count 1); a missing group is created empty; unknown topics and partitions
are UNKNOWN_TOPIC_OR_PARTITION per partition; a reset discards in-flight state (lag
reset); another group type, an empty group id and `share.version`=0 are refused.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from shoal.client import requests
from shoal.client.aio import Connection
from shoal.client.share_requests import share_acknowledge
from shoal.protocol.share import AcknowledgeType
from tests.support.broker import BrokerProcess
from tests.support.share_admin import Consumer, alter_offsets, describe_offsets
from tests.support.share_groups import describe_one
from tests.support.share_wire import produce_values, set_group_configs
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1, with_connection


def test_74_reset_to_zero_redelivers_from_zero_with_count_one(broker: BrokerProcess) -> None:
    topic, group = topic_name("asgo"), topic_name("asgo-group")
    topic_id = create_topic(broker.bootstrap, topic)
    set_group_configs(broker.bootstrap, group, {"share.auto.offset.reset": "earliest"})
    produce_values(broker.bootstrap, topic, 5)
    tp = (topic_id, 0)

    async def go(conn: Connection) -> None:
        first = Consumer(conn, group)
        await first.join(topic)
        assert await first.acquire([tp]) == {tp: [(0, 4, 1)]}
        await first.acknowledge(
            {tp: [(0, 2, (AcknowledgeType.ACCEPT,)), (3, 4, (AcknowledgeType.RELEASE,))]}
        )
        assert await first.acquire([tp]) == {tp: [(3, 4, 2)]}
        busy = await conn.request(
            requests.alter_share_group_offsets(group, {(topic, 0): 0}).build(0)
        )
        assert busy.error_code == ErrorCode.non_empty_group
        assert busy.error_message == "The group is not empty."
        assert busy.responses == (), "a group-level error has no topics, as in Kafka"
        await first.close_and_leave()
        before = await describe_one(conn, group)
        reset = await conn.request(
            requests.alter_share_group_offsets(group, {(topic, 0): 0}).build(0)
        )
        assert reset.error_code == ErrorCode.none, reset
        [row] = reset.responses
        assert (row.topic_name, row.topic_id) == (topic, topic_id)
        assert [(p.partition_index, p.error_code) for p in row.partitions] == [(0, ErrorCode.none)]
        after = await describe_one(conn, group)
        assert after.group_state == "Empty"
        assert after.group_epoch > before.group_epoch
        second = Consumer(conn, group)
        await second.join(topic)
        assert await second.acquire([tp]) == {tp: [(0, 4, 1)]}, "from 0, counts reset"
        await second.close_and_leave()

    with_connection(broker.bootstrap, go)


def test_reset_sets_start_offset_and_lag(broker: BrokerProcess) -> None:
    topic, group = topic_name("asgo-lag"), topic_name("asgo-group")
    create_topic(broker.bootstrap, topic, partitions=2)
    produce_values(broker.bootstrap, topic, 10)
    error, rows = alter_offsets(broker.bootstrap, group, {topic: {0: 3, 1: 0}})
    assert (error, rows) == (ErrorCode.none, {topic: {0: 0, 1: 0}})
    assert describe_offsets(broker.bootstrap, group) == {topic: {0: (3, 0, 7), 1: (0, 0, 0)}}, (
        "10 - 3 records left on partition 0, an empty partition 1"
    )


def test_missing_group_is_created_empty(broker: BrokerProcess) -> None:
    topic, group = topic_name("asgo-new"), topic_name("asgo-group")
    create_topic(broker.bootstrap, topic)

    async def go(conn: Connection) -> None:
        missing = await describe_one(conn, group)
        assert missing.error_code == ErrorCode.group_id_not_found
        reset = await conn.request(
            requests.alter_share_group_offsets(group, {(topic, 0): 0}).build(0)
        )
        assert reset.error_code == ErrorCode.none
        created = await describe_one(conn, group)
        assert (created.error_code, created.group_state, created.members) == (
            ErrorCode.none,
            "Empty",
            (),
        )
        assert created.group_epoch >= 1

    with_connection(broker.bootstrap, go)


def test_unknown_topics_and_partitions_per_partition(broker: BrokerProcess) -> None:
    topic, group = topic_name("asgo-partial"), topic_name("asgo-group")
    create_topic(broker.bootstrap, topic, partitions=2)
    missing = topic_name("asgo-missing")
    response = call1(
        broker.bootstrap,
        requests.alter_share_group_offsets(
            group, {(topic, 0): 1, (topic, 1): 0, (topic, 2): 0, (missing, 0): 0}
        ).build(0),
    )
    assert response.error_code == ErrorCode.none
    rows = {t.topic_name: t for t in response.responses}
    assert {p.partition_index: p.error_code for p in rows[topic].partitions} == {
        0: ErrorCode.none,
        1: ErrorCode.none,
        2: ErrorCode.unknown_topic_or_partition,
    }
    [missing_partition] = rows[missing].partitions
    assert missing_partition.error_code == ErrorCode.unknown_topic_or_partition
    assert missing_partition.error_message == "This server does not host this topic-partition."
    assert rows[missing].topic_id is None
    assert describe_offsets(broker.bootstrap, group)[topic].keys() == {0, 1}


def test_invalid_start_offset_and_group_id(broker: BrokerProcess) -> None:
    topic, group = topic_name("asgo-bad"), topic_name("asgo-group")
    create_topic(broker.bootstrap, topic)
    error, rows = alter_offsets(broker.bootstrap, group, {topic: {0: -2}})
    assert (error, rows) == (ErrorCode.none, {topic: {0: ErrorCode.invalid_request}})
    error, rows = alter_offsets(broker.bootstrap, "", {topic: {0: 0}})
    assert (error, rows) == (ErrorCode.invalid_group_id, {}), "group-level: no topics"


def test_share_version_zero_answers_unsupported_version(disabled_broker: BrokerProcess) -> None:
    error, rows = alter_offsets(disabled_broker.bootstrap, "g", {"t": {0: 0}})
    assert (error, rows) == (ErrorCode.unsupported_version, {}), "group-level: no topics"


def test_reset_replaces_state_cached_for_an_open_share_session(broker: BrokerProcess) -> None:
    """A member left the group but kept its share session open: the reset still
    reaches the next member (the cached share-partition is dropped and reloads the
    new state), and the old session's acquisitions are gone."""
    topic, group = topic_name("asgo-open"), topic_name("asgo-group")
    topic_id = create_topic(broker.bootstrap, topic)
    set_group_configs(broker.bootstrap, group, {"share.auto.offset.reset": "earliest"})
    produce_values(broker.bootstrap, topic, 4)
    tp = (topic_id, 0)

    async def go(conn: Connection) -> None:
        first = Consumer(conn, group)
        await first.join(topic)
        assert await first.acquire([tp]) == {tp: [(0, 3, 1)]}
        await first.acknowledge({tp: [(0, 1, (AcknowledgeType.ACCEPT,))]})
        await first.member.leave(conn)  # the share session stays open
        reset = await conn.request(
            requests.alter_share_group_offsets(group, {(topic, 0): 0}).build(0)
        )
        assert reset.error_code == ErrorCode.none, reset
        second = Consumer(conn, group)
        await second.join(topic)
        assert await second.acquire([tp]) == {tp: [(0, 3, 1)]}
        stale = await conn.request(
            share_acknowledge(
                group_id=group,
                member_id=first.member.member_id,
                session_epoch=first.session_epoch,
                acks={tp: [(2, 3, (AcknowledgeType.ACCEPT,))]},
            ).build(1)
        )
        assert stale.error_code == ErrorCode.none
        [partition] = stale.responses[0].partitions
        assert partition.error_code == ErrorCode.invalid_record_state

    with_connection(broker.bootstrap, go)
