"""The connection's per-(key, version) memory of served versions (server/net/connection.py
`_dispatch`): a connection's later requests are answered exactly as a fresh
connection answers each of them, whatever came before on it (a served version, a
version answered by the fallback, an unknown key that closes the connection)."""

from __future__ import annotations

import asyncio
import datetime
import logging
import struct

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.types import TopicName
from kio.static.primitive import i16, i32, i32Timedelta

from shoal import limits
from shoal.protocol import codec
from shoal.server.broker import Broker
from tests.support.transports import RecordingWriter, serve_in_process


def _api_versions(version: int, correlation_id: int) -> bytes:
    request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
    return codec.encode_request(codec.request_header_for(18, version, correlation_id, "t"), request)


def _metadata(correlation_id: int) -> bytes:
    request = MetadataRequest(
        topics=(),
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    return codec.encode_request(codec.request_header_for(3, 12, correlation_id, "t"), request)


def _unknown_key(correlation_id: int) -> bytes:
    body = struct.pack(">hhih", 9999, 0, correlation_id, 1) + b"t"
    return struct.pack(">i", len(body)) + body


def _serve(broker: Broker, frames: list[bytes]) -> list[bytes]:
    """The responses of one connection fed `frames`, then its end."""
    writer = RecordingWriter()

    async def main() -> None:
        reader = asyncio.StreamReader()
        reader.feed_data(b"".join(frames))
        reader.feed_eof()
        await serve_in_process(broker, reader, writer)

    asyncio.run(main())
    return writer.written


def test_later_requests_are_answered_as_on_a_fresh_connection(broker: Broker) -> None:
    frames = [
        _api_versions(3, 1),
        _metadata(2),
        _api_versions(99, 3),  # not served: ApiVersions' v0 fallback
        _api_versions(3, 4),
        _api_versions(99, 5),
        _metadata(6),
    ]
    alone = [_serve(broker, [frame]) for frame in frames]
    assert all(len(responses) == 1 for responses in alone)
    assert _serve(broker, frames) == [responses[0] for responses in alone]
    fallback = alone[2][0]
    assert struct.unpack_from(">ih", fallback, 4) == (3, 35)  # UNSUPPORTED_VERSION


def test_an_unknown_key_after_served_ones_closes_the_connection(broker: Broker) -> None:
    frames = [_api_versions(3, 1), _unknown_key(2), _api_versions(3, 3)]
    assert _serve(broker, frames) == _serve(broker, frames[:1])
    assert _serve(broker, frames[1:]) == []


def _create_topic(correlation_id: int) -> bytes:
    request = CreateTopicsRequest(
        topics=(
            CreatableTopic(
                name=TopicName("lane"),
                num_partitions=i32(1),
                replication_factor=i16(1),
                assignments=(),
                configs=(),
            ),
        ),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=30)),
        validate_only=False,
    )
    return codec.encode_request(codec.request_header_for(19, 7, correlation_id, "t"), request)


def test_an_admin_change_past_the_lane_bound_closes_the_connection(
    broker: Broker, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """At `limits.ADMIN_CHANGES_PENDING_MAX` pending changes (abandoned requests'
    changes run on) a new one is refused: its connection closes with the reason
    logged, the answers before it were written, and no topic is created."""
    monkeypatch.setattr(limits, "ADMIN_CHANGES_PENDING_MAX", 1)
    writer = RecordingWriter()

    async def main() -> None:
        release = asyncio.Event()
        lane = broker.services.disk.changes
        pending = asyncio.ensure_future(lane.run(release.wait))  # an abandoned change
        await asyncio.sleep(0)
        reader = asyncio.StreamReader()
        reader.feed_data(_api_versions(3, 1) + _create_topic(2) + _api_versions(3, 3))
        reader.feed_eof()
        try:  # without the bound, CreateTopics would wait for the abandoned change
            await asyncio.wait_for(serve_in_process(broker, reader, writer), 5.0)
        finally:
            release.set()
        await pending

    with caplog.at_level(logging.WARNING, logger="shoal.server.net.connection"):
        asyncio.run(main())
    assert [struct.unpack_from(">i", r, 4)[0] for r in writer.written] == [1]
    assert "ADMIN_CHANGES_PENDING_MAX" in caplog.text and "create_topics" in caplog.text
    assert "lane" not in {info.name for info in broker.logs.topics()}
