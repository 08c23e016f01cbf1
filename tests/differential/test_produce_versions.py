"""Produce v3-v13, Kafka 4.2 and Shoal side by side: a record appended at every version
(by topic id from v13), an unknown topic, an unknown topic id, a partition that does
not exist, and an idempotent producer's duplicate and out-of-order sequence. What a
producer reads back (error, base offset, log start offset, error message) is compared.

Kafka 4.2 advertises Produce from v0 but closes the connection on a v0-v2 request (only
librdkafka releases that required v2 in ApiVersions to turn on compression needed it
advertised); Shoal advertises from v3, the first version it serves. Both refuse
v0-v2 alike, which `test_v0_to_v2_close_the_connection` checks with a frame built from
the v3 one (the two differ only in v3's leading TransactionalId)."""

from __future__ import annotations

import asyncio
import datetime
import io
import struct
import time
import uuid
from typing import Any

from kio.serial import entity_writer

from shoal.protocol.errors import error_name
from shoal.protocol.schema import request_schema
from tests.differential.conftest import Pair, unique
from tests.support.batches import build_batch, values_batch
from tests.support.topics import create_led_topic
from tests.support.wire import call1

TOPIC_ID_MIN_VERSION = 13
WAIT_S = 30.0


def _produce(
    version: int,
    topic: str,
    topic_id: uuid.UUID,
    records: bytes,
    *,
    partition: int = 0,
) -> Any:
    schema = request_schema(0, version)
    return schema.make(
        "ProduceRequest",
        transactional_id=None,
        acks=-1,
        timeout=datetime.timedelta(seconds=10),
        topic_data=(
            schema.make(
                "TopicProduceData",
                name=topic,
                topic_id=topic_id,
                partition_data=(
                    schema.make("PartitionProduceData", index=partition, records=records),
                ),
            ),
        ),
    )


def _answer(response: Any) -> tuple[Any, ...]:
    (topic,) = response.responses
    (partition,) = topic.partition_responses
    return (
        error_name(partition.error_code),
        partition.base_offset,
        getattr(partition, "log_start_offset", None),
        getattr(partition, "error_message", None),
    )


def _every_version(bootstrap: str) -> dict[str, Any]:
    topic = unique("produce")
    topic_id = create_led_topic(bootstrap, topic)
    seen: dict[str, Any] = {}
    for version in range(3, 14):
        response = call1(bootstrap, _produce(version, topic, topic_id, values_batch(2)))
        (answered,) = response.responses
        named_as_asked = (
            answered.topic_id == topic_id
            if version >= TOPIC_ID_MIN_VERSION
            else answered.name == topic
        )
        seen[f"v{version}"] = (_answer(response), named_as_asked)
        unknown = _produce(version, unique("nope"), uuid.uuid4(), values_batch(1))
        seen[f"v{version} unknown topic"] = _answer(call1(bootstrap, unknown))
        missing = _produce(version, topic, topic_id, values_batch(1), partition=7)
        seen[f"v{version} no such partition"] = _answer(call1(bootstrap, missing))
    return seen


def test_every_produce_version(pair: Pair) -> None:
    kafka, shoal = pair.run(_every_version)
    assert shoal == kafka
    assert kafka["v13 unknown topic"][0] == "UNKNOWN_TOPIC_ID"
    assert kafka["v12 unknown topic"][0] == "UNKNOWN_TOPIC_OR_PARTITION"


