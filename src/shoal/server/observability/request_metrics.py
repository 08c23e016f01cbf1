"""Request metrics at the handler boundary: counts derived from requests and responses.

`instrument(handlers, metrics)` returns the handler table with each handler wrapped:
the wrapper times the handler (`localtime`), counts the request by API and version,
and hands the request and its response to the API's observer, which counts what the
handler already answered: the top-level error code of every API, and for the data
path the per-partition codes and the traffic they stand for:

    Produce          records and bytes in per topic, for partitions answered NONE
                     (acks=0 has no response: its partitions that exist are counted)
    Fetch            bytes out per topic
    ShareFetch       bytes out and records acquired per topic; acknowledgements
                     carried, by type, for partitions whose acknowledge error is NONE;
                     share fetch / acknowledgement requests per topic, failed or not
    ShareAcknowledge acknowledgements by type, for partitions answered NONE
    OffsetCommit,
    TxnOffsetCommit  partition offsets committed
    EndTxn           transactions committed and aborted

Nothing here changes a request or a response; a handler that raises is not counted
(its connection closes), and an observer that raises is logged, never passed on to
the request. The connection loop adds the total time
(server/net/connection.py).
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from shoal.clock import measure_ns
from shoal.protocol.record_batch import iter_headers
from shoal.server.observability.metrics import BrokerMetrics, request_name
from shoal.server.registry import ApiHandler

if TYPE_CHECKING:
    from shoal.server.context import RequestContext

log = logging.getLogger(__name__)
Observer = Callable[[BrokerMetrics, "RequestContext", Any, Any], None]

PRODUCE, FETCH, OFFSET_COMMIT, END_TXN, TXN_OFFSET_COMMIT = 0, 1, 8, 26, 28
SHARE_FETCH, SHARE_ACKNOWLEDGE = 78, 79


def instrument(handlers: Mapping[int, ApiHandler], metrics: BrokerMetrics) -> dict[int, ApiHandler]:
    """`handlers` with each handler counted and timed (a new table; the registry's
    entries are not changed)."""
    return {
        key: dataclasses.replace(handler, handle=_wrap(handler, metrics))
        for key, handler in handlers.items()
    }


def _wrap(handler: ApiHandler, metrics: BrokerMetrics) -> Any:
    api_key = handler.api_key
    inner = handler.handle
    observe = _OBSERVERS.get(api_key, _top_level)

    async def handle(ctx: RequestContext, request: Any) -> Any:
        started_ns = measure_ns()
        response = await inner(ctx, request)
        metrics.request_handled(api_key, ctx.api_version, (measure_ns() - started_ns) / 1e9)
        try:
            observe(metrics, ctx, request, response)
        except Exception:  # a metrics bug must not fail the request it counts
            log.exception(
                "counting %s v%d failed (connection %d, correlation %d)",
                request_name(api_key),
                ctx.api_version,
                ctx.connection.connection_id,
                ctx.correlation_id,
            )
        return response

    return handle


# ---- observers -------------------------------------------------------------------------


def _top_level(metrics: BrokerMetrics, ctx: RequestContext, request: Any, response: Any) -> None:
    code = getattr(response, "error_code", 0)
    if code:
        metrics.error(ctx.api_key, int(code))


def _produce(metrics: BrokerMetrics, ctx: RequestContext, request: Any, response: Any) -> None:
    if response is None:  # acks=0
        logs = ctx.services.logs
        for topic in request.topic_data:
            for p in topic.partition_data:
                if logs.partition(topic.name, int(p.index)) is not None:
                    _produced(metrics, topic.name, p.records)
        return
    for topic, answered in zip(request.topic_data, response.responses, strict=False):
        for p, answer in zip(topic.partition_data, answered.partition_responses, strict=False):
            code = int(answer.error_code)
            if code:
                metrics.error(PRODUCE, code)
            else:
                _produced(metrics, topic.name, p.records)


def _produced(metrics: BrokerMetrics, topic: str, records: bytes | None) -> None:
    if not records:
        return
    metrics.bytes_in.inc((topic,), len(records))
    metrics.messages_in.inc((topic,), sum(header.records_count for header in iter_headers(records)))


def _fetch(metrics: BrokerMetrics, ctx: RequestContext, request: Any, response: Any) -> None:
    _top_level(metrics, ctx, request, response)
    by_id = ctx.api_version >= 13
    for topic in response.responses:
        name = _topic_name(ctx, topic.topic_id) if by_id else topic.topic
        for p in topic.partitions:
            code = int(p.error_code)
            if code:
                metrics.error(FETCH, code)
            if p.records and name is not None:
                metrics.bytes_out.inc((name,), len(p.records))


def _share_fetch(metrics: BrokerMetrics, ctx: RequestContext, request: Any, response: Any) -> None:
    code = int(response.error_code)
    if code:
        metrics.error(SHARE_FETCH, code)
        return
    acks = _ack_batches(request)
    applied = False
    group = request.group_id
    for topic in response.responses:
        name = _topic_name(ctx, topic.topic_id)
        if name is None:
            continue
        failed = acked = ack_failed = False
        for p in topic.partitions:
            error = int(p.error_code)
            if error:
                metrics.error(SHARE_FETCH, error)
                failed = True
            batches = acks.get((topic.topic_id, int(p.partition_index)))
            if batches is not None:
                acked = True
                ack_error = int(p.acknowledge_error_code)
                if ack_error:
                    metrics.error(SHARE_FETCH, ack_error)
                    ack_failed = True
                else:
                    _count_acks(metrics, batches)
                    applied = True
            if p.records:
                metrics.bytes_out.inc((name,), len(p.records))
            if p.acquired_records:
                acquired = sum(_span(r) for r in p.acquired_records)
                metrics.records_acquired.inc((group, name), acquired)
        if acked:
            _ack_request(metrics, name, ack_failed)
        if failed:
            metrics.share_fetch_failed.inc((name,))
    for topic in request.topics:
        name = _topic_name(ctx, topic.topic_id)
        if name is not None:
            metrics.share_fetch_requests.inc((name,))
    if applied:
        metrics.share_acknowledgement.inc()


def _share_acknowledge(
    metrics: BrokerMetrics, ctx: RequestContext, request: Any, response: Any
) -> None:
    code = int(response.error_code)
    if code:
        metrics.error(SHARE_ACKNOWLEDGE, code)
        return
    acks = _ack_batches(request)
    applied = False
    for topic in response.responses:
        name = _topic_name(ctx, topic.topic_id)
        failed = False
        for p in topic.partitions:
            error = int(p.error_code)
            batches = acks.get((topic.topic_id, int(p.partition_index)))
            if error:
                metrics.error(SHARE_ACKNOWLEDGE, error)
                failed = True
            elif batches is not None:
                _count_acks(metrics, batches)
                applied = True
        if name is not None:
            _ack_request(metrics, name, failed)
    if applied:
        metrics.share_acknowledgement.inc()


def _ack_request(metrics: BrokerMetrics, topic: str, failed: bool) -> None:
    metrics.share_ack_requests.inc((topic,))
    if failed:
        metrics.share_ack_failed.inc((topic,))


def _ack_batches(request: Any) -> dict[tuple[uuid.UUID, int], Any]:
    return {
        (topic.topic_id, int(p.partition_index)): p.acknowledgement_batches
        for topic in request.topics
        for p in topic.partitions
        if p.acknowledgement_batches
    }


def _count_acks(metrics: BrokerMetrics, batches: Any) -> None:
    """Records acknowledged by `batches`: one type for the whole range, or one per
    offset (KIP-932's AcknowledgeTypes)."""
    for batch in batches:
        types = batch.acknowledge_types
        if len(types) == 1:
            metrics.acknowledged(int(types[0]), _span(batch))
        else:
            for ack_type in types:
                metrics.acknowledged(int(ack_type), 1)


def _offset_commit(
    metrics: BrokerMetrics, ctx: RequestContext, request: Any, response: Any
) -> None:
    committed = 0
    for topic in response.topics:
        for p in topic.partitions:
            code = int(p.error_code)
            if code:
                metrics.error(ctx.api_key, code)
            else:
                committed += 1
    if committed:
        metrics.offset_commits.inc((), committed)


def _end_txn(metrics: BrokerMetrics, ctx: RequestContext, request: Any, response: Any) -> None:
    code = int(response.error_code)
    if code:
        metrics.error(END_TXN, code)
        return
    metrics.transactions_ended.inc(("commit",) if request.committed else ("abort",))


def _span(offsets: Any) -> int:
    """Records in an inclusive first_offset..last_offset range."""
    return int(offsets.last_offset) - int(offsets.first_offset) + 1


def _topic_name(ctx: RequestContext, topic_id: uuid.UUID) -> str | None:
    info = ctx.services.logs.topic_by_id(topic_id)
    return None if info is None else info.name


_OBSERVERS: dict[int, Observer] = {
    PRODUCE: _produce,
    FETCH: _fetch,
    OFFSET_COMMIT: _offset_commit,
    END_TXN: _end_txn,
    TXN_OFFSET_COMMIT: _offset_commit,
    SHARE_FETCH: _share_fetch,
    SHARE_ACKNOWLEDGE: _share_acknowledge,
}
