"""OffsetDelete (47) v0: delete committed offsets of a classic or consumer group.

An empty group id: INVALID_GROUP_ID. Unknown group (or a share group):
GROUP_ID_NOT_FOUND. A non-empty classic group of another protocol than "consumer":
NON_EMPTY_GROUP. A consumer-protocol group (KIP-848) in any state is served. A
partition of a topic the members subscribe to: GROUP_SUBSCRIBED_TO_TOPIC; a partition
that does not exist: UNKNOWN_TOPIC_OR_PARTITION (Kafka's KafkaApis, before the
coordinator); others are tombstoned (group/committed_offsets.py). A group-level error
answers no partitions.

Authorization (Kafka's handleOffsetDeleteRequest): DELETE on the group
(GROUP_AUTHORIZATION_FAILED) and READ on each topic (TOPIC_AUTHORIZATION_FAILED for its
partitions, which are not deleted).
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.coordinator import RecordSinkFull
from shoal.group.committed_offsets import PartitionError
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 47
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    if not authz.allowed(ctx, AclOperation.DELETE, authz.GROUP, request.group_id):
        return schema.response(
            throttle_time=_ZERO, error_code=ErrorCode.group_authorization_failed, topics=()
        )
    if not request.group_id:
        return schema.response(
            throttle_time=_ZERO, error_code=ErrorCode.invalid_group_id, topics=()
        )
    partitions = [(t.name, int(p.partition_index)) for t in request.topics for p in t.partitions]
    readable = authz.filter_allowed(ctx, AclOperation.READ, authz.TOPIC, (t for t, _ in partitions))
    logs = ctx.services.logs
    denied = tuple(
        PartitionError(topic=t, partition=p, error=ErrorCode.topic_authorization_failed)
        if t not in readable
        else PartitionError(topic=t, partition=p, error=ErrorCode.unknown_topic_or_partition)
        for t, p in partitions
        if t not in readable or logs.partition(t, p) is None
    )
    refused = {(d.topic, d.partition) for d in denied}
    answers: tuple[PartitionError, ...]
    try:
        error, answers = ctx.services.group_service.classic.delete_offsets(
            group_id=request.group_id,
            partitions=[tp for tp in partitions if tp not in refused] if denied else partitions,
        )
        answers = denied + tuple(answers)
    except RecordSinkFull as exc:
        log.error("OffsetDelete of group %r not written: %s", request.group_id, exc)
        error, answers = ErrorCode.coordinator_not_available, ()
    if error is not None:
        return schema.response(throttle_time=_ZERO, error_code=error, topics=())
    by_topic: dict[str, list[Any]] = {}
    for a in answers:
        by_topic.setdefault(a.topic, []).append(
            schema.make(
                "OffsetDeleteResponsePartition",
                partition_index=a.partition,
                error_code=ErrorCode.none if a.error is None else a.error,
            )
        )
    return schema.response(
        throttle_time=_ZERO,
        error_code=ErrorCode.none,
        topics=tuple(
            schema.make("OffsetDeleteResponseTopic", name=name, partitions=tuple(parts))
            for name, parts in by_topic.items()
        ),
    )
