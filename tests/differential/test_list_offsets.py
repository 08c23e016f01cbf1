"""ListOffsets v1-v11, Kafka 4.2 and Shoal side by side: every special timestamp at every
version (UNSUPPORTED_VERSION before the version that introduced it), a lookup by
timestamp, and the order of the per-partition refusals (a duplicate, the timestamp's
version, an unknown partition)."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

from shoal.protocol.errors import error_name
from shoal.protocol.schema import request_schema
from tests.differential.conftest import Pair, unique
from tests.support.batches import values_batch
from tests.support.topics import create_led_topic, produce
from tests.support.wire import call1

TIMESTAMPS = (-1, -2, -3, -4, -5, -6, -7, 0, 1_700_000_000_001)


def _list_offsets(version: int, queries: Sequence[tuple[str, int, int]]) -> Any:
    schema = request_schema(2, version)
    topics: dict[str, list[Any]] = {}
    for topic, partition, timestamp in queries:
        topics.setdefault(topic, []).append(
            schema.make(
                "ListOffsetsPartition",
                partition_index=partition,
                current_leader_epoch=-1,
                timestamp=timestamp,
            )
        )
    return schema.make(
        "ListOffsetsRequest",
        replica_id=-1,
        isolation_level=0,
        timeout=datetime.timedelta(seconds=5),
        topics=tuple(
            schema.make("ListOffsetsTopic", name=name, partitions=tuple(parts))
            for name, parts in topics.items()
        ),
    )


def _every_timestamp(bootstrap: str) -> dict[str, Any]:
    topic = unique("lo")
    create_led_topic(bootstrap, topic)
    produce(bootstrap, topic, values_batch(3))  # offsets 0-2, timestamps T+0 (one batch)
    seen = {}
    for version in range(1, 12):
        for timestamp in TIMESTAMPS:
            response = call1(bootstrap, _list_offsets(version, [(topic, 0, timestamp)]))
            (answer,) = response.topics[0].partitions
            seen[f"v{version} {timestamp}"] = (
                error_name(answer.error_code),
                answer.offset,
                getattr(answer, "timestamp", None),
                getattr(answer, "leader_epoch", None),
            )
    return seen


def test_every_special_timestamp_at_every_version(pair: Pair) -> None:
    kafka, shoal = pair.run(_every_timestamp)
    assert shoal == kafka
    assert kafka["v6 -3"][0] == kafka["v11 -7"][0] == "UNSUPPORTED_VERSION"
    assert kafka["v8 -4"] == ("NONE", 0, -1, 0)


def _refusals(bootstrap: str) -> list[tuple[str, int, str]]:
    """(topic, partition, code), sorted: Kafka orders its answer by hash maps."""
    topic = unique("lo-refused")
    missing = unique("lo-missing")
    create_led_topic(bootstrap, topic)
    queries = [(missing, 0, -3), (topic, 5, -3), (topic, 7, -1), (topic, 0, -3), (topic, 0, -1)]
    response = call1(bootstrap, _list_offsets(1, queries))
    role = {topic: "topic", missing: "missing"}
    return sorted(
        (role[t.name], p.partition_index, error_name(p.error_code))
        for t in response.topics
        for p in t.partitions
    )


def test_refusals_and_their_order(pair: Pair) -> None:
    kafka, shoal = pair.run(_refusals)
    assert shoal == kafka
    assert kafka == [
        ("missing", 0, "UNSUPPORTED_VERSION"),  # the timestamp's version before the topic
        ("topic", 0, "INVALID_REQUEST"),  # named twice: answered once
        ("topic", 5, "UNSUPPORTED_VERSION"),
        ("topic", 7, "UNKNOWN_TOPIC_OR_PARTITION"),
    ]
