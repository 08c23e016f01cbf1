"""What the three ACL handlers share: wire fields to bindings and filters (codes Kafka
does not know become UNKNOWN, which validation refuses), and the cluster check each
makes first (DESCRIBE for DescribeAcls, ALTER for CreateAcls and DeleteAcls, as Kafka's
AclApis).

A request carrying the UNKNOWN code itself (0) as a resource type, pattern type,
operation or permission is one Kafka cannot parse (CreateAclsRequest, DeleteAclsRequest
and DescribeAclsRequest refuse it in their constructors): the connection closes
(`unknown_elements` raises ProtocolError), where an unassigned code (say 99) is read as
UNKNOWN and answered."""

from __future__ import annotations

import enum
import logging
from typing import Any, TypeVar

from shoal.protocol.codec import ProtocolError
from shoal.security.acl import (
    AclOperation,
    PatternType,
    PermissionType,
    ResourceType,
)
from shoal.security.authorizer import AclBinding, AclBindingFilter

log = logging.getLogger(__name__)
_E = TypeVar("_E", bound=enum.IntEnum)
NO_AUTHORIZER_MESSAGE = "No Authorizer is configured."
"""SECURITY_DISABLED's message for CreateAcls and DeleteAcls, Kafka's words."""
NO_AUTHORIZER_DESCRIBE_MESSAGE = "No Authorizer is configured on the broker"
"""SECURITY_DISABLED's message for DescribeAcls: Kafka's AclApis words it differently
(kafka-acls --list prints it)."""


def code_of(kind: type[_E], value: int) -> _E:
    """`kind`'s member for a wire code; UNKNOWN (0) for codes it does not have."""
    try:
        return kind(int(value))
    except ValueError:
        return kind(0)


def binding_from_creation(creation: Any) -> AclBinding:
    return AclBinding(
        code_of(ResourceType, creation.resource_type),
        creation.resource_name,
        code_of(PatternType, creation.resource_pattern_type),
        creation.principal,
        creation.host,
        code_of(AclOperation, creation.operation),
        code_of(PermissionType, creation.permission_type),
    )


def filter_from_wire(item: Any) -> AclBindingFilter:
    """A DescribeAcls request or a DeleteAcls filter (same field names)."""
    return AclBindingFilter(
        resource_type=code_of(ResourceType, item.resource_type_filter),
        name=item.resource_name_filter,
        pattern_type=code_of(PatternType, item.pattern_type_filter),
        principal=item.principal_filter,
        host=item.host_filter,
        operation=code_of(AclOperation, item.operation),
        permission=code_of(PermissionType, item.permission_type),
    )


def unknown_elements(items: Any, what: str, *fields: str) -> None:
    """Raise ProtocolError (close the connection) when some item of `items` carries
    the UNKNOWN code (0) in one of `fields`, as Kafka's request parsing does."""
    for item in items:
        if any(int(getattr(item, name)) == 0 for name in fields):
            raise ProtocolError(f"{what} contain UNKNOWN elements: {item}")


CREATION_CODES = ("resource_type", "resource_pattern_type", "operation", "permission_type")
FILTER_CODES = ("resource_type_filter", "pattern_type_filter", "operation", "permission_type")
