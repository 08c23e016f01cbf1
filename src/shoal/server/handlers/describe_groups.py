"""DescribeGroups (15) v0-v5: classic groups, their state and members.

An unknown id, or one of another group type, is described as Dead with no members
and no error (Kafka's answer before v6). Member metadata and assignments are given
while the group is Stable. AuthorizedOperations (v3+) is Kafka's "not requested"
value (Shoal has no ACLs).
"""

from __future__ import annotations

import datetime
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.server.context import RequestContext
from shoal.server.registry import api

API_KEY = 15
_ZERO = datetime.timedelta(0)
_OPERATIONS_NOT_REQUESTED = -(2**31)


@api(API_KEY, 0, 5)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    described = ctx.services.group_service.shard.classic.describe(request.groups)
    return schema.response(
        throttle_time=_ZERO,
        groups=tuple(
            schema.make(
                "DescribedGroup",
                error_code=ErrorCode.none,
                group_id=group.group_id,
                group_state=group.state,
                protocol_type=group.protocol_type,
                protocol_data=group.protocol_data,
                authorized_operations=_OPERATIONS_NOT_REQUESTED,
                members=tuple(
                    schema.make(
                        "DescribedGroupMember",
                        member_id=m.member_id,
                        group_instance_id=m.group_instance_id,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        member_metadata=m.metadata,
                        member_assignment=m.assignment,
                    )
                    for m in group.members
                ),
            )
            for group in described
        ),
    )
