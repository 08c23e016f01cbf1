"""The ShareAcknowledge response (handlers/share_acknowledge.py `_response`): the cached
responses equal the reference one (`Schema.make` per partition, then `share_response`),
a leader hint still names the request's listener, and past `_RESPONSES_KEPT` distinct
answers the oldest are dropped, the answers unchanged."""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.server.handler_services import NodeIdentity
from shoal.server.handlers import share_acknowledge as handler
from shoal.server.handlers.common.share_responses import (
    LEADER_HINT_ERRORS,
    NO_LEADER_ERRORS,
    share_response,
)
from shoal.server.services.share_service import PartitionOutcome, ShareOutcome
from shoal.share.sessions import TopicIdPartition

_ENDPOINTS = {None: ("plain.example", 9092), "PLAINTEXT": ("plain.example", 9092)}
_ENDPOINTS["SASL_SSL"] = ("secure.example", 9094)
NODE = NodeIdentity(node_id=3, cluster_id="c", advertised=lambda name: _ENDPOINTS[name])
T1, T2 = uuid.UUID(int=7), uuid.UUID(int=8)


def _ctx(listener: str) -> Any:
    return SimpleNamespace(
        services=SimpleNamespace(node=NODE), connection=SimpleNamespace(listener_name=listener)
    )


def _reference(schema: Schema, listener: str, outcome: ShareOutcome) -> Any:
    """The response as built before the cache: every entity made for the request."""
    by_topic: dict[Any, list[Any]] = {}
    for p in outcome.partitions:
        error = ErrorCode.none if p.error is None else p.error
        leader = (-1, -1) if error in NO_LEADER_ERRORS else (NODE.node_id, 0)
        by_topic.setdefault(p.partition.topic_id, []).append(
            schema.make(
                "PartitionData",
                partition_index=p.partition.partition,
                error_code=error,
                error_message=None,
                current_leader=schema.make(
                    "LeaderIdAndEpoch", leader_id=leader[0], leader_epoch=leader[1]
                ),
            )
        )
    return share_response(
        schema,
        NODE,
        listener_name=listener,
        topic_type="ShareAcknowledgeTopicResponse",
        by_topic=by_topic,
        leader_hint=any(
            p.error in LEADER_HINT_ERRORS for p in outcome.partitions if p.error is not None
        ),
        lock_duration_ms=outcome.lock_duration_ms,
    )


OUTCOMES = [
    ShareOutcome(lock_duration_ms=30000, partitions=(PartitionOutcome(TopicIdPartition(T1, 0)),)),
    ShareOutcome(
        lock_duration_ms=15000,
        partitions=(
            PartitionOutcome(TopicIdPartition(T1, 0)),
            PartitionOutcome(TopicIdPartition(T2, 1), error=ErrorCode.invalid_record_state),
            PartitionOutcome(TopicIdPartition(T1, 2), error=ErrorCode.unknown_topic_or_partition),
        ),
    ),
    ShareOutcome(
        lock_duration_ms=15000,
        partitions=(
            PartitionOutcome(TopicIdPartition(T1, 0)),
            PartitionOutcome(TopicIdPartition(T2, 0), error=ErrorCode.not_leader_or_follower),
        ),
    ),
    ShareOutcome(lock_duration_ms=0, partitions=()),
]


def test_responses_equal_the_reference_and_are_shared_when_alike() -> None:
    for version in (1, 2):
        schema = response_schema(79, version)
        for listener in ("PLAINTEXT", "SASL_SSL"):
            for outcome in OUTCOMES:
                response = handler._response(schema, _ctx(listener), outcome)
                assert response == _reference(schema, listener, outcome), (version, outcome)
                again = handler._response(schema, _ctx(listener), outcome)
                hinted = bool(response.node_endpoints)
                assert (again is response) is not hinted, "hinted answers are not cached"
    hinted = handler._response(response_schema(79, 2), _ctx("SASL_SSL"), OUTCOMES[2])
    assert [(e.host, e.port) for e in hinted.node_endpoints] == [("secure.example", 9094)]


def test_past_the_bound_the_oldest_responses_go_and_answers_stay_right() -> None:
    schema = response_schema(79, 2)
    handler._cached_response.cache_clear()
    outcomes = [
        ShareOutcome(lock_duration_ms=ms, partitions=(PartitionOutcome(TopicIdPartition(T1, 0)),))
        for ms in range(handler._RESPONSES_KEPT + 10)
    ]
    first = handler._response(schema, _ctx("PLAINTEXT"), outcomes[0])
    for outcome in outcomes[1:]:
        handler._response(schema, _ctx("PLAINTEXT"), outcome)
    assert handler._cached_response.cache_info().currsize == handler._RESPONSES_KEPT
    rebuilt = handler._response(schema, _ctx("PLAINTEXT"), outcomes[0])
    assert rebuilt is not first, "the oldest answer was dropped and built again"
    assert rebuilt == first == _reference(schema, "PLAINTEXT", outcomes[0])
