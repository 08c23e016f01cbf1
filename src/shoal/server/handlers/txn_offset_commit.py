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

Transaction verification (KIP-890; Kafka's CoordinatorPartitionWriter and
AddPartitionsToTxnManager), before the offsets are written: the transaction
coordinator checks the producer id and epoch and that the group's `__consumer_offsets`
partition is in the producer's ongoing transaction (AddOffsetsToTxn added it). v5 (a
transaction version 2 client) adds the partition itself instead, as AddOffsetsToTxn
would; `transaction.partition.verification.enable=false` skips the check below v5, as
in Kafka. A refusal answers every partition that exists with the coordinator's error for
the request's version (protocol/errors.py `for_version`): a fenced producer
INVALID_PRODUCER_EPOCH, a partition not in the transaction TRANSACTION_ABORTABLE (v4)
or INVALID_TXN_STATE (v0-v3), another producer id INVALID_PRODUCER_ID_MAPPING.

Authorization: WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on
every partition), then READ on the group (GROUP_AUTHORIZATION_FAILED), then READ on
each topic (TOPIC_AUTHORIZATION_FAILED), as in Kafka.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from shoal.config import broker_keys
from shoal.group.committed_offsets import OffsetToCommit, PartitionError
from shoal.protocol.errors import ErrorCode, for_version
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.handlers.common import offset_commits
from shoal.server.registry import api

API_KEY = 28
_ADDS_PARTITION_MIN_VERSION = 5
"""From v5 the commit adds the group's partition to the transaction (KIP-890 part 2)."""


@api(API_KEY, 0, 5)
async def handle(ctx: RequestContext, request: Any) -> Any:
    refused = None
    if not authz.allowed(ctx, AclOperation.WRITE, authz.TRANSACTIONAL_ID, request.transactional_id):
        refused = ErrorCode.transactional_id_authorization_failed
    elif not authz.allowed(ctx, AclOperation.READ, authz.GROUP, request.group_id):
        refused = ErrorCode.group_authorization_failed

    def write(offsets: tuple[OffsetToCommit, ...]) -> Sequence[PartitionError]:
        unverified = _verify(ctx, request)
        if unverified is not None:
            return tuple(
                PartitionError(topic=o.topic, partition=o.partition, error=unverified)
                for o in offsets
            )
        answers = ctx.services.group_service.classic.txn_commit_offsets(
            group_id=request.group_id,
            producer_id=int(request.producer_id),
            producer_epoch=int(request.producer_epoch),
            member_id=getattr(request, "member_id", ""),
            generation_id=int(getattr(request, "generation_id", -1)),
            group_instance_id=getattr(request, "group_instance_id", None),
            offsets=offsets,
        )
        return tuple(
            a
            if a.error is None
            else replace(a, error=for_version(API_KEY, ctx.api_version, a.error))
            for a in answers
        )

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
        write=write,
    )


def _verify(ctx: RequestContext, request: Any) -> ErrorCode | None:
    """The transaction coordinator's refusal of the commit, for the request's version;
    None when the group's partition is (v5: now) in the producer's transaction."""
    adds = ctx.api_version >= _ADDS_PARTITION_MIN_VERSION
    if not adds and not ctx.services.config.current.get(
        broker_keys.TRANSACTION_PARTITION_VERIFICATION_ENABLE
    ):
        return None  # transaction.partition.verification.enable=false: as before KIP-890
    txn = ctx.services.txn
    if not txn.opened:  # no transactional id was ever initialized here
        return ErrorCode.invalid_producer_id_mapping
    offsets_partition = txn.offsets_partition(request.group_id)
    errors = txn.coordinator.add_partitions(
        transactional_id=request.transactional_id,
        producer_id=int(request.producer_id),
        producer_epoch=int(request.producer_epoch),
        partitions=(offsets_partition,),
        verify_only=not adds,
        client_transaction_version=2 if adds else 0,
    )
    error = errors[offsets_partition]
    return None if error == ErrorCode.none else for_version(API_KEY, ctx.api_version, error)
