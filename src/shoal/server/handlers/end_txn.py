"""EndTxn (26) v0-v5: commit or abort the producer's ongoing transaction.

The coordinator writes PrepareCommit/PrepareAbort (txn/shard.py), then the markers
are written to every partition of the transaction and CompleteCommit/CompleteAbort
recorded (server/services/txn_service.py) before the answer. v5 (KIP-890, transaction
version 2) bumps the producer epoch at every end and answers the new id and epoch
(a new producer id at epoch 0 once the epoch is exhausted, txn/shard.py).
PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below v2 (protocol/errors.py: `for_version`).

Authorization: WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
as in Kafka.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.protocol.errors import ErrorCode, for_version
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 26
_ZERO = datetime.timedelta(0)
_EPOCH_BUMP_MIN_VERSION = 5


@api(API_KEY, 0, 5)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    if not authz.allowed(ctx, AclOperation.WRITE, authz.TRANSACTIONAL_ID, request.transactional_id):
        code = ErrorCode.transactional_id_authorization_failed
        if ctx.api_version < _EPOCH_BUMP_MIN_VERSION:
            return schema.response(throttle_time=_ZERO, error_code=code)
        return schema.response(
            throttle_time=_ZERO, error_code=code, producer_id=-1, producer_epoch=-1
        )
    txn = ctx.services.txn
    answer, effects = txn.coordinator.end_txn(
        transactional_id=request.transactional_id,
        producer_id=int(request.producer_id),
        producer_epoch=int(request.producer_epoch),
        commit=bool(request.committed),
        bump_epoch=ctx.api_version >= _EPOCH_BUMP_MIN_VERSION,
        new_producer_id=txn.allocate_producer_id,
    )
    await txn.complete_all(effects)
    if answer.error != ErrorCode.none:
        log.info(
            "EndTxn (%s) of %r (producer %d epoch %d): %s (client %s)",
            "commit" if request.committed else "abort",
            request.transactional_id,
            request.producer_id,
            request.producer_epoch,
            answer.error.name,
            ctx.client_id,
        )
    error = for_version(API_KEY, ctx.api_version, answer.error)
    if ctx.api_version < _EPOCH_BUMP_MIN_VERSION:
        return schema.response(throttle_time=_ZERO, error_code=error)
    return schema.response(
        throttle_time=_ZERO,
        error_code=error,
        producer_id=answer.producer_id,
        producer_epoch=answer.producer_epoch,
    )
