"""ReadShareGroupState (84) v0: read share-partitions' state.

Served against `services.persister` (the share coordinator's role) after the checks of
server/handlers/common/state_rpc.py (LeaderEpoch must be non-negative). A key never initialised is
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
from shoal.server.handlers.common.state_rpc import Fields, PartitionError, persister_error, serve
from shoal.server.registry import api
from shoal.share.persister import PersistedState, SharePartitionKey

API_KEY = 84


@api(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request: Any) -> Any:
    persister = ctx.services.persister
    schema = response_schema(API_KEY, ctx.api_version)

    def read(key: SharePartitionKey, p: Any) -> tuple[PartitionError | None, Fields]:
        found = persister.read(key=key, leader_epoch=p.leader_epoch)
        if found.error is not None or found.state is None:
            error = ErrorCode.unknown_server_error if found.error is None else found.error
            return persister_error(error), _unread()
        return None, _fields(schema, found.state)

    return serve(
        ctx,
        request,
        api_key=API_KEY,
        api_name="ReadShareGroupState",
        result_type="ReadStateResult",
        epochs=lambda p: {"LeaderEpoch": p.leader_epoch},
        operation=read,
        refused_fields=_unread,
    )


def _unread() -> Fields:
    return {"state_epoch": 0, "start_offset": -1, "state_batches": ()}


def _fields(schema: Schema, state: PersistedState) -> Fields:
    return {
        "state_epoch": state.state_epoch,
        "start_offset": state.start_offset,
        "state_batches": tuple(
            schema.make(
                "StateBatch",
                first_offset=b.first_offset,
                last_offset=b.last_offset,
                delivery_state=b.delivery_state,
                delivery_count=b.delivery_count,
            )
            for b in state.state_batches
        ),
    }
