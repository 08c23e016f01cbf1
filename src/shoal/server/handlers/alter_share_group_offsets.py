"""AlterShareGroupOffsets (91) v0: set the start offsets of an empty share group.

The group coordinator decides (group/share/offsets.py rules, run by
server/services/group_service.py): the group must be empty (NON_EMPTY_GROUP) or missing (it is
then created empty); another group type is GROUP_ID_NOT_FOUND; a topic or partition
the cluster does not have is UNKNOWN_TOPIC_OR_PARTITION for that partition. The rest
are reset under a bumped group epoch: their state is re-initialised at the requested
start offsets (in-flight records and delivery counts discarded, writers of the old
state epoch fenced), and the share service drops the group's cached share-partitions
so the next member reads the new state. A partition the share coordinator failed to
initialise answers its error.

A group-level error is sent at the top level only, with no topics (Kafka's
`AlterShareGroupOffsetsRequest.getErrorResponseData`; Kafka 4.2 answers a non-empty
group so). An empty group id is INVALID_GROUP_ID, a
coordinator that cannot write its records COORDINATOR_NOT_AVAILABLE; with
`share.version`=0 the answer is UNSUPPORTED_VERSION.

Authorization (Kafka's handleAlterShareGroupOffsetsRequest): READ on the group
(GROUP_AUTHORIZATION_FAILED, on every partition too) and READ on each topic
(TOPIC_AUTHORIZATION_FAILED on its partitions, which are not altered).
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.coordinator import RecordSinkError
from shoal.group.results import AlterOffsetsTopic
from shoal.group.share.offsets import INVALID_GROUP_ID_MESSAGE
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.registry import api
from shoal.server.services.group_service import SHARE_GROUPS_DISABLED, share_groups_enabled

log = logging.getLogger(__name__)
API_KEY = 91
_ZERO = datetime.timedelta(0)


@api(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    if not share_groups_enabled(ctx.services.config.current):
        return _error(schema, request, ErrorCode.unsupported_version, SHARE_GROUPS_DISABLED)
    if not authz.allowed(ctx, AclOperation.READ, authz.GROUP, request.group_id):
        code = ErrorCode.group_authorization_failed
        return _error(schema, request, code, authz.DENIED_MESSAGES[code])
    if not request.group_id:
        return _error(schema, request, ErrorCode.invalid_group_id, INVALID_GROUP_ID_MESSAGE)
    readable = authz.filter_allowed(
        ctx, AclOperation.READ, authz.TOPIC, (t.topic_name for t in request.topics)
    )
    topics = [
        (t.topic_name, [(int(p.partition_index), int(p.start_offset)) for p in t.partitions])
        for t in request.topics
        if t.topic_name in readable
    ]
    try:
        response = ctx.services.group_service.alter_offsets(
            group_id=request.group_id, topics=topics
        )
    except RecordSinkError as exc:
        log.error("AlterShareGroupOffsets of group %r not written: %s", request.group_id, exc)
        return _error(schema, request, ErrorCode.coordinator_not_available, str(exc))
    if response.error is not None:
        log.info(
            "AlterShareGroupOffsets of group %r refused (%s): %s (client %s)",
            request.group_id,
            response.error,
            response.error_message,
            ctx.client_id,
        )
        return _error(schema, request, response.error, response.error_message)
    return schema.response(
        throttle_time=_ZERO,
        error_code=ErrorCode.none,
        error_message=None,
        responses=tuple(_topic(schema, topic) for topic in response.topics)
        + tuple(
            _topic_error(schema, t, ErrorCode.topic_authorization_failed)
            for t in request.topics
            if t.topic_name not in readable
        ),
    )


def _topic(schema: Schema, topic: AlterOffsetsTopic) -> Any:
    return schema.make(
        "AlterShareGroupOffsetsResponseTopic",
        topic_name=topic.topic_name,
        topic_id=topic.topic_id,
        partitions=tuple(
            schema.make(
                "AlterShareGroupOffsetsResponsePartition",
                partition_index=p.partition,
                error_code=ErrorCode.none if p.error is None else p.error,
                error_message=p.error_message,
            )
            for p in topic.partitions
        ),
    )


def _error(schema: Schema, request: Any, code: ErrorCode, message: str | None) -> Any:
    """The group-level error, with no topics."""
    del request
    return schema.response(
        throttle_time=_ZERO, error_code=code, error_message=message, responses=()
    )


def _topic_error(schema: Schema, topic: Any, code: ErrorCode, message: str | None = None) -> Any:
    """`code` on every requested partition of `topic` (Kafka's message unless given)."""
    if message is None:
        message = authz.DENIED_MESSAGES.get(code)
    return schema.make(
        "AlterShareGroupOffsetsResponseTopic",
        topic_name=topic.topic_name,
        topic_id=None,
        partitions=tuple(
            schema.make(
                "AlterShareGroupOffsetsResponsePartition",
                partition_index=p.partition_index,
                error_code=code,
                error_message=message,
            )
            for p in topic.partitions
        ),
    )
