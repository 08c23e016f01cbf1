"""The consumer protocol embedded in classic groups: subscriptions (the JoinGroup
metadata of `protocol_type` "consumer") and assignments (the SyncGroup bytes), read
and written with kio's ConsumerProtocolSubscription / ConsumerProtocolAssignment.

Used where the coordinator must know what a classic group consumes (OffsetDelete's
GROUP_SUBSCRIBED_TO_TOPIC; metadata that does not parse counts as no topics) and
where classic members meet consumer groups (group/consumer/migration.py,
group/consumer/classic_members.py: what a member subscribes to and owns, the assignment it
is sent).
"""

from __future__ import annotations

import io
import logging
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from kio.schema.consumer_protocol_assignment import v0 as a0
from kio.schema.consumer_protocol_assignment import v1 as a1
from kio.schema.consumer_protocol_assignment import v2 as a2
from kio.schema.consumer_protocol_assignment import v3 as a3
from kio.schema.consumer_protocol_subscription import v0, v1, v2, v3
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import SerialError

log = logging.getLogger(__name__)
_VERSION = struct.Struct(">h")
_CLASSES: dict[int, Any] = {
    0: v0.data.ConsumerProtocolSubscription,
    1: v1.data.ConsumerProtocolSubscription,
    2: v2.data.ConsumerProtocolSubscription,
    3: v3.data.ConsumerProtocolSubscription,
}
_NEWEST = max(_CLASSES)
_ASSIGNMENTS: dict[int, Any] = {
    0: a0.data.ConsumerProtocolAssignment,
    1: a1.data.ConsumerProtocolAssignment,
    2: a2.data.ConsumerProtocolAssignment,
    3: a3.data.ConsumerProtocolAssignment,
}
_PARTITIONS: dict[int, Any] = {
    0: a0.data.TopicPartition,
    1: a1.data.TopicPartition,
    2: a2.data.TopicPartition,
    3: a3.data.TopicPartition,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Subscription:
    """A member's ConsumerProtocolSubscription."""

    version: int
    topics: tuple[str, ...]
    owned: dict[str, frozenset[int]]
    """Topic name -> partitions the member owns (v1+; empty before)."""
    rack_id: str | None


def read_subscription(metadata: bytes) -> Subscription | None:
    """The whole subscription, or None if it does not parse."""
    if len(metadata) < _VERSION.size:
        return None
    raw_version = int(_VERSION.unpack_from(metadata, 0)[0])
    version = max(min(raw_version, _NEWEST), 0)
    try:
        parsed, _ = _reader(version)(memoryview(metadata)[_VERSION.size :], 0)
    except (SerialError, ValueError, KeyError) as exc:
        log.warning("unreadable consumer subscription (%d bytes): %s", len(metadata), exc)
        return None
    owned: dict[str, frozenset[int]] = {}
    for tp in getattr(parsed, "owned_partitions", ()):
        owned[tp.topic] = owned.get(tp.topic, frozenset()) | frozenset(tp.partitions)
    return Subscription(
        version=version,
        topics=tuple(parsed.topics),
        owned=owned,
        rack_id=getattr(parsed, "rack_id", None),
    )


@cache
def _assignment_reader(version: int) -> Any:
    return entity_reader(_ASSIGNMENTS[version])


def read_assignment(data: bytes) -> dict[str, frozenset[int]] | None:
    """Topic name -> partitions of a ConsumerProtocolAssignment (empty bytes: none);
    None if it does not parse."""
    if not data:
        return {}
    if len(data) < _VERSION.size:
        return None
    version = max(min(int(_VERSION.unpack_from(data, 0)[0]), max(_ASSIGNMENTS)), 0)
    try:
        parsed, _ = _assignment_reader(version)(memoryview(data)[_VERSION.size :], 0)
    except (SerialError, ValueError, KeyError) as exc:
        log.warning("unreadable consumer assignment (%d bytes): %s", len(data), exc)
        return None
    assigned: dict[str, frozenset[int]] = {}
    for tp in parsed.assigned_partitions:
        assigned[tp.topic] = assigned.get(tp.topic, frozenset()) | frozenset(tp.partitions)
    return assigned


def write_assignment(partitions: Mapping[str, Iterable[int]], *, version: int) -> bytes:
    """A ConsumerProtocolAssignment of `version` (clamped to 0-3), topics and
    partitions sorted, no user data."""
    version = max(min(version, max(_ASSIGNMENTS)), 0)
    entity = _ASSIGNMENTS[version](
        assigned_partitions=tuple(
            _PARTITIONS[version](topic=name, partitions=tuple(sorted(partitions[name])))
            for name in sorted(partitions)
        ),
        user_data=None,
    )
    buffer = io.BytesIO()
    buffer.write(_VERSION.pack(version))
    entity_writer(_ASSIGNMENTS[version])(buffer, entity)
    return buffer.getvalue()


@cache
def _reader(version: int) -> Any:
    return entity_reader(_CLASSES[version])


def topics_of(metadata: bytes) -> frozenset[str]:
    """The subscribed topics of one member's metadata (newer versions are read as
    the newest known, as Kafka's readers do: their prefix is compatible)."""
    if len(metadata) < _VERSION.size:
        return frozenset()
    version = min(int(_VERSION.unpack_from(metadata, 0)[0]), _NEWEST)
    try:
        subscription, _ = _reader(max(version, 0))(memoryview(metadata)[_VERSION.size :], 0)
    except (SerialError, ValueError, KeyError) as exc:
        log.warning("unreadable consumer subscription (%d bytes): %s", len(metadata), exc)
        return frozenset()
    return frozenset(subscription.topics)


def subscribed_topics(metadatas: Iterable[bytes]) -> frozenset[str]:
    """The union of the members' subscribed topics."""
    topics: set[str] = set()
    for metadata in metadatas:
        topics |= topics_of(metadata)
    return frozenset(topics)
