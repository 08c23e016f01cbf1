"""OffsetDelete (47) v0: delete committed offsets of a classic group.

Unknown group (or a share group): GROUP_ID_NOT_FOUND. A non-empty group of another
protocol than "consumer": NON_EMPTY_GROUP. A partition of a topic the members
subscribe to: GROUP_SUBSCRIBED_TO_TOPIC; others are tombstoned (group/committed_offsets.py).
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.coordinator import RecordSinkFull
from shoal.group.committed_offsets import PartitionError
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.server.context import RequestContext
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 47
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    partitions = [(t.name, int(p.partition_index)) for t in request.topics for p in t.partitions]
    answers: tuple[PartitionError, ...]
    try:
        error, answers = ctx.services.group_service.classic.delete_offsets(
            group_id=request.group_id, partitions=partitions
        )
    except RecordSinkFull as exc:
        log.error("OffsetDelete of group %r not written: %s", request.group_id, exc)
        error, answers = ErrorCode.coordinator_not_available, ()
    if error is not None:
        return schema.response(throttle_time=_ZERO, error_code=error, topics=())
    by_topic: dict[str, list[Any]] = {}
    for a in answers:
        by_topic.setdefault(a.topic, []).append(
            schema.make(
                "OffsetDeleteResponsePartition",
                partition_index=a.partition,
                error_code=ErrorCode.none if a.error is None else a.error,
            )
        )
    return schema.response(
        throttle_time=_ZERO,
        error_code=ErrorCode.none,
        topics=tuple(
            schema.make("OffsetDeleteResponseTopic", name=name, partitions=tuple(parts))
            for name, parts in by_topic.items()
        ),
    )
