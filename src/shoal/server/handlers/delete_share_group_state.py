"""DeleteShareGroupState (86) v0: delete share-partitions' state.

Served against `broker.persister` (the share coordinator's role) after the checks of
server/state_rpc.py. A deleted key reads as uninitialised afterwards (deleting one
without state succeeds). Every requested partition is answered.
"""

from __future__ import annotations

from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.server.context import RequestContext
from shoal.server.registry import api
from shoal.server.state_rpc import PartitionError, checked_key, log_refused, persister_error

API_KEY = 86


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
                ctx, group_id=request.group_id, topic_id=topic.topic_id, partition=p.partition
            )
            error: PartitionError | None = key if isinstance(key, tuple) else None
            if not isinstance(key, tuple):
                failed = persister.delete(key=key)
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
            schema.make("DeleteStateResult", topic_id=topic.topic_id, partitions=tuple(partitions))
        )
    log_refused(ctx, "DeleteShareGroupState", request.group_id, refused)
    return schema.response(results=tuple(results))
