"""Wire-level helpers: send kio requests to a broker from synchronous tests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from shoal.client import KafkaConnection

T = TypeVar("T")


def call(bootstrap: str, *requests: Any, timeout_s: float = 30.0) -> list[Any]:
    """Send requests in order on one connection; return their responses."""

    async def go(conn: KafkaConnection) -> list[Any]:
        return [await conn.request(r, timeout_s=timeout_s) for r in requests]

    return with_connection(bootstrap, go)


def call1(bootstrap: str, request: Any, timeout_s: float = 30.0) -> Any:
    return call(bootstrap, request, timeout_s=timeout_s)[0]


def with_connection(bootstrap: str, fn: Callable[[KafkaConnection], Awaitable[T]]) -> T:
    """Run `fn(connection)` in a fresh event loop against `bootstrap`."""
    host, _, port = bootstrap.rpartition(":")

    async def main() -> T:
        conn = await KafkaConnection.open(host, int(port), client_id="shoal-test")
        try:
            return await fn(conn)
        finally:
            await conn.close()

    return asyncio.run(main())
