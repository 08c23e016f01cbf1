"""Fetch long-poll: a parked fetch answers as soon as data arrives, an idle one after
MaxWaitMs, and the first batch is returned whole even when it exceeds MaxBytes."""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v16 import request as fetch_v16

from shoal.client import requests
from shoal.client.aio import Connection
from shoal.protocol.record_batch import iter_headers
from tests.support.batches import Record, build_batch, decode_records, values_batch
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic
from tests.support.topics import topic_name
from tests.support.wire import call1, fetched, produced, with_connection


def _topic_id(bootstrap: str, topic: str) -> uuid.UUID:
    response = call1(bootstrap, requests.metadata([topic]).build(12))
    (described,) = response.topics
    assert described.error_code == ErrorCode.none, described
    assert described.topic_id is not None and described.topic_id != uuid.UUID(int=0)
    return described.topic_id  # type: ignore[no-any-return]


def _fetch_from_zero(target: str | uuid.UUID, *, max_wait_ms: int) -> Any:
    """Fetch of partition 0 from offset 0: v12 by topic name (the client's builder),
    or v16 by topic id (which the client's builder does not send)."""
    if isinstance(target, str):
        position = requests.FetchPosition(0, 10 * 2**20)
        return requests.fetch({(target, 0): position}, max_wait_ms=max_wait_ms).build(12)
    return fetch_v16.FetchRequest(
        max_wait=datetime.timedelta(milliseconds=max_wait_ms),
        min_bytes=1,
        max_bytes=50 * 2**20,
        topics=(
            fetch_v16.FetchTopic(
                topic_id=target,
                partitions=(
                    fetch_v16.FetchPartition(
                        partition=0, fetch_offset=0, partition_max_bytes=10 * 2**20
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
    )


@pytest.mark.parametrize("by", ["name", "topic_id"])
def test_parked_fetch_answers_when_a_record_arrives(broker: BrokerProcess, by: str) -> None:
    topic = topic_name("long-poll")
    create_topic(broker.bootstrap, topic)
    target: str | uuid.UUID = topic if by == "name" else _topic_id(broker.bootstrap, topic)
    host, _, port = broker.bootstrap.rpartition(":")

    async def scenario(fetcher: Connection) -> tuple[float, object]:
        producer = await Connection.open(host, int(port))
        try:
            started = time.monotonic()
            pending = await fetcher.send(_fetch_from_zero(target, max_wait_ms=10_000))
            assert pending is not None
            await asyncio.sleep(0.3)  # the scenario: data arrives ~300 ms into the wait
            assert not pending.done(), "the fetch answered before there was any data"
            answer = produced(
                await producer.request(
                    requests.produce({(topic, 0): values_batch(1)}, acks=1).build(9)
                )
            )
            assert answer.error_code == ErrorCode.none, answer
            response = await asyncio.wait_for(pending, 15)
            return time.monotonic() - started, response
        finally:
            await producer.close()

    elapsed, response = with_connection(broker.bootstrap, scenario)
    partition = fetched(response)
    assert partition.error_code == ErrorCode.none, partition
    assert [r.value for r in decode_records(bytes(partition.records))] == [b"v0"]
    assert 0.25 <= elapsed < 5.0, f"answered after {elapsed:.2f} s"


def test_idle_fetch_waits_max_wait(broker: BrokerProcess) -> None:
    topic = topic_name("long-poll-idle")
    create_topic(broker.bootstrap, topic)
    started = time.monotonic()
    response = call1(
        broker.bootstrap,
        requests.fetch(
            {(topic, 0): requests.FetchPosition(0, 10 * 2**20)},
            max_wait_ms=500,
            min_bytes=1,
            max_bytes=50 * 2**20,
        ).build(12),
    )
    elapsed = time.monotonic() - started
    partition = fetched(response)
    assert partition.error_code == ErrorCode.none, partition
    assert not partition.records
    assert int(partition.high_watermark) == 0
    assert 0.45 <= elapsed < 5.0, f"answered after {elapsed:.2f} s"


def test_first_batch_is_whole_even_above_max_bytes(broker: BrokerProcess) -> None:
    topic = topic_name("long-poll-max-bytes")
    create_topic(broker.bootstrap, topic)
    big = build_batch([Record(value=b"%04d" % i + b"x" * 1020) for i in range(10)])
    for batch in (big, values_batch(3, prefix=b"small-")):
        answer = produced(call1(broker.bootstrap, requests.produce({(topic, 0): batch}).build(9)))
        assert answer.error_code == ErrorCode.none, answer

    request = requests.fetch(
        {(topic, 0): requests.FetchPosition(0, 100)}, max_wait_ms=0, max_bytes=100
    ).build(12)
    partition = fetched(call1(broker.bootstrap, request))
    assert partition.error_code == ErrorCode.none, partition
    records = bytes(partition.records)
    headers = iter_headers(records)
    assert len(headers) == 1, f"expected only the first batch, got {len(headers)}"
    assert headers[0].size == len(big) == len(records), "the first batch must come whole"
    assert records[17:] == big[17:], "stored bytes differ from the produced batch"
    assert [r.value[:4] for r in decode_records(records) if r.value] == [
        b"%04d" % i for i in range(10)
    ]
    assert int(partition.high_watermark) == 13
