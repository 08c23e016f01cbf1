"""Batches Shoal compresses, read by a real client: confluent-kafka (librdkafka, check.crcs)
decodes every codec and level shoal.protocol.compression writes, record for record."""

from __future__ import annotations

import pytest

from shoal.protocol.compression import Codec
from shoal.protocol.record_batch import encode_batch
from tests.support.broker import BrokerProcess
from tests.support.clients import read_partitions
from tests.support.topics import create_led_topic, produce, topic_name

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
