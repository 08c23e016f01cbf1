"""DescribeAcls (29) v1-v3 (Kafka 4 removed v0): the ACL bindings a filter matches,
grouped by resource pattern.

Needs DESCRIBE on the cluster (else CLUSTER_AUTHORIZATION_FAILED). Without an
authorizer: SECURITY_DISABLED. A filter with the code 0 (UNKNOWN) closes the connection,
as Kafka cannot parse it (acl_wire.py); one with an unassigned code (read as UNKNOWN)
matches nothing: an empty answer, as Kafka's. A success carries the empty message.
"""

from __future__ import annotations

import datetime
import itertools
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common.acl_wire import (
    FILTER_CODES,
    NO_AUTHORIZER_DESCRIBE_MESSAGE,
    filter_from_wire,
    unknown_elements,
)
from shoal.server.handlers.common.authorization import cluster_refusal
from shoal.server.registry import api

API_KEY = 29
_ZERO = datetime.timedelta(0)


@api(API_KEY, 1, 3)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    unknown_elements((request,), "DescribeAclsRequest", *FILTER_CODES)

    def refused(code: ErrorCode, message: str) -> Any:
        return schema.response(
            throttle_time=_ZERO, error_code=code, error_message=message, resources=()
        )

    refusal = cluster_refusal(ctx, AclOperation.DESCRIBE)
    if refusal is not None:
        return refused(*refusal)
    store = ctx.services.acls
    if store is None:
        return refused(ErrorCode.security_disabled, NO_AUTHORIZER_DESCRIBE_MESSAGE)
    acl_filter = filter_from_wire(request)
    found = [] if acl_filter.problem() is not None else store.authorizer.acls(acl_filter)
    resources = []
    for (kind, name, pattern), acls in itertools.groupby(
        found, key=lambda acl: (acl.resource_type, acl.name, acl.pattern_type)
    ):
        descriptions = tuple(
            schema.make(
                "AclDescription",
                principal=acl.principal,
                host=acl.host,
                operation=acl.operation,
                permission_type=acl.permission,
            )
            for acl in acls
        )
        resources.append(
            schema.make(
                "DescribeAclsResource",
                resource_type=kind,
                resource_name=name,
                pattern_type=pattern,
                acls=descriptions,
            )
        )
    return schema.response(
        throttle_time=_ZERO,
        error_code=ErrorCode.none,
        error_message="",
        resources=tuple(resources),
    )
