"""ReadShareGroupStateSummary (87) v0-v1: share-partitions' state in brief.

Served against `broker.persister` (the share coordinator's role) after the checks of
server/state_rpc.py (LeaderEpoch must be non-negative). Answers StateEpoch,
LeaderEpoch, StartOffset and (v1) DeliveryCompleteCount; a key without state answers
StartOffset -1, DeliveryCompleteCount -1, epochs 0 and no error. A refused partition
answers the same values with its error. Every requested partition is answered.
"""

from __future__ import annotations

from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.server.context import RequestContext
from shoal.server.registry import api
from shoal.server.state_rpc import PartitionError, checked_key, log_refused, persister_error
from shoal.share.persister import StateSummary

API_KEY = 87


@api(API_KEY, 0, 1)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    persister = ctx.broker.persister
    refused: dict[str, PartitionError] = {}
    results = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            key = checked_key(
                ctx,
                group_id=request.group_id,
                topic_id=topic.topic_id,
                partition=p.partition,
                epochs={"LeaderEpoch": p.leader_epoch},
            )
            error: PartitionError | None = key if isinstance(key, tuple) else None
            summary = StateSummary(None)
            if not isinstance(key, tuple):
                found = persister.read_summary(key=key, leader_epoch=p.leader_epoch)
                if found.error is None:
                    summary = found
                else:
                    error = persister_error(found.error)
            if error is not None:
                refused[f"{topic.topic_id}-{p.partition}"] = error
            partitions.append(
                schema.make(
                    "PartitionResult",
                    partition=p.partition,
                    error_code=ErrorCode.none if error is None else error[0],
                    error_message=None if error is None else error[1],
                    state_epoch=summary.state_epoch,
                    leader_epoch=summary.leader_epoch,
                    start_offset=summary.start_offset,
                    delivery_complete_count=summary.delivery_complete_count,
                )
            )
        results.append(
            schema.make(
                "ReadStateSummaryResult", topic_id=topic.topic_id, partitions=tuple(partitions)
            )
        )
    log_refused(ctx, "ReadShareGroupStateSummary", request.group_id, refused)
    return schema.response(results=tuple(results))
