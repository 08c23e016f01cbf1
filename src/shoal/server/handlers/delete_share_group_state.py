"""DeleteShareGroupState (86) v0: delete share-partitions' state.

Served against `services.persister` (the share coordinator's role) after the checks of
server/handlers/common/state_rpc.py. A deleted key reads as uninitialised afterwards (deleting one
without state succeeds). Every requested partition is answered.
"""

from __future__ import annotations

from typing import Any

from shoal.server.context import RequestContext
from shoal.server.handlers.common.state_rpc import outcome, serve
from shoal.server.registry import api

API_KEY = 86


@api(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request: Any) -> Any:
    persister = ctx.services.persister
    return serve(
        ctx,
        request,
        api_key=API_KEY,
        api_name="DeleteShareGroupState",
        result_type="DeleteStateResult",
        epochs=lambda _p: {},
        operation=lambda key, _p: outcome(persister.delete(key=key)),
    )
