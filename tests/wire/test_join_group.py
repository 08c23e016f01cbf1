"""JoinGroup (11) v0-v9 against a broker process: MEMBER_ID_REQUIRED for v4+ new
members, the leader's answer after the initial rebalance delay, errors."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.client.aio import Connection
from tests.support.broker import BrokerProcess
from tests.support.classic_groups import PROTOCOL, join_request
from tests.support.share_groups import Member
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1, send, with_connection


@pytest.mark.parametrize("version", [4, 9])
def test_new_member_gets_its_id_then_leads_generation_one(
    broker: BrokerProcess, version: int
) -> None:
    group = topic_name("join")
    first = call1(broker.bootstrap, join_request(version, group))
    assert first.error_code == ErrorCode.member_id_required
    assert first.member_id
    joined = call1(broker.bootstrap, join_request(version, group, member_id=first.member_id))
    assert joined.error_code == ErrorCode.none
    assert (joined.generation_id, joined.leader, joined.member_id) == (
        1,
        first.member_id,
        first.member_id,
    )
    assert joined.protocol_name == "range"
    assert [(m.member_id, m.metadata) for m in joined.members] == [(first.member_id, PROTOCOL[1])]


def test_v0_joins_without_a_member_id_round_trip(broker: BrokerProcess) -> None:
    joined = call1(broker.bootstrap, join_request(0, topic_name("join-v0")))
    assert joined.error_code == ErrorCode.none and joined.generation_id == 1


def test_two_members_join_one_generation(broker: BrokerProcess) -> None:
    group = topic_name("join-two")

    async def go(conn: Connection) -> list[Any]:
        other = await Connection.open(*_host_port(broker), client_id="b", timeout_s=10)
        try:
            return list(
                await asyncio.gather(
                    send(conn, join_request(3, group)), send(other, join_request(3, group))
                )
            )
        finally:
            await other.close()

    a, b = with_connection(broker.bootstrap, go)
    assert a.generation_id == b.generation_id == 1
    assert a.leader == b.leader
    leaders = [r for r in (a, b) if r.members]
    assert len(leaders) == 1 and len(leaders[0].members) == 2


def test_errors(broker: BrokerProcess) -> None:
    bad_timeout = call1(
        broker.bootstrap,
        join_request(5, topic_name("j"), session=datetime.timedelta(milliseconds=1)),
    )
    assert bad_timeout.error_code == ErrorCode.invalid_session_timeout
    unknown = call1(broker.bootstrap, join_request(5, topic_name("j"), member_id="nobody"))
    assert unknown.error_code == ErrorCode.unknown_member_id
    assert call1(broker.bootstrap, join_request(5, "")).error_code == ErrorCode.invalid_group_id


def test_a_share_group_id_is_inconsistent(broker: BrokerProcess) -> None:
    topic, group = topic_name("t"), topic_name("share")
    create_topic(broker.bootstrap, topic)

    async def go(conn: Connection) -> None:
        await Member(group).join(conn, [topic])

    with_connection(broker.bootstrap, go)
    refused = call1(broker.bootstrap, join_request(5, group))
    assert refused.error_code == ErrorCode.inconsistent_group_protocol


def _host_port(broker: BrokerProcess) -> tuple[str, int]:
    host, _, port = broker.bootstrap.rpartition(":")
    return host, int(port)


def test_ten_thousand_protocols_get_an_answer(broker: BrokerProcess) -> None:
    """Hostile input: a huge protocol list is answered, the connection stays."""
    protocols = tuple((f"p{i}", b"") for i in range(10_000))
    joined = call1(broker.bootstrap, join_request(3, topic_name("many"), protocols=protocols))
    assert joined.error_code == ErrorCode.none and joined.protocol_name == "p0"
    assert len(joined.members) == 1
