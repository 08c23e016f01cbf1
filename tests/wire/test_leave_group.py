"""LeaveGroup (13) v0-v5 against a broker process: one member (v0-v2), a batch with
one error per member (v3+); the group is Empty after its last member left."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from shoal.protocol.schema import request_schema
from tests.support.broker import BrokerProcess
from tests.support.classic_groups import heartbeat_request, stable_group
from tests.support.topics import topic_name
from tests.support.wire import call1


def test_v0_leave(broker: BrokerProcess) -> None:
    m = stable_group(broker.bootstrap, topic_name("leave0"))
    request = request_schema(13, 0).make(
        "LeaveGroupRequest", group_id=m.group_id, member_id=m.member_id
    )
    assert call1(broker.bootstrap, request).error_code == ErrorCode.none
    after = call1(broker.bootstrap, heartbeat_request(0, m.group_id, m.member_id, m.generation))
    assert after.error_code == ErrorCode.unknown_member_id


def test_v5_batch_leave(broker: BrokerProcess) -> None:
    m = stable_group(broker.bootstrap, topic_name("leave5"))
    schema = request_schema(13, 5)
    request = schema.make(
        "LeaveGroupRequest",
        group_id=m.group_id,
        members=(
            schema.make(
                "MemberIdentity", member_id=m.member_id, group_instance_id=None, reason="bye"
            ),
            schema.make("MemberIdentity", member_id="ghost", group_instance_id=None, reason=None),
        ),
    )
    response = call1(broker.bootstrap, request)
    assert response.error_code == ErrorCode.none
    assert [(r.member_id, r.error_code) for r in response.members] == [
        (m.member_id, ErrorCode.none),
        ("ghost", ErrorCode.unknown_member_id),
    ]
    unknown_group = schema.make("LeaveGroupRequest", group_id=topic_name("none"), members=())
    assert call1(broker.bootstrap, unknown_group).error_code == ErrorCode.unknown_member_id
