"""DescribeProducers (61) v0: the active producers of partitions, read from each
partition log's producer state (what `kafka-transactions.sh describe-producers` and
`find-hanging` show). Per producer: id, epoch, last sequence (-1 before any
idempotent batch), last write time, the last coordinator epoch seen in its markers
(-1: none) and the first offset of its open transaction (-1: none). A partition this
broker does not have answers UNKNOWN_TOPIC_OR_PARTITION, as in Kafka.

Authorization: READ on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions,
before their existence is looked at), as in Kafka's handleDescribeProducersRequest.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.log.producer_state import ProducerEntry
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 61
_ZERO = datetime.timedelta(0)
NO_SEQUENCE = -1


@api(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    readable = authz.filter_allowed(
        ctx, AclOperation.READ, authz.TOPIC, (t.name for t in request.topics)
    )
    topics = tuple(
        schema.make(
            "TopicResponse",
            name=topic.name,
            partitions=tuple(
                _partition(ctx, schema, topic.name, int(index))
                if topic.name in readable
                else _failed(schema, int(index), ErrorCode.topic_authorization_failed)
                for index in topic.partition_indexes
            ),
        )
        for topic in request.topics
    )
    return schema.response(throttle_time=_ZERO, topics=topics)


def _partition(ctx: RequestContext, schema: Schema, topic: str, index: int) -> Any:
    partition_log = ctx.services.logs.partition(topic, index)
    if partition_log is None:
        log.info("DescribeProducers of unknown %s-%d (client %s)", topic, index, ctx.client_id)
        return _failed(schema, index, ErrorCode.unknown_topic_or_partition)
    return schema.make(
        "PartitionResponse",
        partition_index=index,
        error_code=ErrorCode.none,
        error_message=None,
        active_producers=tuple(_producer(schema, e) for e in partition_log.producers()),
    )


def _failed(schema: Schema, index: int, code: ErrorCode) -> Any:
    return schema.make(
        "PartitionResponse",
        partition_index=index,
        error_code=code,
        error_message=None,
        active_producers=(),
    )


def _producer(schema: Schema, entry: ProducerEntry) -> Any:
    return schema.make(
        "ProducerState",
        producer_id=entry.producer_id,
        producer_epoch=entry.epoch,
        last_sequence=entry.batches[-1].last_sequence if entry.batches else NO_SEQUENCE,
        last_timestamp=entry.last_timestamp_ms,
        coordinator_epoch=entry.coordinator_epoch,
        current_txn_start_offset=entry.txn_first_offset,
    )
