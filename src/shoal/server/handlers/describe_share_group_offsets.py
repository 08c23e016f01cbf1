"""DescribeShareGroupOffsets (90) v0-v1: share-partition start offsets (and lag).

Per group, per requested topic and partition (Topics null = every partition the
group has initialised state for): the share coordinator's summary, StartOffset and
LeaderEpoch, and in v1 Lag = high watermark - StartOffset - DeliveryCompleteCount
(-1 when either is unknown). As in Kafka 4.2, absence of state is never an error: an
unknown group, a group of another type, an unknown topic (TopicId zero) or a
partition without state answers StartOffset -1, LeaderEpoch 0, Lag -1. An explicit
empty Topics list answers no topics; an empty group id is INVALID_GROUP_ID.

With `share.version`=0 every group answers UNSUPPORTED_VERSION (35).

Authorization (Kafka's handleDescribeShareGroupOffsetsRequest): DESCRIBE on each group
(GROUP_AUTHORIZATION_FAILED for it); a requested topic the principal may not DESCRIBE
answers TOPIC_AUTHORIZATION_FAILED on each partition (start offset -1), and asking for
every topic leaves such topics out.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from shoal.group.results import DescribedOffsetsTopic
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.registry import api
from shoal.server.services.group_service import SHARE_GROUPS_DISABLED, share_groups_enabled

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
        elif not authz.allowed(ctx, AclOperation.DESCRIBE, authz.GROUP, group.group_id):
            code = ErrorCode.group_authorization_failed
            groups.append(_group_error(schema, group.group_id, code, authz.DENIED_MESSAGES[code]))
        elif not group.group_id:
            groups.append(
                _group_error(schema, group.group_id, ErrorCode.invalid_group_id, "Empty group id.")
            )
        else:
            asked = (
                None
                if group.topics is None
                else [(t.topic_name, [int(p) for p in t.partitions]) for t in group.topics]
            )
            visible = authz.filter_allowed(
                ctx, AclOperation.DESCRIBE, authz.TOPIC, (name for name, _ in asked or ())
            )
            topics = ctx.services.group_service.describe_offsets(
                group_id=group.group_id,
                topics=None if asked is None else [t for t in asked if t[0] in visible],
                high_watermark=lambda topic_id, partition: _high_watermark(
                    ctx, topic_id, partition
                ),
            )
            if asked is None and authz.enabled(ctx):
                shown = authz.filter_allowed(
                    ctx, AclOperation.DESCRIBE, authz.TOPIC, (t.topic_name for t in topics)
                )
                topics = [t for t in topics if t.topic_name in shown]
            denied = [_denied_topic(schema, t) for t in asked or () if t[0] not in visible]
            groups.append(
                schema.make(
                    "DescribeShareGroupOffsetsResponseGroup",
                    group_id=group.group_id,
                    topics=tuple(_topic(schema, topic) for topic in topics) + tuple(denied),
                    error_code=ErrorCode.none,
                    error_message=None,
                )
            )
    return schema.response(throttle_time=_ZERO, groups=tuple(groups))


def _high_watermark(ctx: RequestContext, topic_id: uuid.UUID, partition: int) -> int | None:
    logs = ctx.services.logs
    info = logs.topic_by_id(topic_id)
    partition_log = None if info is None else logs.partition(info.name, partition)
    return None if partition_log is None else partition_log.high_watermark


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


def _denied_topic(schema: Schema, asked: tuple[str, list[int]]) -> Any:
    name, partitions = asked
    code = ErrorCode.topic_authorization_failed
    return schema.make(
        "DescribeShareGroupOffsetsResponseTopic",
        topic_name=name,
        topic_id=None,
        partitions=tuple(
            schema.make(
                "DescribeShareGroupOffsetsResponsePartition",
                partition_index=p,
                start_offset=-1,
                leader_epoch=0,
                lag=-1,
                error_code=code,
                error_message=authz.DENIED_MESSAGES[code],
            )
            for p in partitions
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
