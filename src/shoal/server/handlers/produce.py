"""Produce (0) v3-v13: append record batches to partition logs.

About 610 lines, most of them this docstring: Produce's rules (versions, validation,
durability, transactions) are one path, written down here where they are enforced.

v0-v2 are advertised (ApiVersions says 0-13) but not served: Kafka 4 does the same,
advertising them only because older librdkafka releases turn compression off when
Produce v0 is missing from the broker's list, and closing the connection on them. kio
has no schema for them, so the connection closes with the reason logged
(`connection._dispatch`).

Topics are named up to v12 and identified by topic id from v13 (KIP-516): an id this
broker does not know answers UNKNOWN_TOPIC_ID for each of its partitions.

Per partition: validate the batches' headers (magic 2, CRC-32C, sizes), then what the
topic's settings ask (log/validation.py: one batch per partition, recompression to
the topic's compression.type, keys on compacted topics; records are read only for
those two, in a worker thread for a batch above
`limits.PRODUCE_RECORDS_ON_LOOP_BYTES_MAX`: docs/design/compression.md), append them
(offsets assigned by re-stamping the header; idempotent producers' sequences
checked); the log announces the append, which wakes parked fetches of that partition.
Acks 0 gets no response, and if a partition failed the connection is closed (Kafka's
KafkaApis: the only way to tell such a producer), the reason logged; 1 and -1 are
the same on a single node (the flush policy decides when data reaches the disk).

Durability before the answer: when the flush policy (flush.messages, flush.ms) calls
for an fsync, the append returns it as a plan (`defer_flush=True`) and the fsync runs
in a disk worker thread (`services.disk`, server/services/disk_io.py) while the loop serves
others. Every partition's append is made first and their fsyncs run together; a
partition is answered only once its plan is finished on the loop (`finish_flush`), and
a failed fsync answers KAFKA_STORAGE_ERROR. An idempotent producer's retry answered
as a duplicate waits for the partition's fsyncs still running (the original request's,
if its connection was lost). With acks 0 the request still waits for
its fsyncs before the connection reads the next one (no unbounded queue of fsyncs). A
request cancelled while waiting (its connection closed) leaves each plan to be
finished when its thread is done. Errors are per partition, with Kafka's codes:
UNKNOWN_TOPIC_OR_PARTITION, CORRUPT_MESSAGE, INVALID_RECORD, MESSAGE_TOO_LARGE,
OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH, KAFKA_STORAGE_ERROR; a bad
acks value is INVALID_REQUIRED_ACKS. As from Kafka 4.2 (tests/differential/
test_produce_versions.py), these carry no ErrorMessage (the broker's log says why;
only a batch magic outside 0..2, found while Kafka reads the request, has one, and
a compacted topic's keyless records, which also fill RecordErrors from v8),
and LogStartOffset is -1 except after the log's producer checks (sequence, epoch,
open transaction), which answer the partition's log start offset. A transactional
batch in a request without a TransactionalId fails every partition with
TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as in Kafka's handleProduceRequest.

Transactional produce (a request with a `transactional_id` and transactional
batches; its other batches are appended as any others, as in Kafka): a partition's
batches must all be transactional, of one producer, and the transaction coordinator
must confirm that the batch's producer
id and epoch have an ongoing transaction holding the partition (the verify-only
AddPartitionsToTxn of KIP-890, asked in-process); otherwise nothing is appended and
the partition answers the coordinator's error for the request's version
(protocol/errors.py `for_version`, as Kafka's ReplicaManager and
AddPartitionsToTxnManager translate it): a partition not in the transaction
INVALID_TXN_STATE "Partition was not added to the transaction", a fenced producer
INVALID_PRODUCER_EPOCH (an abortable error for the client, as in Kafka), another
producer id INVALID_PRODUCER_ID_MAPPING, a transaction being ended
NOT_ENOUGH_REPLICAS (retried). From v11 TRANSACTION_ABORTABLE is answered as it is
(KIP-890's clients know it). From v12 (transaction version 2 clients, which send no
AddPartitionsToTxn) the partition is added to the ongoing transaction instead of
checked (Kafka's ADD_PARTITION operation), and CONCURRENT_TRANSACTIONS is answered as
it is (those clients retry it). With `transaction.partition.verification.enable=false`
(Kafka's switch) v3-v11 transactional batches are appended unverified, as before
KIP-890; that is how an old client leaves a hanging transaction.
An internal topic (`__consumer_offsets`, `__share_group_state`) gets
INVALID_TOPIC_EXCEPTION, as from Kafka's ReplicaManager; only the coordinators write
there (Kafka's `__admin_client` exception is not kept: a foreign record would stop the
coordinator from loading).

Authorization (Kafka's handleProduceRequest), only when an authorizer is configured: a
transactional request needs WRITE on its transactional id (every partition answers
TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise); each topic needs WRITE
(TOPIC_AUTHORIZATION_FAILED per partition, before its existence is looked at).
Idempotent produce needs nothing more (IDEMPOTENT_WRITE is checked by InitProducerId).

Cost: this is the hottest handler, so the response objects are built through `_types`
(per version: the kio class itself where the version has every field given, else
`Schema.make`), and the per-partition work is plain loops (bench/produce_cost.py
measures the handler's CPU and Python calls in-process).
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from functools import cache
from typing import Any, cast

from shoal import limits
from shoal.config import BrokerConfig, broker_keys, topic_keys, topic_override
from shoal.log.api import AppendResult, LogError
from shoal.log.partition import PartitionLog
from shoal.log.settings import LogConfig
from shoal.log.validation import reads_records, validate
from shoal.protocol.errors import ErrorCode, error_name, for_version
from shoal.protocol.record_batch import (
    BatchError,
    BatchHeader,
    first_is_transactional,
    validate_produced,
)
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.net.throttle import produce_throttle_ms
from shoal.server.observability.record_path import RECORD_PATH
from shoal.server.refused import CloseConnection
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 0
_ZERO = datetime.timedelta(0)
_LEADER_EPOCH = 0
_WITH_LOG_START = frozenset(
    {
        ErrorCode.out_of_order_sequence_number,
        ErrorCode.invalid_producer_epoch,
        ErrorCode.invalid_txn_state,
    }
)
"""Codes of the log's producer checks, answered with the partition's log start offset
(Kafka's ReplicaManager answers every other append error with -1)."""
TOPIC_ID_MIN_VERSION = 13
ADDS_PARTITIONS_MIN_VERSION = 12
"""From v12 a transactional produce adds its partition to the transaction (KIP-890)."""


@api(API_KEY, 0, 13)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    acks = int(request.acks)
    if acks not in (-1, 0, 1):
        return _all_failed(ctx, schema, request, ErrorCode.invalid_required_acks, None)
    transactional_id = request.transactional_id
    if transactional_id is None and _has_transactional_records(request):
        return _all_failed(
            ctx, schema, request, ErrorCode.transactional_id_authorization_failed, None
        )
    denied: frozenset[str] = frozenset()
    if authz.enabled(ctx):
        if transactional_id is not None and not authz.allowed(
            ctx, AclOperation.WRITE, authz.TRANSACTIONAL_ID, transactional_id
        ):
            return _all_failed(
                ctx, schema, request, ErrorCode.transactional_id_authorization_failed, None
            )
        names = [n for n in _names(ctx, request) if n is not None]
        denied = frozenset(names) - authz.filter_allowed(
            ctx, AclOperation.WRITE, authz.TOPIC, names
        )
    types = _types(ctx.api_version)
    # Every partition's append first (their fsyncs, if any, run together), then the
    # answers, each once its fsync is done.
    appended: list[tuple[Any, list[_Appended]]] = []
    produced_bytes = 0
    for topic_data, name in zip(request.topic_data, _names(ctx, request), strict=True):
        partitions = []
        for p in topic_data.partition_data:
            index = int(p.index)
            records = p.records
            if records:
                produced_bytes += len(records)
            if name is None:
                partitions.append(
                    _Appended(
                        index, _partition_error(types, index, ErrorCode.unknown_topic_id, None)
                    )
                )
            elif name in denied:
                partitions.append(
                    _Appended(
                        index,
                        _partition_error(types, index, ErrorCode.topic_authorization_failed, None),
                    )
                )
            else:
                outcome = _produce_partition(ctx, types, name, index, records, transactional_id)
                if not isinstance(outcome, _Appended):  # its records are read off the loop
                    outcome = await outcome
                partitions.append(outcome)
        appended.append((topic_data, partitions))
    topics = []
    for topic_data, partitions in appended:
        responses = []
        for partition in partitions:
            if partition.flushed is None:
                responses.append(partition.response)
            else:
                responses.append(await _durable(types, topic_data, partition))
        topics.append(types.topic(topic_data, tuple(responses)))
    throttle_ms = produce_throttle_ms(ctx, produced_bytes)  # client quotas
    if acks == 0:
        pairs = zip(request.topic_data, topics, strict=True)
        _close_if_failed(ctx, [(t, p) for t, answer in pairs for p in answer.partition_responses])
        return None  # still muted when throttled, as Kafka does
    return types.response(
        responses=tuple(topics),
        throttle_time=datetime.timedelta(milliseconds=throttle_ms) if throttle_ms else _ZERO,
    )


_PARTITION_FIELDS = (
    "index",
    "error_code",
    "base_offset",
    "log_append_time",
    "log_start_offset",
    "record_errors",
    "error_message",
)
"""The fields the handler gives every PartitionProduceResponse."""


@dataclass(frozen=True, slots=True)
class _Types:
    """How one version's response objects are built: for each type, its kio class when
    that version has every field the handler gives it (nothing for `Schema.make` to
    drop), else `Schema.make` of the type (older versions lack fields). `topic` takes
    the request's topic and the partition answers: it is named (v3-v12) or identified
    (v13+) as the request's was."""

    partition: Callable[..., Any]
    topic: Callable[[Any, tuple[Any, ...]], Any]
    response: Callable[..., Any]


@cache
def _types(version: int) -> _Types:
    schema = response_schema(API_KEY, version)

    def builder(type_name: str, fields: tuple[str, ...]) -> Callable[..., Any]:
        if all(schema.has(type_name, field) for field in fields):
            return cast(Callable[..., Any], schema.cls(type_name))
        return functools.partial(schema.make, type_name)

    if version >= TOPIC_ID_MIN_VERSION:
        by_id = builder("TopicProduceResponse", ("topic_id", "partition_responses"))

        def topic(asked: Any, partitions: tuple[Any, ...]) -> Any:
            return by_id(topic_id=asked.topic_id, partition_responses=partitions)
    else:
        by_name = builder("TopicProduceResponse", ("name", "partition_responses"))

        def topic(asked: Any, partitions: tuple[Any, ...]) -> Any:
            return by_name(name=asked.name, partition_responses=partitions)

    return _Types(
        partition=builder("PartitionProduceResponse", _PARTITION_FIELDS),
        topic=topic,
        response=builder(schema.root.__name__, ("responses", "throttle_time")),
    )


def _names(ctx: RequestContext, request: Any) -> list[str | None]:
    """Each requested topic's name; from v13 its id's (None: an id not known here)."""
    if ctx.api_version < TOPIC_ID_MIN_VERSION:
        return [t.name for t in request.topic_data]
    logs = ctx.services.logs
    return [
        None if (info := logs.topic_by_id(t.topic_id)) is None else info.name
        for t in request.topic_data
    ]


@dataclass(frozen=True, slots=True)
class _Appended:
    """One partition's answer, valid once `flushed` (the fsync the flush policy asked
    for, if any) has resolved."""

    index: int
    response: Any
    flushed: asyncio.Future[None] | None = None


async def _durable(types: _Types, asked: Any, appended: _Appended) -> Any:
    """The partition's answer once its fsync is finished: KAFKA_STORAGE_ERROR if it
    failed (the partition is offline then)."""
    if appended.flushed is not None:
        try:
            await appended.flushed
        except LogError as exc:
            topic = getattr(asked, "name", None) or asked.topic_id
            log.info("produce to %s-%d failed (%s): %s", topic, appended.index, exc.code.name, exc)
            return _partition_error(types, appended.index, exc.code, None)
    return appended.response


def _produce_partition(
    ctx: RequestContext,
    types: _Types,
    topic: str,
    index: int,
    records: bytes | None,
    transactional_id: str | None,
) -> _Appended | Coroutine[Any, Any, _Appended]:
    """Append to one partition, and start the fsync the flush policy asks for. When
    the topic's settings ask for the records to be read (log/validation.py) and the
    batch is larger than `limits.PRODUCE_RECORDS_ON_LOOP_BYTES_MAX`, the reading runs
    in a worker thread: the coroutine returned then finishes the append."""
    services = ctx.services
    partition_log = services.logs.partition(topic, index)
    if partition_log is None:
        return _Appended(
            index, _partition_error(types, index, ErrorCode.unknown_topic_or_partition, None)
        )
    topic_info = services.logs.topic(topic)
    assert topic_info is not None
    if topic_info.internal:
        log.info("produce to internal topic %s-%d refused (client %s)", topic, index, ctx.client_id)
        return _Appended(
            index, _partition_error(types, index, ErrorCode.invalid_topic_exception, None)
        )
    max_batch_bytes = topic_override(topic_info.configs, topic_keys.MAX_MESSAGE_BYTES)
    if max_batch_bytes is None:
        max_batch_bytes = _message_max_bytes(services.config.current)
    try:
        headers = validate_produced(records or b"", max_batch_bytes=int(max_batch_bytes))
        if transactional_id is not None:
            refused = _unverified(ctx, transactional_id, topic, index, headers)
            if refused is not None:
                log.info(
                    "transactional produce to %s-%d by %r refused (%s)",
                    topic,
                    index,
                    transactional_id,
                    refused.name,
                )
                return _Appended(index, _unverified_error(types, ctx.api_version, index, refused))
        data = records or b""
        settings = partition_log.settings
        # log/validation.py has nothing to do for one batch of a topic with
        # compression.type=producer that does not compact: no call on that path
        if len(headers) > 1 or settings.compression is not None or settings.compact_policy:
            if reads_off_loop(len(data), headers, settings):
                return _validated_off_loop(
                    ctx, types, topic, index, data, headers, int(max_batch_bytes), partition_log
                )
            data, headers = validate(
                data,
                headers,
                settings,
                topic=topic,
                partition=index,
                max_batch_bytes=int(max_batch_bytes),
            )
    except BatchError as exc:
        return _refused(types, ctx.api_version, topic, index, exc)
    except LogError as exc:
        return _failed(types, topic, index, partition_log, exc)
    return _append(ctx, types, topic, index, data, headers, partition_log)


def reads_off_loop(size: int, headers: list[BatchHeader], settings: LogConfig) -> bool:
    """Whether the batch's records are read (recompressed, or keys checked) in a
    worker thread: the work grows with the batch (about 40 ms per MB for gzip), the
    codecs release the GIL, and a small batch costs less than the thread hop
    (docs/design/compression.md has the figures)."""
    return size > limits.PRODUCE_RECORDS_ON_LOOP_BYTES_MAX and reads_records(headers, settings)


async def _validated_off_loop(
    ctx: RequestContext,
    types: _Types,
    topic: str,
    index: int,
    records: bytes,
    headers: list[BatchHeader],
    max_batch_bytes: int,
    partition_log: PartitionLog,
) -> _Appended:
    """`validate` in a worker thread, then the append on the loop. The connection
    serves one request at a time, so a producer's next batch waits for this one."""
    try:
        records, headers = await asyncio.to_thread(
            validate,
            records,
            headers,
            partition_log.settings,
            topic=topic,
            partition=index,
            max_batch_bytes=max_batch_bytes,
        )
    except BatchError as exc:
        return _refused(types, ctx.api_version, topic, index, exc)
    return _append(ctx, types, topic, index, records, headers, partition_log)


def _failed(
    types: _Types, topic: str, index: int, partition_log: PartitionLog, exc: LogError
) -> _Appended:
    """The partition's answer to a failed append (the log's producer checks answer
    the log start offset)."""
    log.info("produce to %s-%d failed (%s): %s", topic, index, exc.code.name, exc)
    log_start = partition_log.log_start_offset if exc.code in _WITH_LOG_START else -1
    return _Appended(index, _partition_error(types, index, exc.code, None, log_start))


def _refused(types: _Types, version: int, topic: str, index: int, exc: BatchError) -> _Appended:
    """The partition's answer to a batch refused before the log: Kafka's message and
    record errors where Kafka 4.2 sends them (`BatchError.answered`)."""
    log.info("produce to %s-%d refused (%s): %s", topic, index, exc.code.name, exc)
    message = str(exc) if exc.answered else None
    errors = _record_errors(version, exc.record_errors)
    return _Appended(index, _partition_error(types, index, exc.code, message, record_errors=errors))


def _append(
    ctx: RequestContext,
    types: _Types,
    topic: str,
    index: int,
    records: bytes,
    headers: list[BatchHeader],
    partition_log: PartitionLog,
) -> _Appended:
    services = ctx.services
    try:
        result = partition_log.append(
            records, headers, leader_epoch=_LEADER_EPOCH, defer_flush=True
        )
    except LogError as exc:
        return _failed(types, topic, index, partition_log, exc)
    if RECORD_PATH.enabled:
        RECORD_PATH.note("produced", topic, index, result.base_offset, result.last_offset)
    flushed = None
    if result.flush_plan is not None:
        flushed = services.disk.flush(partition_log, result.flush_plan)
    elif result.duplicate:  # stored by an earlier request: answered once its fsync is done
        flushed = services.disk.flushed(partition_log)
    return _Appended(index, _partition_ok(types, index, result), flushed)


_BROKER_MAX: list[Any] = [None, 0]
"""The broker config `_message_max_bytes` last read and its `message.max.bytes`."""


def _message_max_bytes(config: BrokerConfig) -> int:
    """`message.max.bytes` of `config`, read once per effective config (a reconfigure
    makes a new one): a topic without its own max.message.bytes reads it per partition
    of every Produce."""
    if _BROKER_MAX[0] is not config:
        _BROKER_MAX[:] = [config, config.get(broker_keys.MESSAGE_MAX_BYTES)]
    value: int = _BROKER_MAX[1]
    return value


def _unverified(
    ctx: RequestContext,
    transactional_id: str,
    topic: str,
    index: int,
    headers: list[BatchHeader],
) -> ErrorCode | None:
    """Why the transactional batches may not be appended, or None: each must be
    transactional with one producer id and epoch, whose transaction is ongoing with
    this partition added (the coordinator's verify-only AddPartitionsToTxn; from v12
    its AddPartitionsToTxn, which adds the partition)."""
    transactional = [h.is_transactional for h in headers]
    if not any(transactional):
        return None  # nothing to verify: appended as any other batches, as in Kafka
    ids = {(h.producer_id, h.producer_epoch) for h in headers}
    if len(ids) != 1 or not all(transactional):
        return ErrorCode.invalid_record
    ((producer_id, producer_epoch),) = ids
    adds = ctx.api_version >= ADDS_PARTITIONS_MIN_VERSION
    if not adds and not ctx.services.config.current.get(
        broker_keys.TRANSACTION_PARTITION_VERIFICATION_ENABLE
    ):
        return None  # appended unverified, as Kafka does with verification disabled
    txn = ctx.services.txn
    if not txn.opened:
        return ErrorCode.invalid_txn_state
    errors = txn.coordinator.add_partitions(
        transactional_id=transactional_id,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        partitions=[(topic, index)],
        verify_only=not adds,
        client_transaction_version=2 if adds else 0,
    )
    error = errors.get((topic, index), ErrorCode.invalid_txn_state)
    return None if error == ErrorCode.none else error


def _unverified_error(types: _Types, version: int, index: int, refused: ErrorCode) -> Any:
    """The partition's answer to a transactional produce the coordinator did not
    verify: the code for the request's version (protocol/errors.py: a fenced producer
    gets INVALID_PRODUCER_EPOCH, an unfinished verification NOT_ENOUGH_REPLICAS), with
    the message Kafka's ReplicaManager.handleProduceAppend gives."""
    code = for_version(API_KEY, version, refused)
    message = None
    if code == ErrorCode.invalid_txn_state:
        message = "Partition was not added to the transaction"
    elif code == ErrorCode.not_enough_replicas:
        message = (
            "Unable to verify the partition has been added to the transaction. "
            f"Underlying error: {error_name(refused)}"
        )
    return _partition_error(types, index, code, message)


def _partition_ok(types: _Types, index: int, result: AppendResult) -> Any:
    append_time = None
    if result.log_append_time_ms >= 0:
        append_time = datetime.datetime.fromtimestamp(
            result.log_append_time_ms / 1000, tz=datetime.UTC
        )
    return types.partition(
        index=index,
        error_code=ErrorCode.none,
        base_offset=result.base_offset,
        log_append_time=append_time,
        log_start_offset=result.log_start_offset,
        record_errors=(),
        error_message=None,
    )


def _partition_error(
    types: _Types,
    index: int,
    code: ErrorCode,
    message: str | None,
    log_start_offset: int = -1,
    *,
    record_errors: tuple[Any, ...] = (),
) -> Any:
    return types.partition(
        index=index,
        error_code=code,
        base_offset=-1,
        log_append_time=None,
        log_start_offset=log_start_offset,
        record_errors=record_errors,
        error_message=message,
    )


def _record_errors(version: int, errors: tuple[tuple[int, str], ...]) -> tuple[Any, ...]:
    """RecordErrors of the response (v8+; older versions have none)."""
    schema = response_schema(API_KEY, version)
    if not errors or not schema.has("PartitionProduceResponse", "record_errors"):
        return ()
    return tuple(
        schema.make("BatchIndexAndErrorMessage", batch_index=i, batch_index_error_message=m)
        for i, m in errors
    )


def _has_transactional_records(request: Any) -> bool:
    """Whether some partition's first batch is transactional (Kafka's
    ProduceRequest.hasTransactionalRecords): one header field per partition."""
    return any(
        first_is_transactional(p.records)
        for t in request.topic_data
        for p in t.partition_data
        if p.records
    )


def _close_if_failed(ctx: RequestContext, answers: list[tuple[Any, Any]]) -> None:
    """An acks=0 Produce gets no answer; if a partition of it failed, its connection is
    closed, the only way to tell the producer (Kafka's KafkaApis.handleProduceRequest),
    with the failures in the broker's log."""
    failed = [
        f"{_topic_label(t)}-{int(p.index)}: {error_name(p.error_code)}"
        for t, p in answers
        if p.error_code != ErrorCode.none
    ]
    if failed:
        raise CloseConnection(
            f"acks=0 produce failed (correlation id {ctx.correlation_id}, client "
            f"{ctx.client_id!r}): {', '.join(failed)}"
        )


def _topic_label(topic: Any) -> str:
    """A request topic's name (up to v12, possibly empty) or its id (v13)."""
    name = getattr(topic, "name", None)
    return str(name) if name is not None else str(topic.topic_id)


def _all_failed(
    ctx: RequestContext, schema: Schema, request: Any, code: ErrorCode, message: str | None
) -> Any:
    if int(request.acks) == 0:
        types = _types(schema.version)
        _close_if_failed(
            ctx,
            [
                (t, _partition_error(types, int(p.index), code, message))
                for t in request.topic_data
                for p in t.partition_data
            ],
        )
        return None
    return schema.response(
        responses=tuple(
            schema.make(
                "TopicProduceResponse",
                name=getattr(t, "name", None),
                topic_id=getattr(t, "topic_id", None),
                partition_responses=tuple(
                    _partition_error(_types(schema.version), int(p.index), code, message)
                    for p in t.partition_data
                ),
            )
            for t in request.topic_data
        ),
        throttle_time=_ZERO,
    )
