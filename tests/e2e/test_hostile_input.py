"""Hostile input: malformed frames close only their own connection (with a logged
reason), bad batches get the documented per-partition error on a connection that
stays open, and after every case a well-behaved client still produces and fetches.
"""

from __future__ import annotations

import datetime
import random
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kio.schema.errors import ErrorCode
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData

from shoal.client import requests
from shoal.protocol import codec
from tests.support.batches import build_batch, values_batch
from tests.support.broker import BrokerProcess
from tests.support.clients import consumer, create_topic, flush_all, producer
from tests.support.raw_wire import Raw, frame
from tests.support.topics import topic_name
from tests.support.wire import api_versions_request, call, call1, log_end_offset, produced

HEALTH_TOPIC = "hostile-health"
DATA_TOPIC = "hostile-data"
MAX_MESSAGE_BYTES = 1_048_588  # broker default message.max.bytes


@pytest.fixture
def raw(broker: BrokerProcess) -> Iterator[Raw]:
    connection = Raw(broker.bootstrap)
    try:
        yield connection
    finally:
        connection.close()


# ---- the broker keeps serving well-behaved clients


@dataclass
class Health:
    broker: BrokerProcess
    producer: Producer
    consumer: Consumer
    checks: int = 0

    def check(self) -> None:
        """The process lives, accepts a new connection, and a confluent-kafka producer
        and consumer still round-trip a record."""
        assert self.broker.alive, "the broker process died"
        response = call1(self.broker.bootstrap, api_versions_request(), timeout_s=10)
        assert response.error_code == ErrorCode.none
        self.checks += 1
        value = b"health-%d" % self.checks
        self.producer.produce(HEALTH_TOPIC, value=value)
        flush_all(self.producer, timeout_s=30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = self.consumer.poll(0.2)
            if message is None:
                continue
            assert message.error() is None, message.error()
            if message.value() == value:
                return
        raise AssertionError(f"record {value!r} not consumed within 30 s")


@pytest.fixture(scope="module")
def health(broker: BrokerProcess) -> Iterator[Health]:
    create_topic(broker.bootstrap, HEALTH_TOPIC)
    create_topic(broker.bootstrap, DATA_TOPIC)
    p = producer(broker.bootstrap, linger_ms=0)
    c = consumer(broker.bootstrap)
    c.assign([TopicPartition(HEALTH_TOPIC, 0, 0)])
    try:
        yield Health(broker, p, c)
    finally:
        c.close()
        flush_all(p, timeout_s=10)


@pytest.fixture(autouse=True)
def still_serving(health: Health) -> Iterator[None]:
    yield
    health.check()


# ---- malformed frames: the broker closes the connection


def _assert_closed(raw: Raw) -> None:
    closed, received = raw.closed_by_broker()
    assert closed, "the broker did not close the connection"
    assert received == b"", f"unexpected answer {received[:64]!r}"


MALFORMED = {
    "negative-size": struct.pack(">i", -5) + b"x" * 16,
    "zero-size": struct.pack(">i", 0),
    "huge-size": struct.pack(">i", 200 * 2**20),
    "shorter-than-header": struct.pack(">i", 4) + b"\x00\x12\x00\x00",
    "header-cut-short": struct.pack(">i", 9) + struct.pack(">hhi", 18, 0, 1) + b"\x00",
    "unknown-api-key": frame(9999, 0),
    "negative-api-key": frame(-2, 0),
    "produce-v99": frame(0, 99, b"\x00" * 32),
    "fetch-v0": frame(1, 0, b"\x00" * 32),
    "garbage-body": frame(0, 9, bytes(range(40)) * 2, flexible=True),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_malformed_frame_closes_connection(raw: Raw, case: str) -> None:
    raw.send(MALFORMED[case])
    _assert_closed(raw)


def test_oversized_frame_is_logged(broker: BrokerProcess, raw: Raw) -> None:
    raw.send(struct.pack(">i", 100 * 2**20 + 1))
    _assert_closed(raw)
    assert broker.wait_for_log(r"closing connection \d+ .*frame size 104857601"), (
        "no log line gives the reason for closing an oversized frame"
    )


def test_unknown_api_key_is_logged(broker: BrokerProcess, raw: Raw) -> None:
    raw.send(frame(9999, 3))
    _assert_closed(raw)
    assert broker.wait_for_log(r"closing connection \d+ .*api key 9999"), (
        "no log line gives the reason for closing on an unknown api key"
    )


def test_truncated_frame(broker: BrokerProcess, raw: Raw) -> None:
    """The size says 100, ten bytes come, then the client stops sending."""
    raw.send(struct.pack(">i", 100) + b"\x00\x12\x00\x03" + b"\x00" * 6)
    raw.half_close()
    _assert_closed(raw)


@pytest.mark.parametrize("seed", range(8))
def test_random_bytes(raw: Raw, seed: int) -> None:
    rng = random.Random(seed)
    raw.send(rng.randbytes(rng.randrange(1, 4096)))
    raw.half_close()
    closed, _ = raw.closed_by_broker()
    assert closed


@pytest.mark.parametrize("seed", range(8))
def test_random_framed_body(raw: Raw, seed: int) -> None:
    """A correctly sized frame of random bytes: the header or body fails to parse."""
    rng = random.Random(1000 + seed)
    body = rng.randbytes(rng.randrange(8, 512))
    raw.send(struct.pack(">i", len(body)) + body)
    raw.half_close()
    closed, _ = raw.closed_by_broker()
    assert closed


# ---- answered errors: the connection stays open


def test_api_versions_unknown_version_answers_v0(raw: Raw) -> None:
    raw.send(frame(18, 99, b"\x00\x00\x00", flexible=True))
    response_frame = raw.read_frame()
    assert response_frame is not None, "closed instead of answering"
    correlation_id, response = codec.decode_response(response_frame, 18, 0)
    assert correlation_id == 7
    assert response.error_code == ErrorCode.unsupported_version
    assert [int(k.api_key) for k in response.api_keys] == [18]  # its own range, as Kafka
    raw.send(frame(18, 0))  # still open and serving
    assert raw.read_frame() is not None


def _produce_error(bootstrap: str, topic: str, partition: int, records: bytes) -> ErrorCode:
    """Produce `records` on a connection, then check that connection still serves."""
    answer, versions = call(
        bootstrap, requests.produce({(topic, partition): records}).build(9), api_versions_request()
    )
    assert versions.error_code == ErrorCode.none
    return produced(answer).error_code  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("corrupt-crc", ErrorCode.corrupt_message),
        ("truncated-batch", ErrorCode.invalid_record),  # no whole batch: as Kafka
        ("magic-1", ErrorCode.invalid_record),
        ("too-large", ErrorCode.message_too_large),
    ],
)
def test_bad_batch_gets_partition_error(
    broker: BrokerProcess, case: str, expected: ErrorCode
) -> None:
    batch = {
        "corrupt-crc": lambda: values_batch(5, corrupt_crc=True),
        "truncated-batch": lambda: values_batch(5)[:-7],
        "magic-1": lambda: values_batch(5, magic=1),
        "too-large": lambda: build_batch([b"x" * (MAX_MESSAGE_BYTES + 1)]),
    }[case]()
    before = log_end_offset(broker.bootstrap, DATA_TOPIC, 0)
    assert _produce_error(broker.bootstrap, DATA_TOPIC, 0, batch) == expected
    assert log_end_offset(broker.bootstrap, DATA_TOPIC, 0) == before, "a bad batch was stored"


def test_unknown_partition(broker: BrokerProcess) -> None:
    code = _produce_error(broker.bootstrap, DATA_TOPIC, 7, values_batch(1))
    assert code == ErrorCode.unknown_topic_or_partition


def test_bad_batch_does_not_disturb_good_ones(broker: BrokerProcess) -> None:
    """A request mixing a good and a corrupt partition: only the corrupt one fails."""
    topic = topic_name("hostile-mixed")
    create_topic(broker.bootstrap, topic, partitions=2)
    request = ProduceRequest(
        acks=-1,
        timeout=datetime.timedelta(seconds=30),
        topic_data=(
            TopicProduceData(
                name=topic,
                partition_data=(
                    PartitionProduceData(index=0, records=values_batch(3)),
                    PartitionProduceData(index=1, records=values_batch(3, corrupt_crc=True)),
                ),
            ),
        ),
    )
    response = call1(broker.bootstrap, request)
    codes = {int(p.index): p.error_code for p in response.responses[0].partition_responses}
    assert codes == {0: ErrorCode.none, 1: ErrorCode.corrupt_message}
    assert log_end_offset(broker.bootstrap, topic, 0) == 3
    assert log_end_offset(broker.bootstrap, topic, 1) == 0
