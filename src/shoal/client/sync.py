"""The blocking driver: sockets and threads, no event loop (Spark workers, the CLI).

`Connection` is one blocking socket over the sans-I/O `ClientConnection`: one request
at a time, each bounded by its timeout on the injected clock. `Client` runs the
core's operations (operations.py) by executing their effects; it keeps one
connection per broker address, each guarded by its own lock, so threads may share a
client (a request to one broker never waits for another broker's).

Transport failures become `Disconnected` (the operations decide whether to retry);
the broker breaking the protocol closes the connection the same way.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

from shoal.client.bootstrap import Node
from shoal.client.calls import Call
from shoal.client.core import ClientConnection
from shoal.client.errors import KafkaError
from shoal.client.metadata import GROUP_KEY_TYPE, ClusterView, MetadataCache, TopicPartition
from shoal.client.operations import (
    Connect,
    Disconnected,
    Effect,
    ErrorOf,
    Op,
    Send,
    Sleep,
    drive,
    router_for,
)
from shoal.client.sasl import SaslError, SaslExchange, new_nonce
from shoal.client.settings import ClientSettings, settings_with
from shoal.client.versions import BrokerVersions
from shoal.clock import Clock, SystemClock
from shoal.protocol.codec import ProtocolError

log = logging.getLogger(__name__)

T = TypeVar("T")
RECEIVE_CHUNK_BYTES_MAX = 1 << 20
"""The most bytes one `recv` asks for (a frame's remaining bytes, up to this)."""


class Connection:
    """One blocking connection to a broker. Not thread-safe: `Client` locks it."""

    def __init__(
        self, sock: socket.socket, core: ClientConnection, node: Node, clock: Clock
    ) -> None:
        self._sock: socket.socket | None = sock
        self.core = core
        self.node = node
        self._clock = clock

    @classmethod
    def open(
        cls,
        node: Node,
        *,
        timeout_ms: int,
        settings: ClientSettings | None = None,
        clock: Clock | None = None,
        handshake: bool = True,
    ) -> Connection:
        """Connect (and, unless told not to, do the ApiVersions handshake) within
        `timeout_ms`; `Disconnected` (phase "connect") when that fails."""
        s = settings or ClientSettings()
        clock = clock or SystemClock()
        start_ms = clock.monotonic_ms()
        try:
            sock = socket.create_connection((node.host, node.port), timeout=timeout_ms / 1000)
            tls = s.security.ssl_context()
            if tls is not None:  # the handshake runs here, within the connect timeout
                sock = tls.wrap_socket(sock, server_hostname=node.host)
        except OSError as exc:  # ssl.SSLError included
            raise Disconnected(node, str(exc) or type(exc).__name__, phase="connect") from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        core = ClientConnection(
            client_id=s.client_id, response_bytes_max=s.response_bytes_max, address=node.address
        )
        connection = cls(sock, core, node, clock)
        if handshake:
            left_ms = max(1, timeout_ms - (clock.monotonic_ms() - start_ms))
            try:
                while core.versions is None:
                    request = core.api_versions_request(
                        software_name=s.client_software_name,
                        software_version=s.client_software_version,
                    )
                    core.learn_versions(connection.request(request, timeout_ms=left_ms))
                if s.security.uses_sasl:  # SaslHandshake + SaslAuthenticate
                    exchange = SaslExchange(s.security, versions=core.versions, nonce=new_nonce())
                    sasl_request = exchange.start()
                    while sasl_request is not None:
                        sasl_request = exchange.step(
                            connection.request(sasl_request, timeout_ms=left_ms)
                        )
            except SaslError:
                connection.close()
                raise
            except (Disconnected, KafkaError) as exc:
                connection.close()
                raise Disconnected(node, f"ApiVersions failed: {exc}", phase="connect") from exc
        return connection

    @property
    def closed(self) -> bool:
        return self._sock is None

    @property
    def versions(self) -> BrokerVersions:
        assert self.core.versions is not None, "opened without the handshake"
        return self.core.versions

    def call(self, call: Call, *, timeout_ms: int) -> Any:
        """Send `call` at the version chosen from the broker's; its response."""
        request = self.core.build(call)
        return self.request(request, timeout_ms=timeout_ms, expect_response=call.expect_response)

    def request(self, request: Any, *, timeout_ms: int, expect_response: bool = True) -> Any:
        """Send a kio request; its response (None when none is expected)."""
        sock = self._live()
        sent, frame = self.core.send(request, expect_response=expect_response)
        end_ms = self._clock.monotonic_ms() + timeout_ms
        try:
            sock.settimeout(timeout_ms / 1000)
            sock.sendall(frame)
            while expect_response:
                for received in self.core.receive(self._recv(sock, end_ms)):
                    if received.request == sent:
                        return received.response
            return None
        except TimeoutError as exc:
            self.close("timed out")
            raise Disconnected(
                self.node, f"no answer within {timeout_ms} ms", phase="timeout"
            ) from exc
        except (OSError, ProtocolError) as exc:
            self.close(str(exc))
            raise Disconnected(self.node, str(exc) or type(exc).__name__, phase="request") from exc

    def send_raw(self, data: bytes) -> None:
        """Write arbitrary bytes (hostile-input tests)."""
        self._live().sendall(data)

    def _recv(self, sock: socket.socket, end_ms: int) -> bytes:
        left_ms = end_ms - self._clock.monotonic_ms()
        if left_ms <= 0:
            raise TimeoutError
        sock.settimeout(left_ms / 1000)
        data = sock.recv(min(max(self.core.wanted, 4096), RECEIVE_CHUNK_BYTES_MAX))
        if not data:
            raise ConnectionError("connection closed by the broker")
        return data

    def _live(self) -> socket.socket:
        if self._sock is None:
            raise Disconnected(
                self.node, f"connection closed ({self.core.closed_reason})", phase="request"
            )
        return self._sock

    def close(self, reason: str = "closed by the client") -> None:
        self.core.close(reason)
        if self._sock is not None:
            self._sock.close()
            self._sock = None


class Client:
    """The blocking Kafka client (see the module docstring and operations.py)."""

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
        self._lock = threading.Lock()
        self._connections: dict[tuple[str, int], Connection] = {}
        self._node_locks: dict[tuple[str, int], threading.Lock] = {}

    @property
    def bootstrap(self) -> list[Node]:
        return self._router.bootstrap

    @property
    def cache(self) -> MetadataCache:
        return self._router.cache

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            connections = list(self._connections.values())
            self._connections.clear()
        for connection in connections:
            connection.close()

    # ---- public calls (each bounded by the API timeout)

    def call(self, call: Call, node: Node | None = None) -> Any:
        return self._run(self._router.call(call, node))

    def to_leader(self, topic: str, partition: int, call: Call, error_of: ErrorOf) -> Any:
        return self._run(self._router.to_leader(topic, partition, call, error_of))

    def to_leaders(
        self,
        partitions: Iterable[TopicPartition],
        build: Callable[[Sequence[TopicPartition]], Call],
        errors_of: Callable[[Any], Mapping[TopicPartition, int]],
    ) -> dict[TopicPartition, Any]:
        return self._run(self._router.to_leaders(partitions, build, errors_of))

    def to_coordinator(
        self, key: str, call: Call, error_of: ErrorOf, *, key_type: int = GROUP_KEY_TYPE
    ) -> Any:
        return self._run(self._router.to_coordinator(key, call, error_of, key_type=key_type))

    def metadata(self, topics: Sequence[str] | None = None) -> ClusterView:
        return self._run(self._router.metadata(topics))

    def brokers(self) -> list[Node]:
        return self._run(self._router.brokers())

    def coordinator(self, key: str, key_type: int = GROUP_KEY_TYPE) -> Node:
        return self._run(self._router.coordinator(key, key_type))

    def supports(self, api_key: int, version: int | None = None, node: Node | None = None) -> bool:
        return self._run(self._router.supports(api_key, version, node))

    # ---- effects

    def _run(self, op: Op[T]) -> T:
        return drive(op, self._execute)

    def _execute(self, effect: Effect) -> Any:
        if isinstance(effect, Sleep):
            time.sleep(effect.ms / 1000)
            return None
        with self._node_lock(effect.node):
            connection = self._connection(effect.node, effect.timeout_ms)
            if isinstance(effect, Connect):
                return connection.versions
            assert isinstance(effect, Send)
            try:
                return connection.call(effect.call, timeout_ms=effect.timeout_ms)
            except Disconnected:
                self._forget(connection)
                raise

    def _node_lock(self, node: Node) -> threading.Lock:
        with self._lock:
            return self._node_locks.setdefault(node.key, threading.Lock())

    def _connection(self, node: Node, timeout_ms: int) -> Connection:
        """The open connection to `node` (the caller holds the node's lock)."""
        with self._lock:
            connection = self._connections.get(node.key)
        if connection is not None and not connection.closed:
            return connection
        connection = Connection.open(
            node, timeout_ms=timeout_ms, settings=self.settings, clock=self._router.clock
        )
        with self._lock:
            self._connections[node.key] = connection
        return connection

    def _forget(self, connection: Connection) -> None:
        with self._lock:
            if self._connections.get(connection.node.key) is connection:
                del self._connections[connection.node.key]
