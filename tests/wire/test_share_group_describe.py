"""ShareGroupDescribe (77) v1 against a broker process.

Conformance (docs/design/conformance.md): 59 (unknown -> GROUP_ID_NOT_FOUND; a live
group's state, epochs, assignor "simple" and members with topic names), 62 (describe
half: Empty after every member left, epochs kept). A16's describe half is in
test_share_group_heartbeat.py (the `share.version`=0 broker).
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode
from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest

from shoal.client import requests
from shoal.client.aio import Connection
from shoal.server.handlers.common import authorized_operations as ops
from tests.support.broker import BrokerProcess
from tests.support.share_groups import Member, describe_one, described_assignment, settle
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1, send, with_connection

INT32_MIN = -(2**31)
# AclOperation codes a group supports (Kafka's AclEntry.supportedOperations(GROUP)).
READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS = 3, 6, 8, 10, 11


def test_59_unknown_group_is_not_found(broker: BrokerProcess) -> None:
    response = call1(
        broker.bootstrap, requests.share_group_describe([topic_name("nobody")]).build(1)
    )
    (group,) = response.groups
    assert group.error_code == ErrorCode.group_id_not_found
    assert group.error_message
    assert group.members == ()
    assert group.authorized_operations == INT32_MIN


def test_59_live_group(broker: BrokerProcess) -> None:
    a, b = topic_name("a"), topic_name("b")
    a_id = create_topic(broker.bootstrap, a, partitions=2)
    create_topic(broker.bootstrap, b, partitions=1)
    group = topic_name("group")

    async def go(conn: Connection) -> None:
        m1, m2 = Member(group), Member(group)
        await m1.join(conn, [b, a], rack_id="rack-1")
        await m2.join(conn, [a])
        await settle(conn, [m1, m2])
        described = await describe_one(conn, group)
        assert described.error_code == ErrorCode.none
        assert described.error_message is None
        assert described.group_id == group
        assert described.group_state == "Stable"
        assert described.group_epoch == described.assignment_epoch == m1.epoch == m2.epoch
        assert described.assignor_name == "simple"
        assert described.authorized_operations == INT32_MIN, "not asked for"
        members = {m.member_id: m for m in described.members}
        assert set(members) == {m1.member_id, m2.member_id}
        first, second = members[m1.member_id], members[m2.member_id]
        assert (first.rack_id, second.rack_id) == ("rack-1", None)
        assert first.member_epoch == m1.epoch
        assert (first.client_id, first.client_host) == ("shoal-test", "/127.0.0.1")
        assert first.subscribed_topic_names == tuple(sorted([a, b]))
        assert second.subscribed_topic_names == (a,)
        # Topic names resolved; the assignment matches what the heartbeats delivered.
        first_assignment = described_assignment(first)
        assert first_assignment[b] == (0,)
        assert len(first_assignment[a]) == 1
        assert described_assignment(second) == {a: m2.partitions(a_id)}
        for member in described.members:
            for tp in member.assignment.topic_partitions:
                assert tp.topic_id is not None

    with_connection(broker.bootstrap, go)


def test_authorized_operations_when_asked(broker: BrokerProcess) -> None:
    topic = topic_name("t")
    create_topic(broker.bootstrap, topic)
    group = topic_name("group")

    async def go(conn: Connection) -> None:
        await Member(group).join(conn, [topic])
        request = ShareGroupDescribeRequest(
            group_ids=(group, topic_name("missing")), include_authorized_operations=True
        )  # the client's builder never asks for authorized operations
        response = await conn.request(request)
        live, missing = response.groups
        expected = sum(1 << op for op in (READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS))
        assert live.authorized_operations == expected == ops.GROUP
        assert missing.error_code == ErrorCode.group_id_not_found

    with_connection(broker.bootstrap, go)


def test_several_groups_answer_in_request_order(broker: BrokerProcess) -> None:
    topic = topic_name("t")
    create_topic(broker.bootstrap, topic)
    first, second = topic_name("group"), topic_name("group")

    async def go(conn: Connection) -> None:
        await Member(first).join(conn, [topic])
        await Member(second).join(conn, [topic])
        response = await conn.request(
            requests.share_group_describe([second, "absent", first]).build(1)
        )
        assert [(g.group_id, g.error_code) for g in response.groups] == [
            (second, ErrorCode.none),
            ("absent", ErrorCode.group_id_not_found),
            (first, ErrorCode.none),
        ]
        assert (await conn.request(requests.share_group_describe([]).build(1))).groups == ()

    with_connection(broker.bootstrap, go)


def test_62_empty_after_every_member_left(broker: BrokerProcess) -> None:
    topic = topic_name("t")
    create_topic(broker.bootstrap, topic)
    group = topic_name("group")

    async def go(conn: Connection) -> None:
        m = Member(group)
        await m.join(conn, [topic])
        epoch = (await describe_one(conn, group)).group_epoch
        await m.leave(conn)
        described = await describe_one(conn, group)
        assert (described.error_code, described.group_state) == (ErrorCode.none, "Empty")
        assert described.members == ()
        assert described.group_epoch == epoch + 1
        assert described.assignor_name == "simple"

    with_connection(broker.bootstrap, go)


def test_deleted_topic_leaves_the_assignment(broker: BrokerProcess) -> None:
    kept, doomed = topic_name("kept"), topic_name("doomed")
    create_topic(broker.bootstrap, kept)
    create_topic(broker.bootstrap, doomed)
    group = topic_name("group")

    async def go(conn: Connection) -> None:
        m = Member(group)
        await m.join(conn, [kept, doomed])
        await m.beat(conn)  # the partitions come once initialised
        before = await describe_one(conn, group)
        assert described_assignment(before.members[0]) == {kept: (0,), doomed: (0,)}
        response = await send(conn, requests.delete_topics([doomed]))
        assert response.responses[0].error_code == ErrorCode.none
        await m.beat(conn)
        after = await describe_one(conn, group)
        assert described_assignment(after.members[0]) == {kept: (0,)}
        assert after.members[0].subscribed_topic_names == tuple(sorted([kept, doomed]))

    with_connection(broker.bootstrap, go)
