"""The topics in a consumer-protocol subscription (the JoinGroup metadata of
`protocol_type` "consumer"), read with kio's ConsumerProtocolSubscription schema.

Used where the coordinator must know what a classic group consumes (OffsetDelete's
GROUP_SUBSCRIBED_TO_TOPIC). Metadata that does not parse counts as no topics.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable
from functools import cache
from typing import Any

from kio.schema.consumer_protocol_subscription import v0, v1, v2, v3
from kio.serial import entity_reader
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
