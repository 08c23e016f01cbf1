"""DescribeShareGroupOffsets (90) v0-v1: share-partition start offsets (and lag).

Per group, per requested topic and partition (Topics null = every partition the
group has initialised state for): the share coordinator's summary, StartOffset and
LeaderEpoch, and in v1 Lag = high watermark - StartOffset - DeliveryCompleteCount
(-1 when either is unknown). As in Kafka 4.2, absence of state is never an error: an
unknown group, a group of another type, an unknown topic (TopicId zero) or a
partition without state answers StartOffset -1, LeaderEpoch 0, Lag -1. An explicit
empty Topics list answers no topics; an empty group id is INVALID_GROUP_ID.

With `share.version`=0 every group answers UNSUPPORTED_VERSION (35).
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from shoal.group.results import DescribedOffsetsTopic
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.server.context import RequestContext
from shoal.server.group_service import SHARE_GROUPS_DISABLED, share_groups_enabled
from shoal.server.registry import api

API_KEY = 90
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 1)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    enabled = share_groups_enabled(ctx.services.config.current)
    groups = []
    for group in request.groups:
        if not enabled:
            groups.append(
                _group_error(
                    schema, group.group_id, ErrorCode.unsupported_version, SHARE_GROUPS_DISABLED
                )
            )
        elif not group.group_id:
            groups.append(
                _group_error(schema, group.group_id, ErrorCode.invalid_group_id, "Empty group id.")
            )
        else:
            topics = ctx.services.group_service.describe_offsets(
                group_id=group.group_id,
                topics=None
                if group.topics is None
                else [(t.topic_name, [int(p) for p in t.partitions]) for t in group.topics],
                high_watermark=lambda topic_id, partition: _high_watermark(
                    ctx, topic_id, partition
                ),
            )
            groups.append(
                schema.make(
                    "DescribeShareGroupOffsetsResponseGroup",
                    group_id=group.group_id,
                    topics=tuple(_topic(schema, topic) for topic in topics),
                    error_code=ErrorCode.none,
                    error_message=None,
                )
            )
    return schema.response(throttle_time=_ZERO, groups=tuple(groups))


def _high_watermark(ctx: RequestContext, topic_id: uuid.UUID, partition: int) -> int | None:
    logs = ctx.services.logs
    info = logs.topic_by_id(topic_id)
    partition_log = None if info is None else logs.partition(info.name, partition)
    return None if partition_log is None else partition_log.log_end_offset


def _topic(schema: Schema, topic: DescribedOffsetsTopic) -> Any:
    return schema.make(
        "DescribeShareGroupOffsetsResponseTopic",
        topic_name=topic.topic_name,
        topic_id=topic.topic_id,
        partitions=tuple(
            schema.make(
                "DescribeShareGroupOffsetsResponsePartition",
                partition_index=p.partition,
                start_offset=p.start_offset,
                leader_epoch=p.leader_epoch,
                lag=p.lag,
                error_code=ErrorCode.none if p.error is None else p.error,
                error_message=p.error_message,
            )
            for p in topic.partitions
        ),
    )


def _group_error(schema: Schema, group_id: str, code: ErrorCode, message: str) -> Any:
    return schema.make(
        "DescribeShareGroupOffsetsResponseGroup",
        group_id=group_id,
        topics=(),
        error_code=code,
        error_message=message,
    )
