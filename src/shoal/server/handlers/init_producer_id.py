"""InitProducerId (22) v0-v5: hand a producer its producer id and epoch.

Without a transactional id the answer is a producer id never handed out before (the log
manager persists the allocator, so ids keep rising across restarts) at epoch 0. As in
Kafka, a request that carries its current id and epoch (v3+, after a fatal idempotence
error) is also answered with a fresh id at epoch 0, since non-transactional producer
state needs no fencing.

With a transactional id the transaction coordinator answers (txn/shard.py): a new id
gets a fresh producer id, a known one its epoch bumped (fencing older instances);
an ongoing transaction is aborted first (CONCURRENT_TRANSACTIONS: the client retries);
`TransactionTimeoutMs` above `transaction.max.timeout.ms` or below 1 is
INVALID_TRANSACTION_TIMEOUT. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below v4
(protocol/errors.py: `for_version`).

Authorization (Kafka's handleInitProducerIdRequest): a transactional producer needs
WRITE on its transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent one
IDEMPOTENT_WRITE on the cluster or WRITE on some topic (CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.log.api import LogError
from shoal.protocol.errors import ErrorCode, for_version
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 22
_ZERO = datetime.timedelta(0)
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1


@api(API_KEY, 0, 5)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    denied = _denied(ctx, request.transactional_id)
    if denied is not None:
        return _answer(schema, denied)
    try:
        if request.transactional_id is not None:
            return await _transactional(ctx, schema, request)
        producer_id = ctx.services.logs.allocate_producer_id()
    except LogError as exc:
        log.warning("InitProducerId failed (%s): %s (client %s)", exc.code.name, exc, ctx.client_id)
        return _answer(schema, exc.code)
    return _answer(schema, ErrorCode.none, producer_id, 0)


def _denied(ctx: RequestContext, transactional_id: str | None) -> ErrorCode | None:
    if transactional_id is not None:
        if authz.allowed(ctx, AclOperation.WRITE, authz.TRANSACTIONAL_ID, transactional_id):
            return None
        return ErrorCode.transactional_id_authorization_failed
    if authz.cluster_allowed(ctx, AclOperation.IDEMPOTENT_WRITE) or authz.allowed_any(
        ctx, AclOperation.WRITE, authz.TOPIC
    ):
        return None
    return ErrorCode.cluster_authorization_failed


async def _transactional(ctx: RequestContext, schema: Any, request: Any) -> Any:
    txn = ctx.services.txn
    timeout_ms = int(request.transaction_timeout.total_seconds() * 1000)
    answer, effects = txn.coordinator.init_producer_id(
        transactional_id=request.transactional_id,
        timeout_ms=timeout_ms,
        expected_producer_id=int(getattr(request, "producer_id", NO_PRODUCER_ID)),
        expected_producer_epoch=int(getattr(request, "producer_epoch", NO_PRODUCER_EPOCH)),
        new_producer_id=txn.allocate_producer_id,
    )
    await txn.complete_all(effects)
    if answer.error != ErrorCode.none:
        log.info(
            "InitProducerId of transactional id %r (timeout %d ms): %s (client %s)",
            request.transactional_id,
            timeout_ms,
            answer.error.name,
            ctx.client_id,
        )
    return _answer(schema, answer.error, answer.producer_id, answer.producer_epoch)


def _answer(
    schema: Any,
    code: ErrorCode,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
) -> Any:
    return schema.response(
        throttle_time=_ZERO,
        error_code=for_version(API_KEY, schema.version, code),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
    )
