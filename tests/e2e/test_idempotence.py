"""Idempotent producers: exactly once and in order, and a retried batch is stored once
(also after a crash, from the producer state recovered out of the log)."""

from __future__ import annotations

import functools

from confluent_kafka import KafkaError, Message
from kio.schema.errors import ErrorCode

from shoal.client import requests
from shoal.protocol.record_batch import iter_headers
from tests.support.batches import decode_records, values_batch
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic, flush_all, producer, read_partitions
from tests.support.topics import topic_name
from tests.support.wire import (
    call,
    call1,
    fetched,
    init_producer_id_request,
    log_end_offset,
    produced,
)

RECORDS = 20_000
PARTITIONS = 3


def test_idempotent_producer_exactly_once_in_order(broker: BrokerProcess) -> None:
    topic = topic_name("idempotent")
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS)
    reports: dict[int, tuple[int, int]] = {}
    errors: list[tuple[int, KafkaError]] = []

    def delivered(index: int, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            errors.append((index, error))
        else:
            reports[index] = (message.partition(), message.offset())

    p = producer(
        broker.bootstrap,
        enable_idempotence=True,
        max_in_flight_requests_per_connection=5,
        linger_ms=2,
        batch_num_messages=200,
        queue_buffering_max_messages=RECORDS * 2,
    )
    for index in range(RECORDS):
        p.produce(
            topic,
            key=b"key-%d" % (index % 101),
            value=b"%06d" % index,
            on_delivery=functools.partial(delivered, index),
        )
        if index % 1_000 == 0:
            p.poll(0)
    flush_all(p)
    assert not errors, errors[:3]
    assert len(reports) == RECORDS
    assert len(set(reports.values())) == RECORDS, "an offset was reported twice"

    end_offsets = dict.fromkeys(range(PARTITIONS), 0)
    for partition, offset in reports.values():
        end_offsets[partition] = max(end_offsets[partition], offset + 1)
    assert sum(end_offsets.values()) == RECORDS, f"gaps or duplicates: {end_offsets}"

    consumed = read_partitions(broker.bootstrap, topic, end_offsets)
    seen: set[int] = set()
    for partition, messages in consumed.items():
        indexes = [int(m.value or b"-1") for m in messages]
        assert [m.offset for m in messages] == list(range(end_offsets[partition]))
        assert indexes == sorted(indexes), f"partition {partition} is out of produce order"
        for message, index in zip(messages, indexes, strict=True):
            assert reports[index] == (partition, message.offset)
        seen.update(indexes)
    assert seen == set(range(RECORDS))


def _init_producer(bootstrap: str) -> tuple[int, int]:
    response = call1(bootstrap, init_producer_id_request())
    assert response.error_code == ErrorCode.none, response
    return int(response.producer_id), int(response.producer_epoch)


def _fetch_all(bootstrap: str, topic: str) -> bytes:
    partition = fetched(
        call1(
            bootstrap,
            requests.fetch(
                {(topic, 0): requests.FetchPosition(0, 10 * 2**20)},
                max_wait_ms=0,
                max_bytes=50 * 2**20,
            ).build(12),
        )
    )
    assert partition.error_code == ErrorCode.none, partition
    return bytes(partition.records or b"")


def test_retried_batch_is_stored_once(fresh_broker: BrokerProcess) -> None:
    bootstrap = fresh_broker.bootstrap
    topic = topic_name("idempotent-wire")
    create_topic(bootstrap, topic, partitions=1)
    producer_id, epoch = _init_producer(bootstrap)
    assert producer_id >= 0 and epoch == 0

    first = values_batch(
        5, prefix=b"first-", producer_id=producer_id, producer_epoch=epoch, base_sequence=0
    )
    original, retry = (
        produced(r)
        for r in call(
            bootstrap,
            requests.produce({(topic, 0): first}).build(9),
            requests.produce({(topic, 0): first}).build(9),
        )
    )
    assert original.error_code == ErrorCode.none, original
    assert retry.error_code == ErrorCode.none, retry
    assert int(original.base_offset) == int(retry.base_offset) == 0
    assert log_end_offset(bootstrap, topic, 0) == 5, "the retry was appended again"
    stored = _fetch_all(bootstrap, topic)
    assert len(iter_headers(stored)) == 1
    assert [r.value for r in decode_records(stored)] == [b"first-%d" % i for i in range(5)]

    # A batch whose base sequence skips ahead (5 expected) is refused and not stored.
    ahead = values_batch(
        3, prefix=b"ahead-", producer_id=producer_id, producer_epoch=epoch, base_sequence=10
    )
    gap = produced(call1(bootstrap, requests.produce({(topic, 0): ahead}).build(9)))
    assert gap.error_code == ErrorCode.out_of_order_sequence_number, gap
    assert log_end_offset(bootstrap, topic, 0) == 5

    # After a crash the producer state comes back from the log: the retry is still
    # recognised, the next sequence still fits, and producer ids are never reused.
    fresh_broker.restart()
    after_crash = produced(call1(bootstrap, requests.produce({(topic, 0): first}).build(9)))
    assert after_crash.error_code == ErrorCode.none, after_crash
    assert int(after_crash.base_offset) == 0
    assert log_end_offset(bootstrap, topic, 0) == 5, "the retry after a crash was appended"
    following = values_batch(
        2, prefix=b"next-", producer_id=producer_id, producer_epoch=epoch, base_sequence=5
    )
    appended = produced(call1(bootstrap, requests.produce({(topic, 0): following}).build(9)))
    assert appended.error_code == ErrorCode.none, appended
    assert int(appended.base_offset) == 5
    assert log_end_offset(bootstrap, topic, 0) == 7
    stored = _fetch_all(bootstrap, topic)
    assert [h.base_offset for h in iter_headers(stored)] == [0, 5]
    assert [(r.offset, r.value) for r in decode_records(stored)] == [
        *((i, b"first-%d" % i) for i in range(5)),
        (5, b"next-0"),
        (6, b"next-1"),
    ]
    new_producer_id, _ = _init_producer(bootstrap)
    assert new_producer_id != producer_id, "a producer id was handed out twice"
