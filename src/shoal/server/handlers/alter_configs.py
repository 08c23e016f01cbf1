"""AlterConfigs (33) v0-v2: replace the configs of topics, brokers and groups.

Kafka's older, non-incremental API: the configs a resource is given REPLACE its own
settings (a topic's overrides, the broker's per-broker or cluster-wide dynamic layer,
a group's overrides); every key not given goes back to its default. Otherwise it is
IncrementalAlterConfigs' change, through the one path of server/handlers/common/config_changes.py
(validation of the whole result, durability, validate_only, Kafka's error codes per
resource type). A null value is INVALID_REQUEST. Kafka's AlterConfigs knows no
BROKER_LOGGER resource: that type, like any other unknown one, is INVALID_REQUEST
("Unknown resource type 8").

Authorization (Kafka's handleAlterConfigsRequest): ALTER_CONFIGS on the topic or group
(TOPIC_ / GROUP_AUTHORIZATION_FAILED), on the cluster for a broker
(CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import datetime
from typing import Any

from shoal.protocol.schema import response_schema
from shoal.server.context import RequestContext
from shoal.server.handlers.common.config_changes import (
    answer_resources,
    change_resource,
    replace_all,
)
from shoal.server.registry import api

API_KEY = 33
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 2)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    validate_only = bool(request.validate_only)

    async def change(resource_type: int, name: str, resource: Any) -> None:
        configs = [(c.name, c.value) for c in resource.configs]
        await change_resource(
            ctx, resource_type, name, replace_all(configs), validate_only=validate_only
        )

    responses = await answer_resources(ctx, "AlterConfigs", request, schema, change)
    return schema.response(throttle_time=_ZERO, responses=responses)
