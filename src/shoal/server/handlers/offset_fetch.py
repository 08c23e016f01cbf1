"""OffsetFetch (9) v1-v10: committed offsets of groups.

v1-v7 ask for one group (Topics null = every committed partition, from v2); v8+ for
several groups at once, each answered on its own. A partition without a committed
offset answers offset -1, leader epoch -1, metadata "". Offsets a transaction
committed (TxnOffsetCommit) are invisible until its marker; with RequireStable (v7+)
a partition that has one answers UNSTABLE_OFFSET_COMMIT (offset -1) instead, as
Kafka 4.2 (the client retries). A share group id answers GROUP_ID_NOT_FOUND. v10
names topics by id, asking and answering: an id no topic has answers its partitions
offset -1 with UNKNOWN_TOPIC_ID; asking for every partition leaves out topics that no
longer exist (they have no id to be named by).

Authorization (Kafka's handleOffsetFetchRequest): DESCRIBE on the group
(GROUP_AUTHORIZATION_FAILED for the group; v1 on each requested partition instead); a
requested topic the principal may not DESCRIBE answers TOPIC_AUTHORIZATION_FAILED
(offset -1) after the others, and asking for every partition leaves such topics out.
"""

from __future__ import annotations

import datetime
from typing import Any

from shoal.group.committed_offsets import FetchedOffset
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.registry import api

API_KEY = 9
_ZERO = datetime.timedelta(0)
_MULTI_GROUP_MIN_VERSION = 8
_GROUP_ERROR_MIN_VERSION = 2
_TOPIC_ID_MIN_VERSION = 10


@api(API_KEY, 1, 10)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    if ctx.api_version < _MULTI_GROUP_MIN_VERSION:
        error, fetched = _fetch(
            ctx,
            group_id=request.group_id,
            partitions=_partitions(request.topics),
            require_stable=bool(getattr(request, "require_stable", False)),
        )
        return schema.response(
            throttle_time=_ZERO,
            error_code=ErrorCode.none if error is None else error,
            topics=_topics(schema, fetched, ""),
        )
    by_id = ctx.api_version >= _TOPIC_ID_MIN_VERSION
    groups = []
    for group in request.groups:
        unknown: tuple[Any, ...] = ()
        if by_id:
            partitions, unknown = _partitions_by_id(ctx, group.topics)
        else:
            partitions = _partitions(group.topics)
        error, fetched = _fetch(
            ctx,
            group_id=group.group_id,
            partitions=partitions,
            require_stable=bool(request.require_stable),
        )
        topics = _topics_by_id(ctx, schema, fetched) if by_id else _topics(schema, fetched, "s")
        groups.append(
            schema.make(
                "OffsetFetchResponseGroup",
                group_id=group.group_id,
                error_code=ErrorCode.none if error is None else error,
                topics=topics + (unknown if error is None else ()),
            )
        )
    return schema.response(throttle_time=_ZERO, groups=tuple(groups))


def _fetch(
    ctx: RequestContext,
    *,
    group_id: str,
    partitions: list[tuple[str, int]] | None,
    require_stable: bool,
) -> tuple[ErrorCode | None, tuple[FetchedOffset, ...]]:
    """The group's error and offsets, as the principal may see them."""
    classic = ctx.services.group_service.classic
    if not authz.allowed(ctx, AclOperation.DESCRIBE, authz.GROUP, group_id):
        code = ErrorCode.group_authorization_failed
        if ctx.api_version >= _GROUP_ERROR_MIN_VERSION:
            return code, ()
        return None, tuple(
            FetchedOffset(topic=t, partition=p, error=code) for t, p in partitions or ()
        )
    if not authz.enabled(ctx):
        return classic.fetch_offsets(
            group_id=group_id, partitions=partitions, require_stable=require_stable
        )
    if partitions is None:
        error, fetched = classic.fetch_offsets(
            group_id=group_id, partitions=None, require_stable=require_stable
        )
        visible = authz.filter_allowed(
            ctx, AclOperation.DESCRIBE, authz.TOPIC, (f.topic for f in fetched)
        )
        return error, tuple(f for f in fetched if f.topic in visible)
    visible = authz.filter_allowed(
        ctx, AclOperation.DESCRIBE, authz.TOPIC, (t for t, _ in partitions)
    )
    error, fetched = classic.fetch_offsets(
        group_id=group_id,
        partitions=[(t, p) for t, p in partitions if t in visible],
        require_stable=require_stable,
    )
    if error is not None:
        return error, fetched
    denied = tuple(
        FetchedOffset(topic=t, partition=p, error=ErrorCode.topic_authorization_failed)
        for t, p in partitions
        if t not in visible
    )
    return error, fetched + denied


def _partitions(topics: Any) -> list[tuple[str, int]] | None:
    if topics is None:
        return None
    return [(t.name, int(p)) for t in topics for p in t.partition_indexes]


def _partitions_by_id(
    ctx: RequestContext, topics: Any
) -> tuple[list[tuple[str, int]] | None, tuple[Any, ...]]:
    """v10: the partitions of the topics whose ids exist, and the answers of the
    others (UNKNOWN_TOPIC_ID, offset -1)."""
    if topics is None:
        return None, ()
    schema = response_schema(API_KEY, ctx.api_version)
    known: list[tuple[str, int]] = []
    unknown = []
    for t in topics:
        info = None if t.topic_id is None else ctx.services.logs.topic_by_id(t.topic_id)
        if info is not None:
            known += [(info.name, int(p)) for p in t.partition_indexes]
            continue
        missing = FetchedOffset(topic="", partition=0, error=ErrorCode.unknown_topic_id)
        unknown.append(
            schema.make(
                "OffsetFetchResponseTopics",
                topic_id=t.topic_id,
                partitions=tuple(
                    _partition(schema, missing, int(p), "s") for p in t.partition_indexes
                ),
            )
        )
    return known, tuple(unknown)


def _topics_by_id(
    ctx: RequestContext, schema: Schema, fetched: tuple[FetchedOffset, ...]
) -> tuple[Any, ...]:
    """v10's topics, named by id (a topic that no longer exists is left out)."""
    by_topic: dict[Any, list[Any]] = {}
    for f in fetched:
        info = ctx.services.logs.topic(f.topic)
        if info is not None:
            by_topic.setdefault(info.topic_id, []).append(_partition(schema, f, f.partition, "s"))
    return tuple(
        schema.make("OffsetFetchResponseTopics", topic_id=topic_id, partitions=tuple(parts))
        for topic_id, parts in by_topic.items()
    )


def _partition(schema: Schema, f: FetchedOffset, partition: int, suffix: str) -> Any:
    return schema.make(
        f"OffsetFetchResponsePartition{suffix}",
        partition_index=partition,
        committed_offset=f.offset,
        committed_leader_epoch=f.leader_epoch,
        metadata=f.metadata,
        error_code=ErrorCode.none if f.error is None else f.error,
    )


def _topics(schema: Schema, fetched: tuple[FetchedOffset, ...], suffix: str) -> tuple[Any, ...]:
    """v8+ names its nested types OffsetFetchResponseTopics/Partitions (plural)."""
    by_topic: dict[str, list[Any]] = {}
    for f in fetched:
        by_topic.setdefault(f.topic, []).append(_partition(schema, f, f.partition, suffix))
    return tuple(
        schema.make(f"OffsetFetchResponseTopic{suffix}", name=name, partitions=tuple(parts))
        for name, parts in by_topic.items()
    )
