"""SyncGroup (14) v0-v5 against a broker process: the leader's assignment comes
back; a stale generation or unknown member is refused."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from tests.support.broker import BrokerProcess
from tests.support.classic_groups import join_request, stable_group, sync_request
from tests.support.topics import topic_name
from tests.support.wire import call1


@pytest.mark.parametrize("version", [0, 5])
def test_leader_assignment_is_returned(broker: BrokerProcess, version: int) -> None:
    group = topic_name("sync")
    joined = call1(broker.bootstrap, join_request(3, group))
    synced = call1(
        broker.bootstrap,
        sync_request(
            version, group, joined.member_id, joined.generation_id, {joined.member_id: b"x"}
        ),
    )
    assert synced.error_code == ErrorCode.none and synced.assignment == b"x"
    if version >= 5:
        assert (synced.protocol_type, synced.protocol_name) == ("consumer", "range")


def test_stale_generation_and_unknown_member(broker: BrokerProcess) -> None:
    member = stable_group(broker.bootstrap, topic_name("sync-err"))
    stale = call1(broker.bootstrap, sync_request(3, member.group_id, member.member_id, 0, {}))
    assert stale.error_code == ErrorCode.illegal_generation
    unknown = call1(broker.bootstrap, sync_request(3, member.group_id, "nobody", 1, {}))
    assert unknown.error_code == ErrorCode.unknown_member_id
    again = call1(broker.bootstrap, sync_request(3, member.group_id, member.member_id, 1, {}))
    assert again.error_code == ErrorCode.none and again.assignment == b"A"  # Stable: stored one
