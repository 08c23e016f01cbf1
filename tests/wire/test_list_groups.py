"""ListGroups (16) v0-v5 against a broker process.

Conformance (docs/design/conformance.md): 60 (v5 TypesFilter ["Share"] -> share groups
with type "share"; filters case-insensitive), with StatesFilter (v4+) and the fields
of each version (ProtocolType "share", GroupState "Empty"/"Stable", GroupType "share").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.client.aio import Connection
from shoal.protocol.schema import request_schema
from tests.support.broker import BrokerProcess
from tests.support.classic_groups import commit_request, stable_group
from tests.support.share_groups import Member
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1, with_connection

API_KEY = 16


def list_groups(version: int, *, states: Sequence[str] = (), types: Sequence[str] = ()) -> Any:
    schema = request_schema(API_KEY, version)
    return schema.make("ListGroupsRequest", states_filter=tuple(states), types_filter=tuple(types))


@pytest.fixture(scope="module")
def groups(broker: BrokerProcess) -> tuple[str, str]:
    """A Stable share group and an Empty one, by id."""
    topic = topic_name("t")
    create_topic(broker.bootstrap, topic)
    stable, empty = topic_name("stable"), topic_name("empty")

    async def go(conn: Connection) -> None:
        await Member(stable).join(conn, [topic])
        leaver = Member(empty)
        await leaver.join(conn, [topic])
        await leaver.leave(conn)

    with_connection(broker.bootstrap, go)
    return stable, empty


def listed(broker: BrokerProcess, request: Any, ours: tuple[str, str]) -> dict[str, Any]:
    response = call1(broker.bootstrap, request)
    assert response.error_code == ErrorCode.none
    return {g.group_id: g for g in response.groups if g.group_id in ours}


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_versions_before_filters_list_share_groups(
    broker: BrokerProcess, groups: tuple[str, str], version: int
) -> None:
    found = listed(broker, list_groups(version), groups)
    assert set(found) == set(groups)
    assert {g.protocol_type for g in found.values()} == {"share"}


def test_v4_states_and_states_filter(broker: BrokerProcess, groups: tuple[str, str]) -> None:
    stable, empty = groups
    found = listed(broker, list_groups(4), groups)
    assert {gid: g.group_state for gid, g in found.items()} == {stable: "Stable", empty: "Empty"}
    assert set(listed(broker, list_groups(4, states=["stable"]), groups)) == {stable}
    assert set(listed(broker, list_groups(4, states=["EMPTY"]), groups)) == {empty}
    assert set(listed(broker, list_groups(4, states=["Dead"]), groups)) == set()
    both = listed(broker, list_groups(4, states=["Empty", "Stable"]), groups)
    assert set(both) == set(groups)


@pytest.mark.parametrize("types", [["Share"], ["share"], ["SHARE"], ["consumer", "share"]])
def test_60_v5_types_filter_is_case_insensitive(
    broker: BrokerProcess, groups: tuple[str, str], types: list[str]
) -> None:
    found = listed(broker, list_groups(5, types=types), groups)
    assert set(found) == set(groups)
    for group in found.values():
        assert (group.group_type, group.protocol_type) == ("share", "share")


@pytest.mark.parametrize("types", [["consumer"], ["classic"], ["streams"], ["nonsense"]])
def test_60_other_types_exclude_share_groups(
    broker: BrokerProcess, groups: tuple[str, str], types: list[str]
) -> None:
    assert listed(broker, list_groups(5, types=types), groups) == {}


def test_v5_states_and_types_together(broker: BrokerProcess, groups: tuple[str, str]) -> None:
    stable, _ = groups
    found = listed(broker, list_groups(5, states=["sTaBlE"], types=["Share"]), groups)
    assert set(found) == {stable}
    assert found[stable].group_state == "Stable"


def test_classic_groups_list_with_type_and_state(broker: BrokerProcess) -> None:
    stable, simple, topic = topic_name("lg-stable"), topic_name("lg-simple"), topic_name("lg-t")
    create_topic(broker.bootstrap, topic)
    stable_group(broker.bootstrap, stable)
    call1(broker.bootstrap, commit_request(8, simple, {(topic, 0): 1}))
    found = listed(broker, list_groups(5, types=["Classic"]), (stable, simple))
    assert {g: (x.protocol_type, x.group_state, x.group_type) for g, x in found.items()} == {
        stable: ("consumer", "Stable", "classic"),
        simple: ("", "Empty", "classic"),
    }
    only_share = listed(broker, list_groups(5, types=["share"]), (stable, simple))
    assert only_share == {}
