"""ConsumerGroupHeartbeat (68) v0-1: join, heartbeat and leave a consumer group (KIP-848).

The group coordinator decides (group/consumer/membership.py rules, run by
server/services/group_service.py); this module maps the request in and the response out. v0
members join with an empty MemberId and the coordinator gives them one (a random
UUID, made here: cores take no randomness); v1 members bring their own (librdkafka:
a 22-character base64 UUID), kept verbatim. `SubscribedTopicRegex` exists from v1.
ClientId comes from the request header, ClientHost is the peer address. The
Assignment is sent as topic ids with partitions, or null when unchanged. A
coordinator that cannot write its records answers COORDINATOR_NOT_AVAILABLE.

Authorization (Kafka's handleConsumerGroupHeartbeat): READ on the group
(GROUP_AUTHORIZATION_FAILED) and DESCRIBE on every subscribed topic name
(TOPIC_AUTHORIZATION_FAILED otherwise); nothing is written when refused.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from shoal.coordinator import RecordSinkError
from shoal.group.consumer.membership import (
    JOIN_GROUP_MEMBER_EPOCH,
    HeartbeatRequest,
    HeartbeatResponse,
)
from shoal.group.records import TopicPartitions
from shoal.group.topic_image import from_topic_partitions
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.handlers.share_group_heartbeat import client_host, heartbeat_response
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 68


@api(API_KEY, 0, 1)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    refused = _refused(ctx, request)
    if refused is not None:
        return heartbeat_response(schema, HeartbeatResponse(error=refused, error_message=None))
    member_id = request.member_id
    if int(request.member_epoch) == JOIN_GROUP_MEMBER_EPOCH and not member_id:
        member_id = str(uuid.uuid4())
    owned = None
    if request.topic_partitions is not None:
        owned = from_topic_partitions(
            TopicPartitions(topic_id=tp.topic_id, partitions=tuple(int(p) for p in tp.partitions))
            for tp in request.topic_partitions
        )
    timeout = request.rebalance_timeout
    core_request = HeartbeatRequest(
        group_id=request.group_id,
        member_id=member_id,
        member_epoch=int(request.member_epoch),
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        rebalance_timeout_ms=int(timeout.total_seconds() * 1000),
        subscribed_topic_names=(
            tuple(request.subscribed_topic_names)
            if request.subscribed_topic_names is not None
            else None
        ),
        subscribed_topic_regex=getattr(request, "subscribed_topic_regex", None),
        server_assignor=request.server_assignor,
        owned=owned,
        client_id=ctx.client_id or "",
        client_host=client_host(ctx),
    )
    try:
        response = ctx.services.group_service.consumer_heartbeat(core_request)
    except RecordSinkError as exc:
        log.error("ConsumerGroupHeartbeat of group %r not written: %s", request.group_id, exc)
        return heartbeat_response(
            schema,
            HeartbeatResponse(error=ErrorCode.coordinator_not_available, error_message=str(exc)),
        )
    if response.error is not None:
        log.info(
            "ConsumerGroupHeartbeat of member %r of group %r at epoch %d refused (%s): %s "
            "(client %s)",
            request.member_id,
            request.group_id,
            request.member_epoch,
            response.error,
            response.error_message,
            ctx.client_id,
        )
    return heartbeat_response(schema, response)


def _refused(ctx: RequestContext, request: Any) -> ErrorCode | None:
    if not authz.enabled(ctx):
        return None
    if not authz.allowed(ctx, AclOperation.READ, authz.GROUP, request.group_id):
        return ErrorCode.group_authorization_failed
    topics = request.subscribed_topic_names or ()
    if authz.filter_allowed(ctx, AclOperation.DESCRIBE, authz.TOPIC, topics) != set(topics):
        return ErrorCode.topic_authorization_failed
    return None
