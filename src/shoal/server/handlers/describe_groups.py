"""DescribeGroups (15) v0-v6: classic groups, their state and members.

An unknown id, or one of another group type, is described as Dead with no members:
without an error before v6; from v6 (KIP-1043) with GROUP_ID_NOT_FOUND and Kafka's
message ("Group G not found." / "Group G is not a classic group."). Member metadata
and assignments are given while the group is Stable. AuthorizedOperations (v3+) is
INT32_MIN unless asked for, then the principal's operations on the group.

Authorization (Kafka's handleDescribeGroupsRequest): DESCRIBE on each group; the others
answer GROUP_AUTHORIZATION_FAILED (listed first, empty state and no members).
"""

from __future__ import annotations

import datetime
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.handlers.common import authorized_operations as ops
from shoal.server.registry import api

API_KEY = 15
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 6)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    allowed = authz.filter_allowed(ctx, AclOperation.DESCRIBE, authz.GROUP, request.groups)
    requested = bool(getattr(request, "include_authorized_operations", False))
    refused = tuple(
        schema.make(
            "DescribedGroup",
            error_code=ErrorCode.group_authorization_failed,
            group_id=group_id,
            group_state="",
            protocol_type="",
            protocol_data="",
            authorized_operations=ops.NOT_REQUESTED,
            members=(),
        )
        for group_id in request.groups
        if group_id not in allowed
    )
    service = ctx.services.group_service
    described = [
        (group, shard.group_type(group_id))
        for group_id in request.groups
        if group_id in allowed
        for shard in [service.shard_of(group_id)]
        for group in shard.classic.describe([group_id])
    ]
    return schema.response(
        throttle_time=_ZERO,
        groups=refused
        + tuple(
            schema.make(
                "DescribedGroup",
                **_missing(ctx.api_version, group_type, group),
                group_id=group.group_id,
                group_state=group.state,
                protocol_type=group.protocol_type,
                protocol_data=group.protocol_data,
                authorized_operations=ops.for_resource(
                    ctx, authz.GROUP, group.group_id, requested=requested
                ),
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
            for group, group_type in described
        ),
    )


NOT_FOUND_MIN_VERSION = 6
"""DescribeGroups answers GROUP_ID_NOT_FOUND for a group it cannot describe from v6."""


def _missing(version: int, group_type: str | None, group: Any) -> dict[str, Any]:
    """The error fields of a described group: GROUP_ID_NOT_FOUND (v6+) for a Dead one."""
    if version < NOT_FOUND_MIN_VERSION or group.state != "Dead":
        return {"error_code": ErrorCode.none}
    message = (
        f"Group {group.group_id} not found."
        if group_type in (None, "classic")
        else f"Group {group.group_id} is not a classic group."
    )
    return {"error_code": ErrorCode.group_id_not_found, "error_message": message}
