"""The top-level response both share RPCs end with (ShareFetch 78, ShareAcknowledge 79):
partitions grouped by topic id, the acquisition lock duration, and the node endpoint
librdkafka needs when a partition carries a leader hint (wire.md §6.21): the endpoint of
the listener the request came in on, as Metadata answers. `share_error` is the answer
to a request refused as a whole (no partitions, lock duration 0)."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema

if TYPE_CHECKING:
    from shoal.server.services import NodeIdentity

_ZERO = datetime.timedelta(0)
LEADER_HINT_ERRORS = frozenset({ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch})
"""Partition errors that make a response carry this node's endpoint (`leader_hint`)."""
NO_LEADER_ERRORS = frozenset({ErrorCode.unknown_topic_id, ErrorCode.unknown_topic_or_partition})
"""Partition errors answered with CurrentLeader -1/-1 (no such partition)."""


def share_response(
    schema: Schema,
    node: NodeIdentity,
    *,
    listener_name: str,
    topic_type: str,
    by_topic: dict[Any, list[Any]],
    leader_hint: bool,
    lock_duration_ms: int,
) -> Any:
    endpoints: tuple[Any, ...] = ()
    if leader_hint:
        host, port = node.endpoint(listener_name)
        endpoints = (
            schema.make(
                "NodeEndpoint",
                node_id=node.node_id,
                host=host,
                port=port,
                rack=None,
            ),
        )
    return schema.response(
        throttle_time=_ZERO,
        error_code=ErrorCode.none,
        error_message=None,
        acquisition_lock_timeout=datetime.timedelta(milliseconds=lock_duration_ms),
        responses=tuple(
            [
                schema.make(topic_type, topic_id=topic_id, partitions=tuple(ps))
                for topic_id, ps in by_topic.items()
            ]
        ),
        node_endpoints=endpoints,
    )


def share_error(schema: Schema, code: ErrorCode, message: str | None) -> Any:
    return schema.response(
        throttle_time=_ZERO,
        error_code=code,
        error_message=message,
        acquisition_lock_timeout=_ZERO,
        responses=(),
        node_endpoints=(),
    )
