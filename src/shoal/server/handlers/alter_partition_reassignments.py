"""AlterPartitionReassignments (45) v0-v1: move partitions' replicas, on one node.

A single node has one broker, so the only replica list a partition can have is
[this node], which it has: a reassignment to it completes at once (nothing moves and
nothing is left in progress), and every other list is refused as Kafka's controller
refuses it (ReplicationControlManager.alterPartitionReassignment): per partition, an
unknown topic or partition gets UNKNOWN_TOPIC_OR_PARTITION, a cancellation (null
replicas) NO_REASSIGNMENT_IN_PROGRESS since none is ever in progress, and a list that
is empty, repeats a broker or names a broker that is not this node
INVALID_REPLICA_ASSIGNMENT (the checks CreateTopics' manual assignments make,
server/handlers/common/replica_assignments.py). Partitions are answered in the request's order, a
repeated one each time, as Kafka does.

Authorization (Kafka's ControllerApis): ALTER on the cluster, else
CLUSTER_AUTHORIZATION_FAILED at the top and for every partition.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.handlers.common.replica_assignments import replica_list_problem
from shoal.server.refused import Refused
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 45
_ZERO = datetime.timedelta(0)
_UNAUTHORIZED = "Cluster authorization failed."


@api(API_KEY, 0, 1)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    allowed = authz.cluster_allowed(ctx, AclOperation.ALTER)
    responses = tuple(
        schema.make(
            "ReassignableTopicResponse",
            name=topic.name,
            partitions=tuple(
                _partition(ctx, schema, topic.name, partition, allowed=allowed)
                for partition in topic.partitions
            ),
        )
        for topic in request.topics
    )
    return schema.response(
        throttle_time=_ZERO,
        allow_replication_factor_change=getattr(request, "allow_replication_factor_change", True),
        error_code=ErrorCode.none if allowed else ErrorCode.cluster_authorization_failed,
        error_message=None if allowed else _UNAUTHORIZED,
        responses=responses,
    )


def _partition(
    ctx: RequestContext, schema: Schema, topic: str, partition: Any, *, allowed: bool
) -> Any:
    index = int(partition.partition_index)
    try:
        if not allowed:
            raise Refused(ErrorCode.cluster_authorization_failed, _UNAUTHORIZED)
        _reassign(ctx, topic, index, partition.replicas)
    except Refused as exc:
        log.info(
            "AlterPartitionReassignments of %s-%d to %s refused (%s): %s (client %s)",
            topic,
            index,
            None if partition.replicas is None else list(partition.replicas),
            exc.code.name,
            exc.message,
            ctx.client_id,
        )
        return schema.make(
            "ReassignablePartitionResponse",
            partition_index=index,
            error_code=exc.code,
            error_message=exc.message or None,
        )
    return schema.make(
        "ReassignablePartitionResponse",
        partition_index=index,
        error_code=ErrorCode.none,
        error_message=None,
    )


def _reassign(ctx: RequestContext, topic: str, index: int, replicas: Any) -> None:
    """Nothing to do if the partition may have `replicas` (None: cancel); Refused if not."""
    info = ctx.services.logs.topic(topic)
    if info is None:
        raise Refused(
            ErrorCode.unknown_topic_or_partition, f"Unable to find a topic named {topic}."
        )
    if not 0 <= index < info.partitions:
        raise Refused(
            ErrorCode.unknown_topic_or_partition, f"Unable to find partition {topic}:{index}."
        )
    if replicas is None:  # no message: Kafka leaves out one that is the code's own
        raise Refused(ErrorCode.no_reassignment_in_progress, "")
    problem = replica_list_problem([int(b) for b in replicas], node_id=ctx.services.node.node_id)
    if problem is not None:
        raise Refused(ErrorCode.invalid_replica_assignment, problem)
