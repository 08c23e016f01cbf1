"""ListGroups (16) v0-v5: the groups this coordinator holds.

Share groups list with ProtocolType "share", GroupState "Empty" or "Stable" (v4+;
"Dead" while a deletion finishes) and GroupType "share" (v5+); classic groups with
their protocol type (e.g. "consumer", "" for offsets-only groups), their state
(Empty, PreparingRebalance, CompletingRebalance, Stable) and GroupType "classic".
StatesFilter (v4+) and TypesFilter (v5+) are case-insensitive; empty = all.
Versions before the filters list every group, share groups included, as Kafka does.

Authorization (Kafka's handleListGroupsRequest): with DESCRIBE on the cluster every
group is listed, otherwise only the groups the principal may DESCRIBE.
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

API_KEY = 16
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 5)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    listed = ctx.services.group_service.list_groups(
        states_filter=getattr(request, "states_filter", ()),
        types_filter=getattr(request, "types_filter", ()),
    )
    if not authz.cluster_allowed(ctx, AclOperation.DESCRIBE):
        visible = authz.filter_allowed(
            ctx, AclOperation.DESCRIBE, authz.GROUP, (g.group_id for g in listed)
        )
        listed = [g for g in listed if g.group_id in visible]
    groups = tuple(
        schema.make(
            "ListedGroup",
            group_id=group.group_id,
            protocol_type=group.protocol_type,
            group_state=group.group_state,
            group_type=group.group_type,
        )
        for group in listed
    )
    return schema.response(throttle_time=_ZERO, error_code=ErrorCode.none, groups=groups)
