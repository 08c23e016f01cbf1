"""ListConfigResources (74) v0-v1 (v0 was ListClientMetricsResources): which config
resources exist.

As Kafka 4.2 answers on one node:
- v0 lists client metrics resources only (resource names, no types): those that set
  a config (server/metadata/client_metrics_configs.py).
- v1 lists, for each resource type asked (none: every type), TOPIC: every topic,
  internal ones included; BROKER and BROKER_LOGGER: this node's id; GROUP: every group
  that sets a config (group/configs.py: a group without overrides is not listed,
  existing or not); CLIENT_METRICS: every client metrics resource. Any other type
  answers UNSUPPORTED_VERSION with an empty list, as Kafka does.

Authorization (Kafka's handleListConfigResources): DESCRIBE_CONFIGS on the cluster,
else CLUSTER_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.metadata.config_resources import ResourceType
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 74
_ZERO = datetime.timedelta(0)
LISTED_TYPES = (
    ResourceType.TOPIC,
    ResourceType.BROKER,
    ResourceType.BROKER_LOGGER,
    ResourceType.CLIENT_METRICS,
    ResourceType.GROUP,
)
"""The types v1 accepts (Kafka's supported config resource types)."""


@api(API_KEY, 0, 1)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    if not authz.cluster_allowed(ctx, AclOperation.DESCRIBE_CONFIGS):
        return _answer(schema, ErrorCode.cluster_authorization_failed, [])
    services = ctx.services
    if ctx.api_version == 0:  # client metrics resources only
        names = services.config.client_metrics.names()
        return _answer(schema, ErrorCode.none, [(ResourceType.CLIENT_METRICS, n) for n in names])
    asked = [int(t) for t in request.resource_types] or [int(t) for t in LISTED_TYPES]
    unknown = [t for t in asked if t not in {int(t) for t in LISTED_TYPES}]
    if unknown:
        log.info(
            "ListConfigResources of unsupported resource types %s (client %s)",
            unknown,
            ctx.client_id,
        )
        return _answer(schema, ErrorCode.unsupported_version, [])
    resources: list[tuple[int, str]] = []
    for resource_type in dict.fromkeys(asked):
        if resource_type == ResourceType.TOPIC:
            resources += [(resource_type, info.name) for info in services.logs.topics()]
        elif resource_type in (ResourceType.BROKER, ResourceType.BROKER_LOGGER):
            resources.append((resource_type, str(services.node.node_id)))
        elif resource_type == ResourceType.GROUP:
            group_ids = services.group_configs.configs.group_ids()
            resources += [(resource_type, group_id) for group_id in group_ids]
        elif resource_type == ResourceType.CLIENT_METRICS:
            names = services.config.client_metrics.names()
            resources += [(resource_type, name) for name in names]
    return _answer(schema, ErrorCode.none, resources)


def _answer(schema: Schema, code: ErrorCode, resources: list[tuple[int, str]]) -> Any:
    entries = tuple(  # v0 has no resource_type: `make` leaves it out
        schema.make("ConfigResource", resource_name=n, resource_type=t) for t, n in resources
    )
    return schema.response(throttle_time=_ZERO, error_code=code, config_resources=entries)
