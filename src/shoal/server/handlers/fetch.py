"""Fetch (1) v4-v18: read stored batches from partition logs, with long-poll.

Topics are named up to v12 and identified by topic id from v13. Each partition reads
whole stored batches from its fetch offset, bounded by PartitionMaxBytes and what is
left of MaxBytes; the first batch of the response is always sent whole even when it
exceeds the limits, so a large record never stalls a consumer. When fewer than
MinBytes are ready the request parks in purgatory until a produce to one of its
partitions wakes it or MaxWaitMs passes (clamped to `shoal.fetch.max.wait.ms`).

v17 and v18 add only fields a follower replica sends (ReplicaDirectoryId, the
HighWatermark it knows), which a consumer leaves at their defaults: served as v16.

No incremental fetch sessions: SessionId is always 0. IsolationLevel 1
(read_committed) reads only batches below the last stable offset and lists the aborted
transactions overlapping the returned records (from the fetch offset to the end of the
last batch returned), as Kafka does; the consumer drops their records. A marker moving
the last stable offset wakes parked fetches like an append. LastStableOffset is always
the partition's LSO, except that a read that fails (OFFSET_OUT_OF_RANGE, a storage
error) answers -1 for HighWatermark, LastStableOffset and LogStartOffset, as Kafka
4.2 does (tests/differential/test_fetch_versions.py).

Authorization (only with an authorizer configured): each topic needs READ; a partition
of any other topic answers TOPIC_AUTHORIZATION_FAILED (after UNKNOWN_TOPIC_ID for an
unknown id, as in Kafka) and is not waited on.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from shoal.config import broker_keys
from shoal.log.api import LogError
from shoal.log.partition import PartitionLog
from shoal.log.transactions import AbortedTxn
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.net.throttle import fetch_bytes_max, fetch_throttle_ms
from shoal.server.registry import api

API_KEY = 1
_ZERO = datetime.timedelta(0)
READ_COMMITTED = 1
_EMPTY = b""


@dataclass(slots=True)
class _Wanted:
    topic: str | None
    topic_id: Any
    partition: int
    fetch_offset: int
    partition_max_bytes: int


@api(API_KEY, 4, 18, parks=True)
async def handle(ctx: RequestContext, request: Any) -> Any:
    services = ctx.services
    schema = response_schema(API_KEY, ctx.api_version)
    by_id = ctx.api_version >= 13
    wanted = [
        _Wanted(
            topic=_topic_name(ctx, t, by_id),
            topic_id=t.topic_id if by_id else None,
            partition=int(p.partition),
            fetch_offset=int(p.fetch_offset),
            partition_max_bytes=int(p.partition_max_bytes),
        )
        for t in request.topics
        for p in t.partitions
    ]
    max_wait_ms = min(
        int(request.max_wait.total_seconds() * 1000),
        services.config.current.get(broker_keys.SHOAL_FETCH_MAX_WAIT_MS),
    )
    deadline_ms = services.clock.monotonic_ms() + max_wait_ms
    min_bytes = int(request.min_bytes)
    max_bytes = fetch_bytes_max(ctx, int(request.max_bytes))  # client quotas
    read_committed = int(request.isolation_level) == READ_COMMITTED
    denied: frozenset[str] = frozenset()
    if authz.enabled(ctx):
        names = [w.topic for w in wanted if w.topic is not None]
        denied = frozenset(names) - authz.filter_allowed(ctx, AclOperation.READ, authz.TOPIC, names)
    keys = [(w.topic, w.partition) for w in wanted if w.topic is not None and w.topic not in denied]
    while True:
        results, total_bytes, any_error = _read_all(ctx, wanted, max_bytes, read_committed, denied)
        remaining_ms = deadline_ms - services.clock.monotonic_ms()
        if (
            total_bytes >= min_bytes
            or any_error
            or remaining_ms <= 0
            or services.stopping()
            or (denied and not keys)
        ):
            break
        await services.purgatory.wait(keys, timeout_ms=remaining_ms)
    # client quotas: a throttled fetch is answered empty, as Kafka does
    throttle_ms = fetch_throttle_ms(ctx, total_bytes, unrecord_when_throttled=True)
    if throttle_ms > 0:
        return schema.response(
            throttle_time=datetime.timedelta(milliseconds=throttle_ms),
            error_code=ErrorCode.none,
            session_id=0,
            responses=(),
        )
    return _response(schema, wanted, results, by_id, read_committed)


def _topic_name(ctx: RequestContext, topic: Any, by_id: bool) -> str | None:
    if not by_id:
        return str(topic.topic)
    info = ctx.services.logs.topic_by_id(topic.topic_id)
    return None if info is None else info.name


@dataclass(slots=True)
class _Result:
    error: ErrorCode
    records: bytes
    high_watermark: int
    log_start_offset: int
    last_stable_offset: int
    aborted: tuple[AbortedTxn, ...] = ()


def _read_all(
    ctx: RequestContext,
    wanted: list[_Wanted],
    max_bytes: int,
    read_committed: bool,
    denied: frozenset[str],
) -> tuple[list[_Result], int, bool]:
    logs = ctx.services.logs
    results: list[_Result] = []
    total = 0
    any_error = False
    for w in wanted:
        if denied and w.topic in denied:
            results.append(_Result(ErrorCode.topic_authorization_failed, _EMPTY, -1, -1, -1))
            continue
        partition_log = None if w.topic is None else logs.partition(w.topic, w.partition)
        if partition_log is None:
            missing = (
                ErrorCode.unknown_topic_id
                if w.topic is None
                else ErrorCode.unknown_topic_or_partition
            )
            results.append(_Result(missing, _EMPTY, -1, -1, -1))
            any_error = True
            continue
        budget = min(w.partition_max_bytes, max_bytes - total)
        result = _read_one(
            partition_log, w.fetch_offset, budget, first=total == 0, read_committed=read_committed
        )
        any_error = any_error or result.error is not ErrorCode.none
        total += len(result.records)
        results.append(result)
    return results, total, any_error


def _read_one(
    partition_log: PartitionLog, offset: int, budget: int, *, first: bool, read_committed: bool
) -> _Result:
    stable = partition_log.last_stable_offset
    try:
        read = partition_log.read(
            offset,
            max_bytes=max(budget, 0),
            min_one_batch=first,
            max_offset=stable if read_committed else None,
        )
    except LogError as exc:
        # Kafka's ReplicaManager answers a failed read with unknown (-1) offsets
        return _Result(exc.code, _EMPTY, -1, -1, -1)
    aborted: tuple[AbortedTxn, ...] = ()
    if read_committed and read.headers:
        upper = read.headers[-1].next_offset
        aborted = tuple(partition_log.aborted_transactions(offset, upper))
    return _Result(
        ErrorCode.none, read.records, read.high_watermark, read.log_start_offset, stable, aborted
    )


def _response(
    schema: Schema,
    wanted: list[_Wanted],
    results: list[_Result],
    by_id: bool,
    read_committed: bool,
) -> Any:
    topics: list[Any] = []
    current_key: Any = object()
    partitions: list[Any] = []
    for w, r in zip(wanted, results, strict=True):
        key = w.topic_id if by_id else w.topic
        if key != current_key:
            if partitions:
                topics.append(_topic(schema, current_key, partitions))
            current_key, partitions = key, []
        partitions.append(
            schema.make(
                "PartitionData",
                partition_index=w.partition,
                error_code=r.error,
                high_watermark=r.high_watermark,
                last_stable_offset=r.last_stable_offset,
                log_start_offset=r.log_start_offset,
                aborted_transactions=_aborted(schema, r, read_committed),
                preferred_read_replica=-1,
                records=r.records,
            )
        )
    if partitions:
        topics.append(_topic(schema, current_key, partitions))
    return schema.response(
        throttle_time=_ZERO, error_code=ErrorCode.none, session_id=0, responses=tuple(topics)
    )


def _aborted(schema: Schema, result: _Result, read_committed: bool) -> tuple[Any, ...] | None:
    """Kafka answers null for read_uncommitted, a (possibly empty) list otherwise."""
    if not read_committed:
        return None
    return tuple(
        schema.make(
            "AbortedTransaction", producer_id=entry.producer_id, first_offset=entry.first_offset
        )
        for entry in result.aborted
    )


def _topic(schema: Schema, key: Any, partitions: list[Any]) -> Any:
    if schema.has("FetchableTopicResponse", "topic_id"):
        return schema.make("FetchableTopicResponse", topic_id=key, partitions=tuple(partitions))
    return schema.make("FetchableTopicResponse", topic=key, partitions=tuple(partitions))
