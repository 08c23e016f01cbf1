"""OffsetForLeaderEpoch (23) v2-v4: where a leader epoch ends in a partition's log.

Java consumers ask it to validate their position after a leader change or a reset
(KIP-320); followers use it to truncate, and this node has none. Each partition is
answered as Kafka's `Partition.lastOffsetForLeaderEpoch` answers on its leader:

- the request's current leader epoch, unless -1, must equal the partition's
  (log/leader_epochs.py: always 0): a lower one gets FENCED_LEADER_EPOCH, a higher one
  UNKNOWN_LEADER_EPOCH;
- then the requested epoch's end (`leader_epochs.end_offset_for`): the current epoch
  ends at the log end offset, an unknown higher epoch and -1 answer -1/-1 without error.

A partition this node does not have gets UNKNOWN_TOPIC_OR_PARTITION. Every asked topic
and partition is answered, in order, repeats included, as Kafka does. `replica_id`
(v3+) changes nothing.

Authorization (Kafka's handleOffsetForLeaderEpochRequest): CLUSTER_ACTION on the
cluster allows every topic; without it each topic needs DESCRIBE, and a denied topic's
partitions get TOPIC_AUTHORIZATION_FAILED, answered after the allowed topics.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.log import leader_epochs
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 23
_ZERO = datetime.timedelta(0)
NO_CURRENT_EPOCH = -1
"""A current leader epoch of -1: the client does not know it, so it is not checked."""


@api(API_KEY, 2, 4)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    if authz.cluster_allowed(ctx, AclOperation.CLUSTER_ACTION):
        allowed, denied = list(request.topics), []
    else:
        describable = authz.filter_allowed(
            ctx, AclOperation.DESCRIBE, authz.TOPIC, (t.topic for t in request.topics)
        )
        allowed = [t for t in request.topics if t.topic in describable]
        denied = [t for t in request.topics if t.topic not in describable]
    topics = [
        _topic(schema, topic, [_partition(ctx, schema, topic.topic, p) for p in topic.partitions])
        for topic in allowed
    ]
    if denied:
        log.info(
            "OffsetForLeaderEpoch denied DESCRIBE on %s (client %s)",
            sorted({t.topic for t in denied}),
            ctx.client_id,
        )
    topics += [
        _topic(
            schema,
            topic,
            [_answer(schema, p, ErrorCode.topic_authorization_failed) for p in topic.partitions],
        )
        for topic in denied
    ]
    return schema.response(throttle_time=_ZERO, topics=tuple(topics))


def _topic(schema: Schema, topic: Any, partitions: list[Any]) -> Any:
    return schema.make(
        "OffsetForLeaderTopicResult", topic=topic.topic, partitions=tuple(partitions)
    )


def _partition(ctx: RequestContext, schema: Schema, topic: str, asked: Any) -> Any:
    index = int(asked.partition)
    partition_log = ctx.services.logs.partition(topic, index)
    if partition_log is None:
        log.info("OffsetForLeaderEpoch of unknown %s-%d (client %s)", topic, index, ctx.client_id)
        return _answer(schema, asked, ErrorCode.unknown_topic_or_partition)
    current = int(asked.current_leader_epoch)
    if current not in (NO_CURRENT_EPOCH, leader_epochs.LEADER_EPOCH):
        code = (
            ErrorCode.fenced_leader_epoch
            if current < leader_epochs.LEADER_EPOCH
            else ErrorCode.unknown_leader_epoch
        )
        log.info(
            "OffsetForLeaderEpoch of %s-%d with current leader epoch %d: %s (client %s)",
            topic,
            index,
            current,
            code.name,
            ctx.client_id,
        )
        return _answer(schema, asked, code)
    epoch, end_offset = leader_epochs.end_offset_for(
        int(asked.leader_epoch),
        log_start_offset=partition_log.log_start_offset,
        log_end_offset=partition_log.log_end_offset,
    )
    return _answer(schema, asked, ErrorCode.none, epoch=epoch, end_offset=end_offset)


def _answer(
    schema: Schema,
    asked: Any,
    code: ErrorCode,
    *,
    epoch: int = leader_epochs.UNDEFINED_EPOCH,
    end_offset: int = leader_epochs.UNDEFINED_EPOCH_OFFSET,
) -> Any:
    return schema.make(
        "EpochEndOffset",
        error_code=code,
        partition=int(asked.partition),
        leader_epoch=epoch,
        end_offset=end_offset,
    )
