"""DescribeGroups (15) v0-v6 against a broker process."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from shoal.protocol.schema import request_schema
from tests.support.broker import BrokerProcess
from tests.support.classic_groups import PROTOCOL, stable_group
from tests.support.topics import topic_name
from tests.support.wire import call1


@pytest.mark.parametrize("version", [0, 5, 6])
def test_stable_group_and_unknown_id(broker: BrokerProcess, version: int) -> None:
    m = stable_group(broker.bootstrap, topic_name("describe"))
    unknown = topic_name("unknown")
    request = request_schema(15, version).make(
        "DescribeGroupsRequest", groups=(m.group_id, unknown), include_authorized_operations=False
    )
    described = {g.group_id: g for g in call1(broker.bootstrap, request).groups}
    group = described[m.group_id]
    assert (group.error_code, group.group_state, group.protocol_type, group.protocol_data) == (
        ErrorCode.none,
        "Stable",
        "consumer",
        "range",
    )
    assert [(x.member_id, x.member_metadata, x.member_assignment) for x in group.members] == [
        (m.member_id, PROTOCOL[1], b"A")
    ]
    missing = described[unknown]
    assert (missing.group_state, missing.members) == ("Dead", ())
    if version >= 6:  # KIP-1043: the unknown id is an error from v6
        assert (missing.error_code, missing.error_message) == (
            ErrorCode.group_id_not_found,
            f"Group {unknown} not found.",
        )
    else:
        assert missing.error_code == ErrorCode.none
