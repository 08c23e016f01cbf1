"""TxnOffsetCommit (28) v0-v5: a transactional producer commits a group's offsets
inside its transaction (group/txn_offsets.py).

The offsets are held pending per (group, producer id) until the transaction's marker
reaches the group's `__consumer_offsets` partition (`GroupService.complete_transaction`):
committed then, dropped on abort; meanwhile OffsetFetch does not show them. v3+
carry the member fields (GenerationId, MemberId, GroupInstanceId), checked against
the group (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID); v0-v2 have
none and are accepted whatever the group's state, as Kafka 4.2. CommittedLeaderEpoch
is v2+ (-1 before). A partition that does not exist answers
UNKNOWN_TOPIC_OR_PARTITION and is not committed; a share group id answers
GROUP_ID_NOT_FOUND; a coordinator that cannot write answers COORDINATOR_NOT_AVAILABLE.
TransactionalId, ProducerId and ProducerEpoch are the transaction coordinator's to
check (txn/): here they key the pending offsets, and an epoch older than the one the
producer's pending offsets in the group carry answers INVALID_PRODUCER_EPOCH.

Authorization: WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on
every partition), then READ on the group (GROUP_AUTHORIZATION_FAILED), then READ on
each topic (TOPIC_AUTHORIZATION_FAILED), as in Kafka.
"""

from __future__ import annotations

from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.security.acl import AclOperation
from shoal.server import authorization as authz
from shoal.server import offset_commits
from shoal.server.context import RequestContext
from shoal.server.registry import api

API_KEY = 28


@api(API_KEY, 0, 5)
async def handle(ctx: RequestContext, request: Any) -> Any:
    refused = None
    if not authz.allowed(ctx, AclOperation.WRITE, authz.TRANSACTIONAL_ID, request.transactional_id):
        refused = ErrorCode.transactional_id_authorization_failed
    elif not authz.allowed(ctx, AclOperation.READ, authz.GROUP, request.group_id):
        refused = ErrorCode.group_authorization_failed
    return offset_commits.commit(
        ctx,
        request,
        refused=refused,
        api_key=API_KEY,
        api_name="TxnOffsetCommit",
        what=(
            f"TxnOffsetCommit of group {request.group_id!r} producer {request.producer_id} "
            f"(transactional id {request.transactional_id!r})"
        ),
        write=lambda offsets: ctx.services.group_service.classic.txn_commit_offsets(
            group_id=request.group_id,
            producer_id=int(request.producer_id),
            producer_epoch=int(request.producer_epoch),
            member_id=getattr(request, "member_id", ""),
            generation_id=int(getattr(request, "generation_id", -1)),
            group_instance_id=getattr(request, "group_instance_id", None),
            offsets=offsets,
        ),
    )
