"""InitializeShareGroupState (83) v0: set share-partitions' state epoch and start offset.

Served against `broker.persister` (the share coordinator's role) after the checks of
server/state_rpc.py (StateEpoch must be non-negative). A StateEpoch below the stored
one is FENCED_STATE_EPOCH; the same epoch and start offset is a no-op; anything else
replaces the whole state (no in-flight batches). StartOffset -1 leaves the start to
`share.auto.offset.reset` at the next load. Every requested partition is answered.
"""

from __future__ import annotations

from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.server.context import RequestContext
from shoal.server.registry import api
from shoal.server.state_rpc import PartitionError, checked_key, log_refused, persister_error

API_KEY = 83


@api(API_KEY, 0, 0)
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
                epochs={"StateEpoch": p.state_epoch},
            )
            error: PartitionError | None = key if isinstance(key, tuple) else None
            if not isinstance(key, tuple):
                failed = persister.initialize(
                    key=key, state_epoch=p.state_epoch, start_offset=p.start_offset
                )
                error = None if failed is None else persister_error(failed)
            if error is not None:
                refused[f"{topic.topic_id}-{p.partition}"] = error
            partitions.append(
                schema.make(
                    "PartitionResult",
                    partition=p.partition,
                    error_code=ErrorCode.none if error is None else error[0],
                    error_message=None if error is None else error[1],
                )
            )
        results.append(
            schema.make(
                "InitializeStateResult", topic_id=topic.topic_id, partitions=tuple(partitions)
            )
        )
    log_refused(ctx, "InitializeShareGroupState", request.group_id, refused)
    return schema.response(results=tuple(results))
