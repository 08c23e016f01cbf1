"""Wire-level helpers: send requests to a broker from synchronous tests, over the
client's raw asyncio connection (`shoal.client.aio.Connection`).

A request is a kio object (sent as it is, at its class's version) or a client `Call`
(built at the version the broker's ApiVersions allows; the first `Call` on a
connection does the ApiVersions handshake). Request builders are the client's
(`shoal.client.requests`, `shoal.client.share_requests`); a test that checks one
version pins it with `builder(...).build(version)` or builds the kio object itself.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest

from shoal.client.aio import Connection
from shoal.client.bootstrap import parse_bootstrap
from shoal.client.calls import Call
from shoal.client.requests import LATEST_TIMESTAMP, list_offsets

T = TypeVar("T")
CLIENT_ID = "shoal-test"
REQUEST_TIMEOUT_S = 30.0


async def open_connection(bootstrap: str, *, timeout_s: float = 10.0) -> Connection:
    """A raw connection to the first broker of `bootstrap` (no handshake until the
    first `Call`)."""
    node = parse_bootstrap(bootstrap)[0]
    return await Connection.open(node.host, node.port, client_id=CLIENT_ID, timeout_s=timeout_s)


async def send(conn: Connection, request: Any, *, timeout_s: float = REQUEST_TIMEOUT_S) -> Any:
    """Send a kio request or a `Call` on `conn`; its response (None for acks=0)."""
    if not isinstance(request, Call):
        return await conn.request(request, timeout_s=timeout_s)
    if conn.core.versions is None:
        await conn.handshake(timeout_s=timeout_s)
    return await conn.call(request, timeout_s=timeout_s)


def call(bootstrap: str, *requests: Any, timeout_s: float = REQUEST_TIMEOUT_S) -> list[Any]:
    """Send requests in order on one connection; return their responses."""

    async def go(conn: Connection) -> list[Any]:
        return [await send(conn, r, timeout_s=timeout_s) for r in requests]

    return with_connection(bootstrap, go)


def call1(bootstrap: str, request: Any, timeout_s: float = REQUEST_TIMEOUT_S) -> Any:
    return call(bootstrap, request, timeout_s=timeout_s)[0]


def with_connection(bootstrap: str, fn: Callable[[Connection], Awaitable[T]]) -> T:
    """Run `fn(connection)` in a fresh event loop against `bootstrap`."""

    async def main() -> T:
        conn = await open_connection(bootstrap)
        try:
            return await fn(conn)
        finally:
            await conn.close()

    return asyncio.run(main())


# ---- requests the client has no builder for, and readers


def api_versions_request() -> Any:
    """ApiVersions v3, as a test sends it on purpose (the client's handshake is
    `ClientConnection.api_versions_request`)."""
    return ApiVersionsRequest(client_software_name=CLIENT_ID, client_software_version="1")


def init_producer_id_request() -> Any:
    """InitProducerId v4 for an idempotent (not transactional) producer."""
    return InitProducerIdRequest(
        transactional_id=None, transaction_timeout=datetime.timedelta(seconds=30)
    )


def produced(response: Any) -> Any:
    """The single partition response of a one-partition Produce."""
    (topic,) = response.responses
    (partition,) = topic.partition_responses
    return partition


def log_end_offset(bootstrap: str, topic: str, partition: int) -> int:
    response = call1(bootstrap, list_offsets({(topic, partition): LATEST_TIMESTAMP}))
    (partition_response,) = response.topics[0].partitions
    assert partition_response.error_code == 0, partition_response
    return int(partition_response.offset)


def fetched(response: Any) -> Any:
    """The single partition of a one-partition Fetch response."""
    assert response.error_code == 0, response
    (topic,) = response.responses
    (partition,) = topic.partitions
    return partition
