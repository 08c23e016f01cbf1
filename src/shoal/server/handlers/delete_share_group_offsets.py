"""DeleteShareGroupOffsets (92) v0: delete a share group's state of whole topics.

The group coordinator decides (group/share/offsets.py rules, run by
server/services/group_service.py): the group must exist as a share group (GROUP_ID_NOT_FOUND)
and be empty (NON_EMPTY_GROUP); these are top-level errors with no topic rows, as in
Kafka. Per topic, in request order and once per name: one the cluster does not have
is UNKNOWN_TOPIC_OR_PARTITION, one the group has no state for is
UNKNOWN_TOPIC_OR_PARTITION with "There is no offset information to delete."; the
others move to deleting, have their state deleted and leave the group's metadata
(the share service drops the group's cached share-partitions). A topic whose state
the share coordinator failed to delete answers its error. An empty group id is
INVALID_GROUP_ID, a coordinator that cannot write its records
COORDINATOR_NOT_AVAILABLE; with `share.version`=0 the answer is UNSUPPORTED_VERSION.

Authorization (Kafka's handleDeleteShareGroupOffsetsRequest): DELETE on the group
(GROUP_AUTHORIZATION_FAILED) and READ on each topic (TOPIC_AUTHORIZATION_FAILED for the
topic, whose offsets stay).
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.coordinator import RecordSinkError
from shoal.group.share.offsets import INVALID_GROUP_ID_MESSAGE
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.registry import api
from shoal.server.services.group_service import SHARE_GROUPS_DISABLED, share_groups_enabled

log = logging.getLogger(__name__)
API_KEY = 92
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    if not share_groups_enabled(ctx.services.config.current):
        return _error(schema, ErrorCode.unsupported_version, SHARE_GROUPS_DISABLED)
    if not authz.allowed(ctx, AclOperation.DELETE, authz.GROUP, request.group_id):
        code = ErrorCode.group_authorization_failed
        return _error(schema, code, authz.DENIED_MESSAGES[code])
    if not request.group_id:
        return _error(schema, ErrorCode.invalid_group_id, INVALID_GROUP_ID_MESSAGE)
    names = [t.topic_name for t in request.topics]
    readable = authz.filter_allowed(ctx, AclOperation.READ, authz.TOPIC, names)
    try:
        response = ctx.services.group_service.delete_offsets(
            group_id=request.group_id, topic_names=[n for n in names if n in readable]
        )
    except RecordSinkError as exc:
        log.error("DeleteShareGroupOffsets of group %r not written: %s", request.group_id, exc)
        return _error(schema, ErrorCode.coordinator_not_available, str(exc))
    if response.error is not None:
        log.info(
            "DeleteShareGroupOffsets of group %r refused (%s): %s (client %s)",
            request.group_id,
            response.error,
            response.error_message,
            ctx.client_id,
        )
        return _error(schema, response.error, response.error_message)
    return schema.response(
        throttle_time=_ZERO,
        error_code=ErrorCode.none,
        error_message=None,
        responses=tuple(
            schema.make(
                "DeleteShareGroupOffsetsResponseTopic",
                topic_name=topic.topic_name,
                topic_id=topic.topic_id,
                error_code=ErrorCode.none if topic.error is None else topic.error,
                error_message=topic.error_message,
            )
            for topic in response.topics
        )
        + tuple(
            schema.make(
                "DeleteShareGroupOffsetsResponseTopic",
                topic_name=name,
                topic_id=None,
                error_code=ErrorCode.topic_authorization_failed,
                error_message=authz.DENIED_MESSAGES[ErrorCode.topic_authorization_failed],
            )
            for name in dict.fromkeys(names)
            if name not in readable
        ),
    )


def _error(schema: Schema, code: ErrorCode, message: str | None) -> Any:
    return schema.response(
        throttle_time=_ZERO, error_code=code, error_message=message, responses=()
    )
