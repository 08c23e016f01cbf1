"""ShareGroupHeartbeat (76) v1 against a broker process.

Conformance (docs/design/conformance.md): 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56,
57 (wire half: the grown partition is assigned), 58 (with a classic group),
61, 62 (membership half: state kept, no re-initialisation; delivery needs ShareFetch),
A16 (`share.version`=0, with ShareGroupDescribe). What librdkafka 2.16 relies on:
heartbeats on any connection, member ids kept verbatim, its error codes, and leave (a
closed connection alone removes nothing). HeartbeatIntervalMs follows the
group's `share.heartbeat.interval.ms`. GROUP_MAX_SIZE_REACHED with
`group.share.max.size=2` (51).
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Iterator

import pytest
from kio.schema.create_partitions.v3.request import CreatePartitionsRequest, CreatePartitionsTopic
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

from shoal.client import requests
from shoal.client.aio import Connection
from shoal.client.share_requests import heartbeat
from shoal.protocol.schema import request_schema
from tests.support.broker import BrokerProcess, running
from tests.support.classic_groups import commit_request, join_request
from tests.support.share_groups import Member, assignment_of, describe_one, settle
from tests.support.topics import create_topic, topic_name
from tests.support.wire import api_versions_request, call1, with_connection

TIMEOUT = datetime.timedelta(seconds=30)
# Short sessions for expiry (conformance 53): the broker's bounds lowered first (the group
# value must lie within them).
SHORT_SESSION_OVERRIDES = (
    "group.share.min.session.timeout.ms=1000",
    "group.share.session.timeout.ms=2000",
    "group.share.min.heartbeat.interval.ms=100",
    "group.share.heartbeat.interval.ms=500",
)


@pytest.fixture(scope="module")
def short_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(tmp_path_factory.mktemp("short-sessions") / "data", *SHORT_SESSION_OVERRIDES)


@pytest.fixture(scope="module")
def small_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(tmp_path_factory.mktemp("small-groups") / "data", "group.share.max.size=2")


def group_name() -> str:
    return topic_name("group")


# ---- validation and unknown ids (46, 47, 48) ------------------------------------------


@pytest.mark.parametrize(
    ("group_id", "member_id", "epoch", "subscribed", "rack_id"),
    [
        ("g", "m", 0, [], None),  # 46: epoch 0 with an empty subscription
        ("g", "m", 0, None, None),  # epoch 0 without a subscription
        ("", "m", 0, ["t"], None),  # empty GroupId
        ("g", "", 0, ["t"], None),  # empty MemberId
        ("g", "m" * 37, 0, ["t"], None),  # MemberId longer than 36
        ("g", "m", 0, ["t"], ""),  # non-null empty RackId
        ("g", "m", -2, None, None),  # epoch below -1
    ],
)
def test_46_malformed_heartbeats_are_invalid_requests(
    broker: BrokerProcess,
    group_id: str,
    member_id: str,
    epoch: int,
    subscribed: list[str] | None,
    rack_id: str | None,
) -> None:
    request = heartbeat(group_id, member_id, epoch, subscribed, rack_id=rack_id).build(1)
    response = call1(broker.bootstrap, request)
    assert response.error_code == ErrorCode.invalid_request
    assert response.error_message
    assert response.assignment is None


def test_47_48_unknown_member_and_unknown_group(broker: BrokerProcess) -> None:
    topic = topic_name("t")
    create_topic(broker.bootstrap, topic)
    group = group_name()

    async def go(conn: Connection) -> None:
        unknown_group = await conn.request(heartbeat(group, "m", 3, None).build(1))
        assert unknown_group.error_code == ErrorCode.group_id_not_found
        leave_unknown = await conn.request(heartbeat(group, "m", -1, None).build(1))
        assert leave_unknown.error_code == ErrorCode.group_id_not_found
        await Member(group).join(conn, [topic])
        unknown_member = await conn.request(heartbeat(group, "stranger", 3, None).build(1))
        assert unknown_member.error_code == ErrorCode.unknown_member_id
        leave_stranger = await conn.request(heartbeat(group, "stranger", -1, None).build(1))
        assert leave_stranger.error_code == ErrorCode.unknown_member_id

    with_connection(broker.bootstrap, go)


# ---- joining, initialisation, epochs (16, 56, 49, 50) -----------------------------------


def test_56_the_join_reply_carries_the_partitions_it_initialised(
    broker: BrokerProcess,
) -> None:
    """The join writes the partitions as initializing, the in-process persister
    initialises them (group epoch 1 -> 2), and the join is answered after that, at
    member epoch 2 with every partition (server/services/group_service.py: a deliberate
    difference from Kafka, where they come with the next heartbeat)."""
    topic = topic_name("t")
    topic_id = create_topic(broker.bootstrap, topic, partitions=3)
    group = group_name()
    member_id = "A+b/C+d/E+f/G+h/I+j/K1"  # librdkafka's form: 22 chars of base64

    async def go(conn: Connection) -> None:
        response = await conn.request(heartbeat(group, member_id, 0, [topic]).build(1))
        assert response.error_code == ErrorCode.none
        assert response.member_id == member_id, "kept verbatim"
        assert response.member_epoch == 2
        assert response.heartbeat_interval == datetime.timedelta(milliseconds=5000)
        assert assignment_of(response) == {topic_id: (0, 1, 2)}
        described = await describe_one(conn, group)
        assert (described.group_epoch, described.assignment_epoch) == (2, 2)
        steady = await conn.request(heartbeat(group, member_id, 2, None).build(1))
        assert (steady.error_code, steady.member_epoch) == (ErrorCode.none, 2)
        assert steady.assignment is None, "unchanged: null"

    with_connection(broker.bootstrap, go)


def test_49_50_fencing_and_rejoin_at_epoch_zero(broker: BrokerProcess) -> None:
    topic = topic_name("t")
    topic_id = create_topic(broker.bootstrap, topic, partitions=2)
    group = group_name()

    async def go(conn: Connection) -> None:
        m1, m2 = Member(group), Member(group)
        await m1.join(conn, [topic])  # epoch 1; the initialisation makes the group epoch 2
        above = await conn.request(heartbeat(group, m1.member_id, 3, None).build(1))
        assert above.error_code == ErrorCode.fenced_member_epoch
        previous = await conn.request(heartbeat(group, m1.member_id, 1, None).build(1))
        assert (previous.error_code, previous.member_epoch) == (ErrorCode.none, 2)
        await m2.join(conn, [topic])  # group epoch 3
        await settle(conn, [m1, m2])  # m1: epoch 3, previous 2
        assert m1.epoch == 3
        older = await conn.request(heartbeat(group, m1.member_id, 1, None).build(1))
        assert older.error_code == ErrorCode.fenced_member_epoch
        accepted = await conn.request(heartbeat(group, m1.member_id, 2, None).build(1))
        assert (accepted.error_code, accepted.member_epoch) == (ErrorCode.none, 3)
        # 50: the fenced member rejoins with its id and gets its epoch and assignment.
        rejoined = await conn.request(heartbeat(group, m1.member_id, 0, [topic]).build(1))
        assert (rejoined.error_code, rejoined.member_epoch) == (ErrorCode.none, 3)
        assert assignment_of(rejoined) == {topic_id: m1.partitions(topic_id)}
        assert len(m1.partitions(topic_id)) == 1
        described = await describe_one(conn, group)
        assert len(described.members) == 2

    with_connection(broker.bootstrap, go)


# ---- assignment (54, 55, 52) -------------------------------------------------------


def test_54_two_members_four_partitions_and_four_members_one_partition(
    broker: BrokerProcess,
) -> None:
    wide, narrow = topic_name("wide"), topic_name("narrow")
    wide_id = create_topic(broker.bootstrap, wide, partitions=4)
    narrow_id = create_topic(broker.bootstrap, narrow, partitions=1)

    async def go(conn: Connection) -> None:
        pair_group = group_name()
        pair = [Member(pair_group) for _ in range(2)]
        for member in pair:
            await member.join(conn, [wide])
        await settle(conn, pair)
        loads = [member.partitions(wide_id) for member in pair]
        assert sorted(len(p) for p in loads) == [2, 2]
        assert sorted(loads[0] + loads[1]) == [0, 1, 2, 3]

        four_group = group_name()
        four = [Member(four_group) for _ in range(4)]
        for member in four:
            await member.join(conn, [narrow])
        await settle(conn, four)
        assert [m.assignment for m in four] == [{narrow_id: (0,)}] * 4, "shared"

    with_connection(broker.bootstrap, go)


def test_55_mixed_subscriptions_balance_per_topic(broker: BrokerProcess) -> None:
    a, b = topic_name("a"), topic_name("b")
    a_id = create_topic(broker.bootstrap, a, partitions=2)
    b_id = create_topic(broker.bootstrap, b, partitions=2)
    group = group_name()

    async def go(conn: Connection) -> None:
        c1, c2, c3 = Member(group), Member(group), Member(group)
        await c1.join(conn, [a, b])
        await c2.join(conn, [a])
        await c3.join(conn, [b])
        await settle(conn, [c1, c2, c3])
        assert set(c1.assignment) == {a_id, b_id}
        assert set(c2.assignment) == {a_id} and set(c3.assignment) == {b_id}
        for topic_id, other in ((a_id, c2), (b_id, c3)):
            mine, theirs = c1.partitions(topic_id), other.partitions(topic_id)
            assert len(mine) == len(theirs) == 1
            assert sorted(mine + theirs) == [0, 1]

    with_connection(broker.bootstrap, go)


def test_52_leave_bumps_the_epoch_and_reassigns(broker: BrokerProcess) -> None:
    topic = topic_name("t")
    topic_id = create_topic(broker.bootstrap, topic, partitions=2)
    group = group_name()

    async def go(conn: Connection) -> None:
        m1, m2 = Member(group), Member(group)
        await m1.join(conn, [topic])
        await m2.join(conn, [topic])
        await settle(conn, [m1, m2])
        epoch = (await describe_one(conn, group)).group_epoch
        left = await m2.leave(conn)
        assert left.member_id == m2.member_id
        described = await describe_one(conn, group)
        assert described.group_epoch == epoch + 1
        assert [m.member_id for m in described.members] == [m1.member_id]
        response = await m1.beat(conn)
        assert response.member_epoch == epoch + 1
        assert assignment_of(response) == {topic_id: (0, 1)}

    with_connection(broker.bootstrap, go)


# ---- subscription changes and rejoining (61, 62) ------------------------------------


def test_61_subscription_change_unsubscribe_resubscribe_and_leave(broker: BrokerProcess) -> None:
    a, b = topic_name("a"), topic_name("b")
    a_id = create_topic(broker.bootstrap, a, partitions=1)
    b_id = create_topic(broker.bootstrap, b, partitions=2)
    group = group_name()

    async def go(conn: Connection) -> None:
        m = Member(group)
        await m.join(conn, [a])  # a's partition comes with the join (test 56)
        assert m.assignment == {a_id: (0,)}
        moved = await m.send(conn, m.epoch, [b])
        assert moved.error_code == ErrorCode.none
        assert assignment_of(moved) == {b_id: (0, 1)}, "b initialised in the heartbeat"
        assert (await m.beat(conn)).assignment is None, "unchanged"
        emptied = await m.send(conn, m.epoch, [])
        assert emptied.error_code == ErrorCode.none
        assert assignment_of(emptied) == {}, "an empty subscription holds nothing"
        back = await m.send(conn, m.epoch, [a, b])
        assert assignment_of(back) == {a_id: (0,), b_id: (0, 1)}
        await m.leave(conn)  # subscribe([]) in librdkafka is this leave
        again = await m.send(conn, 0, [a])
        assert again.error_code == ErrorCode.none
        assert assignment_of(again) == {a_id: (0,)}

    with_connection(broker.bootstrap, go)


def test_62_all_members_leave_and_the_state_is_kept(broker: BrokerProcess) -> None:
    topic = topic_name("t")
    topic_id = create_topic(broker.bootstrap, topic, partitions=1)
    group = group_name()

    async def go(conn: Connection) -> None:
        m1, m2 = Member(group), Member(group)
        await m1.join(conn, [topic])
        await m2.join(conn, [topic])
        await settle(conn, [m1, m2])
        await m1.leave(conn)
        await m2.leave(conn)
        empty = await describe_one(conn, group)
        assert (empty.error_code, empty.group_state, empty.members) == (ErrorCode.none, "Empty", ())
        # The partition keeps its state: the next member is assigned at once, with one
        # epoch bump for its join and none for a second initialisation.
        m3 = Member(group)
        response = await m3.join(conn, [topic])
        assert response.member_epoch == empty.group_epoch + 1
        assert m3.assignment == {topic_id: (0,)}

    with_connection(broker.bootstrap, go)


# ---- topic changes reach the coordinator --------------------------------------------


def test_57_grown_deleted_and_auto_created_topics(broker: BrokerProcess) -> None:
    grown, doomed, later = topic_name("grown"), topic_name("doomed"), topic_name("later")
    grown_id = create_topic(broker.bootstrap, grown, partitions=1)
    doomed_id = create_topic(broker.bootstrap, doomed, partitions=1)
    group = group_name()

    async def go(conn: Connection) -> None:
        m = Member(group)
        await m.join(conn, [grown, doomed, later])
        await m.beat(conn)  # the partitions come once initialised (test 56)
        assert m.assignment == {grown_id: (0,), doomed_id: (0,)}, "unknown names are ignored"
        result = await conn.request(
            CreatePartitionsRequest(
                topics=(CreatePartitionsTopic(name=grown, count=2, assignments=None),),
                timeout=TIMEOUT,
                validate_only=False,
            )
        )
        assert result.results[0].error_code == ErrorCode.none
        await m.beat(conn)
        assert m.assignment == {grown_id: (0, 1), doomed_id: (0,)}
        deleted = await conn.request(
            DeleteTopicsRequest(
                topics=(DeleteTopicState(name=doomed, topic_id=None),), timeout=TIMEOUT
            )
        )
        assert deleted.responses[0].error_code == ErrorCode.none
        await m.beat(conn)
        assert m.assignment == {grown_id: (0, 1)}
        metadata = await conn.request(
            MetadataRequest(
                topics=(MetadataRequestTopic(topic_id=None, name=later),),
                allow_auto_topic_creation=True,
                include_topic_authorized_operations=False,
            )
        )
        assert metadata.topics[0].error_code == ErrorCode.unknown_topic_or_partition  # as Kafka
        described = await conn.request(
            MetadataRequest(
                topics=(MetadataRequestTopic(topic_id=None, name=later),),
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
        )
        (created,) = described.topics
        assert created.error_code == ErrorCode.none
        await m.beat(conn)
        assert m.assignment == {grown_id: (0, 1), created.topic_id: (0,)}

    with_connection(broker.bootstrap, go)


# ---- group configs ------------------------------------------------------------------


def alter_group_config(bootstrap: str, group_id: str, key: str, value: str | None) -> None:
    """IncrementalAlterConfigs v1 on resource type GROUP (32): SET, or DELETE if None."""
    schema = request_schema(44, 1)
    operation = 0 if value is not None else 1
    request = schema.make(
        "IncrementalAlterConfigsRequest",
        resources=(
            schema.make(
                "AlterConfigsResource",
                resource_type=32,
                resource_name=group_id,
                configs=(
                    schema.make(
                        "AlterableConfig", name=key, config_operation=operation, value=value
                    ),
                ),
            ),
        ),
        validate_only=False,
    )
    (result,) = call1(bootstrap, request).responses
    assert result.error_code == ErrorCode.none, result


def test_heartbeat_interval_follows_the_group_config(broker: BrokerProcess) -> None:
    """HeartbeatIntervalMs is the group's `share.heartbeat.interval.ms`, set before the
    group exists or changed while it runs; DELETE restores the broker's 5000."""
    topic = topic_name("t")
    create_topic(broker.bootstrap, topic)
    group = group_name()
    key = "share.heartbeat.interval.ms"
    alter_group_config(broker.bootstrap, group, key, "6000")
    m = Member(group)

    async def join(conn: Connection) -> None:
        response = await m.join(conn, [topic])
        assert response.heartbeat_interval == datetime.timedelta(milliseconds=6000)

    async def beat(conn: Connection, expected_ms: int) -> None:
        response = await m.beat(conn)
        assert response.heartbeat_interval == datetime.timedelta(milliseconds=expected_ms)

    with_connection(broker.bootstrap, join)
    alter_group_config(broker.bootstrap, group, key, "7000")
    with_connection(broker.bootstrap, lambda conn: beat(conn, 7000))
    alter_group_config(broker.bootstrap, group, key, None)
    with_connection(broker.bootstrap, lambda conn: beat(conn, 5000))


