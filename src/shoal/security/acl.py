"""The vocabulary of authorization: Kafka's ACL enums (their wire codes), principals,
actions, and the `Authorizer` protocol every API handler asks.

Codes are Kafka's (`AclOperation`, `ResourceType`, `PatternType`, `AclPermissionType`).
Without an authorizer configured the broker uses `ALLOW_ALL`, as Kafka does when
`authorizer.class.name` is empty: every action is allowed.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14
    TWO_PHASE_COMMIT = 15


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class PermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


CLUSTER_NAME = "kafka-cluster"
"""The one cluster resource's name, as in Kafka."""
WILDCARD = "*"
"""A LITERAL resource name or host that matches every name or host."""


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    """Who made a request: `User:alice`. `type` is `User` for every built-in mechanism."""

    type: str
    name: str

    def __str__(self) -> str:
        return f"{self.type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """`User:alice` -> KafkaPrincipal("User", "alice"); ValueError without a colon."""
        kind, sep, name = text.partition(":")
        if not sep or not kind:
            raise ValueError(f"principal {text!r} is not of the form Type:name")
        return cls(kind, name)


ANONYMOUS = KafkaPrincipal("User", "ANONYMOUS")
"""The principal of an unauthenticated (PLAINTEXT, or SSL without a client certificate)
connection."""


@dataclass(frozen=True, slots=True)
class Action:
    """One thing a request wants to do: an operation on a named resource."""

    operation: AclOperation
    resource_type: ResourceType
    name: str


class Authorizer(Protocol):
    """What handlers ask (through `services.authorizer`). Both calls are pure and cheap:
    the ACLs live in memory; the shell keeps them durable."""

    def authorize(self, principal: KafkaPrincipal, host: str, action: Action) -> bool:
        """Whether `principal` connecting from `host` may perform `action`."""
        ...

    def authorize_any(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool:
        """Whether some resource of `resource_type` allows `operation` to `principal`
        (Kafka's `authorizeByResourceType`, e.g. InitProducerId without a transactional id
        needs IDEMPOTENT_WRITE on the cluster or WRITE on any topic)."""
        ...


class _AllowAll:
    """No authorizer configured: everything is allowed."""

    def authorize(self, principal: KafkaPrincipal, host: str, action: Action) -> bool:
        return True

    def authorize_any(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool:
        return True


ALLOW_ALL: Authorizer = _AllowAll()
