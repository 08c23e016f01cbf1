"""IncrementalAlterConfigs (44) v0-v1: change topic, broker and share-group configs.

Each resource's operations (SET, DELETE, APPEND and SUBTRACT on LIST keys) are applied
to its current settings and the result is validated as a whole; any problem refuses
the whole resource and nothing of it changes (INVALID_CONFIG naming the key for an
unknown key or a bad value, INVALID_REQUEST for a repeated key, a null value or an
unknown operation). A resource named twice in one request gets INVALID_REQUEST. With
ValidateOnly nothing changes.

- TOPIC (2): the topic's overrides are replaced through the log manager (topics.json
  written in a disk worker), which then applies them live; an unknown topic gets
  UNKNOWN_TOPIC_OR_PARTITION, a failed write KAFKA_STORAGE_ERROR.
- BROKER (4): name = this node's id changes the per-broker dynamic layer, "" the
  cluster-wide one (server/dynamic_config.py); only dynamic keys may be set ("cannot be
  updated dynamically" otherwise). The new configuration is persisted, then adopted.
- GROUP (32): name = group id (the group need not exist; "" is INVALID_REQUEST, as
  Kafka's controller answers "Default group resources are not allowed."). SET and
  DELETE (APPEND/SUBTRACT: INVALID_CONFIG, no share key is a LIST); the group's whole
  resulting set is checked against the current broker bounds (group/configs.py), then
  persisted and adopted by the group config store (`services.group_configs`), whose
  listeners (the share service) are then called with the group id. DELETE makes
  the key fall back to the broker default.

Each resource's change runs in the broker's change lane (`services.disk.changes`):
decided on the state every earlier change left (two alterations of one resource never
lose one another's operations), its file written and fsynced in a disk worker, then
adopted and answered. A request meanwhile (DescribeConfigs, a share-partition reading
its group's configs) sees the state before the change.

Authorization (Kafka's handleIncrementalAlterConfigsRequest), after the duplicate
check: ALTER_CONFIGS on the topic or group (TOPIC_ / GROUP_AUTHORIZATION_FAILED), on the
cluster for a broker (CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import datetime
import functools
import logging
from collections import Counter
from typing import Any

from shoal.config import (
    BROKER_KEYS,
    GROUP_KEYS,
    TOPIC_KEYS,
    ConfigError,
    effective_topic_config,
    render,
    validate_topic_configs,
)
from shoal.group.configs import GroupConfigError
from shoal.log.api import LogError
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server import authorization as authz
from shoal.server.configs import ResourceType, apply_ops, broker_layer_for
from shoal.server.context import RequestContext
from shoal.server.dynamic_config import canonical, check_dynamic_key
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
            change = functools.partial(
                _alter, ctx, resource_type, name, ops, validate_only=bool(request.validate_only)
            )
            await ctx.services.disk.changes.run(change)
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


Ops = list[tuple[str, int, str | None]]


async def _alter(
    ctx: RequestContext, resource_type: int, name: str, ops: Ops, *, validate_only: bool
) -> None:
    """One resource's change, in the broker's change lane: decided on the state every
    earlier change left, answered once durable."""
    if resource_type == ResourceType.TOPIC:
        await _alter_topic(ctx, name, ops, validate_only=validate_only)
    elif resource_type == ResourceType.BROKER:
        await _alter_broker(ctx, name, ops, validate_only=validate_only)
    elif resource_type == ResourceType.GROUP:
        await _alter_group(ctx, name, ops, validate_only=validate_only)
    else:
        raise Refused(ErrorCode.invalid_request, f"Unsupported resource type: {resource_type}")


async def _alter_topic(ctx: RequestContext, name: str, ops: Ops, *, validate_only: bool) -> None:
    services = ctx.services
    info = services.logs.topic(name)
    if info is None:
        raise Refused(ErrorCode.unknown_topic_or_partition, f"Topic {name} does not exist.")
    effective = effective_topic_config(services.config.current, info.configs)
    current = {key: render(TOPIC_KEYS[key], value) or "" for key, value in info.configs.items()}
    updated = apply_ops(
        current,
        ops,
        definitions=TOPIC_KEYS,
        effective_value=lambda key: render(TOPIC_KEYS[key], effective[key]),
        kind="topic",
    )
    try:
        typed = validate_topic_configs(updated)
    except ConfigError as exc:
        raise Refused(exc.code, str(exc)) from exc
    if validate_only:
        return
    try:
        change = services.logs.plan_topic_configs(name, typed)
        await services.disk.run(change.run)  # topics.json, in a disk worker
        services.logs.finish_topic_change(change)
    except LogError as exc:
        if exc.code is ErrorCode.kafka_storage_error:
            log.error("could not persist the configs of topic %s: %s", name, exc)
        raise Refused(exc.code, str(exc)) from exc
    log.info("topic %s configs now %s (client %s)", name, typed, ctx.client_id)


async def _alter_broker(ctx: RequestContext, name: str, ops: Ops, *, validate_only: bool) -> None:
    services = ctx.services
    layer = broker_layer_for(name, services.node.node_id)
    dynamic = services.config.dynamic
    try:
        for key, _, _ in ops:
            check_dynamic_key(key)
        updated = apply_ops(
            dynamic.layer(layer),
            ops,
            definitions=BROKER_KEYS,
            effective_value=lambda key: render(BROKER_KEYS[key], dynamic.effective[key]),
            kind="broker",
        )
        reconfigured = dynamic.with_layer(
            layer, {key: canonical(key, value) for key, value in updated.items()}
        )
    except ConfigError as exc:
        raise Refused(exc.code, str(exc)) from exc
    if validate_only:
        return
    try:
        await services.config.reconfigure(reconfigured)
    except OSError as exc:
        log.error("could not persist dynamic broker configs: %s", exc)
        raise Refused(ErrorCode.kafka_storage_error, f"could not persist: {exc}") from exc
    log.info(
        "dynamic broker configs (%s layer) now %s (client %s)",
        layer.name.lower(),
        dict(reconfigured.layer(layer)),
        ctx.client_id,
    )


async def _alter_group(
    ctx: RequestContext, group_id: str, ops: Ops, *, validate_only: bool
) -> None:
    if not group_id:
        raise Refused(ErrorCode.invalid_request, "Default group resources are not allowed.")
    store = ctx.services.group_configs
    effective = store.effective(group_id)
    updated = apply_ops(
        store.rendered_overrides(group_id),
        ops,
        definitions=GROUP_KEYS,
        effective_value=lambda key: render(GROUP_KEYS[key], effective[key]),
        kind="group",
    )
    try:
        typed = await store.alter(group_id, updated, validate_only=validate_only)
    except GroupConfigError as exc:
        raise Refused(exc.code, exc.message) from exc
    except OSError as exc:
        log.error("could not persist group configs: %s", exc)
        raise Refused(ErrorCode.kafka_storage_error, f"could not persist: {exc}") from exc
    if not validate_only:
        log.info("group %s configs now %s (client %s)", group_id, dict(typed), ctx.client_id)
