"""One config resource's change: the one validation and durability path of
IncrementalAlterConfigs (44) and AlterConfigs (33).

The two APIs differ only in how a resource's new settings follow from its current
ones: IncrementalAlterConfigs applies SET / DELETE / APPEND / SUBTRACT operations
(`configs.apply_ops`), AlterConfigs replaces the whole set (`replace_all`: a key not
given goes back to its default, as in Kafka). Each handler passes that step as an
`Edit`; `change_resource` does the rest, in the broker's change lane
(`services.disk.changes`, one change at a time): decided on the state every earlier
change left, validated as a whole (any problem refuses the resource and nothing of it
changes), written and fsynced in a disk worker, then adopted. With validate_only
nothing changes. Errors are raised as `Refused` with Kafka's code for the resource:

- TOPIC (2): the topic's overrides through the log manager (the metadata log). An unknown
  topic is UNKNOWN_TOPIC_OR_PARTITION, an unknown key or a bad value INVALID_CONFIG,
  a failed write KAFKA_STORAGE_ERROR (`remote.storage.enable=true` too, as on a Kafka
  broker without tiered storage: config.validate_topic_configs).
- BROKER (4): name = this node's id changes the per-broker dynamic layer, "" the
  cluster-wide one (server/metadata/dynamic_config.py). A broker key that is not dynamic and a
  bad value are INVALID_REQUEST, as Kafka's controller answers ("Cannot update these
  configs dynamically: Set(...)"), and so is a `log.cleaner.threads` the cleaner
  refuses (server/services/log_cleaner.py: Kafka's LogCleaner.validateReconfiguration); a
  key that is no broker key is stored as Kafka stores it (a custom key, never used).
- GROUP (32): name = group id (the group need not exist; "" is INVALID_REQUEST, as
  Kafka's "Default group resources are not allowed."). The group's whole resulting set
  is checked against the current broker bounds (group/configs.py), then persisted and
  adopted by the group config store, whose listeners are then called.
- BROKER_LOGGER (8): only IncrementalAlterConfigs changes log levels
  (`change_loggers`); through AlterConfigs it is an unknown type, as in Kafka.
- CLIENT_METRICS (16): name = subscription; stored as Kafka stores it, with no effect
  (server/metadata/client_metrics_configs.py has the checks); APPEND and SUBTRACT are
  INVALID_CONFIG, as in Kafka.
- Any other type: INVALID_REQUEST (`Unknown resource type <n>`, Kafka's words).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from shoal.config import (
    BROKER_KEYS,
    CLIENT_METRICS_KEYS,
    GROUP_KEYS,
    TOPIC_KEYS,
    ConfigDef,
    ConfigError,
    ConfigType,
    effective_topic_config,
    render,
    validate_topic_configs,
)
from shoal.group.configs import GroupConfigError
from shoal.log.api import LogError
from shoal.protocol.errors import ErrorCode
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.metadata.config_resources import ResourceType, broker_layer_for, check_logger_node
from shoal.server.metadata.dynamic_config import DYNAMIC_BROKER_KEYS, canonical
from shoal.server.metadata.logger_configs import change_levels
from shoal.server.refused import Refused
from shoal.server.services.log_cleaner import reconfiguration_refusal

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Target:
    """What an `Edit` needs to know of the resource it edits."""

    definitions: Mapping[str, ConfigDef]
    effective_value: Callable[[str], str | None]
    kind: str
    """topic, broker, group or client metrics: for messages."""
    allow_custom: bool
    """Keys with no definition are stored (the broker, as Kafka), not refused."""


Edit = Callable[[Mapping[str, str], Target], dict[str, str]]
"""A resource's own settings (strings by key) -> its new settings; raises Refused."""