# ---- connections, expiry, limits -----------------------------------------------------


def test_13_heartbeats_on_any_connection(broker: BrokerProcess) -> None:
    """librdkafka heartbeats on a coordinator connection of its own; a member is not
    tied to one connection, and closing one removes nothing."""
    topic = topic_name("t")
    create_topic(broker.bootstrap, topic)
    group = group_name()
    m = Member(group)

    async def join(conn: Connection) -> None:
        await m.join(conn, [topic])

    async def beat(conn: Connection) -> None:
        response = await m.beat(conn)
        assert response.member_epoch == 2
        assert [x.member_id for x in (await describe_one(conn, group)).members] == [m.member_id]

    with_connection(broker.bootstrap, join)
    with_connection(broker.bootstrap, beat)


def test_53_silent_member_expires_punctual_member_is_never_fenced(
    short_broker: BrokerProcess,
) -> None:
    """Session timeout 2 s: the silent member (its connection closed, no leave, as
    after a fatal error) is removed and its partition moves; the member heartbeating
    every 500 ms is never fenced."""
    topic = topic_name("t")
    topic_id = create_topic(short_broker.bootstrap, topic, partitions=2)
    group = group_name()
    punctual, silent = Member(group), Member(group)

    async def join_silent(conn: Connection) -> None:
        await silent.join(conn, [topic])

    async def go(conn: Connection) -> None:
        response = await punctual.join(conn, [topic])
        assert response.heartbeat_interval == datetime.timedelta(milliseconds=500)
        await asyncio.to_thread(with_connection, short_broker.bootstrap, join_silent)
        await punctual.beat(conn)
        assert len(punctual.partitions(topic_id)) == 1
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 6.0
        while len(punctual.partitions(topic_id)) < 2:
            assert loop.time() < deadline, "the silent member never expired"
            await asyncio.sleep(0.5)
            await punctual.beat(conn)  # asserts no error: never fenced
        described = await describe_one(conn, group)
        assert [m.member_id for m in described.members] == [punctual.member_id]
        for _ in range(3):  # and it stays
            await asyncio.sleep(0.5)
            await punctual.beat(conn)
        assert punctual.partitions(topic_id) == (0, 1)

    with_connection(short_broker.bootstrap, go)


