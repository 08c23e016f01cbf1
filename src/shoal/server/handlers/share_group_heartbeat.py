"""ShareGroupHeartbeat (76) v1: join, heartbeat and leave a share group (KIP-932).

The group coordinator decides (group/share/membership.py rules, run by
server/services/group_service.py); this module maps the request in and the response out. The
member id is the client's own (librdkafka: a 22-character base64 UUID, `+` and `/`
included) and is kept verbatim. ClientId comes from the request header, ClientHost is
the peer address in Kafka's "/127.0.0.1" form. The Assignment is sent as topic ids
with partitions, or null when unchanged. v0 (Kafka 4.0 early access) is not served.

With `share.version`=0 share groups are off: the API stays advertised and every
request answers UNSUPPORTED_VERSION (35). A coordinator that cannot write its records
answers COORDINATOR_NOT_AVAILABLE, which clients retry after finding the coordinator.

Authorization (Kafka's handleShareGroupHeartbeat): READ on the group
(GROUP_AUTHORIZATION_FAILED) and DESCRIBE on every subscribed topic name
(TOPIC_AUTHORIZATION_FAILED otherwise); nothing is written when refused.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.coordinator import RecordSinkError
from shoal.group.results import ShareGroupHeartbeatResponse
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.registry import api
from shoal.server.services.group_service import SHARE_GROUPS_DISABLED, share_groups_enabled

log = logging.getLogger(__name__)
API_KEY = 76
_ZERO = datetime.timedelta(0)


def client_host(ctx: RequestContext) -> str:
    """The peer address as Kafka prints an InetAddress without a host name."""
    return f"/{ctx.connection.peer_host}"


@api(API_KEY, 1, 1)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    if not share_groups_enabled(ctx.services.config.current):
        return _error(schema, ErrorCode.unsupported_version, SHARE_GROUPS_DISABLED)
    if not authz.allowed(ctx, AclOperation.READ, authz.GROUP, request.group_id):
        return _error(schema, ErrorCode.group_authorization_failed, None)
    topics = request.subscribed_topic_names or ()
    if authz.enabled(ctx) and authz.filter_allowed(
        ctx, AclOperation.DESCRIBE, authz.TOPIC, topics
    ) != set(topics):
        return _error(schema, ErrorCode.topic_authorization_failed, None)
    try:
        response = ctx.services.group_service.heartbeat(
            group_id=request.group_id,
            member_id=request.member_id,
            member_epoch=int(request.member_epoch),
            rack_id=request.rack_id,
            subscribed_topic_names=request.subscribed_topic_names,
            client_id=ctx.client_id or "",
            client_host=client_host(ctx),
        )
    except RecordSinkError as exc:
        log.error("ShareGroupHeartbeat of group %r not written: %s", request.group_id, exc)
        return _error(schema, ErrorCode.coordinator_not_available, str(exc))
    if response.error is not None:
        log.info(
            "ShareGroupHeartbeat of member %r of group %r at epoch %d refused (%s): %s (client %s)",
            request.member_id,
            request.group_id,
            request.member_epoch,
            response.error,
            response.error_message,
            ctx.client_id,
        )
    return heartbeat_response(schema, response)


def heartbeat_response(schema: Schema, response: ShareGroupHeartbeatResponse) -> Any:
    """A group heartbeat's answer (share or consumer: the same fields) from the core's."""
    assignment = None
    if response.assignment is not None:
        assignment = schema.make(
            "Assignment",
            topic_partitions=tuple(
                schema.make("TopicPartitions", topic_id=tp.topic_id, partitions=tp.partitions)
                for tp in response.assignment
            ),
        )
    return schema.response(
        throttle_time=_ZERO,
        error_code=ErrorCode.none if response.error is None else response.error,
        error_message=response.error_message,
        member_id=response.member_id,
        member_epoch=response.member_epoch,
        heartbeat_interval=datetime.timedelta(milliseconds=response.heartbeat_interval_ms),
        assignment=assignment,
    )


def _error(schema: Schema, code: ErrorCode, message: str | None) -> Any:
    return schema.response(
        throttle_time=_ZERO,
        error_code=code,
        error_message=message,
        member_id=None,
        member_epoch=0,
        heartbeat_interval=_ZERO,
        assignment=None,
    )
