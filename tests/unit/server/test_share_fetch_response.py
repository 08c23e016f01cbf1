"""The ShareFetch response (handlers/share_fetch.py `_response`) and `share_response`
build their kio entities with the class `entity_class` found instead of `Schema.make`:
for every version of both share RPCs the result equals the reference built entity by
entity with `Schema.make` / `Schema.response`, and a version lacking one of the
given fields is answered by `Schema.make` (which drops it)."""

from __future__ import annotations

import datetime
import uuid
from types import SimpleNamespace
from typing import Any

import pytest

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.server.handler_services import NodeIdentity
from shoal.server.handlers import share_fetch as handler
from shoal.server.handlers.common.share_responses import (
    LEADER_HINT_ERRORS,
    NO_LEADER_ERRORS,
    entity_class,
    share_response,
)
from shoal.server.services.share_service import PartitionOutcome, ShareOutcome
from shoal.share.acquire import AcquiredRecords
from shoal.share.sessions import TopicIdPartition

NODE = NodeIdentity(node_id=3, cluster_id="c", advertised=lambda _name: ("plain.example", 9092))
T1, T2 = uuid.UUID(int=7), uuid.UUID(int=8)


def _ctx() -> Any:
    return SimpleNamespace(
        services=SimpleNamespace(node=NODE, quotas=None),
        connection=SimpleNamespace(listener_name="PLAINTEXT"),
    )


def _reference(schema: Schema, outcome: ShareOutcome) -> Any:
    """The ShareFetch response built with `Schema.make` for every entity."""
    topics: dict[Any, list[Any]] = {}
    for p in outcome.partitions:
        error = ErrorCode.none if p.error is None else p.error
        ack_error = ErrorCode.none if p.acknowledge_error is None else p.acknowledge_error
        leader = (-1, -1) if error in NO_LEADER_ERRORS else (NODE.node_id, 0)
        topics.setdefault(p.partition.topic_id, []).append(
            schema.make(
                "PartitionData",
                partition_index=p.partition.partition,
                error_code=error,
                error_message=None,
                acknowledge_error_code=int(ack_error),
                acknowledge_error_message=None,
                current_leader=schema.make(
                    "LeaderIdAndEpoch", leader_id=leader[0], leader_epoch=leader[1]
                ),
                records=p.records,
                acquired_records=tuple(
                    schema.make(
                        "AcquiredRecords",
                        first_offset=r.first_offset,
                        last_offset=r.last_offset,
                        delivery_count=r.delivery_count,
                    )
                    for r in p.acquired
                ),
            )
        )
    hint = any(p.error in LEADER_HINT_ERRORS for p in outcome.partitions)
    endpoints = (
        (schema.make("NodeEndpoint", node_id=3, host="plain.example", port=9092, rack=None),)
        if hint
        else ()
    )
    return schema.response(
        throttle_time=datetime.timedelta(0),
        error_code=ErrorCode.none,
        error_message=None,
        acquisition_lock_timeout=datetime.timedelta(milliseconds=outcome.lock_duration_ms),
        responses=tuple(
            schema.make("ShareFetchableTopicResponse", topic_id=topic_id, partitions=tuple(ps))
            for topic_id, ps in topics.items()
        ),
        node_endpoints=endpoints,
    )


OUTCOMES = [
    ShareOutcome(
        lock_duration_ms=30000,
        partitions=(
            PartitionOutcome(
                TopicIdPartition(T1, 0),
                records=b"batch bytes",
                acquired=(AcquiredRecords(5, 9, 1), AcquiredRecords(10, 10, 3)),
            ),
        ),
    ),
    ShareOutcome(
        lock_duration_ms=15000,
        partitions=(
            PartitionOutcome(TopicIdPartition(T1, 0), acknowledge_error=ErrorCode.invalid_request),
            PartitionOutcome(TopicIdPartition(T2, 1), error=ErrorCode.unknown_topic_id),
            PartitionOutcome(
                TopicIdPartition(T1, 2),
                records=b"x",
                acquired=(AcquiredRecords(0, 0, 1),),
            ),
            PartitionOutcome(TopicIdPartition(T2, 0), error=ErrorCode.not_leader_or_follower),
        ),
    ),
    ShareOutcome(lock_duration_ms=0, partitions=()),
]


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("outcome", OUTCOMES)
def test_share_fetch_response_equals_the_reference(version: int, outcome: ShareOutcome) -> None:
    schema = response_schema(handler.API_KEY, version)
    built = handler._response(schema, _ctx(), outcome)
    assert built == _reference(schema, outcome)
    assert entity_class(schema, "PartitionData", handler._PARTITION_FIELDS) is not None


@pytest.mark.parametrize("version", [1, 2])
def test_share_response_of_both_rpcs_equals_schema_make(version: int) -> None:
    for api_key, topic_type in (
        (78, "ShareFetchableTopicResponse"),
        (79, "ShareAcknowledgeTopicResponse"),
    ):
        schema = response_schema(api_key, version)
        built = share_response(
            schema,
            NODE,
            listener_name="PLAINTEXT",
            topic_type=topic_type,
            by_topic={T1: [], T2: []},
            leader_hint=False,
            lock_duration_ms=1234,
        )
        reference = schema.response(
            throttle_time=datetime.timedelta(0),
            error_code=ErrorCode.none,
            error_message=None,
            acquisition_lock_timeout=datetime.timedelta(milliseconds=1234),
            responses=tuple(schema.make(topic_type, topic_id=t, partitions=()) for t in (T1, T2)),
            node_endpoints=(),
        )
        assert built == reference


def test_a_version_without_a_given_field_falls_back_to_schema_make() -> None:
    """ShareAcknowledge v1 has no AcquisitionLockTimeoutMs: no direct class for the
    root, and `share_response` still builds it (the field dropped)."""
    schema = response_schema(79, 1)
    fields = ("throttle_time", "acquisition_lock_timeout")
    assert entity_class(schema, schema.root.__name__, fields) is None
    assert entity_class(response_schema(79, 2), schema.root.__name__, fields) is not None
