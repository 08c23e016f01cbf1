"""One connection to a Kafka-protocol broker: send kio requests, await kio responses.

Requests are kio request objects; the api key and version come from the object's
class (`__api_key__`, `__version__`). Responses are matched by correlation id; they
arrive in request order, so a FIFO of pending futures suffices.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections import deque
from typing import Any

from shoal.protocol import codec

_SIZE = struct.Struct(">i")


class ResponseError(Exception):
    """The broker answered with an error code where the caller required success."""


class KafkaConnection:
    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._client_id = client_id
        self._correlation_id = 0
        self._pending: deque[tuple[int, int, int, asyncio.Future[Any]]] = deque()
        self._read_task = asyncio.create_task(self._read_loop())

    @classmethod
    async def open(
        cls, host: str, port: int, *, client_id: str = "shoal-client", timeout_s: float = 10.0
    ) -> KafkaConnection:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, limit=2**26), timeout_s
        )
        return cls(reader, writer, client_id)

    async def request(self, body: Any, *, timeout_s: float = 30.0) -> Any:
        """Send a kio request and return the decoded kio response."""
        future = await self.send(body)
        if future is None:
            return None
        return await asyncio.wait_for(future, timeout_s)

    async def send(self, body: Any, *, expect_response: bool = True) -> asyncio.Future[Any] | None:
        """Write a request; returns the future of its response (None if none is expected)."""
        api_key, version = int(body.__api_key__), int(body.__version__)
        self._correlation_id += 1
        header = codec.request_header_for(api_key, version, self._correlation_id, self._client_id)
        frame = codec.encode_request(header, body)
        future: asyncio.Future[Any] | None = None
        if expect_response:
            future = asyncio.get_running_loop().create_future()
            self._pending.append((self._correlation_id, api_key, version, future))
        self._writer.write(frame)
        await self._writer.drain()
        return future

    async def send_raw(self, data: bytes) -> None:
        """Write arbitrary bytes (for hostile-input tests)."""
        self._writer.write(data)
        await self._writer.drain()

    async def _read_loop(self) -> None:
        error: BaseException = ConnectionError("connection closed by the broker")
        try:
            while True:
                (size,) = _SIZE.unpack(await self._reader.readexactly(4))
                frame = await self._reader.readexactly(size)
                if not self._pending:
                    raise ConnectionError("response without a request")
                expected, api_key, version, future = self._pending.popleft()
                correlation_id, body = codec.decode_response(frame, api_key, version)
                if correlation_id != expected:
                    raise ConnectionError(f"correlation id {correlation_id} != {expected}")
                if not future.done():
                    future.set_result(body)
        except (asyncio.IncompleteReadError, ConnectionError, OSError) as exc:
            error = exc if isinstance(exc, ConnectionError) else ConnectionError(str(exc))
        finally:
            while self._pending:
                *_, future = self._pending.popleft()
                if not future.done():
                    future.set_exception(error)

    @property
    def closed_by_peer(self) -> bool:
        return self._read_task.done()

    async def wait_closed_by_peer(self, timeout_s: float = 10.0) -> bool:
        """True if the broker closes the connection within the timeout."""
        try:
            await asyncio.wait_for(asyncio.shield(self._read_task), timeout_s)
        except TimeoutError:
            return False
        return True

    async def close(self) -> None:
        self._read_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._read_task
        self._writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self._writer.wait_closed()
