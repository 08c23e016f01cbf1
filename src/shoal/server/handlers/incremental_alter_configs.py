"""IncrementalAlterConfigs (44) v0-v1: change topic, broker and group configs by operations.

Each resource's operations (SET, DELETE, APPEND and SUBTRACT on LIST keys;
server/configs.py `apply_ops`) are applied to its current settings, and the result
goes through the one change path of server/config_changes.py (validation as a whole,
durability, Kafka's error codes per resource type). A repeated key, a null value or an
unknown operation is INVALID_REQUEST, an unknown key INVALID_CONFIG (a broker's custom
keys aside). BROKER_LOGGER (8) resources change this process's log levels
(server/logger_configs.py), as Kafka changes its log4j levels. A resource named twice
in one request gets INVALID_REQUEST. With ValidateOnly nothing changes.

Authorization (Kafka's handleIncrementalAlterConfigsRequest), after the duplicate
check: ALTER_CONFIGS on the topic or group (TOPIC_ / GROUP_AUTHORIZATION_FAILED), on the
cluster for a broker (CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import datetime
import logging
from collections import Counter
from collections.abc import Mapping
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server import authorization as authz
from shoal.server.config_changes import Edit, Target, change_loggers, change_resource
from shoal.server.configs import ResourceType, apply_ops
from shoal.server.context import RequestContext
from shoal.server.refused import Refused
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 44
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 1)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    counts = Counter((int(r.resource_type), r.resource_name) for r in request.resources)
    responses = []
    for resource in request.resources:
        resource_type, name = int(resource.resource_type), resource.resource_name
        code, message = ErrorCode.none, None
        try:
            if counts[resource_type, name] > 1:
                raise Refused(ErrorCode.invalid_request, "Each resource must appear at most once.")
            denied = authz.config_resource_denied(
                ctx, AclOperation.ALTER_CONFIGS, resource_type, name
            )
            if denied is not None:
                raise Refused(denied, authz.DENIED_MESSAGES[denied])
            ops = [(c.name, int(c.config_operation), c.value) for c in resource.configs]
            validate_only = bool(request.validate_only)
            if resource_type == ResourceType.BROKER_LOGGER:
                change_loggers(ctx, name, ops, validate_only=validate_only)
            else:
                await change_resource(
                    ctx, resource_type, name, _operations(ops), validate_only=validate_only
                )
        except Refused as exc:
            log.info(
                "IncrementalAlterConfigs of resource %d %r refused (%s): %s (client %s)",
                resource_type,
                name,
                exc.code.name,
                exc.message,
                ctx.client_id,
            )
            code, message = exc.code, exc.message
        responses.append(
            schema.make(
                "AlterConfigsResourceResponse",
                error_code=code,
                error_message=message,
                resource_type=resource_type,
                resource_name=name,
            )
        )
    return schema.response(throttle_time=_ZERO, responses=tuple(responses))


def _operations(ops: list[tuple[str, int, str | None]]) -> Edit:
    def edit(current: Mapping[str, str], target: Target) -> dict[str, str]:
        return apply_ops(
            current,
            ops,
            definitions=target.definitions,
            effective_value=target.effective_value,
            kind=target.kind,
            allow_custom=target.allow_custom,
        )

    return edit
