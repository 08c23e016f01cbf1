"""ListTransactions (66) v0-v2: the transactional ids this coordinator holds, filtered
by state names (`StateFilters`; names Kafka does not know are echoed in
`UnknownStateFilters`), producer ids, v1+ `DurationFilter` (-1 = any; else the
transactions whose last start is more than that many ms ago, in any state, as Kafka's
TransactionStateManager.listTransactionStates: a completed transaction keeps its start
time, and one never begun (Empty) has none, -1, so every filter keeps it) and v2+
`TransactionalIdPattern` (a regular expression the whole id must match; an invalid one
is INVALID_REGULAR_EXPRESSION).

Authorization: only the transactional ids the principal may DESCRIBE are listed, as in
Kafka's handleListTransactionsRequest.
"""

from __future__ import annotations

import datetime
import logging
import re
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.registry import api
from shoal.txn import TxnState

log = logging.getLogger(__name__)
API_KEY = 66
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 2)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    states = {TxnState.from_display_name(name) for name in request.state_filters} - {None}
    unknown = tuple(n for n in request.state_filters if TxnState.from_display_name(n) is None)
    producers = {int(p) for p in request.producer_id_filters}
    duration_ms = int(getattr(request, "duration_filter", -1))
    pattern_text = getattr(request, "transactional_id_pattern", None)
    try:
        pattern = re.compile(pattern_text) if pattern_text else None
    except re.error as exc:
        log.info(
            "ListTransactions pattern %r refused: %s (client %s)", pattern_text, exc, ctx.client_id
        )
        return schema.response(
            throttle_time=_ZERO,
            error_code=ErrorCode.invalid_regular_expression,
            unknown_state_filters=(),
            transaction_states=(),
        )
    now_ms = ctx.services.clock.wall_ms()
    found = []
    for shard in ctx.services.txn.coordinator.shards():
        for tid, metadata in sorted(shard.transactions.items()):
            if states and metadata.state not in states:
                continue
            if producers and metadata.producer_id not in producers:
                continue
            if duration_ms >= 0 and now_ms - metadata.start_ms <= duration_ms:
                continue
            if pattern is not None and pattern.fullmatch(tid) is None:
                continue
            if not authz.allowed(ctx, AclOperation.DESCRIBE, authz.TRANSACTIONAL_ID, tid):
                continue
            found.append(
                schema.make(
                    "TransactionState",
                    transactional_id=tid,
                    producer_id=metadata.producer_id,
                    transaction_state=metadata.state.display_name,
                )
            )
    return schema.response(
        throttle_time=_ZERO,
        error_code=ErrorCode.none,
        unknown_state_filters=unknown,
        transaction_states=tuple(found),
    )
