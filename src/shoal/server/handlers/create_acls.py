"""CreateAcls (30) v1-v3 (Kafka 4 removed v0): add ACL bindings, one result each.

Needs ALTER on the cluster (else every result is CLUSTER_AUTHORIZATION_FAILED); without
an authorizer every result is SECURITY_DISABLED. As Kafka 4.2 answers (the reference
broker, tests/differential/test_security.py): a code 0 (UNKNOWN) anywhere closes the
connection (acl_wire.py); a binding with the ANY resource type, operation or
permission, or the ANY / MATCH pattern type fails the whole request, every result
UNKNOWN_SERVER_ERROR without a message and nothing created (Kafka cannot build such a
binding); otherwise a binding Kafka refuses (a CLUSTER name other than kafka-cluster,
an empty name, an unassigned code, a principal without `Type:`) gets INVALID_REQUEST
alone and the others are created. A binding already present succeeds without change.
A success carries the empty message, as Kafka's. The response is sent after the new
set is on disk.
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
    CREATION_CODES,
    NO_AUTHORIZER_MESSAGE,
    binding_from_creation,
    unknown_elements,
)
from shoal.server.handlers.common.authorization import cluster_refusal
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 30
_ZERO = datetime.timedelta(0)


@api(API_KEY, 1, 3)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    unknown_elements(request.creations, "CreatableAcls", *CREATION_CODES)

    def result(code: ErrorCode, message: str | None) -> Any:
        return schema.make("AclCreationResult", error_code=code, error_message=message)

    def respond(results: list[Any]) -> Any:
        return schema.response(throttle_time=_ZERO, results=tuple(results))

    refusal = cluster_refusal(ctx, AclOperation.ALTER)
    if refusal is not None:
        return respond([result(*refusal) for _ in request.creations])
    store = ctx.services.acls
    if store is None:
        disabled = result(ErrorCode.security_disabled, NO_AUTHORIZER_MESSAGE)
        return respond([disabled for _ in request.creations])
    bindings = [binding_from_creation(creation) for creation in request.creations]
    unbuildable = [str(b) for b in bindings if b.unbuildable()]
    if unbuildable:
        log.warning(
            "CreateAcls refused whole (client %s): Kafka cannot build %s",
            ctx.client_id,
            "; ".join(unbuildable),
        )
        failed = result(ErrorCode.unknown_server_error, None)
        return respond([failed for _ in request.creations])
    try:
        outcome = await ctx.services.disk.changes.run(lambda: store.create(bindings))
    except OSError as exc:
        log.error("CreateAcls could not persist the ACLs: %s (client %s)", exc, ctx.client_id)
        failed = result(ErrorCode.unknown_server_error, f"ACLs not persisted: {exc}")
        return respond([failed for _ in request.creations])
    return respond(
        [
            result(ErrorCode.none, "")
            if problem is None
            else result(ErrorCode.invalid_request, problem)
            for problem in outcome.problems
        ]
    )
