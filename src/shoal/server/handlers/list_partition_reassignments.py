"""ListPartitionReassignments (46) v0: the reassignments in progress, on one node.

None is ever in progress here (AlterPartitionReassignments completes a reassignment to
this node at once and refuses any other), so the answer lists no topics, whether the
request names topics (known or not, as Kafka's controller skips unknown ones) or asks
for all (null).

Authorization (Kafka's ControllerApis): DESCRIBE on the cluster, else
CLUSTER_AUTHORIZATION_FAILED with the named topics and partitions echoed, as Kafka's
error response does.
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
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 46
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    if not authz.cluster_allowed(ctx, AclOperation.DESCRIBE):
        log.info(
            "ListPartitionReassignments refused: no DESCRIBE on the cluster (client %s)",
            ctx.client_id,
        )
        echoed = tuple(
            schema.make(
                "OngoingTopicReassignment",
                name=topic.name,
                partitions=tuple(
                    schema.make("OngoingPartitionReassignment", partition_index=index)
                    for index in topic.partition_indexes
                ),
            )
            for topic in request.topics or ()
        )
        return schema.response(
            throttle_time=_ZERO,
            error_code=ErrorCode.cluster_authorization_failed,
            error_message="Cluster authorization failed.",
            topics=echoed,
        )
    return schema.response(
        throttle_time=_ZERO, error_code=ErrorCode.none, error_message=None, topics=()
    )
