"""Request builders of the ACL admin APIs: CreateAcls (30), DescribeAcls (29) and
DeleteAcls (31), v1-v3 (Kafka 4 serves no v0), from the bindings and filters of
`security/authorizer.py`; and the response readers that turn answers back into them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shoal.client.calls import Call
from shoal.client.requests import _call
from shoal.protocol.schema import Schema
from shoal.security.acl import AclOperation, PatternType, PermissionType, ResourceType
from shoal.security.authorizer import AclBinding, AclBindingFilter

API_DESCRIBE_ACLS, API_CREATE_ACLS, API_DELETE_ACLS = 29, 30, 31


def create_acls(bindings: Sequence[AclBinding]) -> Call:
    """CreateAcls (30) v1-v3: one result per binding, in order."""

    def build(s: Schema) -> Any:
        creations = tuple(
            s.make(
                "AclCreation",
                resource_type=b.resource_type,
                resource_name=b.name,
                resource_pattern_type=b.pattern_type,
                principal=b.principal,
                host=b.host,
                operation=b.operation,
                permission_type=b.permission,
            )
            for b in bindings
        )
        return s.make("CreateAclsRequest", creations=creations)

    return _call(API_CREATE_ACLS, 1, 3, build)


def _filter_fields(f: AclBindingFilter) -> dict[str, Any]:
    return {
        "resource_type_filter": f.resource_type,
        "resource_name_filter": f.name,
        "pattern_type_filter": f.pattern_type,
        "principal_filter": f.principal,
        "host_filter": f.host,
        "operation": f.operation,
        "permission_type": f.permission,
    }


def describe_acls(acl_filter: AclBindingFilter) -> Call:
    """DescribeAcls (29) v1-v3: the bindings `acl_filter` matches."""
    return _call(
        API_DESCRIBE_ACLS,
        1,
        3,
        lambda s: s.make("DescribeAclsRequest", **_filter_fields(acl_filter)),
    )


def delete_acls(filters: Sequence[AclBindingFilter]) -> Call:
    """DeleteAcls (31) v1-v3: one filter result per filter, in order."""

    def build(s: Schema) -> Any:
        items = tuple(s.make("DeleteAclsFilter", **_filter_fields(f)) for f in filters)
        return s.make("DeleteAclsRequest", filters=items)

    return _call(API_DELETE_ACLS, 1, 3, build)


def described_bindings(response: Any) -> list[AclBinding]:
    """The bindings of a DescribeAcls response (check its error_code first)."""
    return [
        AclBinding(
            ResourceType(int(resource.resource_type)),
            resource.resource_name,
            PatternType(int(resource.pattern_type)),
            acl.principal,
            acl.host,
            AclOperation(int(acl.operation)),
            PermissionType(int(acl.permission_type)),
        )
        for resource in response.resources
        for acl in resource.acls
    ]


def deleted_bindings(filter_result: Any) -> list[AclBinding]:
    """The bindings one DeleteAcls filter result lists as deleted."""
    return [
        AclBinding(
            ResourceType(int(m.resource_type)),
            m.resource_name,
            PatternType(int(m.pattern_type)),
            m.principal,
            m.host,
            AclOperation(int(m.operation)),
            PermissionType(int(m.permission_type)),
        )
        for m in filter_result.matching_acls
    ]
