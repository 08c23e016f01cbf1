"""LeaveGroup (13) v0-v5: members leave a classic group (group/classic/groups.py).

v0-v2 name one member (MemberId) and answer one error; v3+ name a batch of members
(MemberId and/or GroupInstanceId) and answer one error each. The group rebalances.
Classic members of a consumer group leave it the same way; the group may then become
classic again (group/consumer/migration.py).

Authorization: READ on the group (GROUP_AUTHORIZATION_FAILED at the top level, no
member results), as in Kafka.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.coordinator import RecordSinkFull
from shoal.group.classic.state import (
    LeaveResponse,
    LeavingMember,
)
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 13
_ZERO = datetime.timedelta(0)
_BATCH_MIN_VERSION = 3


@api(API_KEY, 0, 5)
async def handle(ctx: RequestContext, request: Any) -> Any:
    batch = ctx.api_version >= _BATCH_MIN_VERSION
    if batch:
        members = tuple(
            LeavingMember(member_id=m.member_id, group_instance_id=m.group_instance_id)
            for m in request.members
        )
    else:
        members = (LeavingMember(member_id=request.member_id, group_instance_id=None),)
    if not authz.allowed(ctx, AclOperation.READ, authz.GROUP, request.group_id):
        response = LeaveResponse(error=ErrorCode.group_authorization_failed)
    else:
        try:
            response = ctx.services.group_service.classic.leave(
                group_id=request.group_id, members=members
            )
        except RecordSinkFull as exc:
            log.error("LeaveGroup of group %r not written: %s", request.group_id, exc)
            response = LeaveResponse(error=ErrorCode.coordinator_not_available)
    schema = response_schema(API_KEY, ctx.api_version)
    top = response.error
    if not batch and top is None and response.members:
        top = response.members[0][1]
    if not batch:
        return schema.response(
            throttle_time=_ZERO, error_code=ErrorCode.none if top is None else top
        )
    return schema.response(
        throttle_time=_ZERO,
        error_code=ErrorCode.none if top is None else top,
        members=tuple(
            schema.make(
                "MemberResponse",
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                error_code=ErrorCode.none if error is None else error,
            )
            for m, error in response.members
        ),
    )