def replace_all(configs: Sequence[tuple[str, str | None]]) -> Edit:
    """AlterConfigs' edit: exactly `configs` (name, value) become the resource's own
    settings. A null value is INVALID_REQUEST, an unknown key INVALID_CONFIG (custom
    keys aside), as Kafka answers."""

    def edit(current: Mapping[str, str], target: Target) -> dict[str, str]:
        repeated = sorted(n for n, count in Counter(n for n, _ in configs).items() if count > 1)
        if repeated:
            raise Refused(
                ErrorCode.invalid_request,
                f"Error due to duplicate config keys: {', '.join(repeated)}",
            )
        result: dict[str, str] = {}
        for name, value in configs:
            if value is None:
                raise Refused(ErrorCode.invalid_request, f"Null value not supported for : {name}")
            if name not in target.definitions and not target.allow_custom:
                raise Refused(
                    ErrorCode.invalid_config, f"Unknown {target.kind} config name: {name}"
                )
            result[name] = value
        return result

    return edit


async def change_resource(
    ctx: RequestContext, resource_type: int, name: str, edit: Edit, *, validate_only: bool
) -> None:
    """Change one resource's configs with `edit`, in the broker's change lane;
    returns once durable (or validated). Raises Refused."""

    async def change() -> None:
        if resource_type == ResourceType.TOPIC:
            await _alter_topic(ctx, name, edit, validate_only=validate_only)
        elif resource_type == ResourceType.BROKER:
            await _alter_broker(ctx, name, edit, validate_only=validate_only)
        elif resource_type == ResourceType.GROUP:
            await _alter_group(ctx, name, edit, validate_only=validate_only)
        elif resource_type == ResourceType.CLIENT_METRICS:
            await _alter_client_metrics(ctx, name, edit, validate_only=validate_only)
        else:
            raise Refused(ErrorCode.invalid_request, f"Unknown resource type {resource_type}")

    await ctx.services.disk.changes.run(change)


def change_loggers(
    ctx: RequestContext,
    name: str,
    ops: Sequence[tuple[str, int, str | None]],
    *,
    validate_only: bool,
) -> None:
    """IncrementalAlterConfigs on BROKER_LOGGER (8): this process's log levels, at once
    and in memory only, as Kafka changes its log4j levels (server/metadata/logger_configs.py).
    Raises Refused."""
    check_logger_node(name, ctx.services.node.node_id)
    change_levels(ops, validate_only=validate_only)
    if not validate_only:
        log.info("log levels changed: %s (client %s)", list(ops), ctx.client_id)


async def _alter_topic(ctx: RequestContext, name: str, edit: Edit, *, validate_only: bool) -> None:
    services = ctx.services
    info = services.logs.topic(name)
    if info is None:
        raise Refused(ErrorCode.unknown_topic_or_partition, f"The topic '{name}' does not exist.")
    effective = effective_topic_config(services.config.current, info.configs)
    current = {key: render(TOPIC_KEYS[key], value) or "" for key, value in info.configs.items()}
    target = Target(
        TOPIC_KEYS,
        lambda key: render(TOPIC_KEYS[key], effective[key]),
        "topic",
        allow_custom=False,
    )
    updated = edit(current, target)
    try:
        typed = validate_topic_configs(updated)
    except ConfigError as exc:
        raise Refused(exc.code, exc.wire_message) from exc
    if validate_only:
        return
    try:
        change = services.logs.plan_topic_configs(name, typed)
        await services.disk.run(change.run)  # the metadata log, in a disk worker
        services.logs.finish_topic_change(change)
    except LogError as exc:
        if exc.code is ErrorCode.kafka_storage_error:
            log.error("could not persist the configs of topic %s: %s", name, exc)
        raise Refused(exc.code, str(exc)) from exc
    log.info("topic %s configs now %s (client %s)", name, typed, ctx.client_id)


