"""CreatePartitions (37) v0-v3: grow topics to a new partition count.

Per topic: a name repeated in the request gets INVALID_REQUEST, an unknown topic
UNKNOWN_TOPIC_OR_PARTITION, a count not above the current one INVALID_PARTITIONS.
Assignments, when given, must list one replica list per new partition, each exactly
[this node] (else INVALID_REPLICA_ASSIGNMENT, as Kafka answers for an unregistered
broker). The log manager enforces Shoal's partition limits (INVALID_PARTITIONS). With
ValidateOnly nothing changes.

Each topic grows in the broker's change lane (`services.disk.changes`), decided on the
count every earlier change left: the metadata record (server/metadata/topic_catalog.py) and
the new partition directories are written and fsynced in a disk worker, then the new
partitions are adopted and the topic answered (KAFKA_STORAGE_ERROR if the write
failed; the topic keeps its count).

Authorization: ALTER on each topic (TOPIC_AUTHORIZATION_FAILED, after the duplicate
check), as in Kafka's ControllerApis.createPartitions.
"""

from __future__ import annotations

import datetime
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from shoal.log.api import LogError
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.handlers.common.replica_assignments import replica_list_problem
from shoal.server.refused import Refused
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 37
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 3)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    counts = Counter(t.name for t in request.topics)
    results = []
    answered: set[str] = set()
    for topic in request.topics:
        if topic.name in answered:
            continue
        answered.add(topic.name)
        code, message = ErrorCode.none, None
        try:
            if counts[topic.name] > 1:
                raise Refused(ErrorCode.invalid_request, "Duplicate topic name.")
            if not authz.allowed(ctx, AclOperation.ALTER, authz.TOPIC, topic.name):
                raise Refused(ErrorCode.topic_authorization_failed, "Topic authorization failed.")
            await ctx.services.disk.changes.run(
                _growth(ctx, topic, validate_only=bool(request.validate_only))
            )
        except Refused as exc:
            log.info(
                "CreatePartitions of %r refused (%s): %s (client %s)",
                topic.name,
                exc.code.name,
                exc.message,
                ctx.client_id,
            )
            code, message = exc.code, exc.message
            if code is ErrorCode.topic_authorization_failed:
                message = None  # Kafka 4.2 sends no message with it here
        results.append(
            schema.make(
                "CreatePartitionsTopicResult",
                name=topic.name,
                error_code=code,
                error_message=message,
            )
        )
    return schema.response(throttle_time=_ZERO, results=tuple(results))


def _growth(
    ctx: RequestContext, topic: Any, *, validate_only: bool
) -> Callable[[], Awaitable[None]]:
    """The topic's growth as a change of the broker's change lane (decided on the
    topics every earlier change left)."""

    async def grow() -> None:
        await _grow(ctx, topic, validate_only=validate_only)

    return grow


async def _grow(ctx: RequestContext, topic: Any, *, validate_only: bool) -> None:
    logs = ctx.services.logs
    info = logs.topic(topic.name)
    if info is None:
        raise Refused(ErrorCode.unknown_topic_or_partition, f"Topic {topic.name} does not exist.")
    count = int(topic.count)
    if count == info.partitions:
        raise Refused(
            ErrorCode.invalid_partitions, f"Topic already has {info.partitions} partition(s)."
        )
    if count < info.partitions:
        raise Refused(
            ErrorCode.invalid_partitions,
            f"The topic {topic.name} currently has {info.partitions} partition(s); {count} "
            "would not be an increase.",
        )
    if topic.assignments is not None:
        added = count - info.partitions
        if len(topic.assignments) != added:
            raise Refused(
                ErrorCode.invalid_replica_assignment,
                f"Attempted to add {added} additional partition(s), but only "
                f"{len(topic.assignments)} assignment(s) were specified.",
            )
        for assignment in topic.assignments:
            problem = replica_list_problem(
                [int(b) for b in assignment.broker_ids], node_id=ctx.services.node.node_id
            )
            if problem is not None:
                raise Refused(ErrorCode.invalid_replica_assignment, problem)
    before = info.partitions
    try:
        growth = logs.plan_partitions(topic.name, count=count)
        if validate_only:
            return
        await ctx.services.disk.run(growth.run)  # the metadata record and the new directories
        logs.finish_topic_change(growth)
    except LogError as exc:
        if exc.code is ErrorCode.kafka_storage_error:
            log.error(
                "CreatePartitions of %r failed: %s (client %s)", topic.name, exc, ctx.client_id
            )
        raise Refused(exc.code, str(exc)) from exc
    log.info(
        "topic %s grown from %d to %d partitions for %s", topic.name, before, count, ctx.client_id
    )
