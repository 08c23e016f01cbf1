"""The top-level response both share RPCs end with (ShareFetch 78, ShareAcknowledge 79):
partitions grouped by topic id, the acquisition lock duration, and the node endpoint
librdkafka needs when a partition carries a leader hint (docs/design/wire.md §6.21):
the endpoint of the listener the request came in on, as Metadata answers.
`share_error` is the answer to a request refused as a whole (no partitions, lock
duration 0).

`entity_class` gives the kio class a handler may call directly instead of
`Schema.make` (a response is built per request: make's lookup and subset check are
a third of the building's calls), when the version has every field the call site
gives; otherwise None and the caller uses `Schema.make`, which drops the others."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema

if TYPE_CHECKING:
    from shoal.server.handler_services import NodeIdentity

_ZERO = datetime.timedelta(0)
LEADER_HINT_ERRORS = frozenset({ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch})
"""Partition errors that make a response carry this node's endpoint (`leader_hint`)."""
NO_LEADER_ERRORS = frozenset({ErrorCode.unknown_topic_id, ErrorCode.unknown_topic_or_partition})
"""Partition errors answered with CurrentLeader -1/-1 (no such partition)."""

_ROOT_FIELDS = (
    "throttle_time",
    "error_code",
    "error_message",
    "acquisition_lock_timeout",
    "responses",
    "node_endpoints",
)
_TOPIC_FIELDS = ("topic_id", "partitions")
_CLASSES: dict[tuple[Schema, str, tuple[str, ...]], Any] = {}
"""(schema, type name, fields given) -> the kio class, or None (`entity_class`).
Bounded by design: the share RPCs' response versions x the few call sites."""


def entity_class(schema: Schema, type_name: str, fields: tuple[str, ...]) -> Any:
    """The class of `type_name` in `schema`'s version when that version has every
    one of `fields` (then `cls(**values)` is what `schema.make` would build), else
    None (use `schema.make`)."""
    key = (schema, type_name, fields)
    if key not in _CLASSES:
        has_all = all(schema.has(type_name, name) for name in fields)
        _CLASSES[key] = schema.cls(type_name) if has_all else None
    return _CLASSES[key]


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
    topic_cls = entity_class(schema, topic_type, _TOPIC_FIELDS)
    if topic_cls is None:
        topics = [
            schema.make(topic_type, topic_id=topic_id, partitions=tuple(ps))
            for topic_id, ps in by_topic.items()
        ]
    else:
        topics = [
            topic_cls(topic_id=topic_id, partitions=tuple(ps)) for topic_id, ps in by_topic.items()
        ]
    root = entity_class(schema, schema.root.__name__, _ROOT_FIELDS)
    make = schema.response if root is None else root
    return make(
        throttle_time=_ZERO,
        error_code=ErrorCode.none,
        error_message=None,
        acquisition_lock_timeout=datetime.timedelta(milliseconds=lock_duration_ms),
        responses=tuple(topics),
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
