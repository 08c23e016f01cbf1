"""The asyncio driver: `Connection` (one connection, pipelined) and `AsyncClient`.

`Connection` is asyncio streams over the sans-I/O `ClientConnection`: `send` writes a
request and returns the future of its response, so tests can pipeline; one reader
task feeds received bytes to the core and resolves futures in request order. It is
also the raw connection tests use (`send_raw` for hostile input, `closed_by_peer`).
Its own failures are `ConnectionError` (closed, protocol broken) and `TimeoutError`.

`AsyncClient` runs the core's operations (operations.py) by executing their effects,
with the same methods as the blocking `sync.Client`, as coroutines.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

from shoal.client.bootstrap import Node
from shoal.client.calls import Call
from shoal.client.core import ClientConnection
from shoal.client.errors import ClientError, KafkaError
from shoal.client.metadata import GROUP_KEY_TYPE, ClusterView, MetadataCache, TopicPartition
from shoal.client.operations import (
    Connect,
    Disconnected,
    Done,
    Effect,
    ErrorOf,
    Op,
    Send,
    Sleep,
    resume,
    router_for,
)
from shoal.client.sasl import SaslError, SaslExchange, new_nonce
from shoal.client.settings import CLIENT_ID_DEFAULT, ClientSettings, settings_with
from shoal.client.versions import BrokerVersions
from shoal.clock import Clock
from shoal.protocol.codec import ProtocolError

log = logging.getLogger(__name__)

T = TypeVar("T")
READ_CHUNK_BYTES = 1 << 16
"""Bytes one read of the stream asks for."""


class Connection:
    """One asyncio connection to a broker (see the module docstring)."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, core: ClientConnection
    ) -> None:
        self._reader = reader
        self._writer = writer
        self.core = core
        self._futures: dict[int, asyncio.Future[Any]] = {}
        self._read_task = asyncio.create_task(self._read_loop())

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        *,
        client_id: str = CLIENT_ID_DEFAULT,
        timeout_s: float = 10.0,
        settings: ClientSettings | None = None,
    ) -> Connection:
        """Connect within `timeout_s` (no handshake: `handshake()` does ApiVersions)."""
        s = settings_with(settings, client_id=client_id if settings is None else None)
        tls = s.security.ssl_context()
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(
                host, port, ssl=tls, server_hostname=host if tls is not None else None
            ),
            timeout_s,
        )
        core = ClientConnection(
            client_id=s.client_id, response_bytes_max=s.response_bytes_max, address=f"{host}:{port}"
        )
        return cls(reader, writer, core)

    async def handshake(
        self, *, timeout_s: float, settings: ClientSettings | None = None
    ) -> BrokerVersions:
        """ApiVersions; the broker's versions (kept for `call`). `KafkaError` if refused."""
        s = settings or ClientSettings()
        while True:
            request = self.core.api_versions_request(
                software_name=s.client_software_name, software_version=s.client_software_version
            )
            versions = self.core.learn_versions(await self.request(request, timeout_s=timeout_s))
            if versions is not None:
                if s.security.uses_sasl:  # SaslHandshake + SaslAuthenticate
                    exchange = SaslExchange(s.security, versions=versions, nonce=new_nonce())
                    sasl_request = exchange.start()
                    while sasl_request is not None:
                        response = await self.request(sasl_request, timeout_s=timeout_s)
                        sasl_request = exchange.step(response)
                return versions

    @property
    def versions(self) -> BrokerVersions:
        assert self.core.versions is not None, "handshake() first"
        return self.core.versions

    async def call(self, call: Call, *, timeout_s: float) -> Any:
        """Send `call` at the version chosen from the broker's versions; its response."""
        request = self.core.build(call)
        return await self.request(
            request, timeout_s=timeout_s, expect_response=call.expect_response
        )

    async def request(
        self, body: Any, *, timeout_s: float = 30.0, expect_response: bool = True
    ) -> Any:
        """Send a kio request (version from its class); the decoded response."""
        future = await self.send(body, expect_response=expect_response)
        if future is None:
            return None
        return await asyncio.wait_for(future, timeout_s)

    async def send(self, body: Any, *, expect_response: bool = True) -> asyncio.Future[Any] | None:
        """Write a request; the future of its response (None if none is expected)."""
        sent, frame = self.core.send(body, expect_response=expect_response)
        future: asyncio.Future[Any] | None = None
        if expect_response:
            future = asyncio.get_running_loop().create_future()
            self._futures[sent.correlation_id] = future
        self._writer.write(frame)
        await self._writer.drain()
        return future

    async def send_raw(self, data: bytes) -> None:
        """Write arbitrary bytes (for hostile-input tests)."""
        self._writer.write(data)
        await self._writer.drain()

    async def _read_loop(self) -> None:
        reason = "connection closed by the broker"
        try:
            while data := await self._reader.read(READ_CHUNK_BYTES):
                for received in self.core.receive(data):
                    future = self._futures.pop(received.request.correlation_id)
                    if not future.done():
                        future.set_result(received.response)
        except (ProtocolError, OSError) as exc:
            reason = str(exc) or type(exc).__name__
            log.warning("closing the connection to %s: %s", self.core.address, reason)
        finally:
            self.core.close(reason)
            error = ConnectionError(f"{self.core.address}: {reason}")
            for future in self._futures.values():
                if not future.done():
                    future.set_exception(error)
            self._futures.clear()
            self._writer.close()

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


