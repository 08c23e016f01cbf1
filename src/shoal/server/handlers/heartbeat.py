"""Heartbeat (12) v0-v4: a classic member says it is alive (group/classic/groups.py).

REBALANCE_IN_PROGRESS tells the member to rejoin; ILLEGAL_GENERATION,
UNKNOWN_MEMBER_ID and FENCED_INSTANCE_ID that it is no longer (or not) a member.
A classic member of a consumer group is told to rejoin when its assignment changes
(group/consumer/classic_members.py).

Authorization: READ on the group (GROUP_AUTHORIZATION_FAILED), as in Kafka.
"""

from __future__ import annotations

import datetime
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.registry import api

API_KEY = 12
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 4)
async def handle(ctx: RequestContext, request: Any) -> Any:
    if not authz.allowed(ctx, AclOperation.READ, authz.GROUP, request.group_id):
        error: ErrorCode | None = ErrorCode.group_authorization_failed
    else:
        error = ctx.services.group_service.classic.heartbeat(
            group_id=request.group_id,
            member_id=request.member_id,
            generation_id=int(request.generation_id),
            group_instance_id=getattr(request, "group_instance_id", None),
        )
    schema = response_schema(API_KEY, ctx.api_version)
    return schema.response(
        throttle_time=_ZERO, error_code=ErrorCode.none if error is None else error
    )
