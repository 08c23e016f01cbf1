"""Stand-ins for an asyncio transport under `serve_connection`, for tests and benches
that drive the connection loop in process."""

from __future__ import annotations

import asyncio
from typing import Any

from shoal.server.broker import Broker
from shoal.server.connection_info import ConnectionInfo
from shoal.server.net.connection import serve_connection


class DrainedTransport:
    """A transport whose client reads at once: nothing is ever left unsent, never closing."""

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        return None

    def get_write_buffer_size(self) -> int:
        return 0

    def is_closing(self) -> bool:
        return False

    def abort(self) -> None:
        return None


class RecordingWriter:
    """A stream writer stand-in over a `DrainedTransport`: `write` keeps the bytes of
    each response (a subclass reacts to them instead), `writelines` passes each of its
    responses to `write`, `sends` counts the responses of each call (one send each),
    and draining or closing does nothing."""

    def __init__(self) -> None:
        self.transport = DrainedTransport()
        self.written: list[bytes] = []
        self.sends: list[int] = []
        self._in_lines = False

    def write(self, data: Any) -> None:
        if not self._in_lines:
            self.sends.append(1)
        self.written.append(bytes(data))

    def writelines(self, items: Any) -> None:
        items = list(items)
        self.sends.append(len(items))
        self._in_lines = True
        try:
            for data in items:
                self.write(data)
        finally:
            self._in_lines = False

    async def drain(self) -> None:  # below the high-water mark: never suspends
        return None

    def close(self) -> None:
        return None

    async def wait_closed(self) -> None:
        return None


async def serve_in_process(
    broker: Broker, reader: asyncio.StreamReader, writer: RecordingWriter, connection_id: int = 1
) -> None:
    """`serve_connection` of `broker` on `reader` and `writer`, as connection
    `connection_id` from 127.0.0.1, until the reader ends."""
    await serve_connection(
        services=broker.services,
        handlers=broker.handlers,
        info=ConnectionInfo(connection_id, "127.0.0.1", 999 + connection_id),
        reader=reader,
        writer=writer,  # type: ignore[arg-type]
        on_closed=lambda _info: None,
    )
