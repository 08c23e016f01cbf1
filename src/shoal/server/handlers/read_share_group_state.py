"""ReadShareGroupState (84) v0: read share-partitions' state.

Served against `broker.persister` (the share coordinator's role) after the checks of
server/state_rpc.py (LeaderEpoch must be non-negative). A key never initialised is
INVALID_REQUEST; a LeaderEpoch below the stored one is FENCED_LEADER_EPOCH, a higher
one is recorded first. Answers StateEpoch, StartOffset (may be -1) and the merged
state batches; a refused partition answers StateEpoch 0, StartOffset -1, no batches.
Every requested partition is answered.
"""

from __future__ import annotations

from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.server.context import RequestContext
from shoal.server.registry import api
from shoal.server.state_rpc import PartitionError, checked_key, log_refused, persister_error
from shoal.share.persister import PersistedState

API_KEY = 84


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
                epochs={"LeaderEpoch": p.leader_epoch},
            )
            error: PartitionError | None = key if isinstance(key, tuple) else None
            state: PersistedState | None = None
            if not isinstance(key, tuple):
                read = persister.read(key=key, leader_epoch=p.leader_epoch)
                state = read.state
                if read.error is not None or state is None:
                    error = persister_error(read.error or "UNKNOWN_SERVER_ERROR")
            if error is not None:
                refused[f"{topic.topic_id}-{p.partition}"] = error
            partitions.append(_partition(schema, p.partition, error, state))
        results.append(
            schema.make("ReadStateResult", topic_id=topic.topic_id, partitions=tuple(partitions))
        )
    log_refused(ctx, "ReadShareGroupState", request.group_id, refused)
    return schema.response(results=tuple(results))


def _partition(
    schema: Schema, partition: int, error: PartitionError | None, state: PersistedState | None
) -> Any:
    if error is not None or state is None:
        return schema.make(
            "PartitionResult",
            partition=partition,
            error_code=ErrorCode.unknown_server_error if error is None else error[0],
            error_message=None if error is None else error[1],
            state_epoch=0,
            start_offset=-1,
            state_batches=(),
        )
    return schema.make(
        "PartitionResult",
        partition=partition,
        error_code=ErrorCode.none,
        error_message=None,
        state_epoch=state.state_epoch,
        start_offset=state.start_offset,
        state_batches=tuple(
            schema.make(
                "StateBatch",
                first_offset=b.first_offset,
                last_offset=b.last_offset,
                delivery_state=b.delivery_state,
                delivery_count=b.delivery_count,
            )
            for b in state.state_batches
        ),
    )
