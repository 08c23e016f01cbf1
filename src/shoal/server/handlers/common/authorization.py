"""The one way a handler asks whether its request is authorized.

Every helper reads `ctx.services.authorizer`, `ctx.connection.principal` and
`ctx.connection.peer_host`. With the default `ALLOW_ALL` (no `authorizer.class.name`)
the helpers answer without calling anything, and `enabled(ctx)` lets hot paths
(Produce, Fetch, ShareFetch, ShareAcknowledge) skip the work entirely, so responses
stay byte-identical to a broker without authorization.

Which operation each API needs follows Kafka 4.2's KafkaApis / AuthHelper and the group
and share coordinators' request handling; docs/reference/security.md ("What each API
needs") lists them.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable

from shoal.protocol.errors import ErrorCode
from shoal.security.acl import (
    ALLOW_ALL,
    CLUSTER_NAME,
    AclOperation,
    Action,
    ResourceType,
)
from shoal.server.context import RequestContext

log = logging.getLogger(__name__)
TOPIC = ResourceType.TOPIC
GROUP = ResourceType.GROUP
CLUSTER = ResourceType.CLUSTER
TRANSACTIONAL_ID = ResourceType.TRANSACTIONAL_ID


def enabled(ctx: RequestContext) -> bool:
    """Whether an authorizer is configured (anything but ALLOW_ALL)."""
    return ctx.services.authorizer is not ALLOW_ALL


def allowed(
    ctx: RequestContext, operation: AclOperation, resource_type: ResourceType, name: str
) -> bool:
    """Whether the connection's principal may perform `operation` on the named resource."""
    authorizer = ctx.services.authorizer
    if authorizer is ALLOW_ALL:
        return True
    connection = ctx.connection
    return authorizer.authorize(
        connection.principal, connection.peer_host, Action(operation, resource_type, name)
    )


def cluster_allowed(ctx: RequestContext, operation: AclOperation) -> bool:
    """Whether the principal may perform `operation` on the cluster resource."""
    return allowed(ctx, operation, CLUSTER, CLUSTER_NAME)


def allowed_any(ctx: RequestContext, operation: AclOperation, resource_type: ResourceType) -> bool:
    """Whether some resource of `resource_type` allows `operation` (Kafka's
    `authorizeByResourceType`)."""
    authorizer = ctx.services.authorizer
    if authorizer is ALLOW_ALL:
        return True
    connection = ctx.connection
    return authorizer.authorize_any(
        connection.principal, connection.peer_host, operation, resource_type
    )


def filter_allowed(
    ctx: RequestContext,
    operation: AclOperation,
    resource_type: ResourceType,
    names: Iterable[str],
) -> frozenset[str]:
    """The names among `names` the principal may perform `operation` on; each distinct
    name is asked once (a request repeating a topic costs one check)."""
    distinct = frozenset(names)
    if ctx.services.authorizer is ALLOW_ALL:
        return distinct
    return frozenset(name for name in distinct if allowed(ctx, operation, resource_type, name))


def denied_topic_ids(
    ctx: RequestContext, operation: AclOperation, topic_ids: Iterable[uuid.UUID]
) -> frozenset[uuid.UUID]:
    """The ids among `topic_ids` of known topics the principal may not perform
    `operation` on (an unknown id is left to the handler's UNKNOWN_TOPIC_ID)."""
    if ctx.services.authorizer is ALLOW_ALL:
        return frozenset()
    logs = ctx.services.logs
    denied = set()
    for topic_id in frozenset(topic_ids):
        info = logs.topic_by_id(topic_id)
        if info is not None and not allowed(ctx, operation, TOPIC, info.name):
            denied.add(topic_id)
    return frozenset(denied)


def config_resource_denied(
    ctx: RequestContext, operation: AclOperation, config_resource_type: int, name: str
) -> ErrorCode | None:
    """DescribeConfigs / IncrementalAlterConfigs: the error for a config resource the
    principal may not `operation` (a broker's configs are the cluster's), or None. A
    config resource type without an ACL resource is left to the handler."""
    if config_resource_type in _CLUSTER_CONFIG_TYPES:
        if cluster_allowed(ctx, operation):
            return None
        return ErrorCode.cluster_authorization_failed
    if config_resource_type == _TOPIC_CONFIG:
        return (
            None if allowed(ctx, operation, TOPIC, name) else ErrorCode.topic_authorization_failed
        )
    if config_resource_type == _GROUP_CONFIG:
        return (
            None if allowed(ctx, operation, GROUP, name) else ErrorCode.group_authorization_failed
        )
    return None


# Kafka's ConfigResource.Type codes (not the ACL ResourceType's).
_TOPIC_CONFIG, _BROKER_CONFIG, _BROKER_LOGGER_CONFIG, _CLIENT_METRICS_CONFIG, _GROUP_CONFIG = (
    2,
    4,
    8,
    16,
    32,
)
_CLUSTER_CONFIG_TYPES = frozenset({_BROKER_CONFIG, _BROKER_LOGGER_CONFIG, _CLIENT_METRICS_CONFIG})

DENIED_MESSAGES = {
    ErrorCode.topic_authorization_failed: "Topic authorization failed.",
    ErrorCode.group_authorization_failed: "Group authorization failed.",
    ErrorCode.cluster_authorization_failed: "Cluster authorization failed.",
    ErrorCode.transactional_id_authorization_failed: "Transactional Id authorization failed.",
}
"""Kafka's default message of each authorization error (`Errors.message()`)."""


def cluster_refusal(ctx: RequestContext, operation: AclOperation) -> tuple[ErrorCode, str] | None:
    """CLUSTER_AUTHORIZATION_FAILED and its message unless the caller may perform
    `operation` on the cluster; None when it may."""
    principal = ctx.connection.principal
    if cluster_allowed(ctx, operation):
        return None
    message = f"Principal {principal} is not authorized to {operation.name} the cluster."
    log.info("request (api %d) refused: %s", ctx.api_key, message)
    return ErrorCode.cluster_authorization_failed, message
