"""IncrementalAlterConfigs (44) v0-v1: change topic, broker and group configs by operations.

Each resource's operations (SET, DELETE, APPEND and SUBTRACT on LIST keys;
server/metadata/config_resources.py `apply_ops`) are applied to its current settings, and the result
goes through the one change path of server/handlers/common/config_changes.py (validation as a whole,
durability, Kafka's error codes per resource type). A repeated key, a null value or an
unknown operation is INVALID_REQUEST, an unknown key INVALID_CONFIG (a broker's custom
keys aside). BROKER_LOGGER (8) resources change this process's log levels
(server/metadata/logger_configs.py), as Kafka changes its log4j levels. A resource named twice
in one request gets INVALID_REQUEST. With ValidateOnly nothing changes.

Authorization (Kafka's handleIncrementalAlterConfigsRequest), after the duplicate
check: ALTER_CONFIGS on the topic or group (TOPIC_ / GROUP_AUTHORIZATION_FAILED), on the
cluster for a broker (CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from shoal.protocol.schema import response_schema
from shoal.server.context import RequestContext
from shoal.server.handlers.common.config_changes import (
    Edit,
    Target,
    answer_resources,
    change_loggers,
    change_resource,
)
from shoal.server.metadata.config_resources import ResourceType, apply_ops
from shoal.server.registry import api

API_KEY = 44
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 1)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    validate_only = bool(request.validate_only)

    async def change(resource_type: int, name: str, resource: Any) -> None:
        ops = [(c.name, int(c.config_operation), c.value) for c in resource.configs]
        if resource_type == ResourceType.BROKER_LOGGER:
            change_loggers(ctx, name, ops, validate_only=validate_only)
        else:
            await change_resource(
                ctx, resource_type, name, _operations(ops), validate_only=validate_only
            )

    responses = await answer_resources(ctx, "IncrementalAlterConfigs", request, schema, change)
    return schema.response(throttle_time=_ZERO, responses=responses)


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
