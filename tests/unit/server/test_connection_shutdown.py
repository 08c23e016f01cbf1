"""A connection cancelled by shutdown (server/net/connection.py): one waiting for its next
request closes gracefully, one still busy with a request (here: its client never
reads the answer) is aborted, so its close cannot wait forever for the client."""

from __future__ import annotations

import asyncio
from typing import Any

from kio.schema.api_versions.v3.request import ApiVersionsRequest

from shoal.protocol import codec
from shoal.server.broker import Broker
from shoal.server.connection_info import ConnectionInfo
from shoal.server.net.connection import serve_connection


class _Transport:
    def __init__(self, unsent: int) -> None:
        self.unsent = unsent
        self.aborted = False

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        return None

    def get_write_buffer_size(self) -> int:
        return self.unsent

    def is_closing(self) -> bool:
        return False

    def abort(self) -> None:
        self.aborted = True
        self.unsent = 0


class _Writer:
    """`drain` and `wait_closed` wait for the client while bytes are unsent, as a
    stream writer's do; the client never reads."""

    def __init__(self, transport: _Transport) -> None:
        self.transport = transport
        self.written = 0

    def write(self, data: Any) -> None:
        self.written += 1

    async def drain(self) -> None:
        await asyncio.Event().wait()

    def close(self) -> None:
        return None

    async def wait_closed(self) -> None:
        if self.transport.unsent:
            await asyncio.Event().wait()


def _frame() -> bytes:
    request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
    return codec.encode_request(codec.request_header_for(18, 3, 1, "t"), request)


def _cancelled(broker: Broker, *, request: bool, unsent: int) -> tuple[ConnectionInfo, _Writer]:
    info = ConnectionInfo(1, "127.0.0.1", 1000)
    writer = _Writer(_Transport(unsent))

    async def main() -> None:
        reader = asyncio.StreamReader()
        if request:
            reader.feed_data(_frame())
        task = asyncio.create_task(
            serve_connection(
                services=broker.services,
                handlers=broker.handlers,
                info=info,
                reader=reader,
                writer=writer,  # type: ignore[arg-type]
                on_closed=lambda _info: None,
            )
        )
        for _ in range(20):  # let it serve what it can
            await asyncio.sleep(0)
        task.cancel()
        await asyncio.wait_for(task, timeout=10)

    asyncio.run(main())
    return info, writer


def test_a_busy_connection_is_aborted(broker: Broker) -> None:
    info, writer = _cancelled(broker, request=True, unsent=1 << 20)
    assert writer.written == 1  # the answer is in hand, waiting for the client
    assert info.closed and writer.transport.aborted


def test_an_idle_connection_closes_gracefully(broker: Broker) -> None:
    info, writer = _cancelled(broker, request=False, unsent=0)
    assert writer.written == 0
    assert info.closed and not writer.transport.aborted
