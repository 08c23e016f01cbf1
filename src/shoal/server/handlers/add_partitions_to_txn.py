"""AddPartitionsToTxn (24) v0-v5: add partitions to a producer's ongoing transaction.

v0-v3 (clients) carry one transaction; v4+ a batch of transactions, each optionally
`VerifyOnly` (is every partition already in the ongoing transaction? nothing is
written), with a top-level error code. A partition of a topic this broker does not
have answers UNKNOWN_TOPIC_OR_PARTITION and the others of that transaction
OPERATION_NOT_ATTEMPTED (Kafka's rule); otherwise the coordinator answers every
partition alike (txn/shard.py: PRODUCER_FENCED, INVALID_PRODUCER_ID_MAPPING,
CONCURRENT_TRANSACTIONS, or NONE; a verify-only transaction's partitions not in it
TRANSACTION_ABORTABLE). PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below v2
(protocol/errors.py: `for_version`).

Authorization (Kafka's handleAddPartitionsToTxnRequest): v4+ (the brokers' batched
form) needs CLUSTER_ACTION on the cluster (top-level CLUSTER_AUTHORIZATION_FAILED); each
transaction needs WRITE on its transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED
on every partition); a partition of a topic without WRITE answers
TOPIC_AUTHORIZATION_FAILED and fails the whole transaction's request like an unknown
partition (the others OPERATION_NOT_ATTEMPTED).
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Iterable
from typing import Any

from shoal.protocol.errors import ErrorCode, for_version
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 24
_ZERO = datetime.timedelta(0)
_BATCHED_MIN_VERSION = 4


@api(API_KEY, 0, 5)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    if ctx.api_version < _BATCHED_MIN_VERSION:
        errors = _add(
            ctx,
            transactional_id=request.v3_and_below_transactional_id,
            producer_id=int(request.v3_and_below_producer_id),
            producer_epoch=int(request.v3_and_below_producer_epoch),
            topics=request.v3_and_below_topics,
            verify_only=False,
        )
        errors = {tp: for_version(API_KEY, ctx.api_version, e) for tp, e in errors.items()}
        return schema.response(
            throttle_time=_ZERO, results_by_topic_v3_and_below=_topic_results(schema, errors)
        )
    if not authz.cluster_allowed(ctx, AclOperation.CLUSTER_ACTION):
        return schema.response(
            throttle_time=_ZERO,
            error_code=ErrorCode.cluster_authorization_failed,
            results_by_transaction=(),
        )
    results = []
    for txn in request.transactions:
        errors = _add(
            ctx,
            transactional_id=txn.transactional_id,
            producer_id=int(txn.producer_id),
            producer_epoch=int(txn.producer_epoch),
            topics=txn.topics,
            verify_only=bool(txn.verify_only),
        )
        results.append(
            schema.make(
                "AddPartitionsToTxnResult",
                transactional_id=txn.transactional_id,
                topic_results=_topic_results(schema, errors),
            )
        )
    return schema.response(
        throttle_time=_ZERO, error_code=ErrorCode.none, results_by_transaction=tuple(results)
    )


def _add(
    ctx: RequestContext,
    *,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    topics: Iterable[Any],
    verify_only: bool,
) -> dict[tuple[str, int], ErrorCode]:
    wanted = [(t.name, int(p)) for t in topics for p in t.partitions]
    if not authz.allowed(ctx, AclOperation.WRITE, authz.TRANSACTIONAL_ID, transactional_id):
        return dict.fromkeys(wanted, ErrorCode.transactional_id_authorization_failed)
    writable = authz.filter_allowed(ctx, AclOperation.WRITE, authz.TOPIC, (t for t, _ in wanted))
    failed = {
        tp: ErrorCode.topic_authorization_failed
        if tp[0] not in writable
        else ErrorCode.unknown_topic_or_partition
        for tp in wanted
        if tp[0] not in writable or ctx.services.logs.partition(*tp) is None
    }
    if failed:
        errors = {tp: failed.get(tp, ErrorCode.operation_not_attempted) for tp in wanted}
    else:
        errors = ctx.services.txn.coordinator.add_partitions(
            transactional_id=transactional_id,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            partitions=wanted,
            verify_only=verify_only,
        )
    refused = {f"{t}-{p}": e.name for (t, p), e in errors.items() if e != ErrorCode.none}
    if refused:
        log.info(
            "AddPartitionsToTxn of %r (producer %d epoch %d%s): %s (client %s)",
            transactional_id,
            producer_id,
            producer_epoch,
            ", verify only" if verify_only else "",
            refused,
            ctx.client_id,
        )
    return errors


def _topic_results(schema: Any, errors: dict[tuple[str, int], ErrorCode]) -> tuple[Any, ...]:
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), error in errors.items():
        by_topic.setdefault(topic, []).append(
            schema.make(
                "AddPartitionsToTxnPartitionResult",
                partition_index=partition,
                partition_error_code=error,
            )
        )
    return tuple(
        schema.make("AddPartitionsToTxnTopicResult", name=name, results_by_partition=tuple(parts))
        for name, parts in by_topic.items()
    )