async def _alter_broker(ctx: RequestContext, name: str, edit: Edit, *, validate_only: bool) -> None:
    services = ctx.services
    layer = broker_layer_for(name, services.node.node_id)
    dynamic = services.config.dynamic
    current = dynamic.layer(layer)
    target = Target(
        BROKER_KEYS,
        lambda key: render(BROKER_KEYS[key], dynamic.effective[key]),
        "broker",
        allow_custom=True,
    )
    updated = edit(current, target)
    changed = {k for k in updated if current.get(k) != updated[k]} | (set(current) - set(updated))
    fixed = sorted(k for k in changed if k in BROKER_KEYS and k not in DYNAMIC_BROKER_KEYS)
    if fixed:
        raise Refused(
            ErrorCode.invalid_request,
            f"Cannot update these configs dynamically: Set({', '.join(fixed)})",
        )
    try:
        reconfigured = dynamic.with_layer(
            layer, {key: canonical(key, value) for key, value in updated.items()}
        )
    except ConfigError as exc:
        raise Refused(ErrorCode.invalid_request, str(exc)) from exc
    refusal = reconfiguration_refusal(dynamic.effective, reconfigured.effective)
    if refusal is not None:  # the log cleaner's own check of its thread count
        raise Refused(ErrorCode.invalid_request, refusal)
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
    ctx: RequestContext, group_id: str, edit: Edit, *, validate_only: bool
) -> None:
    if not group_id:
        raise Refused(ErrorCode.invalid_request, "Default group resources are not allowed.")
    store = ctx.services.group_configs
    effective = store.effective(group_id)
    target = Target(
        GROUP_KEYS,
        lambda key: render(GROUP_KEYS[key], effective[key]),
        "group",
        allow_custom=False,
    )
    updated = edit(store.rendered_overrides(group_id), target)
    try:
        typed = await store.alter(group_id, updated, validate_only=validate_only)
    except GroupConfigError as exc:
        raise Refused(exc.code, exc.message) from exc
    except OSError as exc:
        log.error("could not persist group configs: %s", exc)
        raise Refused(ErrorCode.kafka_storage_error, f"could not persist: {exc}") from exc
    if not validate_only:
        log.info("group %s configs now %s (client %s)", group_id, dict(typed), ctx.client_id)


_CLIENT_METRICS_OPS = {
    key: replace(definition, type=ConfigType.STRING)
    for key, definition in CLIENT_METRICS_KEYS.items()
}
"""The client metrics keys as the operations see them: Kafka refuses APPEND and
SUBTRACT on them ("Can't APPEND to key metrics because its type is not LIST.")."""


async def _alter_client_metrics(
    ctx: RequestContext, name: str, edit: Edit, *, validate_only: bool
) -> None:
    store = ctx.services.config.client_metrics
    target = Target(
        _CLIENT_METRICS_OPS,
        lambda key: render(CLIENT_METRICS_KEYS[key], CLIENT_METRICS_KEYS[key].default),
        "client metrics",
        allow_custom=True,  # refused by the store, with Kafka's INVALID_REQUEST
    )
    updated = edit(store.settings(name), target)
    try:
        await store.alter(name, updated, validate_only=validate_only)
    except OSError as exc:
        log.error("could not persist client metrics configs: %s", exc)
        raise Refused(ErrorCode.kafka_storage_error, f"could not persist: {exc}") from exc
    if not validate_only:
        log.info("client metrics resource %r now %s (client %s)", name, updated, ctx.client_id)


ResourceChange = Callable[[int, str, Any], Awaitable[None]]
"""Changes one request resource (type, name, the request's resource entry)."""


async def answer_resources(
    ctx: RequestContext, api: str, request: Any, schema: Any, change: ResourceChange
) -> tuple[Any, ...]:
    """The per-resource answers of AlterConfigs and IncrementalAlterConfigs: a resource
    named twice is INVALID_REQUEST, one the principal may not ALTER_CONFIGS is refused
    with its type's code (Kafka's handlers), the rest are `change`d; a refusal is logged
    and answered for that resource alone."""
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
            await change(resource_type, name, resource)
        except Refused as exc:
            log.info(
                "%s of resource %d %r refused (%s): %s (client %s)",
                api,
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
    return tuple(responses)
