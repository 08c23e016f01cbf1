"""AddOffsetsToTxn (25) v0-v4: add a group's `__consumer_offsets` partition to the
producer's transaction, so that its TxnOffsetCommit offsets are completed by the
transaction's markers. The partition is the group's (Kafka's placement); the
coordinator's checks are AddPartitionsToTxn's (txn/shard.py), one error for the call;
PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below v2 (protocol/errors.py: `for_version`).

Authorization: WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
then READ on the group (GROUP_AUTHORIZATION_FAILED), as in Kafka.
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
API_KEY = 25
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 4)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    if not authz.allowed(ctx, AclOperation.WRITE, authz.TRANSACTIONAL_ID, request.transactional_id):
        return schema.response(
            throttle_time=_ZERO, error_code=ErrorCode.transactional_id_authorization_failed
        )
    if not authz.allowed(ctx, AclOperation.READ, authz.GROUP, request.group_id):
        return schema.response(throttle_time=_ZERO, error_code=ErrorCode.group_authorization_failed)
    txn = ctx.services.txn
    offsets_partition = txn.offsets_partition(request.group_id)
    errors = txn.coordinator.add_partitions(
        transactional_id=request.transactional_id,
        producer_id=int(request.producer_id),
        producer_epoch=int(request.producer_epoch),
        partitions=(offsets_partition,),
    )
    error = errors[offsets_partition]
    if error != ErrorCode.none:
        log.info(
            "AddOffsetsToTxn of %r for group %r: %s (client %s)",
            request.transactional_id,
            request.group_id,
            error.name,
            ctx.client_id,
        )
    return schema.response(
        throttle_time=_ZERO, error_code=for_version(API_KEY, ctx.api_version, error)
    )
