"""Pipelined requests answered in one write (server/net/connection.py): while the next
request's frame is already whole in hand, a response is held and leaves with the next
ones; it is written at once when the next frame is not whole, when the held bytes
reach `limits.CONNECTION_HELD_RESPONSE_BYTES_MAX`, and when the connection ends."""

from __future__ import annotations

import asyncio
import datetime
import struct
from typing import Any

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData
from kio.schema.types import TopicName
from kio.static.primitive import i16, i32, i32Timedelta

from shoal import limits
from shoal.protocol import codec
from shoal.server.broker import Broker
from tests.support.batches import build_batch
from tests.support.transports import RecordingWriter, serve_in_process

WAIT_S = 5.0  # a response that never leaves fails the test instead of hanging it


def _api_versions(correlation_id: int) -> bytes:
    request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
    return codec.encode_request(codec.request_header_for(18, 3, correlation_id, "t"), request)


def _produce_acks_0(correlation_id: int, topic: str = "somewhere") -> bytes:
    """A Produce that gets no response (acks=0); to a topic that does not exist, it
    closes the connection (Kafka's KafkaApis: the only way to tell such a producer)."""
    request = ProduceRequest(
        transactional_id=None,
        acks=i16(0),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        topic_data=(
            TopicProduceData(
                name=TopicName(topic),
                partition_data=(PartitionProduceData(index=i32(0), records=build_batch([b"v"])),),
            ),
        ),
    )
    return codec.encode_request(codec.request_header_for(0, 9, correlation_id, "t"), request)


def _unknown_key(correlation_id: int) -> bytes:
    body = struct.pack(">hhih", 9999, 0, correlation_id, 1) + b"t"
    return struct.pack(">i", len(body)) + body


def _correlation_ids(written: list[bytes]) -> list[int]:
    return [struct.unpack_from(">i", response, 4)[0] for response in written]


class _Feeding(RecordingWriter):
    """Feeds the reader the next chunk each time a response is written (a client that
    sends only once it has its answer), and its end after the last."""

    def __init__(self, reader: asyncio.StreamReader, chunks: list[bytes]) -> None:
        super().__init__()
        self._reader = reader
        self._chunks = chunks

    def write(self, data: Any) -> None:
        super().write(data)
        if self._chunks:
            self._reader.feed_data(self._chunks.pop(0))
        elif not self._reader.at_eof():
            self._reader.feed_eof()


def _serve(broker: Broker, first: bytes, later: list[bytes] | None = None) -> RecordingWriter:
    """Serve one connection given `first`; with `later`, each write feeds the next chunk
    (else the reader ends after `first`)."""

    async def main() -> RecordingWriter:
        reader = asyncio.StreamReader()
        writer = _Feeding(reader, list(later)) if later is not None else RecordingWriter()
        reader.feed_data(first)
        if later is None:
            reader.feed_eof()
        await asyncio.wait_for(serve_in_process(broker, reader, writer), WAIT_S)
        return writer

    return asyncio.run(main())


def test_pipelined_requests_are_answered_in_one_write_in_order(broker: Broker) -> None:
    writer = _serve(broker, b"".join(_api_versions(i) for i in range(5)))
    assert _correlation_ids(writer.written) == [0, 1, 2, 3, 4]
    assert writer.sends == [5]


def test_requests_sent_one_at_a_time_are_answered_one_write_each(broker: Broker) -> None:
    writer = _serve(broker, _api_versions(0), [_api_versions(1), _api_versions(2)])
    assert _correlation_ids(writer.written) == [0, 1, 2]
    assert writer.sends == [1, 1, 1]


def test_a_next_frame_not_yet_whole_does_not_hold_the_answer(broker: Broker) -> None:
    # the client's second request arrives in two parts, the second only after the
    # first answer: holding that answer for the second request would wait forever
    second = _api_versions(1)
    writer = _serve(broker, _api_versions(0) + second[:7], [second[7:]])
    assert _correlation_ids(writer.written) == [0, 1]
    assert writer.sends == [1, 1]


def test_a_request_without_answer_does_not_hold_the_answers_before_it(broker: Broker) -> None:
    # ApiVersions is held while the acks=0 Produce is whole in hand; the Produce has
    # no answer, and the next frame comes only once the ApiVersions answer is out
    broker.logs.create_topic("somewhere", partitions=1, configs={})
    writer = _serve(broker, _api_versions(0) + _produce_acks_0(1), [_api_versions(2)])
    assert _correlation_ids(writer.written) == [0, 2]
    assert writer.sends == [1, 1]


def test_a_failed_acks_0_produce_closes_after_the_answers_before_it(
    broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    frames = [_api_versions(0), _produce_acks_0(1, "nowhere"), _api_versions(2)]
    writer = _serve(broker, b"".join(frames))
    assert _correlation_ids(writer.written) == [0]
    assert "acks=0 produce failed (correlation id 1, client 't'): nowhere-0: " in caplog.text


def test_a_failed_acks_0_produce_to_an_empty_topic_name_closes_with_its_reason(
    broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    # an empty name is still a name (up to v12 topics have no id): found by the wire fuzz
    writer = _serve(broker, b"".join([_api_versions(0), _produce_acks_0(1, "")]))
    assert _correlation_ids(writer.written) == [0]
    assert "acks=0 produce failed (correlation id 1, client 't'): -0: " in caplog.text
    assert "internal error" not in caplog.text


def test_the_held_bytes_limit_writes_each_answer_at_once(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "CONNECTION_HELD_RESPONSE_BYTES_MAX", 1)
    writer = _serve(broker, b"".join(_api_versions(i) for i in range(3)))
    assert _correlation_ids(writer.written) == [0, 1, 2]
    assert writer.sends == [1, 1, 1]


def test_held_answers_are_written_before_a_protocol_error_closes(broker: Broker) -> None:
    frames = [_api_versions(0), _api_versions(1), _unknown_key(2), _api_versions(3)]
    writer = _serve(broker, b"".join(frames))
    assert _correlation_ids(writer.written) == [0, 1]
    assert writer.sends == [2]
