"""OffsetCommit (8) v2-v10: commit offsets of a group (group/committed_offsets.py); v10
names topics by id (server/handlers/common/offset_commits.py).

GenerationId -1 with no member is a simple commit (`assign()` users), accepted while
the group has no members. CommittedLeaderEpoch (v6+) is stored; -1 before. v2-v4's
RetentionTime is ignored (Kafka 4.2 ignores it too). A partition that does not exist
answers UNKNOWN_TOPIC_OR_PARTITION and is not committed, as Kafka's KafkaApis. A
share group id answers GROUP_ID_NOT_FOUND for every partition; a coordinator that
cannot write answers COORDINATOR_NOT_AVAILABLE.

Authorization: READ on the group (GROUP_AUTHORIZATION_FAILED on every partition) and
READ on each topic (TOPIC_AUTHORIZATION_FAILED), as in Kafka.
"""

from __future__ import annotations

from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.handlers.common import offset_commits
from shoal.server.registry import api

API_KEY = 8


@api(API_KEY, 2, 10)
async def handle(ctx: RequestContext, request: Any) -> Any:
    refused = None
    if not authz.allowed(ctx, AclOperation.READ, authz.GROUP, request.group_id):
        refused = ErrorCode.group_authorization_failed
    return offset_commits.commit(
        ctx,
        request,
        refused=refused,
        api_key=API_KEY,
        api_name="OffsetCommit",
        what=f"OffsetCommit of group {request.group_id!r} member {request.member_id!r}",
        write=lambda offsets: ctx.services.group_service.classic.commit_offsets(
            group_id=request.group_id,
            member_id=request.member_id,
            generation_id=int(request.generation_id_or_member_epoch),
            group_instance_id=getattr(request, "group_instance_id", None),
            offsets=offsets,
            api_version=ctx.api_version,
        ),
    )
