"""ShareFetch (78) v1-v2: a share-group member's fetch, with piggy-backed
acknowledgements, through its share session (KIP-932).

The request is checked here (top-level INVALID_REQUEST for a null or empty GroupId,
a MemberId that is null or not 1-36 characters, an unknown ShareAcquireMode, or
IsRenewAck with a non-zero MaxWaitMs, MinBytes, MaxBytes or MaxRecords), decoded
(duplicate TopicId entries merged, docs/design/wire.md §6.7) and handed to the broker's
`ShareService` (server/services/share_service.py), which runs the session step, the
acknowledgements and the long-polled acquisition. Every partition that carried
acknowledgements is answered, with its AcknowledgeErrorCode. Records are never null
(empty bytes); CurrentLeader is this node at leader epoch 0 (-1/-1 for a partition
that does not exist); NodeEndpoints lists this node when a partition answers
NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH. AcquisitionLockTimeoutMs is the
group's `share.record.lock.duration.ms`, 0 on top-level errors. v2 adds
ShareAcquireMode (record-limit) and IsRenewAck (RENEW, type 4).

With `share.version`=0 every request answers UNSUPPORTED_VERSION.

Authorization (Kafka's handleShareFetchRequest): READ on the group (GROUP_AUTHORIZATION_FAILED
for the whole request); each topic needs READ: its partitions answer
TOPIC_AUTHORIZATION_FAILED (acknowledgements too), are not acquired and do not join the
share session.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import uuid
from collections.abc import Iterable
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.protocol.share import AcquireMode
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.handlers.common.share_responses import (
    LEADER_HINT_ERRORS,
    NO_LEADER_ERRORS,
    entity_class,
    share_error,
    share_response,
)
from shoal.server.net.throttle import fetch_throttle_ms
from shoal.server.registry import api
from shoal.server.services.group_service import SHARE_GROUPS_DISABLED, share_groups_enabled
from shoal.server.services.share_service import PartitionOutcome, ShareFetchCall, ShareOutcome
from shoal.share.acknowledge import AckBatch
from shoal.share.sessions import TopicIdPartition
from shoal.share.topic_ids import interned

API_KEY = 78
MEMBER_ID_LENGTH_MAX = 36
_ACQUIRE_MODES = {int(m): m for m in AcquireMode}
"""ShareAcquireMode values -> their `AcquireMode` (a dict lookup: no enum call)."""


@api(API_KEY, 1, 2, parks=True)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    refused = refusal(ctx, request)
    if refused is None and (invalid := _invalid_fetch(request)) is not None:
        refused = ErrorCode.invalid_request, invalid
    if refused is not None:
        return share_error(schema, *refused)
    call = _decode(request)
    denied = authz.denied_topic_ids(ctx, AclOperation.READ, (tp.topic_id for tp in call.partitions))
    if denied:
        call = dataclasses.replace(
            call,
            partitions=tuple(tp for tp in call.partitions if tp.topic_id not in denied),
            acknowledgements={
                tp: b for tp, b in call.acknowledgements.items() if tp.topic_id not in denied
            },
        )
    outcome = await ctx.services.share_service.share_fetch(
        call, connection_id=ctx.connection.connection_id
    )
    if outcome.error is not None:
        return share_error(schema, outcome.error, None)
    if denied:
        outcome = with_denied_topics(outcome, _decode(request).partitions, denied)
    return _response(schema, ctx, outcome)


def with_denied_topics(
    outcome: ShareOutcome, requested: Iterable[TopicIdPartition], denied: frozenset[uuid.UUID]
) -> ShareOutcome:
    """`outcome` with TOPIC_AUTHORIZATION_FAILED (fetch and acknowledge) for each
    requested partition of a topic the principal may not READ."""
    refused = tuple(
        PartitionOutcome(
            tp,
            error=ErrorCode.topic_authorization_failed,
            acknowledge_error=ErrorCode.topic_authorization_failed,
        )
        for tp in dict.fromkeys(requested)
        if tp.topic_id in denied
    )
    return dataclasses.replace(outcome, partitions=outcome.partitions + refused)


_SHARE_ENABLED: list[Any] = [None, False]
"""[the broker config object last asked, whether it enables share groups]: the
answer of `share_groups_enabled`, re-read only when the config object changes."""


def refusal(ctx: RequestContext, request: Any) -> tuple[ErrorCode, str | None] | None:
    """Why a ShareFetch or ShareAcknowledge is refused as a whole, with its message:
    share groups disabled (UNSUPPORTED_VERSION), READ on the group denied
    (GROUP_AUTHORIZATION_FAILED), a bad GroupId / MemberId (INVALID_REQUEST); or None."""
    config = ctx.services.config.current
    enabled = _SHARE_ENABLED
    if enabled[0] is not config:  # a reconfiguration replaces the config object
        enabled = _SHARE_ENABLED[:] = [config, share_groups_enabled(config)]
    if not enabled[1]:
        return ErrorCode.unsupported_version, SHARE_GROUPS_DISABLED
    if not authz.allowed(ctx, AclOperation.READ, authz.GROUP, request.group_id or ""):
        return ErrorCode.group_authorization_failed, None
    if not request.group_id:
        return ErrorCode.invalid_request, "GroupId must be a non-empty string."
    member_id = request.member_id
    if not member_id or len(member_id) > MEMBER_ID_LENGTH_MAX:
        return (
            ErrorCode.invalid_request,
            f"MemberId must have 1 to {MEMBER_ID_LENGTH_MAX} characters.",
        )
    return None


def _invalid_fetch(request: Any) -> str | None:
    mode = int(getattr(request, "share_acquire_mode", 0))
    if mode not in _ACQUIRE_MODES:
        return f"Unknown ShareAcquireMode {mode}."
    if getattr(request, "is_renew_ack", False) and (
        _ms(request.max_wait) or request.min_bytes or request.max_bytes or request.max_records
    ):
        return "A renew request must have MaxWaitMs, MinBytes, MaxBytes and MaxRecords 0."
    return None


def _decode(request: Any) -> ShareFetchCall:
    partitions: dict[TopicIdPartition, None] = {}
    acknowledgements: dict[TopicIdPartition, list[AckBatch]] = {}
    for topic in request.topics:
        topic_id = interned(topic.topic_id)
        for p in topic.partitions:
            tp = TopicIdPartition(topic_id, int(p.partition_index))
            partitions[tp] = None
            if p.acknowledgement_batches:
                acknowledgements.setdefault(tp, []).extend(ack_batches(p.acknowledgement_batches))
    forgotten = (
        dict.fromkeys(
            TopicIdPartition(interned(topic.topic_id), int(index))
            for topic in request.forgotten_topics_data
            for index in topic.partitions
        )
        if request.forgotten_topics_data
        else ()
    )
    return ShareFetchCall(
        group_id=request.group_id,
        member_id=request.member_id,
        epoch=int(request.share_session_epoch),
        max_wait_ms=_ms(request.max_wait),
        min_bytes=int(request.min_bytes),
        max_bytes=int(request.max_bytes),
        max_records=int(request.max_records),
        batch_size=int(request.batch_size),
        acquire_mode=_ACQUIRE_MODES[int(getattr(request, "share_acquire_mode", 0))],
        is_renew_ack=bool(getattr(request, "is_renew_ack", False)),
        partitions=tuple(partitions),
        acknowledgements=acknowledgements,
        forgotten=tuple(forgotten),
    )


def ack_batches(batches: Iterable[Any]) -> list[AckBatch]:
    return [
        # map(int, ...) rather than a generator: no Python frame resumed per type
        AckBatch(int(b.first_offset), int(b.last_offset), tuple(map(int, b.acknowledge_types)))
        for b in batches
    ]


def _ms(value: datetime.timedelta) -> int:
    return int(value.total_seconds() * 1000)


def _response(schema: Schema, ctx: RequestContext, outcome: ShareOutcome) -> Any:
    services = ctx.services
    by_topic: dict[Any, list[Any]] = {}
    hint = False
    fetched_bytes = 0
    node_id = services.node.node_id
    for p in outcome.partitions:
        data = _partition(schema, node_id, p)
        hint = hint or data.error_code in LEADER_HINT_ERRORS
        fetched_bytes += len(p.records)
        topic_id = p.partition.topic_id
        topic = by_topic.get(topic_id)
        if topic is None:
            by_topic[topic_id] = [data]
        else:
            topic.append(data)
    response = share_response(
        schema,
        services.node,
        listener_name=ctx.connection.listener_name,
        topic_type="ShareFetchableTopicResponse",
        by_topic=by_topic,
        leader_hint=hint,
        lock_duration_ms=outcome.lock_duration_ms,
    )
    # client quotas: the records are acquired, so they go out even throttled
    throttle_ms = fetch_throttle_ms(ctx, fetched_bytes, unrecord_when_throttled=False)
    if throttle_ms > 0:
        response = dataclasses.replace(
            response, throttle_time=datetime.timedelta(milliseconds=throttle_ms)
        )
    return response


_LEADERS: dict[tuple[Schema, int], Any] = {}
"""(response schema, leader id) -> its CurrentLeader (kio entities are immutable, so
one is shared by every response). Bounded by design: ShareFetch's response versions x
{this node's id, -1}."""


def _leader(schema: Schema, leader_id: int) -> Any:
    leader = _LEADERS.get((schema, leader_id))
    if leader is None:
        epoch = -1 if leader_id < 0 else 0
        leader = schema.make("LeaderIdAndEpoch", leader_id=leader_id, leader_epoch=epoch)
        _LEADERS[(schema, leader_id)] = leader
    return leader


_PARTITION_FIELDS = (
    "partition_index",
    "error_code",
    "error_message",
    "acknowledge_error_code",
    "acknowledge_error_message",
    "current_leader",
    "records",
    "acquired_records",
)
_ACQUIRED_FIELDS = ("first_offset", "last_offset", "delivery_count")


def _partition(schema: Schema, node_id: int, p: PartitionOutcome) -> Any:
    error = ErrorCode.none if p.error is None else p.error
    ack_error = ErrorCode.none if p.acknowledge_error is None else p.acknowledge_error
    acquired: tuple[Any, ...] = ()
    if p.acquired:
        acquired_cls = entity_class(schema, "AcquiredRecords", _ACQUIRED_FIELDS)
        make_acquired = (
            functools.partial(schema.make, "AcquiredRecords")
            if acquired_cls is None
            else acquired_cls
        )
        acquired = tuple(
            [
                make_acquired(
                    first_offset=r.first_offset,
                    last_offset=r.last_offset,
                    delivery_count=r.delivery_count,
                )
                for r in p.acquired
            ]
        )
    cls = entity_class(schema, "PartitionData", _PARTITION_FIELDS)
    make = functools.partial(schema.make, "PartitionData") if cls is None else cls
    return make(
        partition_index=p.partition.partition,
        error_code=error,
        error_message=None,
        acknowledge_error_code=int(ack_error._value_),
        acknowledge_error_message=None,
        current_leader=_leader(schema, -1 if error in NO_LEADER_ERRORS else node_id),
        records=p.records,
        acquired_records=acquired,
    )
