"""DeleteRecords (21) v0-v2: move partitions' log start offsets up.

Offset -1 means the high watermark (delete everything); another negative offset or one
beyond the high watermark gets OFFSET_OUT_OF_RANGE, an unknown partition
UNKNOWN_TOPIC_OR_PARTITION, an internal topic INVALID_TOPIC_EXCEPTION (as Kafka's
ReplicaManager refuses). An offset below the current log start offset changes nothing.
The answer carries the partition's low watermark (log start offset) afterwards. Every
share group's share-partition of the partition follows the new log start offset (the
log announces the move; the broker subscribed the share service).

The log start offset moves and the whole segments below it are renamed on the loop
(`defer_delete=True`); their files are unlinked in a disk worker thread
(`services.disk`, server/services/disk_io.py) and the partition is answered once they are gone.

Authorization: DELETE on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions,
before their existence is looked at), as in Kafka's handleDeleteRecordsRequest.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.log.api import LogError
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.refused import Refused
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 21
_ZERO = datetime.timedelta(0)
HIGH_WATERMARK = -1


@api(API_KEY, 0, 2)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    topics = []
    deletable = authz.filter_allowed(
        ctx, AclOperation.DELETE, authz.TOPIC, (t.name for t in request.topics)
    )
    for topic in request.topics:
        partitions = [
            await _partition(ctx, schema, topic.name, int(p.partition_index), int(p.offset))
            if topic.name in deletable
            else _denied(schema, int(p.partition_index))
            for p in topic.partitions
        ]
        topics.append(
            schema.make("DeleteRecordsTopicResult", name=topic.name, partitions=tuple(partitions))
        )
    return schema.response(throttle_time=_ZERO, topics=tuple(topics))


async def _partition(
    ctx: RequestContext, schema: Schema, topic: str, index: int, offset: int
) -> Any:
    code, low_watermark = ErrorCode.none, -1
    try:
        low_watermark = await _delete_before(ctx, topic, index, offset)
    except Refused as exc:
        log.info(
            "DeleteRecords of %s-%d before %d refused (%s): %s (client %s)",
            topic,
            index,
            offset,
            exc.code.name,
            exc.message,
            ctx.client_id,
        )
        code = exc.code
    return schema.make(
        "DeleteRecordsPartitionResult",
        partition_index=index,
        low_watermark=low_watermark,
        error_code=code,
    )


async def _delete_before(ctx: RequestContext, topic: str, index: int, offset: int) -> int:
    logs = ctx.services.logs
    partition_log = logs.partition(topic, index)
    info = logs.topic(topic)
    if partition_log is None or info is None:
        raise Refused(ErrorCode.unknown_topic_or_partition, "no such partition")
    if info.internal:
        raise Refused(
            ErrorCode.invalid_topic_exception, f"Cannot delete records of internal topic {topic}"
        )
    high_watermark = partition_log.high_watermark
    if offset == HIGH_WATERMARK:
        offset = high_watermark
    if offset < 0 or offset > high_watermark:
        raise Refused(
            ErrorCode.offset_out_of_range,
            f"offset {offset} is outside [0, high watermark {high_watermark}]",
        )
    try:
        low_watermark = partition_log.delete_records_before(offset, defer_delete=True)
    except LogError as exc:
        raise Refused(exc.code, str(exc)) from exc
    finally:
        removed = ctx.services.disk.remove(partition_log.take_deleted_paths())
    await removed
    log.info("records of %s-%d before %d deleted for %s", topic, index, offset, ctx.client_id)
    return low_watermark


def _denied(schema: Schema, index: int) -> Any:
    return schema.make(
        "DeleteRecordsPartitionResult",
        partition_index=index,
        low_watermark=-1,
        error_code=ErrorCode.topic_authorization_failed,
    )
