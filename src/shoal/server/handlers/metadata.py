"""Metadata (3) v0-v13: the broker, the cluster id and the topics a client asks about.

One broker (this node) leads every partition at leader epoch 0 with itself as the only
replica. Topics are asked for by name, or from v12 by topic id with a null name (an
unknown id gets UNKNOWN_TOPIC_ID and a null name; v10-v11 may not use ids, as in Kafka,
and get INVALID_REQUEST). v0 with an empty list and v1+ with a null list mean every
topic, internal ones included; v1+ with an empty list means none.

An unknown named topic is created with `num.partitions` partitions when the request
allows it (always up to v3, `allow_auto_topic_creation` from v4) and
`auto.create.topics.enable` is on; otherwise it gets UNKNOWN_TOPIC_OR_PARTITION. An
invalid name gets INVALID_TOPIC_EXCEPTION either way, as in Kafka. As in Kafka 4.2
(KRaft: the broker's AutoTopicCreationManager sends the creation to the controller and
answers UNKNOWN_TOPIC_OR_PARTITION meanwhile) the request that asks for the creation
is answered UNKNOWN_TOPIC_OR_PARTITION, and so is one whose creation finds the topic
made by a change that came first (an explicit CreateTopics wins then, and the
auto-creation is dropped); the next Metadata describes the topic. The creation runs in
the broker's change lane (`services.disk.changes`), in turn with CreateTopics and
DeleteTopics (a topic deleted is gone from the next Metadata, and may be auto-created
again, as in Kafka); its files are written in a disk worker; the answer waits for it,
so the next request sees the topic. A failed write answers KAFKA_STORAGE_ERROR.

Authorization (Kafka's handleTopicMetadataRequest): a topic needs DESCRIBE. Listing every
topic silently leaves out the ones the principal may not describe; a topic asked for by
name gets TOPIC_AUTHORIZATION_FAILED (with a null id, so as not to disclose whether it
exists), by id TOPIC_AUTHORIZATION_FAILED with a null name. Auto-creation needs CREATE on
the cluster or on the topic (TOPIC_AUTHORIZATION_FAILED otherwise). Authorized-operations
fields hold the principal's own operations (server/handlers/common/authorized_operations.py); the
cluster field is 0 without DESCRIBE on the cluster.
"""

from __future__ import annotations

import datetime
import logging
import uuid
from typing import Any

from shoal.config import broker_keys
from shoal.log.api import LogError, TopicInfo
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.handlers.common import authorized_operations as ops
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 3
_ZERO = datetime.timedelta(0)
_LEADER_EPOCH = 0
_BY_ID_MIN_VERSION = 12
_TOPIC_IDS_MIN_VERSION = 10


@api(API_KEY, 0, 13)
async def handle(ctx: RequestContext, request: Any) -> Any:
    services = ctx.services
    schema = response_schema(API_KEY, ctx.api_version)
    topic_operations = bool(getattr(request, "include_topic_authorized_operations", False))
    if _wants_all(ctx.api_version, request.topics):
        every = services.logs.topics()
        if authz.enabled(ctx):
            visible = authz.filter_allowed(
                ctx, AclOperation.DESCRIBE, authz.TOPIC, (info.name for info in every)
            )
            every = [info for info in every if info.name in visible]
        topics = [_described(schema, ctx, info, topic_operations) for info in every]
    else:
        topics = [
            await _one_topic(ctx, schema, request, t, topic_operations)
            for t in _unique(request.topics)
        ]
    host, port = services.node.endpoint(ctx.connection.listener_name)
    node = schema.make(
        "MetadataResponseBroker",
        node_id=ctx.services.node.node_id,
        host=host,
        port=port,
        rack=None,
    )
    return schema.response(
        throttle_time=_ZERO,
        brokers=(node,),
        cluster_id=services.node.cluster_id,
        controller_id=services.node.node_id,
        topics=tuple(topics),
        cluster_authorized_operations=_cluster_operations(
            ctx, requested=bool(getattr(request, "include_cluster_authorized_operations", False))
        ),
        error_code=ErrorCode.none,
    )


def _cluster_operations(ctx: RequestContext, *, requested: bool) -> int:
    if requested and not authz.cluster_allowed(ctx, AclOperation.DESCRIBE):
        return 0
    return ops.for_cluster(ctx, requested=requested)


def _wants_all(version: int, topics: tuple[Any, ...] | None) -> bool:
    if version == 0:
        return not topics
    return topics is None


def _unique(topics: tuple[Any, ...]) -> list[Any]:
    """Each asked-for topic once (Kafka answers a repeated topic once)."""
    seen: set[tuple[str | None, uuid.UUID | None]] = set()
    unique = []
    for topic in topics:
        key = (topic.name, getattr(topic, "topic_id", None))
        if key not in seen:
            seen.add(key)
            unique.append(topic)
    return unique


