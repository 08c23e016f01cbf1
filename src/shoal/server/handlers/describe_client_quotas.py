"""DescribeClientQuotas (48) v0-v1: the client quotas whose entities match a filter.

Needs DESCRIBE_CONFIGS on the cluster (else CLUSTER_AUTHORIZATION_FAILED). A filter
Kafka refuses (a duplicate entity type, an unknown match type, an exact match without
a name, an entity type other than user and client-id) gets INVALID_REQUEST. Each
component matches an entity's name exactly (0), its default (1, a null name) or any
name (2); `strict` keeps only entities with no entity type beyond the components'.
"""

from __future__ import annotations

import datetime
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common.authorization import cluster_refusal
from shoal.server.metadata.quota_store import MatchComponent, filter_problem
from shoal.server.registry import api

API_KEY = 48
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 1)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)

    def refused(code: ErrorCode, message: str) -> Any:
        return schema.response(
            throttle_time=_ZERO, error_code=code, error_message=message, entries=None
        )

    refusal = cluster_refusal(ctx, AclOperation.DESCRIBE_CONFIGS)
    if refusal is not None:
        return refused(*refusal)
    quotas = ctx.services.quotas
    if quotas is None:
        return refused(ErrorCode.invalid_request, "client quotas are not served here")
    components = [
        MatchComponent(str(c.entity_type), int(c.match_type), c.match) for c in request.components
    ]
    problem = filter_problem(components)
    if problem is not None:
        return refused(ErrorCode.invalid_request, problem)
    entries = tuple(
        schema.make(
            "EntryData",
            entity=tuple(
                schema.make("EntityData", entity_type=kind, entity_name=name)
                for kind, name in entity
            ),
            values=tuple(
                schema.make("ValueData", key=key, value=value) for key, value in values.items()
            ),
        )
        for entity, values in quotas.describe(components, strict=bool(request.strict))
    )
    return schema.response(
        throttle_time=_ZERO, error_code=ErrorCode.none, error_message=None, entries=entries
    )
