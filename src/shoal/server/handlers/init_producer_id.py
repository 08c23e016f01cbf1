"""InitProducerId (22) v0-v4: hand an idempotent producer its producer id.

Without a transactional id the answer is a producer id never handed out before (the log
manager persists the allocator, so ids keep rising across restarts) at epoch 0. As in
Kafka, a request that carries its current id and epoch (v3+, after a fatal idempotence
error) is also answered with a fresh id at epoch 0, since non-transactional producer
state needs no fencing. A transactional id gets INVALID_REQUEST until transactions are
implemented (the response has no error message, so the reason is logged).
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.log.api import LogError
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.server.context import RequestContext
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 22
_ZERO = datetime.timedelta(0)
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


@api(API_KEY, 0, 4)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    if request.transactional_id is not None:
        log.info(
            "InitProducerId for transactional id %r refused (INVALID_REQUEST): transactions "
            "are not supported yet (client %s)",
            request.transactional_id,
            ctx.client_id,
        )
        return _failed(schema, ErrorCode.invalid_request)
    try:
        producer_id = ctx.services.logs.allocate_producer_id()
    except LogError as exc:
        log.warning("InitProducerId failed (%s): %s (client %s)", exc.code.name, exc, ctx.client_id)
        return _failed(schema, exc.code)
    return schema.response(
        throttle_time=_ZERO, error_code=ErrorCode.none, producer_id=producer_id, producer_epoch=0
    )


def _failed(schema: Any, code: ErrorCode) -> Any:
    return schema.response(
        throttle_time=_ZERO,
        error_code=code,
        producer_id=NO_PRODUCER_ID,
        producer_epoch=NO_PRODUCER_EPOCH,
    )
