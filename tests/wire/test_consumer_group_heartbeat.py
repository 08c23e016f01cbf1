"""ConsumerGroupHeartbeat (68) v0-1 and ConsumerGroupDescribe (69) v0-1 against a
broker process, plus OffsetCommit by a consumer-group member (epoch as generation).

Join (v0 gets a coordinator-made member id, v1 keeps the client's), incremental
handover between two members, FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID /
INVALID_REQUEST / UNSUPPORTED_ASSIGNOR, leave, the group-id namespace against share
groups, and describe of members, targets and unknown ids. Errors come back as
error codes on a connection that stays open.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.client.share_requests import heartbeat as share_heartbeat
from shoal.protocol.schema import request_schema
from tests.support.broker import BrokerProcess
from tests.support.classic_groups import commit_request
from tests.support.consumer_wire import beat, describe
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call, call1

TIMEOUT = datetime.timedelta(seconds=30)


def assigned(response: Any) -> dict[uuid.UUID, list[int]]:
    assert response.assignment is not None, response
    return {tp.topic_id: sorted(tp.partitions) for tp in response.assignment.topic_partitions}


@pytest.mark.parametrize("version", [0, 1])
def test_join_heartbeat_leave(broker: BrokerProcess, version: int) -> None:
    topic = topic_name("cg")
    topic_id = create_topic(broker.bootstrap, topic, partitions=3)
    group = topic_name("g")
    member = "" if version == 0 else "A+b/C+d/E+f/G+h/I+j/K1"
    joined = call1(broker.bootstrap, beat(version, group, member, 0, [topic]))
    assert joined.error_code == ErrorCode.none, joined
    assert joined.member_id and (version == 0 or joined.member_id == member)
    assert joined.member_epoch == 1
    assert joined.heartbeat_interval == datetime.timedelta(seconds=5)
    assert assigned(joined) == {topic_id: [0, 1, 2]}
    member_id = joined.member_id
    steady = call1(
        broker.bootstrap, beat(version, group, member_id, 1, owned={topic_id: [0, 1, 2]})
    )
    assert steady.error_code == ErrorCode.none and steady.assignment is None
    fenced = call1(broker.bootstrap, beat(version, group, member_id, 7, owned={}))
    assert fenced.error_code == ErrorCode.fenced_member_epoch
    unknown = call1(broker.bootstrap, beat(version, group, "stranger", 1, owned={}))
    assert unknown.error_code == ErrorCode.unknown_member_id
    (described,) = call1(broker.bootstrap, describe(version, group)).groups
    assert described.error_code == ErrorCode.none
    assert (described.group_state, described.group_epoch, described.assignor_name) == (
        "Stable",
        1,
        "uniform",
    )
    (m,) = described.members
    assert m.member_id == member_id and m.member_epoch == 1
    assert [(tp.topic_name, list(tp.partitions)) for tp in m.assignment.topic_partitions] == [
        (topic, [0, 1, 2])
    ]
    left = call1(broker.bootstrap, beat(version, group, member_id, -1))
    assert left.error_code == ErrorCode.none and left.member_epoch == -1
    (empty,) = call1(broker.bootstrap, describe(version, group)).groups
    assert empty.group_state == "Empty" and empty.members == ()


def test_handover_waits_for_revocation(broker: BrokerProcess) -> None:
    topic = topic_name("cg")
    topic_id = create_topic(broker.bootstrap, topic, partitions=2)
    group = topic_name("g")
    a = call1(broker.bootstrap, beat(1, group, "member-a", 0, [topic]))
    assert assigned(a) == {topic_id: [0, 1]}
    b = call1(broker.bootstrap, beat(1, group, "member-b", 0, [topic]))
    assert b.member_epoch == 2 and assigned(b) == {}
    revoke = call1(broker.bootstrap, beat(1, group, "member-a", 1, owned={topic_id: [0, 1]}))
    assert revoke.member_epoch == 1
    kept = assigned(revoke)[topic_id]
    assert len(kept) == 1
    done = call1(broker.bootstrap, beat(1, group, "member-a", 1, owned={topic_id: kept}))
    assert done.member_epoch == 2
    b2 = call1(broker.bootstrap, beat(1, group, "member-b", 2, owned={}))
    assert assigned(b2) == {topic_id: sorted({0, 1} - set(kept))}
    # A member commits at its epoch; an old epoch is stale.
    ok, stale = call(
        broker.bootstrap,
        commit_request(9, group, {(topic, 0): 5}, member_id="member-a", generation=2),
        commit_request(9, group, {(topic, 0): 6}, member_id="member-a", generation=1),
    )
    assert ok.topics[0].partitions[0].error_code == ErrorCode.none
    assert stale.topics[0].partitions[0].error_code == ErrorCode.stale_member_epoch


def test_validation_and_namespace(broker: BrokerProcess) -> None:
    topic = topic_name("cg")
    create_topic(broker.bootstrap, topic)
    group = topic_name("g")
    no_subscription = call1(broker.bootstrap, beat(1, group, "m", 0, None))
    assert no_subscription.error_code == ErrorCode.invalid_request
    assert no_subscription.error_message
    bad_assignor = call1(broker.bootstrap, beat(1, group, "m", 0, [topic], assignor="sticky"))
    assert bad_assignor.error_code == ErrorCode.unsupported_assignor
    too_long = call1(broker.bootstrap, beat(1, group, "m" * 37, 0, [topic]))
    assert too_long.error_code == ErrorCode.invalid_request
    share_group = topic_name("sg")
    joined = call1(broker.bootstrap, share_heartbeat(share_group, "s", 0, [topic]).build(1))
    assert joined.error_code == ErrorCode.none
    refused = call1(broker.bootstrap, beat(1, share_group, "m", 0, [topic]))
    assert refused.error_code == ErrorCode.group_id_not_found
    (unknown, share) = call1(broker.bootstrap, describe(1, "no-such-group", share_group)).groups
    assert unknown.error_code == ErrorCode.group_id_not_found
    assert share.error_code == ErrorCode.group_id_not_found


def test_delete_groups_deletes_only_an_empty_consumer_group(broker: BrokerProcess) -> None:
    topic = topic_name("cg")
    create_topic(broker.bootstrap, topic)
    group = topic_name("g")
    joined = call1(broker.bootstrap, beat(1, group, "member-a", 0, [topic]))
    commit = call1(
        broker.bootstrap,
        commit_request(9, group, {(topic, 0): 3}, member_id="member-a", generation=1),
    )
    assert commit.topics[0].partitions[0].error_code == ErrorCode.none
    delete = request_schema(42, 2).make("DeleteGroupsRequest", groups_names=(group,))
    (busy,) = call1(broker.bootstrap, delete).results
    assert busy.error_code == ErrorCode.non_empty_group
    assert call1(broker.bootstrap, beat(1, group, joined.member_id, -1)).error_code == 0
    (done,) = call1(broker.bootstrap, delete).results
    assert done.error_code == ErrorCode.none
    (gone,) = call1(broker.bootstrap, describe(1, group)).groups
    assert gone.error_code == ErrorCode.group_id_not_found
