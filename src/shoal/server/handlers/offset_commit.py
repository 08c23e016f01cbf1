"""OffsetCommit (8) v2-v9: commit offsets of a classic group (group/committed_offsets.py).

GenerationId -1 with no member is a simple commit (`assign()` users), accepted while
the group has no members. CommittedLeaderEpoch (v6+) is stored; -1 before. v2-v4's
RetentionTime is ignored (Kafka 4.2 ignores it too). A partition that does not exist
answers UNKNOWN_TOPIC_OR_PARTITION and is not committed, as Kafka's KafkaApis. A
share group id answers GROUP_ID_NOT_FOUND for every partition; a coordinator that
cannot write answers COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.coordinator import RecordSinkFull
from shoal.group.committed_offsets import NO_LEADER_EPOCH, OffsetToCommit, PartitionError
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.server.context import RequestContext
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 8
_ZERO = datetime.timedelta(0)


@api(API_KEY, 2, 9)
async def handle(ctx: RequestContext, request: Any) -> Any:
    offsets = tuple(
        OffsetToCommit(
            topic=topic.name,
            partition=int(p.partition_index),
            offset=int(p.committed_offset),
            leader_epoch=int(getattr(p, "committed_leader_epoch", NO_LEADER_EPOCH)),
            metadata=p.committed_metadata,
        )
        for topic in request.topics
        for p in topic.partitions
    )
    requested = offsets
    logs = ctx.services.logs
    unknown = tuple(
        PartitionError(
            topic=o.topic, partition=o.partition, error=ErrorCode.unknown_topic_or_partition
        )
        for o in offsets
        if logs.partition(o.topic, o.partition) is None
    )
    if unknown:
        missing = {(u.topic, u.partition) for u in unknown}
        offsets = tuple(o for o in offsets if (o.topic, o.partition) not in missing)
    try:
        answers = ctx.services.group_service.classic.commit_offsets(
            group_id=request.group_id,
            member_id=request.member_id,
            generation_id=int(request.generation_id_or_member_epoch),
            group_instance_id=getattr(request, "group_instance_id", None),
            offsets=offsets,
            api_version=ctx.api_version,
        )
    except RecordSinkFull as exc:
        log.error("OffsetCommit of group %r not written: %s", request.group_id, exc)
        answers = tuple(
            PartitionError(
                topic=o.topic, partition=o.partition, error=ErrorCode.coordinator_not_available
            )
            for o in offsets
        )
    by_partition = {(a.topic, a.partition): a for a in (*unknown, *answers)}
    answers = tuple(by_partition[(o.topic, o.partition)] for o in requested)
    errors = {a.error for a in answers if a.error is not None}
    if errors:
        log.info(
            "OffsetCommit of group %r member %r: %s (client %s)",
            request.group_id,
            request.member_id,
            sorted(e.name for e in errors),
            ctx.client_id,
        )
    schema = response_schema(API_KEY, ctx.api_version)
    by_topic: dict[str, list[Any]] = {}
    for a in answers:
        by_topic.setdefault(a.topic, []).append(
            schema.make(
                "OffsetCommitResponsePartition",
                partition_index=a.partition,
                error_code=ErrorCode.none if a.error is None else a.error,
            )
        )
    return schema.response(
        throttle_time=_ZERO,
        topics=tuple(
            schema.make("OffsetCommitResponseTopic", name=name, partitions=tuple(parts))
            for name, parts in by_topic.items()
        ),
    )