def test_51_group_max_size_reached(small_broker: BrokerProcess) -> None:
    topic = topic_name("t")
    create_topic(small_broker.bootstrap, topic)
    group = group_name()

    async def go(conn: Connection) -> None:
        first, second, third = Member(group), Member(group), Member(group)
        await first.join(conn, [topic])
        await second.join(conn, [topic])
        refused = await third.send(conn, 0, [topic])
        assert refused.error_code == ErrorCode.group_max_size_reached
        assert refused.error_message
        rejoin = await first.send(conn, 0, [topic])
        assert rejoin.error_code == ErrorCode.none, "a known member may always rejoin"
        await second.leave(conn)
        admitted = await third.send(conn, 0, [topic])
        assert admitted.error_code == ErrorCode.none

    with_connection(small_broker.bootstrap, go)


def test_58_share_heartbeat_on_a_classic_group(broker: BrokerProcess) -> None:
    """One group id is one type: a share heartbeat on a classic group (made by a
    simple offset commit) is GROUP_ID_NOT_FOUND, a JoinGroup on a share group
    INCONSISTENT_GROUP_PROTOCOL."""
    topic, classic, share = topic_name("t"), topic_name("classic"), topic_name("share")
    create_topic(broker.bootstrap, topic)
    committed = call1(broker.bootstrap, commit_request(8, classic, {(topic, 0): 1}))
    assert committed.topics[0].partitions[0].error_code == ErrorCode.none

    async def go(conn: Connection) -> None:
        refused = await Member(classic).send(conn, 0, [topic])
        assert refused.error_code == ErrorCode.group_id_not_found
        joined = await Member(share).join(conn, [topic])
        assert joined.error_code == ErrorCode.none

    with_connection(broker.bootstrap, go)
    join = call1(broker.bootstrap, join_request(5, share))
    assert join.error_code == ErrorCode.inconsistent_group_protocol


def test_a16_share_version_zero_answers_unsupported_version(
    disabled_broker: BrokerProcess,
) -> None:
    topic = topic_name("t")
    create_topic(disabled_broker.bootstrap, topic)
    versions = call1(disabled_broker.bootstrap, api_versions_request())
    served = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in versions.api_keys}
    assert served[76] == (1, 1) and served[77] == (1, 1), "still advertised"

    async def go(conn: Connection) -> None:
        response = await conn.request(heartbeat("g", "m", 0, [topic]).build(1))
        assert response.error_code == ErrorCode.unsupported_version
        assert response.assignment is None
        described = await conn.request(requests.share_group_describe(["g", "h"]).build(1))
        assert [(g.group_id, g.error_code) for g in described.groups] == [
            ("g", ErrorCode.unsupported_version),
            ("h", ErrorCode.unsupported_version),
        ]

    with_connection(disabled_broker.bootstrap, go)
