"""ApiVersions: the advertised table is what is served (conformance A1, A2)."""

from __future__ import annotations

import asyncio
import struct

from kio.schema.api_versions.v0.request import ApiVersionsRequest as ApiVersionsRequestV0
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.api_versions.v4.request import ApiVersionsRequest as ApiVersionsRequestV4
from kio.schema.errors import ErrorCode

from shoal.client.aio import Connection
from shoal.protocol import codec
from shoal.protocol.codec import SIZE
from tests.support.broker import BrokerProcess
from tests.support.wire import call1

# What librdkafka 2.16 needs to see (what it requires of a broker), as (key, min, max) lower bounds.
REQUIRED = {0: (3, 10), 1: (4, 16), 3: (0, 13), 10: (0, 6), 18: (0, 4)}


def test_v3_lists_what_librdkafka_needs(broker: BrokerProcess) -> None:
    response = call1(
        broker.bootstrap,
        ApiVersionsRequest(client_software_name="t", client_software_version="1"),
    )
    assert response.error_code == ErrorCode.none
    served = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in response.api_keys}
    for key, (low, high) in REQUIRED.items():
        assert key in served, f"api {key} not advertised"
        assert served[key][0] <= low and served[key][1] >= high, (key, served[key])
    assert 71 not in served and 72 not in served, "telemetry must never be advertised"
    assert {f.name: int(f.max_version_level) for f in response.finalized_features} == FINALIZED
    assert {f.name for f in response.supported_features} == {
        name for name, (low, _) in SUPPORTED.items() if low > 0
    }


# server/metadata/features.py: the levels Shoal runs at (0: not finalized).
FINALIZED = {
    "metadata.version": 29,
    "group.version": 1,
    "transaction.version": 2,
    "eligible.leader.replicas.version": 1,
    "share.version": 1,
}
SUPPORTED = {
    "metadata.version": (29, 29),
    "group.version": (1, 1),
    "transaction.version": (2, 2),
    "kraft.version": (0, 0),
    "streams.version": (0, 0),
    "eligible.leader.replicas.version": (1, 1),
    "share.version": (0, 1),
}


def test_v4_reports_every_supported_range(broker: BrokerProcess) -> None:
    response = call1(
        broker.bootstrap,
        ApiVersionsRequestV4(client_software_name="t", client_software_version="1"),
    )
    features = {
        f.name: (int(f.min_version), int(f.max_version)) for f in response.supported_features
    }
    assert features == SUPPORTED


def test_v0_works(broker: BrokerProcess) -> None:
    response = call1(broker.bootstrap, ApiVersionsRequestV0())
    assert response.error_code == ErrorCode.none
    assert len(response.api_keys) >= len(REQUIRED)


def test_unknown_version_answers_v0_with_unsupported_version(broker: BrokerProcess) -> None:
    """Kafka answers an ApiVersions version it does not know in v0 with error 35 and
    ApiVersions' own range only (KIP-511), and keeps the connection open."""
    host, port = broker.bootstrap.split(":")

    async def go() -> tuple[int, object, bool]:
        reader, writer = await asyncio.open_connection(host, int(port))
        # Header v2 (flexible) for ApiVersions v99: key, version, correlation id,
        # client id (int16 length), empty tagged fields; then an empty flexible body.
        body = struct.pack(">hhih", 18, 99, 42, 1) + b"x" + b"\x00" + b"\x00\x00\x00"
        writer.write(SIZE.pack(len(body)) + body)
        await writer.drain()
        (size,) = SIZE.unpack(await reader.readexactly(SIZE.size))
        frame = await reader.readexactly(size)
        correlation_id, response = codec.decode_response(frame, 18, 0)
        writer.write(SIZE.pack(len(body)) + body)  # still open: answers again
        await writer.drain()
        (size,) = SIZE.unpack(await reader.readexactly(SIZE.size))
        await reader.readexactly(size)
        writer.close()
        return correlation_id, response, True

    correlation_id, response, still_open = asyncio.run(go())
    assert correlation_id == 42
    assert response.error_code == ErrorCode.unsupported_version  # type: ignore[attr-defined]
    keys = {int(k.api_key) for k in response.api_keys}  # type: ignore[attr-defined]
    assert keys == {18}
    assert still_open


def test_connection_survives_many_requests(broker: BrokerProcess) -> None:
    host, port = broker.bootstrap.split(":")

    async def go() -> int:
        conn = await Connection.open(host, int(port))
        futures = [
            await conn.send(
                ApiVersionsRequest(client_software_name="t", client_software_version="1")
            )
            for _ in range(200)
        ]
        results = [await f for f in futures if f is not None]
        await conn.close()
        return sum(1 for r in results if r.error_code == ErrorCode.none)

    assert asyncio.run(go()) == 200
