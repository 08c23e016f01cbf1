"""DescribeConfigs (32) v1-v4: the configs of topics, of the broker and of groups, with
the keys, values, sources, flags and synonyms Kafka 4.2 shows (docs/reference/configs.md).

Resource types (see server/metadata/config_resources.py for values, sources and synonyms):
- TOPIC (2), name = topic: every topic key with its effective value; an unknown topic
  gets UNKNOWN_TOPIC_OR_PARTITION.
- BROKER (4), name = this node's id: every broker key (read-only unless it can change
  dynamically) and any custom key set dynamically (sensitive, type UNKNOWN); name "":
  only the cluster-wide dynamic settings, as Kafka shows its cluster defaults; any
  other name INVALID_REQUEST.
- GROUP (32), name = group id (the group need not exist): every group key (share,
  consumer and streams keys) with its effective value, source GROUP_CONFIG when the
  group sets it, else DEFAULT_CONFIG; never read-only. An empty name is
  INVALID_REQUEST ("Group name must not be empty"), as in Kafka's ConfigHelper.
- BROKER_LOGGER (8), name = this node's id: every logger of the process with its level
  (server/metadata/logger_configs.py), as Kafka lists its log4j loggers.
- CLIENT_METRICS (16), name = subscription (it need not exist): its three keys, as
  Kafka shows them (server/metadata/client_metrics_configs.py).
- Other types: INVALID_REQUEST.

ConfigurationKeys null or empty means every key; unknown keys are left out, as in Kafka.
Synonyms only with IncludeSynonyms; ConfigType from v3; Documentation from v3 and only
with IncludeDocumentation.

Authorization (Kafka's handleDescribeConfigsRequest): DESCRIBE_CONFIGS on the topic or
group (TOPIC_ / GROUP_AUTHORIZATION_FAILED), on the cluster for a broker
(CLUSTER_AUTHORIZATION_FAILED).
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
from shoal.server.metadata.config_resources import (
    ConfigEntry,
    ResourceType,
    broker_entries,
    broker_layer_for,
    check_logger_node,
    client_metrics_entries,
    group_entries,
    logger_entries,
    topic_entries,
)
from shoal.server.refused import Refused
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 32
_ZERO = datetime.timedelta(0)


@api(API_KEY, 1, 4)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    include_synonyms = bool(request.include_synonyms)
    include_documentation = bool(getattr(request, "include_documentation", False))
    results = []
    for resource in request.resources:
        resource_type, name = int(resource.resource_type), resource.resource_name
        try:
            denied = authz.config_resource_denied(
                ctx, AclOperation.DESCRIBE_CONFIGS, resource_type, name
            )
            if denied is not None:
                raise Refused(denied, authz.DENIED_MESSAGES[denied])
            entries = _entries(ctx, resource_type, name)
        except Refused as exc:
            log.info(
                "DescribeConfigs of resource %d %r refused (%s): %s (client %s)",
                resource_type,
                name,
                exc.code.name,
                exc.message,
                ctx.client_id,
            )
            results.append(_result(schema, resource, exc.code, exc.message, ()))
            continue
        wanted = set(resource.configuration_keys or ())
        configs = tuple(
            _config(schema, entry, include_synonyms, include_documentation)
            for entry in entries
            if not wanted or entry.name in wanted
        )
        results.append(_result(schema, resource, ErrorCode.none, None, configs))
    return schema.response(throttle_time=_ZERO, results=tuple(results))


def _entries(ctx: RequestContext, resource_type: int, name: str) -> list[ConfigEntry]:
    services = ctx.services
    if resource_type == ResourceType.TOPIC:
        info = services.logs.topic(name)
        if info is None:
            raise Refused(ErrorCode.unknown_topic_or_partition, f"Topic {name} does not exist.")
        return topic_entries(info.configs, services.config.dynamic)
    if resource_type == ResourceType.BROKER:
        layer = broker_layer_for(name, services.node.node_id, describe=True)
        return broker_entries(services.config.dynamic, layer)
    if resource_type == ResourceType.GROUP:
        if not name:
            raise Refused(ErrorCode.invalid_request, "Group name must not be empty")
        return group_entries(services.group_configs.overrides(name), services.config.dynamic)
    if resource_type == ResourceType.BROKER_LOGGER:
        check_logger_node(name, services.node.node_id, describe=True)
        return logger_entries()
    if resource_type == ResourceType.CLIENT_METRICS:
        if not name:
            raise Refused(
                ErrorCode.invalid_request, "Client metrics subscription name must not be empty"
            )
        return client_metrics_entries(services.config.client_metrics.settings(name))
    raise Refused(ErrorCode.invalid_request, f"Unsupported resource type: {resource_type}")


def _config(
    schema: Schema, entry: ConfigEntry, include_synonyms: bool, include_documentation: bool
) -> Any:
    # A PASSWORD key (ssl.key.password, ssl.keystore.key, ...) or a custom one is
    # sensitive: Kafka shows neither its value nor its synonyms' values.
    sensitive = entry.sensitive
    synonyms = tuple(
        schema.make(
            "DescribeConfigsSynonym",
            name=s.name,
            value=None if sensitive else s.value,
            source=int(s.source),
        )
        for s in (entry.synonyms if include_synonyms else ())
    )
    return schema.make(
        "DescribeConfigsResourceResult",
        name=entry.name,
        value=None if sensitive else entry.value,
        read_only=entry.read_only,
        config_source=int(entry.source),
        is_sensitive=sensitive,
        synonyms=synonyms,
        config_type=int(entry.config_type),
        documentation=(entry.definition.doc or None) if include_documentation else None,
    )


def _result(
    schema: Schema,
    resource: Any,
    code: ErrorCode,
    message: str | None,
    configs: tuple[Any, ...],
) -> Any:
    return schema.make(
        "DescribeConfigsResult",
        error_code=code,
        error_message=message,
        resource_type=int(resource.resource_type),
        resource_name=resource.resource_name,
        configs=configs,
    )
