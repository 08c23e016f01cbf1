"""WriteShareGroupState (85) v0-v1: write share-partitions' state.

Served against `services.persister` (the share coordinator's role) after the checks of
server/handlers/common/state_rpc.py (StateEpoch and LeaderEpoch must be non-negative) and of each
state batch (FirstOffset <= LastOffset, both non-negative, DeliveryState 0, 2, 3 or
4, DeliveryCount non-negative; else INVALID_REQUEST). Kafka's StateBatch has no DLQ
reason (Shoal's share-partitions persist it in-process, share_coordinator/state.py):
an ARCHIVING batch written here has none and reloads with the inferred one. A key
never initialised is INVALID_REQUEST; stale epochs are FENCED_LEADER_EPOCH /
FENCED_STATE_EPOCH. The start offset never moves back (-1 keeps it); batches merge
with the stored ones. v1 adds DeliveryCompleteCount (v0 = -1, unknown). Every
requested partition is answered.
"""

from __future__ import annotations

from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.server.context import RequestContext
from shoal.server.handlers.common.state_rpc import Fields, PartitionError, outcome, serve
from shoal.server.registry import api
from shoal.share.persister import (
    PERSISTED_DELIVERY_STATES,
    UNKNOWN_DELIVERY_COMPLETE_COUNT,
    SharePartitionKey,
    StateBatch,
    StateWrite,
)

API_KEY = 85


@api(API_KEY, 0, 1)
async def handle(ctx: RequestContext, request: Any) -> Any:
    persister = ctx.services.persister

    def write(key: SharePartitionKey, p: Any) -> tuple[PartitionError | None, Fields]:
        invalid = _invalid_batch(p.state_batches)
        if invalid is not None:
            return (ErrorCode.invalid_request, invalid), {}
        return outcome(persister.write(write=_write(key, p)))

    return serve(
        ctx,
        request,
        api_key=API_KEY,
        api_name="WriteShareGroupState",
        result_type="WriteStateResult",
        epochs=lambda p: {"StateEpoch": p.state_epoch, "LeaderEpoch": p.leader_epoch},
        operation=write,
    )


def _invalid_batch(batches: Any) -> str | None:
    for b in batches:
        if not 0 <= b.first_offset <= b.last_offset:
            return f"Invalid state batch offsets {b.first_offset}-{b.last_offset}."
        if b.delivery_state not in PERSISTED_DELIVERY_STATES:
            return f"Invalid delivery state {b.delivery_state} (0, 2, 3 or 4)."
        if b.delivery_count < 0:
            return f"Invalid delivery count {b.delivery_count}."
    return None


def _write(key: SharePartitionKey, p: Any) -> StateWrite:
    return StateWrite(
        key=key,
        state_epoch=p.state_epoch,
        leader_epoch=p.leader_epoch,
        start_offset=p.start_offset,
        delivery_complete_count=getattr(
            p, "delivery_complete_count", UNKNOWN_DELIVERY_COMPLETE_COUNT
        ),
        state_batches=tuple(
            StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
            for b in p.state_batches
        ),
    )
