"""DeleteAcls (31) v1-v3 (Kafka 4 removed v0): remove every binding each filter matches,
and list them per filter.

Needs ALTER on the cluster (else every filter result is CLUSTER_AUTHORIZATION_FAILED);
without an authorizer every filter result is SECURITY_DISABLED. A filter with the code 0
(UNKNOWN) closes the connection, as Kafka cannot parse it (acl_wire.py); a filter with
an unassigned code (read as UNKNOWN) gets INVALID_REQUEST alone. A binding several
filters match is listed under each. The response is sent after the smaller set is on
disk.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common.acl_wire import (
    FILTER_CODES,
    NO_AUTHORIZER_MESSAGE,
    filter_from_wire,
    unknown_elements,
)
from shoal.server.handlers.common.authorization import cluster_refusal
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 31
_ZERO = datetime.timedelta(0)


@api(API_KEY, 1, 3)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    unknown_elements(request.filters, "DeleteAcls filters", *FILTER_CODES)

    def filter_result(code: ErrorCode, message: str | None, matching: tuple[Any, ...]) -> Any:
        return schema.make(
            "DeleteAclsFilterResult", error_code=code, error_message=message, matching_acls=matching
        )

    def respond(results: list[Any]) -> Any:
        return schema.response(throttle_time=_ZERO, filter_results=tuple(results))

    refusal = cluster_refusal(ctx, AclOperation.ALTER)
    if refusal is not None:
        return respond([filter_result(*refusal, ()) for _ in request.filters])
    store = ctx.services.acls
    if store is None:
        disabled = filter_result(ErrorCode.security_disabled, NO_AUTHORIZER_MESSAGE, ())
        return respond([disabled for _ in request.filters])
    filters = [filter_from_wire(item) for item in request.filters]
    problems = [f.problem() for f in filters]
    valid = [f for f, problem in zip(filters, problems, strict=True) if problem is None]
    try:
        matched = iter(await ctx.services.disk.changes.run(lambda: store.delete(valid)))
    except OSError as exc:
        log.error("DeleteAcls could not persist the ACLs: %s (client %s)", exc, ctx.client_id)
        failed = filter_result(ErrorCode.unknown_server_error, f"ACLs not persisted: {exc}", ())
        return respond([failed for _ in request.filters])
    results = []
    for problem in problems:
        if problem is not None:
            results.append(filter_result(ErrorCode.invalid_request, problem, ()))
            continue
        matching = tuple(
            schema.make(
                "DeleteAclsMatchingAcl",
                error_code=ErrorCode.none,
                error_message=None,
                resource_type=acl.resource_type,
                resource_name=acl.name,
                pattern_type=acl.pattern_type,
                principal=acl.principal,
                host=acl.host,
                operation=acl.operation,
                permission_type=acl.permission,
            )
            for acl in next(matched)
        )
        results.append(filter_result(ErrorCode.none, None, matching))
    return respond(results)
