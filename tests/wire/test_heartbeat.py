"""Heartbeat (12) v0-v4 against a broker process."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from tests.support.broker import BrokerProcess
from tests.support.classic_groups import heartbeat_request, stable_group
from tests.support.topics import topic_name
from tests.support.wire import call1


@pytest.mark.parametrize("version", [0, 4])
def test_heartbeat_of_a_stable_member(broker: BrokerProcess, version: int) -> None:
    m = stable_group(broker.bootstrap, topic_name("hb"))
    ok = call1(broker.bootstrap, heartbeat_request(version, m.group_id, m.member_id, m.generation))
    assert ok.error_code == ErrorCode.none
    stale = call1(broker.bootstrap, heartbeat_request(version, m.group_id, m.member_id, 0))
    assert stale.error_code == ErrorCode.illegal_generation
    unknown = call1(broker.bootstrap, heartbeat_request(version, m.group_id, "nobody", 1))
    assert unknown.error_code == ErrorCode.unknown_member_id
    no_group = call1(broker.bootstrap, heartbeat_request(version, topic_name("none"), "x", 1))
    assert no_group.error_code == ErrorCode.unknown_member_id
