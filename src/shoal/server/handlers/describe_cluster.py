"""DescribeCluster (60) v0-v2: the cluster id, the controller and the brokers (this node).

This listener is a broker endpoint (EndpointType 1, v1+). Asking it for controllers
(type 2) gets MISMATCHED_ENDPOINT_TYPE and any other type UNSUPPORTED_ENDPOINT_TYPE, as
Kafka's brokers answer. No broker is ever fenced. Cluster authorized operations, when
asked for, are the principal's operations on the cluster, 0 without DESCRIBE on it (the
request itself needs no ACL, as in Kafka); INT32_MIN otherwise.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.handlers.common import authorized_operations as ops
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 60
_ZERO = datetime.timedelta(0)
BROKERS, CONTROLLERS = 1, 2


@api(API_KEY, 0, 2)
async def handle(ctx: RequestContext, request: Any) -> Any:
    services = ctx.services
    schema = response_schema(API_KEY, ctx.api_version)
    endpoint_type = int(getattr(request, "endpoint_type", BROKERS))
    if endpoint_type != BROKERS:
        if endpoint_type == CONTROLLERS:
            code = ErrorCode.mismatched_endpoint_type
            message = (
                "The request was sent to an endpoint of type BROKER, but we wanted an "
                "endpoint of type CONTROLLER"
            )
        else:
            code = ErrorCode.unsupported_endpoint_type
            message = f"Unsupported endpoint type {endpoint_type}"
        log.info("DescribeCluster refused (%s): %s (client %s)", code.name, message, ctx.client_id)
        return schema.response(
            throttle_time=_ZERO,
            error_code=code,
            error_message=message,
            cluster_id="",
            controller_id=-1,
            brokers=(),
            cluster_authorized_operations=ops.NOT_REQUESTED,
            endpoint_type=BROKERS,
        )
    node = schema.make(
        "DescribeClusterBroker",
        broker_id=services.node.node_id,
        host=services.node.endpoint(ctx.connection.listener_name)[0],
        port=services.node.endpoint(ctx.connection.listener_name)[1],
        rack=None,
        is_fenced=False,
    )
    return schema.response(
        throttle_time=_ZERO,
        error_code=ErrorCode.none,
        error_message=None,
        cluster_id=services.node.cluster_id,
        controller_id=services.node.node_id,
        brokers=(node,),
        cluster_authorized_operations=_cluster_operations(
            ctx, requested=bool(request.include_cluster_authorized_operations)
        ),
        endpoint_type=BROKERS,
    )


def _cluster_operations(ctx: RequestContext, *, requested: bool) -> int:
    if requested and not authz.cluster_allowed(ctx, AclOperation.DESCRIBE):
        return 0
    return ops.for_cluster(ctx, requested=requested)
