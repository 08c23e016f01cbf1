"""A grant-table authorizer for tests: allows exactly the (principal, operation,
resource type, name) grants it holds, with Kafka's implied operations (READ, WRITE,
DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS; ALL implies
every operation) and `*` as a literal wildcard name.

It implements `shoal.security.acl.Authorizer` and is a collaborator of the handler
tests, not the thing under test. Once wt-acl's StandardAuthorizer is merged the tests
can build that instead from the same grants (`grants()` lists them as ALLOW ACLs).
"""

from __future__ import annotations

from shoal.security.acl import (
    WILDCARD,
    AclOperation,
    Action,
    KafkaPrincipal,
    ResourceType,
)

Op = AclOperation
_IMPLIED = {
    Op.DESCRIBE: frozenset({Op.READ, Op.WRITE, Op.DELETE, Op.ALTER, Op.DESCRIBE}),
    Op.DESCRIBE_CONFIGS: frozenset({Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS}),
}

Grant = tuple[KafkaPrincipal, AclOperation, ResourceType, str]


class GrantTable:
    """ALLOW grants only; everything not granted is denied."""

    def __init__(self, *grants: Grant) -> None:
        self._grants: set[Grant] = set(grants)

    def grant(
        self, principal: KafkaPrincipal, operation: AclOperation, rtype: ResourceType, name: str
    ) -> None:
        self._grants.add((principal, operation, rtype, name))

    def grants(self) -> frozenset[Grant]:
        return frozenset(self._grants)

    def _granting(self, operation: AclOperation) -> frozenset[AclOperation]:
        return _IMPLIED.get(operation, frozenset({operation})) | {Op.ALL}

    def authorize(self, principal: KafkaPrincipal, host: str, action: Action) -> bool:
        granting = self._granting(action.operation)
        return any(
            p == principal
            and op in granting
            and rt == action.resource_type
            and name in (action.name, WILDCARD)
            for p, op, rt, name in self._grants
        )

    def authorize_any(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool:
        granting = self._granting(operation)
        return any(
            p == principal and op in granting and rt == resource_type
            for p, op, rt, _ in self._grants
        )
