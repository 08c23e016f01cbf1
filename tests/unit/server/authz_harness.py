"""Calls the real handlers of an in-process broker (coordinators started, no socket)
as a given principal, with the real `StandardAuthorizer` in `services.authorizer`
holding the ALLOW ACLs each test grants (Kafka's implied operations and the `*`
wildcard are the authorizer's own)."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from shoal.client.calls import Call
from shoal.security.acl import (
    AclOperation,
    KafkaPrincipal,
    PatternType,
    PermissionType,
    ResourceType,
)
from shoal.security.authorizer import AclBinding, StandardAuthorizer
from shoal.server.broker import Broker
from shoal.server.connection_info import ConnectionInfo
from shoal.server.context import RequestContext

ALICE = KafkaPrincipal("User", "alice")
"""Holds exactly the grants a test gives."""
BOB = KafkaPrincipal("User", "bob")
"""Holds no grant at all."""


class Harness:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.authorizer = StandardAuthorizer()
        self.services = dataclasses.replace(broker.services, authorizer=self.authorizer)
        self._connections: dict[KafkaPrincipal, ConnectionInfo] = {}

    def grant(
        self,
        principal: KafkaPrincipal,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> None:
        """An ALLOW ACL for `principal` on the LITERAL resource `name` from any host."""
        binding = AclBinding(
            resource_type=resource_type,
            name=name,
            pattern_type=PatternType.LITERAL,
            principal=str(principal),
            host="*",
            operation=operation,
            permission=PermissionType.ALLOW,
        )
        self.authorizer.add([binding])

    def allow(self, operation: AclOperation, resource_type: ResourceType, name: str) -> None:
        self.grant(ALICE, operation, resource_type, name)

    async def send(
        self, principal: KafkaPrincipal, call: Call, *, version: int | None = None
    ) -> Any:
        handler = self.broker.handlers[call.api_key]
        if version is None:
            version = min(call.max_version, handler.max_version)
        connection = self._connections.setdefault(
            principal, ConnectionInfo(len(self._connections) + 1, "127.0.0.1", 5000)
        )
        connection.principal = principal
        ctx = RequestContext(
            services=self.services,
            connection=connection,
            api_key=call.api_key,
            api_version=version,
            correlation_id=1,
            client_id="authz-test",
        )
        return await handler.handle(ctx, call.build(version))


def send(h: Harness, principal: Any, call: Call, *, version: int | None = None) -> Any:
    return asyncio.run(h.send(principal, call, version=version))


def topic_id(h: Harness, name: str) -> Any:
    info = h.broker.logs.topic(name)
    assert info is not None
    return info.topic_id
