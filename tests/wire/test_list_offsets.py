"""ListOffsets (2) v1-v11: latest, earliest, max timestamp and lookups by timestamp; the
special timestamps each version may ask for (tests/differential/test_list_offsets.py
compares every version and timestamp with Kafka 4.2)."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.protocol.schema import request_schema
from tests.support.batches import COMPRESSION_GZIP, Record, build_batch
from tests.support.broker import BrokerProcess
from tests.support.topics import create_topic, produce, topic_name
from tests.support.wire import call1

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3
EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -4, -5, -6
BASE = 1_700_000_000_000


def list_offsets(
    bootstrap: str, version: int, topic: str, queries: Sequence[tuple[int, int]]
) -> list[Any]:
    """Answers of one ListOffsets for (partition, timestamp) queries of one topic."""
    schema = request_schema(2, version)
    request = schema.make(
        "ListOffsetsRequest",
        replica_id=-1,
        isolation_level=0,
        timeout=datetime.timedelta(seconds=5),
        topics=(
            schema.make(
                "ListOffsetsTopic",
                name=topic,
                partitions=tuple(
                    schema.make(
                        "ListOffsetsPartition",
                        partition_index=p,
                        timestamp=t,
                        current_leader_epoch=-1,
                    )
                    for p, t in queries
                ),
            ),
        ),
    )
    (answer,) = call1(bootstrap, request).topics
    assert answer.name == topic
    return list(answer.partitions)


def one(bootstrap: str, version: int, topic: str, timestamp: int) -> tuple[int, int, int]:
    (answer,) = list_offsets(bootstrap, version, topic, [(0, timestamp)])
    assert answer.error_code == ErrorCode.none, answer
    return int(answer.offset), int(answer.timestamp), int(getattr(answer, "leader_epoch", 0))


@pytest.fixture(scope="module")
def timed_topic(broker: BrokerProcess) -> str:
    """Offsets 0-2 at BASE+10, +11, +12 (one batch), 3 at +20 (gzip), 4 at +15."""
    name = topic_name("lo")
    create_topic(broker.bootstrap, name, partitions=2)
    records = [Record(value, timestamp_delta=i) for i, value in enumerate([b"a", b"b", b"c"])]
    first = build_batch(records, base_timestamp=BASE + 10)
    assert produce(broker.bootstrap, name, first) == 0
    second = build_batch([b"d"], base_timestamp=BASE + 20, compression=COMPRESSION_GZIP)
    assert produce(broker.bootstrap, name, second) == 3
    assert produce(broker.bootstrap, name, build_batch([b"e"], base_timestamp=BASE + 15)) == 4
    return name


@pytest.mark.parametrize("version", [1, 4, 7])
def test_latest_and_earliest(broker: BrokerProcess, timed_topic: str, version: int) -> None:
    offset, timestamp, epoch = one(broker.bootstrap, version, timed_topic, LATEST)
    assert (offset, timestamp) == (5, -1)
    assert one(broker.bootstrap, version, timed_topic, EARLIEST)[:2] == (0, -1)
    if version >= 4:
        assert epoch == 0
    for query in (LATEST, EARLIEST):
        (empty,) = list_offsets(broker.bootstrap, version, timed_topic, [(1, query)])
        assert (empty.offset, empty.error_code) == (0, ErrorCode.none)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (0, (0, BASE + 10)),
        (BASE + 10, (0, BASE + 10)),
        (BASE + 11, (1, BASE + 11)),  # inside a batch: the exact record
        (BASE + 12, (2, BASE + 12)),
        (BASE + 13, (3, BASE + 20)),  # first offset at or after, not the closest timestamp
        (BASE + 20, (3, BASE + 20)),
        (BASE + 21, (-1, -1)),
    ],
)
@pytest.mark.parametrize("version", [1, 7])
def test_by_timestamp(
    broker: BrokerProcess,
    timed_topic: str,
    version: int,
    query: int,
    expected: tuple[int, int],
) -> None:
    offset, timestamp, epoch = one(broker.bootstrap, version, timed_topic, query)
    assert (offset, timestamp) == expected
    if version >= 4:
        assert epoch == (0 if offset >= 0 else -1)


def test_max_timestamp(broker: BrokerProcess, timed_topic: str) -> None:
    assert one(broker.bootstrap, 7, timed_topic, MAX_TIMESTAMP)[:2] == (3, BASE + 20)
    (empty,) = list_offsets(broker.bootstrap, 7, timed_topic, [(1, MAX_TIMESTAMP)])
    assert (empty.error_code, empty.offset, empty.timestamp) == (ErrorCode.none, -1, -1)


def test_max_timestamp_inside_a_batch(broker: BrokerProcess) -> None:
    name = topic_name("lo-max")
    create_topic(broker.bootstrap, name)
    batch = build_batch(
        [Record(b"x", timestamp_delta=5), Record(b"y", timestamp_delta=9), Record(b"z")],
        base_timestamp=BASE,
    )
    produce(broker.bootstrap, name, batch)
    assert one(broker.bootstrap, 7, name, MAX_TIMESTAMP)[:2] == (1, BASE + 9)


def test_unknown_and_repeated_partitions(broker: BrokerProcess, timed_topic: str) -> None:
    answers = list_offsets(broker.bootstrap, 7, timed_topic, [(9, LATEST), (0, LATEST), (0, -2)])
    assert [(a.partition_index, a.error_code) for a in answers] == [
        (9, ErrorCode.unknown_topic_or_partition),
        (0, ErrorCode.invalid_request),  # answered once, as Kafka does
    ]
    assert all(a.offset == -1 for a in answers)
    missing = list_offsets(broker.bootstrap, 1, topic_name("lo-missing"), [(0, LATEST)])
    assert missing[0].error_code == ErrorCode.unknown_topic_or_partition


def test_special_timestamps_by_version(broker: BrokerProcess, timed_topic: str) -> None:
    """A special timestamp asked at a version before it answers UNSUPPORTED_VERSION,
    as does a negative timestamp no version knows; the partition is not looked at."""
    queries = [
        (0, MAX_TIMESTAMP),
        (0, EARLIEST_LOCAL),
        (0, LATEST_TIERED),
        (0, EARLIEST_PENDING_UPLOAD),
        (0, -7),
    ]
    unsupported = (ErrorCode.unsupported_version, -1, -1)
    for version, supported in ((6, 0), (7, 1), (8, 2), (9, 3), (10, 3), (11, 4)):
        answers = [
            (a.error_code, a.offset, a.timestamp)
            for q in queries
            for a in list_offsets(broker.bootstrap, version, timed_topic, [q])
        ]
        assert answers[supported:] == [unsupported] * (len(queries) - supported), version
    assert one(broker.bootstrap, 8, timed_topic, EARLIEST_LOCAL) == (0, -1, 0)
    assert one(broker.bootstrap, 9, timed_topic, LATEST_TIERED) == (-1, -1, -1)
    assert one(broker.bootstrap, 11, timed_topic, EARLIEST_PENDING_UPLOAD) == (-1, -1, -1)
    assert one(broker.bootstrap, 11, timed_topic, MAX_TIMESTAMP) == (3, BASE + 20, 0)
    (unknown,) = list_offsets(broker.bootstrap, 1, topic_name("lo-missing"), [(0, -3)])
    assert unknown.error_code == ErrorCode.unsupported_version  # before the topic's existence
