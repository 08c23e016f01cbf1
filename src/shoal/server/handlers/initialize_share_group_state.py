"""InitializeShareGroupState (83) v0: set share-partitions' state epoch and start offset.

Served against `services.persister` (the share coordinator's role) after the checks of
server/handlers/common/state_rpc.py (StateEpoch must be non-negative). A StateEpoch below the stored
one is FENCED_STATE_EPOCH; the same epoch and start offset is a no-op; anything else
replaces the whole state (no in-flight batches). StartOffset -1 leaves the start to
`share.auto.offset.reset` at the next load. Every requested partition is answered.
"""

from __future__ import annotations

from typing import Any

from shoal.server.context import RequestContext
from shoal.server.handlers.common.state_rpc import outcome, serve
from shoal.server.registry import api

API_KEY = 83


@api(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request: Any) -> Any:
    persister = ctx.services.persister
    return serve(
        ctx,
        request,
        api_key=API_KEY,
        api_name="InitializeShareGroupState",
        result_type="InitializeStateResult",
        epochs=lambda p: {"StateEpoch": p.state_epoch},
        operation=lambda key, p: outcome(
            persister.initialize(key=key, state_epoch=p.state_epoch, start_offset=p.start_offset)
        ),
    )
