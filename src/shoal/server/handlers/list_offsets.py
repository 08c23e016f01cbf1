"""ListOffsets (2) v1-v11: offsets by timestamp, and the ends of partitions.

Timestamp -1 (latest) answers the log end offset, which on a single node is the high
watermark, or with IsolationLevel 1 (read_committed) the last stable offset; as in
Kafka, under read_committed a timestamp or max-timestamp answer at or beyond the last
stable offset is not found (-1/-1). -2 (earliest) answers the log start offset; both
answer timestamp -1. -3 (max timestamp, v7) answers the offset and timestamp of the record with the
largest timestamp, or -1/-1 for an empty partition. Any other value finds the first
offset whose timestamp is at least that value, or -1/-1 if there is none. The log
finds the batch; the record within it is found by decoding that one batch
(protocol/records.py), so the answer is exact as in Kafka. The leader
epoch is 0 (-1 with no offset). A partition named twice in one request gets
INVALID_REQUEST (answered once), an unknown one UNKNOWN_TOPIC_OR_PARTITION, as in
Kafka.

Special timestamps by version (`SPECIAL_TIMESTAMPS`, as Kafka 4.2 answers): -1 and -2
always; -3 from v7; -4 (earliest local, KIP-405) from v8 answers the log start offset
(every record is local here); -5 (latest tiered, KIP-1005) from v9 and -6 (earliest
pending upload) from v11 answer -1/-1, nothing being tiered. Any other negative
timestamp, or one the request's version predates, answers UNSUPPORTED_VERSION for its
partition. v10 adds TimeoutMs, which only remote-storage lookups wait for: none here.

Authorization: DESCRIBE on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions,
before anything else is checked), as in Kafka's handleListOffsetRequest.
"""

from __future__ import annotations

import datetime
import logging
from collections import Counter
from typing import Any

from shoal.log.api import LogError
from shoal.log.partition import PartitionLog
from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import BatchError
from shoal.protocol.records import first_at_or_after
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 2
_ZERO = datetime.timedelta(0)
LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5
EARLIEST_PENDING_UPLOAD = -6
SPECIAL_TIMESTAMPS = {
    LATEST: 0,
    EARLIEST: 0,
    MAX_TIMESTAMP: 7,
    EARLIEST_LOCAL: 8,
    LATEST_TIERED: 9,
    EARLIEST_PENDING_UPLOAD: 11,
}
"""Each special (negative) timestamp and the first version that may ask for it."""
_LEADER_EPOCH = 0
_NOT_FOUND = (-1, -1)
READ_COMMITTED = 1
API_VERSION_NEVER = 2**15


@api(API_KEY, 1, 11)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    # IsolationLevel is in the request from v2.
    read_committed = int(getattr(request, "isolation_level", 0)) == READ_COMMITTED
    counts = Counter((t.name, int(p.partition_index)) for t in request.topics for p in t.partitions)
    describable = authz.filter_allowed(
        ctx, AclOperation.DESCRIBE, authz.TOPIC, (t.name for t in request.topics)
    )
    topics = []
    for topic in request.topics:
        answered: dict[int, Any] = {}  # a partition named twice is answered once
        for p in topic.partitions:
            index = int(p.partition_index)
            if index in answered:
                continue
            if topic.name not in describable:
                code = ErrorCode.topic_authorization_failed
                answered[index] = _answer(schema, index, code, _NOT_FOUND)
            else:
                answered[index] = _partition(
                    ctx,
                    schema,
                    topic.name,
                    p,
                    repeated=counts[topic.name, index] > 1,
                    read_committed=read_committed,
                )
        topics.append(
            schema.make(
                "ListOffsetsTopicResponse", name=topic.name, partitions=tuple(answered.values())
            )
        )
    return schema.response(throttle_time=_ZERO, topics=tuple(topics))


def _supported(timestamp: int, version: int) -> bool:
    """Whether a request of `version` may ask for `timestamp` (`SPECIAL_TIMESTAMPS`)."""
    return timestamp >= 0 or SPECIAL_TIMESTAMPS.get(timestamp, API_VERSION_NEVER) <= version


def _partition(
    ctx: RequestContext,
    schema: Schema,
    topic: str,
    asked: Any,
    *,
    repeated: bool,
    read_committed: bool,
) -> Any:
    index = int(asked.partition_index)
    timestamp = int(asked.timestamp)
    partition_log = ctx.services.logs.partition(topic, index)
    if repeated or not _supported(timestamp, ctx.api_version) or partition_log is None:
        # Kafka's order: a duplicate, then the timestamp's version, then the partition
        if repeated:
            code = ErrorCode.invalid_request
        elif not _supported(timestamp, ctx.api_version):
            code = ErrorCode.unsupported_version
        else:
            code = ErrorCode.unknown_topic_or_partition
        log.info(
            "ListOffsets of %s-%d refused (%s) (client %s)", topic, index, code.name, ctx.client_id
        )
        return _answer(schema, index, code, _NOT_FOUND)
    try:
        found = _lookup(partition_log, timestamp, read_committed=read_committed)
    except LogError as exc:
        log.info(
            "ListOffsets of %s-%d at %d failed (%s): %s",
            topic,
            index,
            timestamp,
            exc.code.name,
            exc,
        )
        return _answer(schema, index, exc.code, _NOT_FOUND)
    return _answer(schema, index, ErrorCode.none, found)


def _lookup(
    partition_log: PartitionLog, timestamp: int, *, read_committed: bool
) -> tuple[int, int]:
    """(offset, timestamp) answered for a query timestamp."""
    if timestamp == LATEST:
        if read_committed:
            return partition_log.last_stable_offset, -1
        return partition_log.high_watermark, -1
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return partition_log.log_start_offset, -1
    if timestamp in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        return _NOT_FOUND
    if timestamp == MAX_TIMESTAMP:
        found = partition_log.max_timestamp()
        answer = _NOT_FOUND if found is None else _exact(partition_log, found, found[1])
    else:
        found = partition_log.offset_for_timestamp(timestamp)
        answer = _NOT_FOUND if found is None else _exact(partition_log, found, timestamp)
    if read_committed and answer[0] >= partition_log.last_stable_offset:
        return _NOT_FOUND
    return answer


def _exact(partition_log: PartitionLog, found: tuple[int, int], timestamp: int) -> tuple[int, int]:
    """The log's indexes find the batch; Kafka answers the record, so look inside that
    one batch (if it cannot be decoded, the batch-level answer stands)."""
    offset = found[0]
    read = partition_log.read(offset, max_bytes=0, min_one_batch=True)
    if not read.headers:
        return found
    try:
        exact = first_at_or_after(
            read.records, read.headers[0], timestamp_ms=timestamp, min_offset=offset
        )
    except BatchError as exc:
        log.warning("ListOffsets answers batch offset %d: %s", offset, exc)
        return found
    return found if exact is None else exact


def _answer(schema: Schema, index: int, code: ErrorCode, found: tuple[int, int]) -> Any:
    offset, timestamp = found
    return schema.make(
        "ListOffsetsPartitionResponse",
        partition_index=index,
        error_code=code,
        timestamp=timestamp,
        offset=offset,
        leader_epoch=_LEADER_EPOCH if offset >= 0 else -1,
    )
