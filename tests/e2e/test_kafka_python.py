"""kafka-python 3.x round trip: API versions negotiated automatically (no `api_version`
given), produce with acks='all', read back with assign + seek_to_beginning.

kafka-python is a second, independent client implementation (pure Python framing,
its own record-batch writer and reader), so what both it and librdkafka accept is
what the wire spec says, not one client's tolerance.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import pytest

from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic, make_records
from tests.support.topics import topic_name

with warnings.catch_warnings():
    # kafka-python 3.0 reads its protocol schemas with importlib.resources.read_text
    # and open_text, deprecated since Python 3.11 (the suite turns warnings into errors).
    warnings.filterwarnings("ignore", r"(read|open)_text is deprecated", DeprecationWarning)
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

RECORDS = 5_000
PARTITIONS = 3
CREATE_TIME = 0  # kafka-python's timestamp_type for CreateTime


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_kafka_python_roundtrip(broker: BrokerProcess, compression: str | None) -> None:
    topic = topic_name(f"kafka-python-{compression}")
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS)
    records = make_records(RECORDS, seed=7, null_header_values=False)  # kafka-python refuses them

    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap,
        acks="all",
        compression_type=compression,
        linger_ms=10,
        batch_size=256 * 1024,
        request_timeout_ms=30_000,
    )
    try:
        futures = [
            producer.send(
                topic,
                key=r.key,
                value=r.value,
                headers=r.headers or [],
                timestamp_ms=r.timestamp_ms,
            )
            for r in records
        ]
        producer.flush(timeout=60)
        metadata = [f.get(timeout=30) for f in futures]
    finally:
        producer.close(timeout=10)

    sent_at = {(m.partition, m.offset): i for i, m in enumerate(metadata)}
    assert len(sent_at) == RECORDS, "an offset was reported twice"
    end_offsets = dict.fromkeys(range(PARTITIONS), 0)
    for partition, offset in sent_at:
        end_offsets[partition] = max(end_offsets[partition], offset + 1)
    assert sum(end_offsets.values()) == RECORDS, end_offsets

    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="none",
        check_crcs=True,
    )
    consumed: dict[int, list[Any]] = {p: [] for p in range(PARTITIONS)}
    try:
        partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(partitions)
        consumer.seek_to_beginning()
        deadline = time.monotonic() + 60
        while sum(len(v) for v in consumed.values()) < RECORDS:
            assert time.monotonic() < deadline, {p: len(v) for p, v in consumed.items()}
            for tp, batch in consumer.poll(timeout_ms=500, max_records=10_000).items():
                consumed[tp.partition].extend(batch)
    finally:
        consumer.close()

    for partition, messages in consumed.items():
        offsets = [m.offset for m in messages]
        assert offsets == list(range(end_offsets[partition])), f"partition {partition}"
        for m in messages:
            sent = records[sent_at[(partition, m.offset)]]
            assert m.key == sent.key, (partition, m.offset)
            assert m.value == sent.value, (partition, m.offset)
            assert list(m.headers) == (sent.headers or []), (partition, m.offset)
            assert m.timestamp_type == CREATE_TIME, (partition, m.offset)
            assert m.timestamp == sent.timestamp_ms, (partition, m.offset)
