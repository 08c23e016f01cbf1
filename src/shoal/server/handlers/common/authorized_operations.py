"""Authorized-operations bitfields (Metadata, DescribeCluster, group describes).

Bit n stands for the AclOperation with code n. As Kafka's `AuthHelper.authorizedOperations`
does, the field holds each operation the resource type supports (`AclEntry.supportedOperations`)
that the authorizer allows the request's principal on that resource; without an
authorizer (ALLOW_ALL) that is every supported operation. A field the client did not
ask for carries INT32_MIN.
"""

from __future__ import annotations

from shoal.security.acl import CLUSTER_NAME, AclOperation, ResourceType
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization

NOT_REQUESTED = -(2**31)

_O = AclOperation
TOPIC_OPERATIONS = (
    _O.READ,
    _O.WRITE,
    _O.CREATE,
    _O.DESCRIBE,
    _O.DELETE,
    _O.ALTER,
    _O.DESCRIBE_CONFIGS,
    _O.ALTER_CONFIGS,
)
GROUP_OPERATIONS = (_O.READ, _O.DESCRIBE, _O.DELETE, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS)
CLUSTER_OPERATIONS = (
    _O.CREATE,
    _O.CLUSTER_ACTION,
    _O.DESCRIBE_CONFIGS,
    _O.ALTER_CONFIGS,
    _O.IDEMPOTENT_WRITE,
    _O.ALTER,
    _O.DESCRIBE,
)


def _bits(operations: tuple[AclOperation, ...]) -> int:
    return sum(1 << int(op) for op in set(operations))


TOPIC = _bits(TOPIC_OPERATIONS)
GROUP = _bits(GROUP_OPERATIONS)
CLUSTER = _bits(CLUSTER_OPERATIONS)

_SUPPORTED = {
    ResourceType.TOPIC: (TOPIC_OPERATIONS, TOPIC),
    ResourceType.GROUP: (GROUP_OPERATIONS, GROUP),
    ResourceType.CLUSTER: (CLUSTER_OPERATIONS, CLUSTER),
}


def operations(ctx: RequestContext, resource_type: ResourceType, name: str) -> int:
    """The bitfield of the operations the principal may perform on the resource."""
    supported, every = _SUPPORTED[resource_type]
    if not authorization.enabled(ctx):
        return every
    return _bits(
        tuple(op for op in supported if authorization.allowed(ctx, op, resource_type, name))
    )


def for_resource(
    ctx: RequestContext, resource_type: ResourceType, name: str, *, requested: bool
) -> int:
    """The bitfield to send for one resource: INT32_MIN unless the client asked for it."""
    if not requested:
        return NOT_REQUESTED
    return operations(ctx, resource_type, name)


def for_cluster(ctx: RequestContext, *, requested: bool) -> int:
    """The cluster's bitfield to send (INT32_MIN unless asked for)."""
    return for_resource(ctx, ResourceType.CLUSTER, CLUSTER_NAME, requested=requested)
