"""DescribeTopicPartitions (75) v0: topics and their partitions, a page at a time.

Java Admin 4.x's describeTopics (and so `kafka-topics --describe`) asks this instead of
Metadata. Answered as Kafka's DescribeTopicPartitionsRequestHandler and
KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse answer:

- No topics asked means every topic. Topics named before the cursor's topic (by name)
  are left out; the rest are answered once each, sorted by name.
- A page holds at most max(1, min(ResponsePartitionLimit,
  limits.DESCRIBE_TOPIC_PARTITIONS_MAX)) partitions, the cursor's topic starting at the
  cursor's partition, every other at 0. A topic cut short ends the page with NextCursor
  at its first partition left out; a page full at a topic's end puts NextCursor at the
  start of the next topic (known or not). An unknown named topic takes no room; it gets
  UNKNOWN_TOPIC_OR_PARTITION, or INVALID_TOPIC_EXCEPTION for an illegal name (internal
  if Kafka's internal topics have that name), and is left out when every topic was
  asked for.
- A cursor whose topic is not among the named ones, or whose partition is negative,
  gets INVALID_REQUEST for every asked topic (Kafka's error response).
- Partitions: this node leads each at leader epoch 0, the only replica and in-sync
  replica; eligible leader replicas and last known ELR are empty (KIP-966).

Authorization: each topic needs DESCRIBE. With every topic asked, the others are left
out silently; a named one gets TOPIC_AUTHORIZATION_FAILED with no id, after the page.
Every other answered topic carries the principal's operations on it (the request has no
field to ask for them; Kafka always fills them).

Deliberate difference: Kafka answers UNKNOWN_SERVER_ERROR for every topic when a topic
named "" is asked without a cursor (a NullPointerException in its handler); Shoal answers
that topic INVALID_TOPIC_EXCEPTION and the others as usual.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from shoal import limits
from shoal.log import leader_epochs
from shoal.log.api import LogError, TopicInfo
from shoal.log.topics import validate_topic_name
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.handlers.common import authorized_operations as ops
from shoal.server.registry import api
from shoal.server.services.group_persistence import GROUP_METADATA_TOPIC
from shoal.server.services.share_state import SHARE_STATE_TOPIC
from shoal.server.services.txn_service import TRANSACTION_STATE_TOPIC

log = logging.getLogger(__name__)
API_KEY = 75
_ZERO = datetime.timedelta(0)
INTERNAL_TOPICS = frozenset({GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_STATE_TOPIC})
"""Kafka's internal topic names (its Topic.isInternal): an unknown topic so named is
still answered as internal (Shoal creates `__transaction_state` on first use)."""


@dataclass(frozen=True, slots=True)
class Page:
    """What one response holds: each topic answered with the partition indexes it
    shows (None: the topic is unknown), and where the next page starts (None: done)."""

    topics: list[tuple[str, range | None]]
    next_cursor: tuple[str, int] | None


def page(
    names: Sequence[str],
    partition_count: Callable[[str], int | None],
    *,
    cursor: tuple[str, int] | None,
    limit: int,
    with_unknown: bool,
) -> Page:
    """The page of `names` (sorted, each once) starting at `cursor`, holding at most
    `limit` (>= 1) partitions; `partition_count` is None for an unknown topic, answered
    only `with_unknown`."""
    remaining = limit
    topics: list[tuple[str, range | None]] = []
    for name in names:
        if remaining == 0:
            return Page(topics, (name, 0))
        count = partition_count(name)
        if count is None:
            if with_unknown:
                topics.append((name, None))
            continue
        start = cursor[1] if cursor is not None and name == cursor[0] else 0
        end = min(count, start + remaining)
        shown = range(start, end)
        topics.append((name, shown))
        if end < count:
            return Page(topics, (name, end))
        remaining -= len(shown)
    return Page(topics, None)


@api(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    logs = ctx.services.logs
    asked = request.cursor
    cursor = None if asked is None else (str(asked.topic_name), int(asked.partition_index))
    after = "" if cursor is None else cursor[0]
    every = not request.topics
    if every:
        names = {info.name for info in logs.topics() if info.name >= after}
    else:
        names = {t.name for t in request.topics if t.name >= after}
    refusal = _cursor_refusal(cursor, names, every=every)
    if refusal is not None:
        log.info("DescribeTopicPartitions refused: %s (client %s)", refusal, ctx.client_id)
        return schema.response(
            throttle_time=_ZERO,
            topics=tuple(
                _error(schema, ErrorCode.invalid_request, t.name, ops.NOT_REQUESTED)
                for t in request.topics
            ),
            next_cursor=None,
        )
    describable = authz.filter_allowed(ctx, AclOperation.DESCRIBE, authz.TOPIC, names)
    infos = {name: logs.topic(name) for name in describable}
    limit = max(1, min(int(request.response_partition_limit), limits.DESCRIBE_TOPIC_PARTITIONS_MAX))
    found = page(
        sorted(describable),
        lambda name: _count(infos[name]),
        cursor=cursor,
        limit=limit,
        with_unknown=not every,
    )
    topics = [
        _error(
            schema,
            _unknown_code(name),
            name,
            ops.operations(ctx, authz.TOPIC, name),
            internal=name in INTERNAL_TOPICS,
        )
        if shown is None
        else _described(schema, ctx, infos[name], shown)
        for name, shown in found.topics
    ]
    if not every:
        denied = sorted(names - describable)
        if denied:
            log.info(
                "DescribeTopicPartitions denied DESCRIBE on %s (client %s)", denied, ctx.client_id
            )
        topics += [
            _error(schema, ErrorCode.topic_authorization_failed, name, ops.NOT_REQUESTED)
            for name in denied
        ]
    next_cursor = (
        None
        if found.next_cursor is None
        else schema.make(
            "Cursor", topic_name=found.next_cursor[0], partition_index=found.next_cursor[1]
        )
    )
    return schema.response(throttle_time=_ZERO, topics=tuple(topics), next_cursor=next_cursor)


def _cursor_refusal(cursor: tuple[str, int] | None, names: set[str], *, every: bool) -> str | None:
    if cursor is None:
        return None
    if not every and cursor[0] not in names:
        return f"the topic list should contain the cursor topic {cursor[0]!r}"
    if cursor[1] < 0:
        return f"the cursor's partition {cursor[1]} of {cursor[0]!r} is negative"
    return None


def _count(info: TopicInfo | None) -> int | None:
    return None if info is None else info.partitions


def _unknown_code(name: str) -> ErrorCode:
    try:
        validate_topic_name(name)
    except LogError as exc:
        return exc.code
    return ErrorCode.unknown_topic_or_partition


def _described(schema: Schema, ctx: RequestContext, info: TopicInfo | None, shown: range) -> Any:
    assert info is not None  # a topic with partitions shown is known
    node = ctx.services.node.node_id
    partitions = tuple(
        schema.make(
            "DescribeTopicPartitionsResponsePartition",
            error_code=ErrorCode.none,
            partition_index=index,
            leader_id=node,
            leader_epoch=leader_epochs.LEADER_EPOCH,
            replica_nodes=(node,),
            isr_nodes=(node,),
            eligible_leader_replicas=(),
            last_known_elr=(),
            offline_replicas=(),
        )
        for index in shown
    )
    return schema.make(
        "DescribeTopicPartitionsResponseTopic",
        error_code=ErrorCode.none,
        name=info.name,
        topic_id=info.topic_id,
        is_internal=info.internal,
        partitions=partitions,
        topic_authorized_operations=ops.operations(ctx, authz.TOPIC, info.name),
    )


def _error(
    schema: Schema, code: ErrorCode, name: str, operations: int, *, internal: bool = False
) -> Any:
    """A topic answered with an error: no id, no partitions."""
    return schema.make(
        "DescribeTopicPartitionsResponseTopic",
        error_code=code,
        name=name,
        topic_id=None,
        is_internal=internal,
        partitions=(),
        topic_authorized_operations=operations,
    )
