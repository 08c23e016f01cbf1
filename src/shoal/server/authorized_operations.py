"""Authorized-operations bitfields (Metadata, DescribeCluster, group describes).

Shoal has no authorizer, so, as Kafka does without one, every operation a resource
type supports is authorized (Kafka's `AclEntry.supportedOperations`). Bit n stands for
the AclOperation with code n. A field the client did not ask for carries INT32_MIN.
"""

from __future__ import annotations

NOT_REQUESTED = -(2**31)

# AclOperation codes.
_READ, _WRITE, _CREATE, _DELETE, _ALTER, _DESCRIBE = 3, 4, 5, 6, 7, 8
_CLUSTER_ACTION, _DESCRIBE_CONFIGS, _ALTER_CONFIGS, _IDEMPOTENT_WRITE = 9, 10, 11, 12


def _bits(*operations: int) -> int:
    return sum(1 << op for op in set(operations))


TOPIC = _bits(_READ, _WRITE, _CREATE, _DESCRIBE, _DELETE, _ALTER, _DESCRIBE_CONFIGS, _ALTER_CONFIGS)
GROUP = _bits(_READ, _DESCRIBE, _DELETE, _DESCRIBE_CONFIGS, _ALTER_CONFIGS)
CLUSTER = _bits(
    _CREATE,
    _CLUSTER_ACTION,
    _DESCRIBE_CONFIGS,
    _ALTER_CONFIGS,
    _IDEMPOTENT_WRITE,
    _ALTER,
    _DESCRIBE,
)


def authorized(operations: int, *, requested: bool) -> int:
    """The bitfield to send: `operations` if the client asked for it, else INT32_MIN."""
    return operations if requested else NOT_REQUESTED
