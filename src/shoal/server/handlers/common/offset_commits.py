"""The steps OffsetCommit (8) and TxnOffsetCommit (28) share: read the requested
offsets, answer partitions that do not exist UNKNOWN_TOPIC_OR_PARTITION without
committing them, write the rest (a coordinator that cannot write answers
COORDINATOR_NOT_AVAILABLE for each), log what was refused, and build the per-topic
response in request order. The handlers differ only in what they write and log.

OffsetCommit v10 names topics by id: an id no topic has answers UNKNOWN_TOPIC_ID for
each of its partitions (nothing committed), and the response names topics by id too.

Authorization: the handler passes `refused` when the request as a whole is not
authorized (every partition answers that code, nothing is written); each topic needs
READ (TOPIC_AUTHORIZATION_FAILED for its partitions, before their existence is looked
at), as in Kafka's handleOffsetCommitRequest / handleTxnOffsetCommitRequest.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Sequence
from typing import Any

from shoal.coordinator import RecordSinkFull
from shoal.group.committed_offsets import NO_LEADER_EPOCH, OffsetToCommit, PartitionError
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz

log = logging.getLogger(__name__)
_ZERO = datetime.timedelta(0)

Write = Callable[[tuple[OffsetToCommit, ...]], Sequence[PartitionError]]
"""Commit the offsets of existing partitions; one answer per partition."""


def commit(
    ctx: RequestContext,
    request: Any,
    *,
    api_key: int,
    api_name: str,
    what: str,
    write: Write,
    refused: ErrorCode | None = None,
) -> Any:
    """Run one (Txn)OffsetCommit request; `what` names it in the log ("OffsetCommit
    of group 'g' member 'm'"); `api_key` picks the response schema, whose structs are
    named after `api_name` (the two APIs' responses differ only in their names);
    `refused` answers every partition with that code."""
    schema = response_schema(api_key, ctx.api_version)
    by_id = schema.has(f"{api_name}ResponseTopic", "topic_id")
    logs = ctx.services.logs
    unknown_ids: list[tuple[Any, int]] = []
    order: list[tuple[Any, str | None, int]] = []
    """(request key, resolved name or None, partition) in request order."""
    offsets_asked: list[OffsetToCommit] = []
    for topic in request.topics:
        if by_id:
            info = None if topic.topic_id is None else logs.topic_by_id(topic.topic_id)
            key, name = topic.topic_id, None if info is None else info.name
        else:
            key, name = topic.name, topic.name
        for p in topic.partitions:
            order.append((key, name, int(p.partition_index)))
            if name is None:
                unknown_ids.append((key, int(p.partition_index)))
                continue
            offsets_asked.append(
                OffsetToCommit(
                    topic=name,
                    partition=int(p.partition_index),
                    offset=int(p.committed_offset),
                    leader_epoch=int(getattr(p, "committed_leader_epoch", NO_LEADER_EPOCH)),
                    metadata=p.committed_metadata,
                )
            )
    requested = tuple(offsets_asked)
    topics = [o.topic for o in requested]
    denied = frozenset(topics) - authz.filter_allowed(ctx, AclOperation.READ, authz.TOPIC, topics)
    unknown = tuple(
        PartitionError(topic=o.topic, partition=o.partition, error=_refusal(o, refused, denied))
        if refused is not None or o.topic in denied
        else PartitionError(
            topic=o.topic, partition=o.partition, error=ErrorCode.unknown_topic_or_partition
        )
        for o in requested
        if refused is not None or o.topic in denied or logs.partition(o.topic, o.partition) is None
    )
    missing = {(u.topic, u.partition) for u in unknown}
    offsets = tuple(o for o in requested if (o.topic, o.partition) not in missing)
    try:
        answers = tuple(write(offsets)) if refused is None else ()
    except RecordSinkFull as exc:
        log.error("%s not written: %s", what, exc)
        answers = tuple(
            PartitionError(
                topic=o.topic, partition=o.partition, error=ErrorCode.coordinator_not_available
            )
            for o in offsets
        )
    by_partition = {(a.topic, a.partition): a.error for a in (*unknown, *answers)}
    errors = {e for e in by_partition.values() if e is not None}
    if unknown_ids:
        errors.add(ErrorCode.unknown_topic_id)
    if errors:
        log.info("%s: %s (client %s)", what, sorted(e.name for e in errors), ctx.client_id)
    by_topic: dict[Any, list[Any]] = {}
    for key, name, partition in order:
        error = ErrorCode.unknown_topic_id if name is None else by_partition.get((name, partition))
        by_topic.setdefault(key, []).append(
            schema.make(
                f"{api_name}ResponsePartition",
                partition_index=partition,
                error_code=ErrorCode.none if error is None else error,
            )
        )
    field = "topic_id" if by_id else "name"
    return schema.response(
        throttle_time=_ZERO,
        topics=tuple(
            schema.make(f"{api_name}ResponseTopic", **{field: key}, partitions=tuple(parts))
            for key, parts in by_topic.items()
        ),
    )


def _refusal(
    offset: OffsetToCommit, refused: ErrorCode | None, denied: frozenset[str]
) -> ErrorCode:
    if refused is not None:
        return refused
    assert offset.topic in denied
    return ErrorCode.topic_authorization_failed
