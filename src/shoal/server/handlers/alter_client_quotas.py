"""AlterClientQuotas (49) v0-v1: set or remove client quotas, one result per entity.

Needs ALTER_CONFIGS on the cluster (else every entry is CLUSTER_AUTHORIZATION_FAILED).
An entity or op Kafka refuses (an empty or duplicate entity, an unsupported entity
type, an unknown key, a value that is not a positive whole number) gets
INVALID_REQUEST alone; the other entries are applied. `validate_only` checks and
changes nothing. The response is sent after the change is durable in the metadata
log (server/metadata/metadata_log.py); a failed write answers UNKNOWN_SERVER_ERROR and changes
nothing.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.security.quota import Entity
from shoal.server.context import RequestContext
from shoal.server.handlers.common.authorization import cluster_refusal
from shoal.server.metadata.quota_store import QuotaOp
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 49
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 1)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)

    def result(entry: Any, code: ErrorCode, message: str | None) -> Any:
        return schema.make(
            "EntryData",
            error_code=code,
            error_message=message,
            entity=tuple(
                schema.make("EntityData", entity_type=e.entity_type, entity_name=e.entity_name)
                for e in entry.entity
            ),
        )

    def respond(results: list[Any]) -> Any:
        return schema.response(throttle_time=_ZERO, entries=tuple(results))

    refusal = cluster_refusal(ctx, AclOperation.ALTER_CONFIGS)
    if refusal is not None:
        return respond([result(entry, *refusal) for entry in request.entries])
    quotas = ctx.services.quotas
    if quotas is None:
        message = "client quotas are not served here"
        return respond([result(e, ErrorCode.invalid_request, message) for e in request.entries])
    entries: list[tuple[Entity, list[QuotaOp]]] = [
        (
            tuple((str(e.entity_type), e.entity_name) for e in entry.entity),
            [QuotaOp(str(op.key), float(op.value), bool(op.remove)) for op in entry.ops],
        )
        for entry in request.entries
    ]
    try:
        problems = await ctx.services.disk.changes.run(
            lambda: quotas.alter(entries, validate_only=bool(request.validate_only))
        )
    except OSError as exc:
        log.error(
            "AlterClientQuotas could not persist the quotas: %s (client %s)", exc, ctx.client_id
        )
        message = f"client quotas not persisted: {exc}"
        return respond(
            [result(e, ErrorCode.unknown_server_error, message) for e in request.entries]
        )
    return respond(
        [
            result(entry, ErrorCode.none, None)
            if problem is None
            else result(entry, ErrorCode.invalid_request, problem)
            for entry, problem in zip(request.entries, problems, strict=True)
        ]
    )
