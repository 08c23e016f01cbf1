"""FindCoordinator (10) v0-v6: this node coordinates every group, transaction and share
state key.

v0-v3 carry one `key` (and from v1 its `key_type`); v4+ a list of `coordinator_keys` of
one type, answered one `Coordinator` each. Key types: 0 group, 1 transaction, 2 share
(only from v6, as in Kafka, which answers a lower version INVALID_REQUEST). A share key
must read `groupId:topicId:partition` (Kafka's SharePartitionKey.validate); another
type is INVALID_REQUEST. A refused key gets node -1, host "" and port -1.

Authorization (Kafka's getCoordinator), before the key is validated: a group key needs
DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED), a transaction key DESCRIBE on the
transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), a share key CLUSTER_ACTION on
the cluster (CLUSTER_AUTHORIZATION_FAILED); no node is given then.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import logging
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 10
_ZERO = datetime.timedelta(0)
GROUP, TRANSACTION, SHARE = 0, 1, 2
_SHARE_MIN_VERSION = 6
_BATCHED_MIN_VERSION = 4
_UUID_BASE64_CHARS = 22


@api(API_KEY, 0, 6)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    key_type = int(getattr(request, "key_type", GROUP))
    if ctx.api_version < _BATCHED_MIN_VERSION:
        return schema.response(throttle_time=_ZERO, **_coordinator(ctx, request.key, key_type))
    coordinators = tuple(
        schema.make("Coordinator", key=key, **_coordinator(ctx, key, key_type))
        for key in request.coordinator_keys
    )
    return schema.response(throttle_time=_ZERO, coordinators=coordinators)


def _coordinator(ctx: RequestContext, key: str, key_type: int) -> dict[str, Any]:
    denied = _denied(ctx, key, key_type)
    if denied is not None:
        code, message = denied
        return {
            "error_code": code,
            "error_message": message if ctx.api_version < _BATCHED_MIN_VERSION else None,
            "node_id": -1,
            "host": "",
            "port": -1,
        }
    problem = _key_problem(key, key_type, ctx.api_version)
    if problem is not None:
        log.info(
            "FindCoordinator v%d of %r (type %d) refused: %s (client %s)",
            ctx.api_version,
            key,
            key_type,
            problem,
            ctx.client_id,
        )
        return {
            "error_code": ErrorCode.invalid_request,
            "error_message": problem,
            "node_id": -1,
            "host": "",
            "port": -1,
        }
    services = ctx.services
    return {
        "error_code": ErrorCode.none,
        "error_message": None,
        "node_id": services.node.node_id,
        "host": services.node.endpoint(ctx.connection.listener_name)[0],
        "port": services.node.endpoint(ctx.connection.listener_name)[1],
    }


def _denied(ctx: RequestContext, key: str, key_type: int) -> tuple[ErrorCode, str] | None:
    if key_type == GROUP and not authz.allowed(ctx, AclOperation.DESCRIBE, authz.GROUP, key):
        return ErrorCode.group_authorization_failed, "Group authorization failed."
    if key_type == TRANSACTION and not authz.allowed(
        ctx, AclOperation.DESCRIBE, authz.TRANSACTIONAL_ID, key
    ):
        return (
            ErrorCode.transactional_id_authorization_failed,
            "Transactional Id authorization failed.",
        )
    if key_type == SHARE and not authz.cluster_allowed(ctx, AclOperation.CLUSTER_ACTION):
        return ErrorCode.cluster_authorization_failed, "Cluster authorization failed."
    return None


def _key_problem(key: str, key_type: int, version: int) -> str | None:
    if key_type in (GROUP, TRANSACTION):
        return None
    if key_type != SHARE:
        return f"Unknown coordinator type received: {key_type}"
    if version < _SHARE_MIN_VERSION:
        return f"share coordinator keys need FindCoordinator v{_SHARE_MIN_VERSION}+"
    return _share_key_problem(key)


def _share_key_problem(key: str) -> str | None:
    parts = key.split(":")
    if len(parts) != 3:
        return f"Invalid key format: expected groupId:topicId:partition, found {key!r}"
    group_id, topic_id, partition = parts
    if not group_id.strip():
        return f"Invalid key {key!r}: the group id is empty"
    if not _is_topic_id(topic_id):
        return f"Invalid key {key!r}: {topic_id!r} is not a topic id"
    if not partition.isdigit():
        return f"Invalid key {key!r}: {partition!r} is not a partition number"
    return None


def _is_topic_id(text: str) -> bool:
    """A topic id as Kafka prints it: 22 characters of URL-safe base64 for 16 bytes."""
    if len(text) != _UUID_BASE64_CHARS:
        return False
    try:
        return len(base64.urlsafe_b64decode(text + "==")) == 16
    except (binascii.Error, ValueError):
        return False
