"""ReadShareGroupStateSummary (87) v0-v1: share-partitions' state in brief.

Served against `services.persister` (the share coordinator's role) after the checks of
server/handlers/common/state_rpc.py (LeaderEpoch must be non-negative). Answers StateEpoch,
LeaderEpoch, StartOffset and (v1) DeliveryCompleteCount; a key without state answers
StartOffset -1, DeliveryCompleteCount -1, epochs 0 and no error. A refused partition
answers the same values with its error. Every requested partition is answered.
"""

from __future__ import annotations

from typing import Any

from shoal.server.context import RequestContext
from shoal.server.handlers.common.state_rpc import Fields, PartitionError, persister_error, serve
from shoal.server.registry import api
from shoal.share.persister import SharePartitionKey, StateSummary

API_KEY = 87


@api(API_KEY, 0, 1)
async def handle(ctx: RequestContext, request: Any) -> Any:
    persister = ctx.services.persister

    def summarize(key: SharePartitionKey, p: Any) -> tuple[PartitionError | None, Fields]:
        found = persister.read_summary(key=key, leader_epoch=p.leader_epoch)
        if found.error is not None:
            return persister_error(found.error), _fields(StateSummary(None))
        return None, _fields(found)

    return serve(
        ctx,
        request,
        api_key=API_KEY,
        api_name="ReadShareGroupStateSummary",
        result_type="ReadStateSummaryResult",
        epochs=lambda p: {"LeaderEpoch": p.leader_epoch},
        operation=summarize,
        refused_fields=lambda: _fields(StateSummary(None)),
    )


def _fields(summary: StateSummary) -> Fields:
    return {
        "state_epoch": summary.state_epoch,
        "leader_epoch": summary.leader_epoch,
        "start_offset": summary.start_offset,
        "delivery_complete_count": summary.delivery_complete_count,
    }
