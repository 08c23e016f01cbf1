"""Compression end to end with a real client, confluent-kafka (librdkafka, check.crcs):
it decodes every codec and level shoal.protocol.compression writes; on a topic whose
compression.type names a codec, what it produces is stored in that codec and read back
record for record (idempotent and transactional producers too); a compacted topic
refuses its keyless records (docs/design/compression.md)."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from confluent_kafka import KafkaError, Message

from shoal.client import requests
from shoal.protocol.compression import Codec
from shoal.protocol.record_batch import encode_batch, iter_headers
from tests.support.broker import BrokerProcess
from tests.support.clients import Sent, flush_all, make_records, producer, read_partitions
from tests.support.topics import alter_topic, create_led_topic, produce, topic_name
from tests.support.wire import call1

TIMESTAMP_MS = 1_700_000_000_000
RECORDS = [(b"key-%d" % i, b"value %d " % i * (1 + i % 50)) for i in range(3000)]
HEADERS = [[(b"idx", b"%d" % i)] if i % 3 else [] for i in range(len(RECORDS))]
SHOAL_WRITTEN = [
    (Codec.NONE, None),
    (Codec.GZIP, 1),
    (Codec.GZIP, 9),
    (Codec.SNAPPY, None),
    (Codec.LZ4, 9),
    (Codec.LZ4, 17),
    (Codec.ZSTD, -5),
    (Codec.ZSTD, 22),
]


@pytest.mark.parametrize(("codec", "level"), SHOAL_WRITTEN)
def test_librdkafka_reads_batches_shoal_compressed(
    broker: BrokerProcess, codec: Codec, level: int | None
) -> None:
    topic = topic_name(f"shoal-{codec.name.lower()}")
    create_led_topic(broker.bootstrap, topic)
    # two batches: the consumer must walk from one compressed batch to the next
    half = len(RECORDS) // 2
    for start, end in ((0, half), (half, len(RECORDS))):
        batch = encode_batch(
            RECORDS[start:end],
            timestamp_ms=TIMESTAMP_MS,
            headers=HEADERS[start:end],
            codec=codec,
            level=level,
        )
        assert produce(broker.bootstrap, topic, batch) == start
    read = read_partitions(broker.bootstrap, topic, {0: len(RECORDS)}, check_crcs=True)
    got = [(c.offset, c.key, c.value, c.headers or [], c.timestamp_ms) for c in read[0]]
    want = [
        (i, k, v, [(hk.decode(), hv) for hk, hv in HEADERS[i]], TIMESTAMP_MS)
        for i, (k, v) in enumerate(RECORDS)
    ]
    assert got == want


# ---- broker-side compression.type: what librdkafka produces, the broker re-encodes

BROKER_CODECS = {"gzip": Codec.GZIP, "snappy": Codec.SNAPPY, "lz4": Codec.LZ4,
                 "zstd": Codec.ZSTD, "uncompressed": Codec.NONE}  # fmt: skip
COUNT = 6_000


def stored_codecs(bootstrap: str, topic: str, end: int) -> list[int]:
    """The codec of every batch the partition holds, read with raw Fetches."""
    codecs: list[int] = []
    offset = 0
    while offset < end:
        fetched = call1(
            bootstrap, requests.fetch({(topic, 0): requests.FetchPosition(offset, 4 << 20)})
        )
        data = fetched.responses[0].partitions[0].records or b""
        headers = iter_headers(data)
        assert headers, f"no batch at offset {offset} of {topic}"
        codecs += [h.compression for h in headers]
        offset = headers[-1].next_offset
    return codecs


def produce_all(bootstrap: str, topic: str, **config: Any) -> tuple[list[Sent], dict[int, int]]:
    """COUNT varied records through a confluent-kafka producer; (records, offsets by
    record index)."""
    records = make_records(COUNT, seed=len(topic))
    offsets: dict[int, int] = {}
    errors: list[KafkaError] = []

    def delivered(index: int, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            errors.append(error)
        else:
            offsets[index] = message.offset()

    p = producer(bootstrap, **config)
    for index, record in enumerate(records):
        p.produce(
            topic,
            key=record.key,
            value=record.value,
            headers=record.headers,
            timestamp=record.timestamp_ms,
            on_delivery=functools.partial(delivered, index),
        )
        p.poll(0)
    flush_all(p)
    assert not errors, errors[:3]
    return records, offsets


def assert_read_back(
    bootstrap: str, topic: str, records: list[Sent], offsets: dict[int, int]
) -> None:
    read = read_partitions(bootstrap, topic, {0: COUNT})[0]
    by_offset = {c.offset: c for c in read}
    assert sorted(offsets.values()) == list(range(COUNT))  # idempotence: no gap, no duplicate
    for index, record in enumerate(records):
        got = by_offset[offsets[index]]
        assert (got.key, got.value, got.headers, got.timestamp_ms) == (
            record.key, record.value, record.headers, record.timestamp_ms)  # fmt: skip


@pytest.mark.parametrize("producer_codec", ["none", "lz4"])
@pytest.mark.parametrize("topic_codec", sorted(BROKER_CODECS))
def test_broker_side_compression_recompresses_what_librdkafka_sends(
    broker: BrokerProcess, topic_codec: str, producer_codec: str
) -> None:
    """An idempotent librdkafka producer (small and large batches: some are read on the
    event loop, some in a worker thread) to a topic with compression.type set: every
    stored batch is in the topic's codec, and a consumer (check.crcs) reads every record
    as sent, each at the offset its delivery report named."""
    topic = topic_name(f"ct-{topic_codec}-{producer_codec}")
    create_led_topic(broker.bootstrap, topic, configs={"compression.type": topic_codec})
    records, offsets = produce_all(
        broker.bootstrap,
        topic,
        compression_type=producer_codec,
        enable_idempotence=True,
        linger_ms=20,
        batch_size=400_000,
    )
    assert set(stored_codecs(broker.bootstrap, topic, COUNT)) == {BROKER_CODECS[topic_codec]}
    assert_read_back(broker.bootstrap, topic, records, offsets)


def test_a_changed_compression_type_applies_to_later_batches(broker: BrokerProcess) -> None:
    topic = topic_name("ct-change")
    create_led_topic(broker.bootstrap, topic)
    first = encode_batch(RECORDS[:10], timestamp_ms=TIMESTAMP_MS, codec=Codec.LZ4)
    assert produce(broker.bootstrap, topic, first) == 0
    alter_topic(
        broker.bootstrap, topic, {"compression.type": "zstd", "compression.zstd.level": "7"}
    )
    second = encode_batch(RECORDS[10:20], timestamp_ms=TIMESTAMP_MS, codec=Codec.LZ4)
    assert produce(broker.bootstrap, topic, second) == 10
    assert stored_codecs(broker.bootstrap, topic, 20) == [Codec.LZ4, Codec.ZSTD]
    read = read_partitions(broker.bootstrap, topic, {0: 20})[0]
    assert [(c.key, c.value) for c in read] == RECORDS[:20]


def test_transactions_on_a_recompressed_topic(broker: BrokerProcess) -> None:
    """A transactional producer (lz4) to a gzip topic: the committed records are read
    with read_committed, the aborted ones are not; the markers stay uncompressed."""
    topic = topic_name("ct-txn")
    create_led_topic(broker.bootstrap, topic, configs={"compression.type": "gzip"})
    p = producer(broker.bootstrap, transactional_id=topic, compression_type="lz4")
    p.init_transactions(30)
    for commit in (True, False, True):
        p.begin_transaction()
        for i in range(100):
            p.produce(topic, key=b"k%d" % i, value=b"%s-%d" % (str(commit).encode(), i))
        p.flush(30)
        if commit:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
    end = 303  # three transactions of 100 records, each with its marker
    codecs = stored_codecs(broker.bootstrap, topic, end)
    assert codecs.count(Codec.GZIP) >= 3 and set(codecs) == {Codec.GZIP, Codec.NONE}
    # the last data record is at 301 (the markers take no position a consumer sees)
    read = read_partitions(broker.bootstrap, topic, {0: end - 1}, isolation_level="read_committed")
    assert [c.value for c in read[0]] == [b"True-%d" % i for i in range(100)] * 2


def test_compacted_topic_refuses_records_without_a_key(broker: BrokerProcess) -> None:
    """librdkafka's delivery report names INVALID_RECORD for a keyless record sent to a
    compacted topic; the keyed records of other batches are stored."""
    topic = topic_name("compact-keys")
    create_led_topic(broker.bootstrap, topic, configs={"cleanup.policy": "compact"})
    reports: list[tuple[bytes | None, KafkaError | None]] = []
    p = producer(broker.bootstrap, linger_ms=0, retries=0)
    for key in (b"a", None, b"b"):
        p.produce(topic, key=key, value=b"v", on_delivery=lambda e, m: reports.append((m.key(), e)))
        p.flush(30)
    keyed = [k for k, e in reports if e is None]
    refused = [(k, e) for k, e in reports if e is not None]
    assert keyed == [b"a", b"b"]
    assert len(refused) == 1
    key, error = refused[0]
    assert key is None and error.code() == KafkaError.INVALID_RECORD, error
    read = read_partitions(broker.bootstrap, topic, {0: 2})[0]
    assert [c.key for c in read] == [b"a", b"b"]