def _idempotent(bootstrap: str) -> dict[str, Any]:
    topic = unique("idempotent")
    topic_id = create_led_topic(bootstrap, topic)
    init = request_schema(22, 4).make(
        "InitProducerIdRequest",
        transactional_id=None,
        transaction_timeout=datetime.timedelta(seconds=60),
        producer_id=-1,
        producer_epoch=-1,
    )
    deadline = time.monotonic() + WAIT_S
    while (producer := call1(bootstrap, init)).error_code != 0:  # Kafka's first may wait
        assert time.monotonic() < deadline, producer
        time.sleep(0.1)
    pid, epoch = producer.producer_id, producer.producer_epoch
    seen: dict[str, Any] = {}
    sequence = 0
    for version in (3, 7, 10, 11, 12, 13):
        batch = values_batch(2, producer_id=pid, producer_epoch=epoch, base_sequence=sequence)
        seen[f"v{version}"] = _answer(call1(bootstrap, _produce(version, topic, topic_id, batch)))
        seen[f"v{version} again"] = _answer(
            call1(bootstrap, _produce(version, topic, topic_id, batch))
        )
        gap = values_batch(1, producer_id=pid, producer_epoch=epoch, base_sequence=sequence + 5)
        seen[f"v{version} gap"] = _answer(call1(bootstrap, _produce(version, topic, topic_id, gap)))
        sequence += 2
    return seen


def _refusals(bootstrap: str) -> dict[str, Any]:
    """Batches the broker refuses: a bad CRC, one larger than max.message.bytes, magic
    1, a transactional batch in a request without a TransactionalId."""
    topic = unique("refused")
    topic_id = create_led_topic(bootstrap, topic, configs={"max.message.bytes": "2000"})
    seen: dict[str, Any] = {}
    for version in (3, 8, 10, 13):
        for label, batch in {
            "bad crc": build_batch([b"x"], corrupt_crc=True),
            "too large": build_batch([b"x" * 5000]),
            "magic 1": build_batch([b"x"], magic=1),
            "transactional": values_batch(1, producer_id=1, producer_epoch=0, transactional=True),
        }.items():
            response = call1(bootstrap, _produce(version, topic, topic_id, batch))
            seen[f"v{version} {label}"] = _answer(response)
    return seen


def test_refused_batches(pair: Pair) -> None:
    kafka, shoal = pair.run(_refusals)
    assert shoal == kafka
    assert kafka["v10 bad crc"] == ("CORRUPT_MESSAGE", -1, -1, None)  # no ErrorMessage
    assert kafka["v8 transactional"][0] == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"


def test_an_idempotent_producer_at_each_version(pair: Pair) -> None:
    kafka, shoal = pair.run(_idempotent)
    assert shoal == kafka
    assert kafka["v13 again"][:2] == ("NONE", 10)  # the duplicate answers its first offset
    # the log's producer checks answer the log start offset, other refusals -1
    assert kafka["v13 gap"] == ("OUT_OF_ORDER_SEQUENCE_NUMBER", -1, 0, None)


def _old_versions(bootstrap: str) -> dict[int, str]:
    topic = unique("old")
    create_led_topic(bootstrap, topic)
    schema = request_schema(0, 3)
    v3 = schema.make(
        "ProduceRequest",
        transactional_id=None,
        acks=-1,
        timeout=datetime.timedelta(seconds=5),
        topic_data=(
            schema.make(
                "TopicProduceData",
                name=topic,
                partition_data=(
                    schema.make("PartitionProduceData", index=0, records=values_batch(1)),
                ),
            ),
        ),
    )
    buffer = io.BytesIO()
    entity_writer(type(v3))(buffer, v3)
    v2_body = buffer.getvalue()[2:]  # v3 without its null TransactionalId
    return {version: asyncio.run(_send_raw(bootstrap, version, v2_body)) for version in (0, 1, 2)}


async def _send_raw(bootstrap: str, version: int, body: bytes) -> str:
    """Send one Produce frame (request header v1) and say how the broker answered."""
    host, port = bootstrap.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    client_id = b"differential"
    header = struct.pack(">hhih", 0, version, 1, len(client_id)) + client_id
    frame = header + body
    writer.write(struct.pack(">i", len(frame)) + frame)
    await writer.drain()
    try:
        size = await asyncio.wait_for(reader.readexactly(4), 10)
        return f"answered {struct.unpack('>i', size)[0]} bytes"
    except asyncio.IncompleteReadError:
        return "closed"
    finally:
        writer.close()


def test_v0_to_v2_close_the_connection(pair: Pair) -> None:
    kafka, shoal = pair.run(_old_versions)
    assert kafka == shoal == {0: "closed", 1: "closed", 2: "closed"}
