"""Broker-side compression and compacted topics' key check, Kafka 4.2 and Shoal side by
side (docs/design/compression.md):

- compression.type and the level keys: accepted and refused alike, in Kafka's words
  (topic: INVALID_CONFIG, broker: INVALID_REQUEST; CreateTopics too);
- batches Shoal encodes with every codec (xerial snappy, lz4 frames, gzip, zstd) are
  read by Kafka's Java decoders: Kafka recompresses them to each topic codec, and what
  both brokers store (codec, header fields, records) is compared;
- a topic whose codec is the batch's keeps the batch's bytes on both;
- one batch per partition; a batch grown past max.message.bytes by recompression;
- a keyless record to a compacted topic: INVALID_RECORD, with Kafka's record errors
  and message from Produce v8, the code alone before.
"""

from __future__ import annotations

import datetime
import struct
from typing import Any

import crc32c
import pytest
from kio.records.readers import read_batch
from kio.schema.create_topics.v7.request import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from kio.static.primitive import i16, i32

from shoal.client import requests
from shoal.client.calls import Call
from shoal.protocol.compression import Codec
from shoal.protocol.record_batch import encode_batch, iter_headers
from shoal.protocol.records import inflated
from tests.differential.conftest import Pair, unique
from tests.differential.test_configs import BROKER, SET, TOPIC, incremental
from tests.support.topics import create_led_topic, create_topic
from tests.support.wire import call1

TS = 1_700_000_000_000
RECORDS = [(b"key-%d" % i, b"value %d " % i * (1 + i % 40)) for i in range(500)]
HEADERS = [[(b"idx", b"%d" % i)] if i % 4 else [] for i in range(len(RECORDS))]
TOPIC_CODECS = ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")

CONFIG_CASES = [
    ("compression.type", "zstd"),
    ("compression.type", "uncompressed"),
    ("compression.type", "foo"),
    ("compression.type", "GZIP"),
    ("compression.type", "none"),
    ("compression.type", ""),
    ("compression.gzip.level", "-1"),
    ("compression.gzip.level", "9"),
    ("compression.gzip.level", "0"),
    ("compression.gzip.level", "10"),
    ("compression.gzip.level", "abc"),
    ("compression.lz4.level", "1"),
    ("compression.lz4.level", "0"),
    ("compression.lz4.level", "18"),
    ("compression.zstd.level", "-131072"),
    ("compression.zstd.level", "-131073"),
    ("compression.zstd.level", "22"),
    ("compression.zstd.level", "23"),
    ("compression.zstd.level", "2147483648"),
]


@pytest.mark.parametrize(("key", "value"), CONFIG_CASES, ids=str)
def test_config_values_accepted_and_refused_in_kafkas_words(
    pair: Pair, key: str, value: str
) -> None:
    def scenario(bootstrap: str, topic: str) -> list[Any]:
        create_topic(bootstrap, topic)
        seen = [
            incremental(bootstrap, (TOPIC, topic, [(key, SET, value)])),
            incremental(bootstrap, (BROKER, "1", [(key, SET, value)])),
        ]
        request = CreateTopicsRequest(
            topics=(
                CreatableTopic(
                    name=f"{topic}-created",
                    num_partitions=i32(1),
                    replication_factor=i16(1),
                    assignments=(),
                    configs=(CreatableTopicConfig(name=key, value=value),),
                ),
            ),
            timeout=datetime.timedelta(seconds=30),
            validate_only=True,
        )
        (created,) = call1(bootstrap, request).topics
        seen.append((created.error_code.name, created.error_message))
        incremental(bootstrap, (BROKER, "1", [(key, 1, None)]))  # DELETE: back to default
        return seen

    kafka, shoal = pair.run(scenario, unique("ct-cfg"))
    assert kafka == shoal


def _produce(bootstrap: str, topic: str, records: bytes, version: int | None = None) -> Any:
    call = requests.produce({(topic, 0): records})
    if version is not None:
        call = Call.exact(call.build(version))
    (answer,) = call1(bootstrap, call).responses[0].partition_responses
    errors = getattr(answer, "record_errors", None)
    return (
        answer.error_code.name,
        int(answer.base_offset),
        None if errors is None else [(e.batch_index, e.batch_index_error_message) for e in errors],
        getattr(answer, "error_message", None),
    )


def _stored(bootstrap: str, topic: str) -> list[Any]:
    """Every stored batch: its header fields but CRC, length and leader epoch, and its
    records as kio reads them once inflated."""
    ask = requests.fetch({(topic, 0): requests.FetchPosition(0, 8 << 20)})
    data = bytes(call1(bootstrap, ask).responses[0].partitions[0].records or b"")
    out = []
    for h in iter_headers(data):
        batch = data[h.position : h.position + h.size]
        decoded, _ = read_batch(inflated(batch, h), 0)
        records = [
            (int(r.offset), r.timestamp, r.key, r.value, [(x.key, x.value) for x in r.headers])
            for r in decoded.records
        ]
        fields = (h.base_offset, h.attributes, h.last_offset_delta, h.base_timestamp,
                  h.max_timestamp, h.producer_id, h.producer_epoch, h.base_sequence,
                  h.records_count)  # fmt: skip
        out.append((fields, records))
    return out


SOURCES = [(Codec.NONE, None), (Codec.GZIP, 1), (Codec.SNAPPY, None), (Codec.LZ4, 9),
           (Codec.LZ4, 12), (Codec.ZSTD, -5), (Codec.ZSTD, 19)]  # fmt: skip


