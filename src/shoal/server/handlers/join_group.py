"""JoinGroup (11) v0-v9: join a classic group (group/classic/groups.py rules).

The answer waits until the rebalance completes (the group service parks it), except
for errors and v4+ new members, who first get MEMBER_ID_REQUIRED with their id.
A non-empty consumer group answers at once: the member becomes a classic member of
it, assigned by the coordinator (group/consumer/classic_members.py). RebalanceTimeout is the
session timeout before v1, as Kafka reads it. A share group id answers
INCONSISTENT_GROUP_PROTOCOL; a coordinator that cannot write answers
COORDINATOR_NOT_AVAILABLE.

Authorization: READ on the group (GROUP_AUTHORIZATION_FAILED, with no member id), as in Kafka.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.coordinator import RecordSinkFull
from shoal.group.classic.state import JoinRequest, JoinResponse
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.handlers.share_group_heartbeat import client_host
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 11
_ZERO = datetime.timedelta(0)


def _ms(value: datetime.timedelta) -> int:
    return int(value.total_seconds() * 1000)


@api(API_KEY, 0, 9, parks=True)
async def handle(ctx: RequestContext, request: Any) -> Any:
    session_timeout_ms = _ms(request.session_timeout)
    rebalance = getattr(request, "rebalance_timeout", None)
    if not authz.allowed(ctx, AclOperation.READ, authz.GROUP, request.group_id):
        response = JoinResponse(error=ErrorCode.group_authorization_failed)
    else:
        try:
            response = await ctx.services.group_service.classic.join(
                JoinRequest(
                    group_id=request.group_id,
                    member_id=request.member_id,
                    group_instance_id=getattr(request, "group_instance_id", None),
                    protocol_type=request.protocol_type,
                    protocols=tuple((p.name, bytes(p.metadata)) for p in request.protocols),
                    session_timeout_ms=session_timeout_ms,
                    rebalance_timeout_ms=(
                        session_timeout_ms if rebalance is None else _ms(rebalance)
                    ),
                    client_id=ctx.client_id or "",
                    client_host=client_host(ctx),
                    api_version=ctx.api_version,
                )
            )
        except RecordSinkFull as exc:
            log.error("JoinGroup of group %r not written: %s", request.group_id, exc)
            response = JoinResponse(
                error=ErrorCode.coordinator_not_available, member_id=request.member_id
            )
    if response.error not in (None, ErrorCode.member_id_required):
        log.info(
            "JoinGroup of member %r of group %r refused: %s (client %s)",
            request.member_id,
            request.group_id,
            response.error,
            ctx.client_id,
        )
    schema = response_schema(API_KEY, ctx.api_version)
    return schema.response(
        throttle_time=_ZERO,
        error_code=ErrorCode.none if response.error is None else response.error,
        generation_id=response.generation_id,
        protocol_type=response.protocol_type,
        protocol_name=response.protocol_name or ("" if ctx.api_version < 7 else None),
        leader=response.leader,
        skip_assignment=response.skip_assignment,
        member_id=response.member_id,
        members=tuple(
            schema.make(
                "JoinGroupResponseMember",
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                metadata=m.metadata,
            )
            for m in response.members
        ),
    )
