"""confluent-kafka round trip: 100k keyed records with headers and explicit timestamps,
per compression codec, produced with acks=all and read back byte for byte.

The broker stores batches verbatim, so each codec exercises only the batch headers on
the broker side; the consumer (with check.crcs) proves nothing was altered. Records are
compared by the (partition, offset) their delivery report named.
"""

from __future__ import annotations

import functools

import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME, KafkaError, Message

from tests.support.broker import BrokerProcess
from tests.support.clients import (
    create_topic,
    flush_all,
    make_records,
    producer,
    read_partitions,
)
from tests.support.topics import topic_name

RECORDS = 100_000
PARTITIONS = 3


@pytest.mark.parametrize("compression", ["none", "gzip", "lz4", "zstd"])
def test_roundtrip_100k(broker: BrokerProcess, compression: str) -> None:
    topic = topic_name(f"roundtrip-{compression}")
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS)
    records = make_records(RECORDS, seed=sum(compression.encode()))

    reports: list[tuple[int, int] | None] = [None] * RECORDS
    errors: list[tuple[int, KafkaError]] = []

    def delivered(index: int, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            errors.append((index, error))
        else:
            reports[index] = (message.partition(), message.offset())

    p = producer(
        broker.bootstrap,
        acks="all",
        compression_type=compression,
        linger_ms=20,
        batch_size=1_000_000,
        batch_num_messages=10_000,
        queue_buffering_max_messages=RECORDS * 2,
        queue_buffering_max_kbytes=1_048_576,
    )
    for index, record in enumerate(records):
        p.produce(
            topic,
            key=record.key,
            value=record.value,
            headers=record.headers,
            timestamp=record.timestamp_ms,
            on_delivery=functools.partial(delivered, index),
        )
        if index % 5_000 == 0:
            p.poll(0)
    flush_all(p)
    assert not errors, f"{len(errors)} delivery errors, first: {errors[:3]}"
    assert None not in reports, f"{reports.count(None)} records without a delivery report"

    # Offsets per partition are exactly 0..n-1: no gap, no offset given twice.
    sent_at: dict[tuple[int, int], int] = {}
    for index, report in enumerate(reports):
        assert report is not None
        assert report not in sent_at, f"offset {report} reported twice"
        sent_at[report] = index
    end_offsets = {p: 0 for p in range(PARTITIONS)}
    for partition, offset in sent_at:
        end_offsets[partition] = max(end_offsets[partition], offset + 1)
    assert sum(end_offsets.values()) == RECORDS, end_offsets

    consumed = read_partitions(broker.bootstrap, topic, end_offsets, timeout_s=120)
    for partition, messages in consumed.items():
        offsets = [m.offset for m in messages]
        assert offsets == list(range(end_offsets[partition])), f"partition {partition} order"
        for m in messages:
            sent = records[sent_at[(partition, m.offset)]]
            assert m.key == sent.key, (partition, m.offset)
            assert m.value == sent.value, (partition, m.offset)
            assert m.headers == sent.headers, (partition, m.offset)
            assert (m.timestamp_type, m.timestamp_ms) == (
                TIMESTAMP_CREATE_TIME,
                sent.timestamp_ms,
            ), (partition, m.offset)