@pytest.mark.parametrize("topic_codec", TOPIC_CODECS)
def test_stored_batches_as_kafka_stores_them(pair: Pair, topic_codec: str) -> None:
    """Batches of every codec Shoal writes, produced to a topic of each compression.type:
    both brokers accept them (Kafka inflates each with its Java decoders) and store the
    same batches: codec, header fields, records."""

    def scenario(bootstrap: str, topic: str) -> tuple[list[Any], list[Any]]:
        create_led_topic(bootstrap, topic, configs={"compression.type": topic_codec})
        answers = []
        for n, (codec, level) in enumerate(SOURCES):
            start, end = n * 50, (n + 1) * 50
            batch = encode_batch(
                RECORDS[start:end],
                timestamp_ms=TS + n,
                headers=HEADERS[start:end],
                codec=codec,
                level=level,
            )
            answers.append(_produce(bootstrap, topic, batch))
        return answers, _stored(bootstrap, topic)

    kafka, shoal = pair.run(scenario, unique(f"ct-{topic_codec}"))
    assert kafka[0] == shoal[0]
    assert [f for f, _ in kafka[1]] == [f for f, _ in shoal[1]]
    assert kafka[1] == shoal[1]


def test_the_topics_own_codec_keeps_the_producers_bytes(pair: Pair) -> None:
    """zstd batches written at level 1 to a topic of zstd level 19: not recompressed by
    either broker (Kafka compares codecs, not levels); the stored records' bytes are
    the produced ones."""
    batch = encode_batch(RECORDS, timestamp_ms=TS, codec=Codec.ZSTD, level=1)

    def scenario(bootstrap: str, topic: str) -> bytes:
        configs = {"compression.type": "zstd", "compression.zstd.level": "19"}
        create_led_topic(bootstrap, topic, configs=configs)
        assert _produce(bootstrap, topic, batch)[0] == "none"
        ask = requests.fetch({(topic, 0): requests.FetchPosition(0, 8 << 20)})
        return bytes(call1(bootstrap, ask).responses[0].partitions[0].records or b"")[61:]

    kafka, shoal = pair.run(scenario, unique("ct-same"))
    assert kafka == shoal == batch[61:]


@pytest.mark.parametrize("topic_codec", ["producer", "gzip", "uncompressed"])
def test_one_batch_per_partition(pair: Pair, topic_codec: str) -> None:
    one = encode_batch(RECORDS[:3], timestamp_ms=TS)
    zipped = encode_batch(RECORDS[:3], timestamp_ms=TS, codec=Codec.GZIP)

    def scenario(bootstrap: str, topic: str) -> list[Any]:
        create_led_topic(bootstrap, topic, configs={"compression.type": topic_codec})
        return [_produce(bootstrap, topic, a + b) for a, b in ((one, one), (zipped, one))]

    kafka, shoal = pair.run(scenario, unique("ct-two"))
    assert kafka == shoal


def test_a_batch_grown_past_max_message_bytes(pair: Pair) -> None:
    """zstd in, uncompressed stored: the inflated batch is checked against the topic's
    max.message.bytes again."""
    batch = encode_batch(RECORDS, timestamp_ms=TS, codec=Codec.ZSTD)
    plain = len(encode_batch(RECORDS, timestamp_ms=TS))

    def scenario(bootstrap: str, topic: str) -> list[Any]:
        answers = []
        for limit in (plain, plain - 1):
            configs = {"compression.type": "uncompressed", "max.message.bytes": str(limit)}
            create_led_topic(bootstrap, f"{topic}-{limit}", configs=configs)
            answers.append(_produce(bootstrap, f"{topic}-{limit}", batch))
        return answers

    kafka, shoal = pair.run(scenario, unique("ct-big"))
    assert kafka == shoal
    assert [a[0] for a in shoal] == ["none", "message_too_large"]


KEYLESS = [(b"a", b"1"), (None, b"2"), (b"c", None), (None, b"4"), (None, None), (None, b"6")]


@pytest.mark.parametrize("version", [3, 7, 8, 12])
@pytest.mark.parametrize("codec", [Codec.NONE, Codec.LZ4])
@pytest.mark.parametrize("topic_codec", ["producer", "gzip"])
def test_compacted_topic_refuses_records_without_a_key(
    pair: Pair, version: int, codec: Codec, topic_codec: str
) -> None:
    def scenario(bootstrap: str, topic: str) -> list[Any]:
        configs = {"cleanup.policy": "compact", "compression.type": topic_codec}
        create_led_topic(bootstrap, topic, configs=configs)
        refused = encode_batch(KEYLESS, timestamp_ms=TS, codec=codec)
        keyed = encode_batch([KEYLESS[0], KEYLESS[2]], timestamp_ms=TS, codec=codec)
        return [
            _produce(bootstrap, topic, refused, version),
            _produce(bootstrap, topic, keyed, version),
            _stored(bootstrap, topic),
        ]

    kafka, shoal = pair.run(scenario, unique("ct-compact"))
    assert kafka == shoal
    assert shoal[0][0] == "invalid_record"


def test_records_short_of_their_count_on_a_compacted_topic(pair: Pair) -> None:
    """A batch claiming more records than it holds (a valid CRC): Kafka's record reader
    refuses it; Shoal reads records on a compacted topic and refuses it alike."""
    batch = bytearray(encode_batch(KEYLESS[:1] * 3, timestamp_ms=TS))
    struct.pack_into(">i", batch, 23, 3)  # last offset delta
    struct.pack_into(">i", batch, 57, 4)  # records count
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))

    def scenario(bootstrap: str, topic: str) -> Any:
        create_led_topic(bootstrap, topic, configs={"cleanup.policy": "compact"})
        return _produce(bootstrap, topic, bytes(batch))

    kafka, shoal = pair.run(scenario, unique("ct-short"))
    assert kafka[:3] == shoal[:3]
