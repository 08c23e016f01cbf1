"""Fetch long-poll: a parked fetch answers as soon as data arrives, an idle one after
MaxWaitMs, and the first batch is returned whole even when it exceeds MaxBytes."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from kio.schema.errors import ErrorCode

from shoal.client import KafkaConnection
from shoal.protocol.record_batch import iter_headers
from tests.support.batches import Record, build_batch, decode_records, values_batch
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic
from tests.support.topics import topic_name
from tests.support.wire import (
    call1,
    fetch_request,
    fetched,
    metadata_request,
    produce_request,
    produced,
    with_connection,
)


def _topic_id(bootstrap: str, topic: str) -> uuid.UUID:
    response = call1(bootstrap, metadata_request(topic))
    (described,) = response.topics
    assert described.error_code == ErrorCode.none, described
    assert described.topic_id is not None and described.topic_id != uuid.UUID(int=0)
    return described.topic_id  # type: ignore[no-any-return]


@pytest.mark.parametrize("by", ["name", "topic_id"])
def test_parked_fetch_answers_when_a_record_arrives(broker: BrokerProcess, by: str) -> None:
    topic = topic_name("long-poll")
    create_topic(broker.bootstrap, topic)
    target: str | uuid.UUID = topic if by == "name" else _topic_id(broker.bootstrap, topic)
    host, _, port = broker.bootstrap.rpartition(":")

    async def scenario(fetcher: KafkaConnection) -> tuple[float, object]:
        producer = await KafkaConnection.open(host, int(port))
        try:
            started = time.monotonic()
            pending = await fetcher.send(
                fetch_request(target, 0, 0, max_wait_ms=10_000, min_bytes=1)
            )
            assert pending is not None
            await asyncio.sleep(0.3)  # the scenario: data arrives ~300 ms into the wait
            assert not pending.done(), "the fetch answered before there was any data"
            answer = produced(
                await producer.request(produce_request(topic, 0, values_batch(1), acks=1))
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
    response = call1(broker.bootstrap, fetch_request(topic, 0, 0, max_wait_ms=500, min_bytes=1))
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
        answer = produced(call1(broker.bootstrap, produce_request(topic, 0, batch)))
        assert answer.error_code == ErrorCode.none, answer

    request = fetch_request(topic, 0, 0, max_wait_ms=0, max_bytes=100, partition_max_bytes=100)
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
