"""ElectLeaders (43) v0-v2: elect partitions' preferred (0) or unclean (1) leaders.

On one node every partition is led by its only replica, its preferred leader, so no
election is ever needed. As Kafka's controller answers (ReplicationControlManager
.electLeaders), per partition asked for: an unknown topic or partition gets
UNKNOWN_TOPIC_OR_PARTITION, any other ELECTION_NOT_NEEDED, in the request's order.
Null topic partitions (v1+) means every partition of every topic: each topic is
listed, internal ones too, with no partitions, since Kafka leaves out the partitions
whose election was not needed. v0 has no election type (preferred). Another election
type is INVALID_REQUEST at the top (v1+) and for every partition asked for.

Authorization (Kafka's ControllerApis): ALTER on the cluster, else
CLUSTER_AUTHORIZATION_FAILED at the top (v1+) and for every partition asked for.
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
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 43
_ZERO = datetime.timedelta(0)
_PREFERRED, _UNCLEAN = 0, 1
_NOT_NEEDED = "Leader election not needed for topic partition."


@api(API_KEY, 0, 2)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    election_type = int(getattr(request, "election_type", _PREFERRED))
    if not authz.cluster_allowed(ctx, AclOperation.ALTER):
        return _refused(
            schema, request, ErrorCode.cluster_authorization_failed, "Cluster authorization failed."
        )
    if election_type not in (_PREFERRED, _UNCLEAN):
        log.info(
            "ElectLeaders refused: unknown election type %d (client %s)",
            election_type,
            ctx.client_id,
        )
        return _refused(
            schema, request, ErrorCode.invalid_request, f"Unknown election type {election_type}"
        )
    if request.topic_partitions is None:
        results = tuple(
            schema.make("ReplicaElectionResult", topic=info.name, partition_result=())
            for info in ctx.services.logs.topics()
        )
    else:
        results = tuple(
            schema.make(
                "ReplicaElectionResult",
                topic=topic.topic,
                partition_result=tuple(
                    _partition(ctx, schema, topic.topic, int(index)) for index in topic.partitions
                ),
            )
            for topic in request.topic_partitions
        )
    return schema.response(
        throttle_time=_ZERO, error_code=ErrorCode.none, replica_election_results=results
    )


def _partition(ctx: RequestContext, schema: Schema, topic: str, index: int) -> Any:
    info = ctx.services.logs.topic(topic)
    code, message = ErrorCode.unknown_topic_or_partition, f"No such topic as {topic}"
    if info is not None and 0 <= index < info.partitions:
        code, message = ErrorCode.election_not_needed, _NOT_NEEDED
    elif info is not None:
        message = f"No such partition as {topic}-{index}"
    return schema.make(
        "PartitionResult", partition_id=index, error_code=code, error_message=message
    )


def _refused(schema: Schema, request: Any, code: ErrorCode, message: str) -> Any:
    """Kafka's error response: the code at the top and for every partition asked for."""
    results = tuple(
        schema.make(
            "ReplicaElectionResult",
            topic=topic.topic,
            partition_result=tuple(
                schema.make(
                    "PartitionResult", partition_id=index, error_code=code, error_message=message
                )
                for index in topic.partitions
            ),
        )
        for topic in request.topic_partitions or ()
    )
    return schema.response(throttle_time=_ZERO, error_code=code, replica_election_results=results)
