"""TxnOffsetCommit (28) v0-v5: a transactional producer commits a group's offsets
inside its transaction (group/txn_offsets.py).

The offsets are held pending per (group, producer id) until the transaction's marker
reaches the group's `__consumer_offsets` partition (`GroupService.complete_transaction`):
committed then, dropped on abort; meanwhile OffsetFetch does not show them. v3+
carry the member fields (GenerationId, MemberId, GroupInstanceId), checked against
the group (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID); v0-v2 have
none and are accepted whatever the group's state, as Kafka 4.2. CommittedLeaderEpoch
is v2+ (-1 before). A partition that does not exist answers
UNKNOWN_TOPIC_OR_PARTITION and is not committed; a share group id answers
GROUP_ID_NOT_FOUND; a coordinator that cannot write answers COORDINATOR_NOT_AVAILABLE.
TransactionalId, ProducerId and ProducerEpoch are the transaction coordinator's to
check (txn/): here they key the pending offsets, and an epoch older than the one the
producer's pending offsets in the group carry answers INVALID_PRODUCER_EPOCH.
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
API_KEY = 28
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 5)
async def handle(ctx: RequestContext, request: Any) -> Any:
    requested = tuple(
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
    logs = ctx.services.logs
    unknown = tuple(
        PartitionError(
            topic=o.topic, partition=o.partition, error=ErrorCode.unknown_topic_or_partition
        )
        for o in requested
        if logs.partition(o.topic, o.partition) is None
    )
    missing = {(u.topic, u.partition) for u in unknown}
    offsets = tuple(o for o in requested if (o.topic, o.partition) not in missing)
    try:
        answers = ctx.services.group_service.txn_offset_commit(
            group_id=request.group_id,
            producer_id=int(request.producer_id),
            producer_epoch=int(request.producer_epoch),
            member_id=getattr(request, "member_id", ""),
            generation_id=int(getattr(request, "generation_id", -1)),
            group_instance_id=getattr(request, "group_instance_id", None),
            offsets=offsets,
        )
    except RecordSinkFull as exc:
        log.error("TxnOffsetCommit of group %r not written: %s", request.group_id, exc)
        answers = tuple(
            PartitionError(
                topic=o.topic, partition=o.partition, error=ErrorCode.coordinator_not_available
            )
            for o in offsets
        )
    by_partition = {(a.topic, a.partition): a for a in (*unknown, *answers)}
    ordered = tuple(by_partition[(o.topic, o.partition)] for o in requested)
    errors = {a.error for a in ordered if a.error is not None}
    if errors:
        log.info(
            "TxnOffsetCommit of group %r producer %d (transactional id %r): %s (client %s)",
            request.group_id,
            request.producer_id,
            request.transactional_id,
            sorted(e.name for e in errors),
            ctx.client_id,
        )
    schema = response_schema(API_KEY, ctx.api_version)
    by_topic: dict[str, list[Any]] = {}
    for a in ordered:
        by_topic.setdefault(a.topic, []).append(
            schema.make(
                "TxnOffsetCommitResponsePartition",
                partition_index=a.partition,
                error_code=ErrorCode.none if a.error is None else a.error,
            )
        )
    return schema.response(
        throttle_time=_ZERO,
        topics=tuple(
            schema.make("TxnOffsetCommitResponseTopic", name=name, partitions=tuple(parts))
            for name, parts in by_topic.items()
        ),
    )
