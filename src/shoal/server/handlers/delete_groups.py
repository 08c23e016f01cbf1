"""DeleteGroups (42) v0-v2: delete empty groups of every type
(`GroupCoordinatorShard.delete_any_groups`).

A classic group (group/classic/coordinator.py) or a consumer-protocol group must be
Empty (else NON_EMPTY_GROUP): its records and every committed offset are tombstoned.
An id that names no group is GROUP_ID_NOT_FOUND and an empty id INVALID_GROUP_ID; a
share group with members is NON_EMPTY_GROUP. An empty share group's
share-partition state is deleted first, then every record of the group is tombstoned
(ShareGroupMetadata last), and the share service drops its cached share-partitions:
the same id then starts afresh.
Each distinct id is answered once, in request order. A coordinator that cannot write
its records answers COORDINATOR_NOT_AVAILABLE for every group.

Authorization: DELETE on each group (GROUP_AUTHORIZATION_FAILED, not deleted), as in
Kafka's handleDeleteGroupsRequest.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.coordinator import RecordSinkError
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 42
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 2)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    ids = list(dict.fromkeys(request.groups_names))
    deletable = authz.filter_allowed(ctx, AclOperation.DELETE, authz.GROUP, ids)
    codes: dict[str, ErrorCode] = {
        g: ErrorCode.group_authorization_failed for g in ids if g not in deletable
    }
    codes.update({g: ErrorCode.invalid_group_id for g in ids if not g and g in deletable})
    wanted = [g for g in ids if g and g in deletable]
    try:
        results = ctx.services.group_service.delete_groups(wanted)
    except RecordSinkError as exc:
        log.error("DeleteGroups of %s not written: %s", wanted, exc)
        codes.update({g: ErrorCode.coordinator_not_available for g in wanted})
    else:
        for result in results:
            codes[result.group_id] = ErrorCode.none if result.error is None else result.error
    refused = {g: code.name for g, code in codes.items() if code != ErrorCode.none}
    if refused:
        log.info("DeleteGroups refused for %s (client %s)", refused, ctx.client_id)
    return schema.response(
        throttle_time=_ZERO,
        results=tuple(
            schema.make("DeletableGroupResult", group_id=g, error_code=codes[g]) for g in ids
        ),
    )