class AsyncClient:
    """The asyncio Kafka client: `sync.Client`'s methods, as coroutines."""

    def __init__(
        self,
        bootstrap: str | Sequence[Node],
        *,
        client_id: str | None = None,
        clock: Clock | None = None,
        api_timeout_ms: int | None = None,
        request_timeout_ms: int | None = None,
        settings: ClientSettings | None = None,
    ) -> None:
        self.settings = settings_with(
            settings,
            client_id=client_id,
            api_timeout_ms=api_timeout_ms,
            request_timeout_ms=request_timeout_ms,
        )
        self._router = router_for(bootstrap, settings=self.settings, clock=clock)
        self._connections: dict[tuple[str, int], Connection] = {}
        self._connecting: dict[tuple[str, int], asyncio.Lock] = {}

    @property
    def bootstrap(self) -> list[Node]:
        return self._router.bootstrap

    @property
    def cache(self) -> MetadataCache:
        return self._router.cache

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        connections = list(self._connections.values())
        self._connections.clear()
        for connection in connections:
            await connection.close()

    # ---- public calls (each bounded by the API timeout)

    async def call(self, call: Call, node: Node | None = None) -> Any:
        return await self._run(self._router.call(call, node))

    async def to_leader(self, topic: str, partition: int, call: Call, error_of: ErrorOf) -> Any:
        return await self._run(self._router.to_leader(topic, partition, call, error_of))

    async def to_leaders(
        self,
        partitions: Iterable[TopicPartition],
        build: Callable[[Sequence[TopicPartition]], Call],
        errors_of: Callable[[Any], Mapping[TopicPartition, int]],
    ) -> dict[TopicPartition, Any]:
        return await self._run(self._router.to_leaders(partitions, build, errors_of))

    async def to_coordinator(
        self, key: str, call: Call, error_of: ErrorOf, *, key_type: int = GROUP_KEY_TYPE
    ) -> Any:
        return await self._run(self._router.to_coordinator(key, call, error_of, key_type=key_type))

    async def metadata(self, topics: Sequence[str] | None = None) -> ClusterView:
        return await self._run(self._router.metadata(topics))

    async def brokers(self) -> list[Node]:
        return await self._run(self._router.brokers())

    async def coordinator(self, key: str, key_type: int = GROUP_KEY_TYPE) -> Node:
        return await self._run(self._router.coordinator(key, key_type))

    async def supports(
        self, api_key: int, version: int | None = None, node: Node | None = None
    ) -> bool:
        return await self._run(self._router.supports(api_key, version, node))

    # ---- effects

    async def _run(self, op: Op[T]) -> T:
        """`operations.drive`, awaiting each effect."""
        step = resume(op)
        while not isinstance(step, Done):
            try:
                value = await self._execute(step)
            except ClientError as exc:
                step = resume(op, error=exc)
            else:
                step = resume(op, value)
        return step.value

    async def _execute(self, effect: Effect) -> Any:
        if isinstance(effect, Sleep):
            await asyncio.sleep(effect.ms / 1000)
            return None
        connection = await self._connection(effect.node, effect.timeout_ms)
        if isinstance(effect, Connect):
            return connection.versions
        assert isinstance(effect, Send)
        try:
            return await connection.call(effect.call, timeout_s=effect.timeout_ms / 1000)
        except TimeoutError:
            await self._drop(effect.node, connection)
            raise Disconnected(
                effect.node, f"no answer within {effect.timeout_ms} ms", phase="timeout"
            ) from None
        except ConnectionError as exc:
            await self._drop(effect.node, connection)
            raise Disconnected(effect.node, str(exc), phase="request") from exc

    async def _connection(self, node: Node, timeout_ms: int) -> Connection:
        lock = self._connecting.setdefault(node.key, asyncio.Lock())
        async with lock:
            connection = self._connections.get(node.key)
            if connection is not None and not connection.closed_by_peer:
                return connection
            if connection is not None:
                await self._drop(node, connection)
            connection = await self.open_connection(node, timeout_ms)
            self._connections[node.key] = connection
            return connection

    async def open_connection(self, node: Node, timeout_ms: int) -> Connection:
        """A new connection to `node`, handshake done, with this client's settings; not
        shared with the client's own calls (the caller closes it). `Disconnected`
        (phase "connect") when that fails within `timeout_ms`."""
        timeout_s = timeout_ms / 1000
        try:
            connection = await Connection.open(
                node.host, node.port, timeout_s=timeout_s, settings=self.settings
            )
        except (OSError, TimeoutError) as exc:
            raise Disconnected(node, str(exc) or type(exc).__name__, phase="connect") from exc
        try:
            await connection.handshake(timeout_s=timeout_s, settings=self.settings)
        except SaslError:
            await connection.close()
            raise
        except (OSError, TimeoutError, KafkaError) as exc:
            await connection.close()
            reason = f"ApiVersions failed: {exc or type(exc).__name__}"
            raise Disconnected(node, reason, phase="connect") from exc
        return connection

    async def _drop(self, node: Node, connection: Connection) -> None:
        if self._connections.get(node.key) is connection:
            del self._connections[node.key]
        await connection.close()
