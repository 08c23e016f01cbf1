"""Named limits and what a client sees when one is hit (limits.py, config.py).

Covered elsewhere: `socket.request.max.bytes` and `max.connections` (e2e hostile-input
and serve tests), topic name length and partitions per topic (log unit tests).
"""

from __future__ import annotations

import asyncio
import datetime
import struct
import time
from collections.abc import Iterator

import pytest
from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.static.primitive import i16, i32, i64

from tests.support.broker import BrokerProcess, running
from tests.support.wire import call1


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(
        tmp_path_factory.mktemp("limited") / "data", "shoal.max.topics=3", "shoal.max.partitions=5"
    )


def _create(bootstrap: str, name: str, partitions: int) -> tuple[ErrorCode, str | None]:
    response = call1(
        bootstrap,
        CreateTopicsRequest(
            topics=(
                CreatableTopic(
                    name=name,
                    num_partitions=i32(partitions),
                    replication_factor=i16(1),
                    assignments=(),
                    configs=(),
                ),
            ),
            timeout=datetime.timedelta(seconds=5),
            validate_only=False,
        ),
    )
    result = response.topics[0]
    return result.error_code, result.error_message


def test_topic_and_partition_limits(limited: BrokerProcess) -> None:
    assert _create(limited.bootstrap, "lim-a", 2)[0] == ErrorCode.none
    assert _create(limited.bootstrap, "lim-b", 2)[0] == ErrorCode.none
    code, message = _create(limited.bootstrap, "lim-c", 2)  # 6 partitions > 5
    assert code == ErrorCode.invalid_partitions
    assert message and "shoal.max.partitions" in message
    assert _create(limited.bootstrap, "lim-d", 1)[0] == ErrorCode.none  # 5 partitions, 3 topics
    code, message = _create(limited.bootstrap, "lim-e", 1)
    assert code == ErrorCode.policy_violation
    assert message and "shoal.max.topics" in message


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(
        tmp_path_factory.mktemp("small") / "data",
        "shoal.fetch.max.wait.ms=1000",
        "socket.request.max.bytes=4096",
    )


def test_fetch_wait_is_clamped(small: BrokerProcess) -> None:
    assert _create(small.bootstrap, "lim-wait", 1)[0] == ErrorCode.none
    request = FetchRequest(
        max_wait=datetime.timedelta(seconds=30),
        min_bytes=i32(1),
        max_bytes=i32(1 << 20),
        isolation_level=0,
        session_id=i32(0),
        session_epoch=i32(-1),
        topics=(
            FetchTopic(
                topic="lim-wait",
                partitions=(
                    FetchPartition(
                        partition=i32(0), fetch_offset=i64(0), partition_max_bytes=i32(1 << 20)
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )
    started = time.monotonic()
    response = call1(small.bootstrap, request)
    elapsed = time.monotonic() - started
    assert response.responses[0].partitions[0].error_code == ErrorCode.none
    assert 0.9 <= elapsed < 10, elapsed  # clamped to 1 s, not the 30 s asked for


def test_request_size_limit_closes_only_that_connection(small: BrokerProcess) -> None:
    host, port = small.bootstrap.split(":")

    async def go() -> bytes:
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(struct.pack(">i", 4097) + b"\x00" * 64)
        await writer.drain()
        data = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        return data

    assert asyncio.run(go()) == b""  # closed without an answer
    assert small.wait_for_log(r"socket\.request\.max\.bytes", timeout_s=30) is not None
    assert _create(small.bootstrap, "lim-after", 1)[0] == ErrorCode.none
