"""ShareAcknowledge (79) v1-v2: acknowledge acquired records through the member's
share session, without fetching (KIP-932).

Checked here: GroupId non-empty and MemberId of 1-36 characters (else top-level
INVALID_REQUEST). Duplicate TopicId entries are merged. The broker's `ShareService`
checks the session (epoch 0 -> INVALID_SHARE_SESSION_EPOCH; no session ->
SHARE_SESSION_NOT_FOUND; wrong epoch -> INVALID_SHARE_SESSION_EPOCH), advances it,
applies each partition's batches atomically, and for epoch -1 closes the session and
releases the member's records. Every requested partition is answered with its own
error code (INVALID_REQUEST for malformed batches, INVALID_RECORD_STATE, ...). v2 adds
IsRenewAck (RENEW, type 4) and AcquisitionLockTimeoutMs.

With `share.version`=0 every request answers UNSUPPORTED_VERSION.

Authorization: READ on the group (GROUP_AUTHORIZATION_FAILED for the whole request) and
READ on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions, nothing acknowledged).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handler_services import NodeIdentity
from shoal.server.handlers.common import authorization as authz
from shoal.server.handlers.common.share_responses import (
    LEADER_HINT_ERRORS,
    NO_LEADER_ERRORS,
    share_error,
    share_response,
)
from shoal.server.handlers.share_fetch import ack_batches, refusal, with_denied_topics
from shoal.server.registry import api
from shoal.server.services.share_service import ShareAcknowledgeCall, ShareOutcome
from shoal.share.acknowledge import AckBatch
from shoal.share.sessions import TopicIdPartition
from shoal.share.topic_ids import interned

API_KEY = 79


@api(API_KEY, 1, 2)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    refused = refusal(ctx, request)
    if refused is not None:
        return share_error(schema, *refused)
    call = _decode(request)
    requested = tuple(call.acknowledgements)
    denied = authz.denied_topic_ids(ctx, AclOperation.READ, (tp.topic_id for tp in requested))
    if denied:
        call = dataclasses.replace(
            call,
            acknowledgements={
                tp: b for tp, b in call.acknowledgements.items() if tp.topic_id not in denied
            },
        )
    outcome = ctx.services.share_service.share_acknowledge(call)
    if outcome.error is not None:
        return share_error(schema, outcome.error, None)
    if denied:
        outcome = with_denied_topics(outcome, requested, denied)
    return _response(schema, ctx, outcome)


def _decode(request: Any) -> ShareAcknowledgeCall:
    acknowledgements: dict[TopicIdPartition, list[AckBatch]] = {}
    for topic in request.topics:
        topic_id = interned(topic.topic_id)  # hashed once, as ShareFetch's decode does
        for p in topic.partitions:
            tp = TopicIdPartition(topic_id, int(p.partition_index))
            acknowledgements.setdefault(tp, []).extend(ack_batches(p.acknowledgement_batches))
    return ShareAcknowledgeCall(
        group_id=request.group_id,
        member_id=request.member_id,
        epoch=int(request.share_session_epoch),
        is_renew_ack=bool(getattr(request, "is_renew_ack", False)),
        acknowledgements=acknowledgements,
    )


_RESPONSES_KEPT = 1024
"""Responses kept by `_cached_response` (least recently used go first): a consumer
acknowledges the same few partitions again and again, each answered alike."""

_Topics = tuple[tuple[Any, tuple[tuple[int, ErrorCode, int, int], ...]], ...]
"""Per topic id, each partition's (index, error, leader id, leader epoch)."""


def _response(schema: Schema, ctx: RequestContext, outcome: ShareOutcome) -> Any:
    node = ctx.services.node
    by_topic: dict[Any, list[tuple[int, ErrorCode, int, int]]] = {}
    hint = False
    for p in outcome.partitions:
        error = ErrorCode.none if p.error is None else p.error
        hint = hint or error in LEADER_HINT_ERRORS
        leader = (-1, -1) if error in NO_LEADER_ERRORS else (node.node_id, 0)
        by_topic.setdefault(p.partition.topic_id, []).append(
            (p.partition.partition, error, *leader)
        )
    topics = tuple([(topic_id, tuple(ps)) for topic_id, ps in by_topic.items()])
    if hint:  # carries the listener's endpoint: not cached
        return _build(schema, node, ctx.connection.listener_name, topics, outcome.lock_duration_ms)
    return _cached_response(schema, node, topics, outcome.lock_duration_ms)


def _build(
    schema: Schema, node: NodeIdentity, listener_name: str, topics: _Topics, lock_duration_ms: int
) -> Any:
    """The response of `topics`; the leader hint's endpoint when an error asks for it."""
    return share_response(
        schema,
        node,
        listener_name=listener_name,
        topic_type="ShareAcknowledgeTopicResponse",
        by_topic={
            topic_id: [
                schema.make(
                    "PartitionData",
                    partition_index=index,
                    error_code=error,
                    error_message=None,
                    current_leader=_current_leader(schema, leader_id, leader_epoch),
                )
                for index, error, leader_id, leader_epoch in ps
            ]
            for topic_id, ps in topics
        },
        leader_hint=any(p[1] in LEADER_HINT_ERRORS for _, ps in topics for p in ps),
        lock_duration_ms=lock_duration_ms,
    )


@functools.lru_cache(maxsize=_RESPONSES_KEPT)
def _cached_response(
    schema: Schema, node: NodeIdentity, topics: _Topics, lock_duration_ms: int
) -> Any:
    """`_build` of a response without a leader hint (so without any listener's
    endpoint), made once per distinct answer: kio entities are immutable, so one
    response object serves every request answered alike."""
    return _build(schema, node, "", topics, lock_duration_ms)


@functools.lru_cache(maxsize=8)
def _current_leader(schema: Schema, leader_id: int, leader_epoch: int) -> Any:
    """A partition's CurrentLeader: one of two values per response version, and kio
    entities are immutable, so each is made once and shared."""
    return schema.make("LeaderIdAndEpoch", leader_id=leader_id, leader_epoch=leader_epoch)
