"""DescribeTransactions (65) v0: the state of transactional ids (as
`kafka-transactions.sh describe` shows it). An unknown id answers
TRANSACTIONAL_ID_NOT_FOUND. Kafka sends start time -1 when no transaction has
started; Shoal sends 0 (the epoch) there, since kio (Shoal's client) cannot read a
negative timestamp.

Authorization (Kafka's handleDescribeTransactionsRequest): DESCRIBE on each
transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); the partitions of topics the
principal may not DESCRIBE are left out of a described transaction.
"""

from __future__ import annotations

import datetime
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.registry import api
from shoal.txn import TxnMetadata

API_KEY = 65
_ZERO = datetime.timedelta(0)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


@api(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    coordinator = ctx.services.txn.coordinator
    states = tuple(
        _state(schema, tid, coordinator.metadata(tid), ctx)
        if authz.allowed(ctx, AclOperation.DESCRIBE, authz.TRANSACTIONAL_ID, tid)
        else _failed(schema, tid, ErrorCode.transactional_id_authorization_failed)
        for tid in request.transactional_ids
    )
    return schema.response(throttle_time=_ZERO, transaction_states=states)


def _failed(schema: Any, transactional_id: str, code: ErrorCode) -> Any:
    return schema.make(
        "TransactionState",
        error_code=code,
        transactional_id=transactional_id,
        transaction_state="",
        transaction_timeout=_ZERO,
        transaction_start_time=_EPOCH,
        producer_id=-1,
        producer_epoch=-1,
        topics=(),
    )


def _state(
    schema: Any, transactional_id: str, metadata: TxnMetadata | None, ctx: RequestContext
) -> Any:
    if metadata is None:
        return schema.make(
            "TransactionState",
            error_code=ErrorCode.transactional_id_not_found,
            transactional_id=transactional_id,
            transaction_state="",
            transaction_timeout=_ZERO,
            transaction_start_time=_EPOCH,
            producer_id=-1,
            producer_epoch=-1,
            topics=(),
        )
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(metadata.partitions):
        by_topic.setdefault(topic, []).append(partition)
    if authz.enabled(ctx):
        visible = authz.filter_allowed(ctx, AclOperation.DESCRIBE, authz.TOPIC, by_topic)
        by_topic = {topic: parts for topic, parts in by_topic.items() if topic in visible}
    return schema.make(
        "TransactionState",
        error_code=ErrorCode.none,
        transactional_id=transactional_id,
        transaction_state=metadata.state.display_name,
        transaction_timeout=datetime.timedelta(milliseconds=metadata.timeout_ms),
        transaction_start_time=_EPOCH + datetime.timedelta(milliseconds=max(0, metadata.start_ms)),
        producer_id=metadata.producer_id,
        producer_epoch=metadata.producer_epoch,
        topics=tuple(
            schema.make("TopicData", topic=topic, partitions=tuple(parts))
            for topic, parts in by_topic.items()
        ),
    )
