"""SyncGroup (14) v0-v5: the leader hands out assignments; everyone gets theirs.

A follower's answer waits for the leader's SyncGroup (parked by the group service);
rules in group/classic/groups.py. ProtocolType and ProtocolName (v5) must match the
group's, else INCONSISTENT_GROUP_PROTOCOL. A classic member of a consumer group
gets the assignment the coordinator computed, at once (group/consumer/classic_members.py).

Authorization: READ on the group (GROUP_AUTHORIZATION_FAILED), as in Kafka.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.coordinator import RecordSinkFull
from shoal.group.classic.state import SyncRequest, SyncResponse
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 14
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 5, parks=True)
async def handle(ctx: RequestContext, request: Any) -> Any:
    if not authz.allowed(ctx, AclOperation.READ, authz.GROUP, request.group_id):
        response = SyncResponse(error=ErrorCode.group_authorization_failed)
    else:
        try:
            response = await ctx.services.group_service.classic.sync(
                SyncRequest(
                    group_id=request.group_id,
                    member_id=request.member_id,
                    generation_id=int(request.generation_id),
                    group_instance_id=getattr(request, "group_instance_id", None),
                    protocol_type=getattr(request, "protocol_type", None),
                    protocol_name=getattr(request, "protocol_name", None),
                    assignments={a.member_id: bytes(a.assignment) for a in request.assignments},
                )
            )
        except RecordSinkFull as exc:
            log.error("SyncGroup of group %r not written: %s", request.group_id, exc)
            response = SyncResponse(error=ErrorCode.coordinator_not_available)
    if response.error is not None:
        log.info(
            "SyncGroup of member %r of group %r at generation %d: %s (client %s)",
            request.member_id,
            request.group_id,
            request.generation_id,
            response.error,
            ctx.client_id,
        )
    schema = response_schema(API_KEY, ctx.api_version)
    return schema.response(
        throttle_time=_ZERO,
        error_code=ErrorCode.none if response.error is None else response.error,
        protocol_type=response.protocol_type,
        protocol_name=response.protocol_name,
        assignment=response.assignment,
    )
