"""AlterConfigs (33) v0-v2: replace the configs of topics, brokers and groups.

Kafka's older, non-incremental API: the configs a resource is given REPLACE its own
settings (a topic's overrides, the broker's per-broker or cluster-wide dynamic layer,
a group's overrides); every key not given goes back to its default. Otherwise it is
IncrementalAlterConfigs' change, through the one path of server/config_changes.py
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
import logging
from collections import Counter
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server import authorization as authz
from shoal.server.config_changes import change_resource, replace_all
from shoal.server.context import RequestContext
from shoal.server.refused import Refused
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 33
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 2)
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
            configs = [(c.name, c.value) for c in resource.configs]
            await change_resource(
                ctx,
                resource_type,
                name,
                replace_all(configs),
                validate_only=bool(request.validate_only),
            )
        except Refused as exc:
            log.info(
                "AlterConfigs of resource %d %r refused (%s): %s (client %s)",
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
