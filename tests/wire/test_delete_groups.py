"""DeleteGroups (42) v0-v2 against a broker process.

Conformance (docs/design/conformance.md): 76 (a group with members ->
NON_EMPTY_GROUP; an empty group -> the group and its share state are gone and the
same name starts afresh); unknown ids -> GROUP_ID_NOT_FOUND, an empty id ->
INVALID_GROUP_ID, each id answered once; every version served.
"""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from shoal.client import requests
from shoal.client.aio import Connection
from shoal.protocol.schema import request_schema
from shoal.protocol.share import AcknowledgeType
from tests.support.broker import BrokerProcess
from tests.support.classic_groups import commit_request, stable_group
from tests.support.share_admin import Consumer, delete_groups, describe_offsets
from tests.support.share_groups import describe_one
from tests.support.share_wire import produce_values, set_group_configs
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1, with_connection


def test_76_delete_needs_an_empty_group_and_the_name_starts_afresh(
    broker: BrokerProcess,
) -> None:
    topic, group = topic_name("dg"), topic_name("dg-group")
    topic_id = create_topic(broker.bootstrap, topic)
    set_group_configs(broker.bootstrap, group, {"share.auto.offset.reset": "earliest"})
    produce_values(broker.bootstrap, topic, 3)
    tp = (topic_id, 0)

    async def consume_then_leave(conn: Connection) -> None:
        consumer = Consumer(conn, group)
        await consumer.join(topic)
        assert await consumer.acquire([tp]) == {tp: [(0, 2, 1)]}
        await consumer.acknowledge({tp: [(0, 2, (AcknowledgeType.ACCEPT,))]})
        busy = await conn.request(requests.delete_groups([group]).build(2))
        assert [(r.group_id, r.error_code) for r in busy.results] == [
            (group, ErrorCode.non_empty_group)
        ]
        await consumer.close_and_leave()

    with_connection(broker.bootstrap, consume_then_leave)
    assert describe_offsets(broker.bootstrap, group)[topic][0][2] == 0, "all delivered"
    assert delete_groups(broker.bootstrap, group) == {group: ErrorCode.none}
    assert describe_offsets(broker.bootstrap, group) == {}, "state gone"

    async def afresh(conn: Connection) -> None:
        gone = await describe_one(conn, group)
        assert gone.error_code == ErrorCode.group_id_not_found
        consumer = Consumer(conn, group)
        await consumer.join(topic)
        described = await describe_one(conn, group)
        assert described.group_state == "Stable"
        assert consumer.member.epoch <= 2, "a new group: epochs start again"
        # The group config (earliest) is not part of the group: it stays.
        assert await consumer.acquire([tp]) == {tp: [(0, 2, 1)]}, "redelivered, count 1"
        await consumer.close_and_leave()

    with_connection(broker.bootstrap, afresh)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_unknown_empty_and_repeated_ids(broker: BrokerProcess, version: int) -> None:
    topic, group = topic_name("dg-v"), topic_name("dg-group")
    create_topic(broker.bootstrap, topic)

    async def go(conn: Connection) -> None:
        consumer = Consumer(conn, group)
        await consumer.join(topic)
        await consumer.close_and_leave()

    with_connection(broker.bootstrap, go)
    nobody = topic_name("dg-nobody")
    assert delete_groups(broker.bootstrap, nobody, group, "", group, version=version) == {
        nobody: ErrorCode.group_id_not_found,
        group: ErrorCode.none,
        "": ErrorCode.invalid_group_id,
    }
    assert delete_groups(broker.bootstrap, group, version=version) == {
        group: ErrorCode.group_id_not_found
    }


def test_classic_groups_are_deleted_when_empty(broker: BrokerProcess) -> None:
    """An Empty classic group goes with its committed offsets; one with members is
    NON_EMPTY_GROUP."""
    simple, busy, topic = topic_name("dg-simple"), topic_name("dg-busy"), topic_name("dg-t")
    create_topic(broker.bootstrap, topic)
    call1(broker.bootstrap, commit_request(8, simple, {(topic, 0): 4}))
    stable_group(broker.bootstrap, busy)
    assert delete_groups(broker.bootstrap, simple, busy) == {
        simple: ErrorCode.none,
        busy: ErrorCode.non_empty_group,
    }
    fetch = request_schema(9, 7).make(
        "OffsetFetchRequest", group_id=simple, topics=None, require_stable=False
    )
    assert call1(broker.bootstrap, fetch).topics == ()
    assert delete_groups(broker.bootstrap, simple) == {simple: ErrorCode.group_id_not_found}