async def _one_topic(
    ctx: RequestContext, schema: Schema, request: Any, topic: Any, topic_operations: bool
) -> Any:
    version = ctx.api_version
    logs = ctx.services.logs
    name: str | None = topic.name
    topic_id: uuid.UUID | None = getattr(topic, "topic_id", None)
    if (
        version >= _TOPIC_IDS_MIN_VERSION
        and version < _BY_ID_MIN_VERSION
        and (name is None or topic_id is not None)
    ):
        log.info("Metadata v%d refused topic id %s: ids need v12+", version, topic_id)
        return _error(schema, ErrorCode.invalid_request, name or "", topic_id)
    if name is None:
        info = None if topic_id is None else logs.topic_by_id(topic_id)
        if info is None:
            return _error(schema, ErrorCode.unknown_topic_id, None, topic_id)
        if not authz.allowed(ctx, AclOperation.DESCRIBE, authz.TOPIC, info.name):
            return _error(schema, ErrorCode.topic_authorization_failed, None, topic_id)
        return _described(schema, ctx, info, topic_operations)
    if not authz.allowed(ctx, AclOperation.DESCRIBE, authz.TOPIC, name):
        return _error(schema, ErrorCode.topic_authorization_failed, name, None)
    info = logs.topic(name)
    if info is None:
        allowed = version < 4 or bool(request.allow_auto_topic_creation)
        if (
            allowed
            and ctx.services.config.current.get(broker_keys.AUTO_CREATE_TOPICS_ENABLE)
            and not authz.cluster_allowed(ctx, AclOperation.CREATE)
            and not authz.allowed(ctx, AclOperation.CREATE, authz.TOPIC, name)
        ):
            return _error(schema, ErrorCode.topic_authorization_failed, name, None)
        return _error(schema, await _auto_create(ctx, name, allowed=allowed), name, None)
    return _described(schema, ctx, info, topic_operations)


async def _auto_create(ctx: RequestContext, name: str, *, allowed: bool) -> ErrorCode:
    """Create `name` if allowed and enabled; the code the request answers for it."""
    services = ctx.services
    enabled = allowed and services.config.current.get(broker_keys.AUTO_CREATE_TOPICS_ENABLE)
    partitions = services.config.current.get(broker_keys.NUM_PARTITIONS)

    async def create() -> TopicInfo | None:
        """The topic made, or None if a change that came first made it."""
        if services.logs.topic(name) is not None:
            return None
        creation = services.logs.plan_topic(name, partitions=partitions, configs={})
        await services.disk.run(creation.run)
        return services.logs.finish_topic(creation)

    # With creation off, a dry run still tells an invalid name from a merely unknown one.
    try:
        if not enabled:
            services.logs.plan_topic(name, partitions=partitions, configs={})
            return ErrorCode.unknown_topic_or_partition
        made = await services.disk.changes.run(create)
    except LogError as exc:
        if not enabled and exc.code is not ErrorCode.invalid_topic_exception:
            return ErrorCode.unknown_topic_or_partition
        log.info(
            "Metadata refused topic %r (%s): %s (client %s)",
            name,
            exc.code.name,
            exc,
            ctx.client_id,
        )
        return exc.code
    if made is None:
        log.info(
            "Metadata from %s asked to auto-create topic %s, made meanwhile by an earlier change",
            ctx.client_id,
            name,
        )
    else:
        log.info(
            "auto-created topic %s (id %s, %d partitions) for Metadata from %s",
            made.name,
            made.topic_id,
            made.partitions,
            ctx.client_id,
        )
    return ErrorCode.unknown_topic_or_partition


def _described(schema: Schema, ctx: RequestContext, info: TopicInfo, topic_operations: bool) -> Any:
    node = ctx.services.node.node_id
    partitions = tuple(
        schema.make(
            "MetadataResponsePartition",
            error_code=ErrorCode.none,
            partition_index=index,
            leader_id=node,
            leader_epoch=_LEADER_EPOCH,
            replica_nodes=(node,),
            isr_nodes=(node,),
            offline_replicas=(),
        )
        for index in range(info.partitions)
    )
    return schema.make(
        "MetadataResponseTopic",
        error_code=ErrorCode.none,
        name=info.name,
        topic_id=info.topic_id,
        is_internal=info.internal,
        partitions=partitions,
        topic_authorized_operations=ops.for_resource(
            ctx, authz.TOPIC, info.name, requested=topic_operations
        ),
    )


def _error(schema: Schema, code: ErrorCode, name: str | None, topic_id: uuid.UUID | None) -> Any:
    return schema.make(
        "MetadataResponseTopic",
        error_code=code,
        name=name,
        topic_id=topic_id,
        is_internal=False,
        partitions=(),
        topic_authorized_operations=ops.NOT_REQUESTED,
    )
