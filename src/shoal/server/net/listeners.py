"""The broker's listeners: one bound server per `listeners` entry, TLS where asked.

`Listeners.start` binds every endpoint of `BrokerConfig.listener_endpoints()` (port 0:
an ephemeral port, recorded in `bound_ports` and logged) and hands each accepted
connection to `on_connection(endpoint, reader, writer, principal)`.

A PLAINTEXT or SASL_PLAINTEXT listener is an ordinary `asyncio.start_server`. An SSL
or SASL_SSL listener accepts raw TCP with reading paused (so no byte of the ClientHello
is read as plaintext), then runs the server-side handshake with the listener's current
SSLContext (`ListenerTls`, reloaded when its files change). A handshake that fails
(plaintext bytes, no client certificate under `ssl.client.auth=required`, an
untrusted certificate, a DN no mapping rule applies to, or no handshake within
`shoal.ssl.handshake.timeout.ms`) closes that connection with a logged reason; the others
are not touched.

How plaintext connections arrive is the `Transport` given (`TcpTransport`, asyncio's
TCP server, unless another is injected: the simulator's in-memory pipes,
shoal/sim/pipes.py); TLS listeners need TCP sockets and so the TCP transport.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from shoal import limits
from shoal.config import BrokerConfig, ListenerEndpoint, broker_keys
from shoal.security.acl import ANONYMOUS, KafkaPrincipal
from shoal.security.principal_mapping import NoMatchingRule
from shoal.server.net.tls import ListenerTls
from shoal.server.services.timers import PeriodicTimer

log = logging.getLogger(__name__)

STREAM_LIMIT_BYTES = 2**20
"""The StreamReader buffer limit of every connection."""

OnConnection = Callable[
    [ListenerEndpoint, asyncio.StreamReader, asyncio.StreamWriter, KafkaPrincipal],
    Awaitable[None],
]
Accepted = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
"""What a transport calls with each new connection's streams."""


class Bound(Protocol):
    """A listening endpoint of a transport."""

    @property
    def port(self) -> int:
        """The port bound (the ephemeral one chosen for port 0)."""
        ...

    def close(self) -> None:
        """Stop accepting (connections already accepted go on)."""
        ...


class Transport(Protocol):
    """How plaintext connections arrive and bytes move (module docstring)."""

    async def serve(self, host: str, port: int, accepted: Accepted) -> Bound:
        """Listen on `host`:`port`; call `accepted(reader, writer)` per connection."""
        ...


class _TcpBound:
    def __init__(self, server: asyncio.Server) -> None:
        self._server = server
        sockets = list(server.sockets)
        for sock in sockets:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.port: int = sockets[0].getsockname()[1] if sockets else 0

    def close(self) -> None:
        self._server.close()


class TcpTransport:
    """asyncio's TCP server: the production transport."""

    async def serve(self, host: str, port: int, accepted: Accepted) -> Bound:
        server = await asyncio.start_server(
            accepted,
            host=host,
            port=port,
            reuse_address=True,
            limit=STREAM_LIMIT_BYTES,
            backlog=limits.LISTEN_BACKLOG,  # bursts of connects
        )
        return _TcpBound(server)


class Listeners:
    def __init__(
        self,
        config: Callable[[], BrokerConfig],
        on_connection: OnConnection,
        transport: Transport | None = None,
    ) -> None:
        self._config = config
        self._on_connection = on_connection
        self._transport: Transport = transport or TcpTransport()
        self.endpoints = config().listener_endpoints()
        self.tls: dict[str, ListenerTls] = {
            e.name: ListenerTls(e.name, config) for e in self.endpoints if e.uses_tls
        }
        """Each TLS listener's context holder, by listener name."""
        self.bound_ports: dict[str, int] = {}
        self._servers: list[Bound] = []
        self._listening: list[socket.socket] = []
        self._accept_loops: list[asyncio.Task[None]] = []
        self._tasks: set[asyncio.Task[None]] = set()
        """TLS connections (handshake, then serving), held until they end."""

    def timer_sources(self) -> list[PeriodicTimer]:
        """The reload check of each TLS listener's key and trust store files."""
        return [
            PeriodicTimer(
                f"tls-reload-{name}",
                interval_ms=lambda: self._config().get(
                    broker_keys.SHOAL_SSL_RELOAD_CHECK_INTERVAL_MS
                ),
                action=tls.check_reload,
            )
            for name, tls in self.tls.items()
        ]

    def advertised(self, listener_name: str | None = None) -> tuple[str, int]:
        """Where clients of `listener_name` (None: the first listener) are told to
        connect; an advertised port 0 is the bound port."""
        endpoint = self.endpoints[0]
        for candidate in self.endpoints:
            if candidate.name == listener_name:
                endpoint = candidate
        port = endpoint.advertised_port or self.bound_ports.get(endpoint.name, 0)
        return endpoint.advertised_host, port

    async def start(self) -> None:
        for endpoint in self.endpoints:
            bound = await self._bind(endpoint)
            self.bound_ports[endpoint.name] = bound
            host, port = self.advertised(endpoint.name)
            log.info(
                "listener %s (%s) bound to %s:%d (advertised %s:%d)",
                endpoint.name,
                endpoint.security_protocol,
                endpoint.host,
                bound,
                host,
                port,
            )

    async def _bind(self, endpoint: ListenerEndpoint) -> int:
        """Listen on `endpoint`; the port bound."""
        if not endpoint.uses_tls:

            async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                await self._on_connection(endpoint, reader, writer, ANONYMOUS)

            server = await self._transport.serve(endpoint.host, endpoint.port, accepted)
            self._servers.append(server)
            return server.port
        if not isinstance(self._transport, TcpTransport):
            raise ValueError(f"listener {endpoint.name}: TLS needs the TCP transport")
        # A TLS listener accepts plain sockets itself and hands each to the loop with the
        # listener's context of the moment: the handshake's outcome comes back here (to
        # be logged), and a reloaded context serves the next connection.
        family = socket.AF_INET6 if ":" in endpoint.host else socket.AF_INET
        listening = socket.create_server(
            (endpoint.host, endpoint.port),
            family=family,
            reuse_port=False,
            backlog=limits.LISTEN_BACKLOG,
        )
        listening.setblocking(False)
        listening.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._listening.append(listening)
        loop = asyncio.get_running_loop()
        self._accept_loops.append(loop.create_task(self._accept_loop(endpoint, listening)))
        port: int = listening.getsockname()[1]
        return port

    def close(self) -> None:
        """Stop accepting on every listener. A handshake in progress goes on: the
        broker's accept sees it is stopping and closes the connection."""
        for server in self._servers:
            server.close()
        for task in self._accept_loops:
            task.cancel()
        for listening in self._listening:
            listening.close()

    async def _accept_loop(self, endpoint: ListenerEndpoint, listening: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, peer = await loop.sock_accept(listening)
            except OSError as exc:  # e.g. EMFILE: wait a little, keep the listener up
                log.error("listener %s: accept failed: %s", endpoint.name, exc)
                await asyncio.sleep(0.1)
                continue
            limit = self._config().get(broker_keys.MAX_CONNECTIONS)
            if len(self._tasks) >= limit:  # handshakes count too, not only served ones
                log.warning(
                    "listener %s: refusing connection from %s:%s: max.connections=%d reached",
                    endpoint.name,
                    peer[0],
                    peer[1],
                    limit,
                )
                conn.close()
                continue
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            task = loop.create_task(self._handshake(endpoint, conn))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _handshake(self, endpoint: ListenerEndpoint, conn: socket.socket) -> None:
        try:
            peer = conn.getpeername()
        except OSError:
            peer = ("?", 0)
        tls = self.tls[endpoint.name]
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=STREAM_LIMIT_BYTES)
        protocol = asyncio.StreamReaderProtocol(reader)
        try:
            transport, _ = await loop.connect_accepted_socket(
                lambda: protocol,
                conn,
                ssl=tls.context,
                ssl_handshake_timeout=self._config().get(broker_keys.SHOAL_SSL_HANDSHAKE_TIMEOUT_MS)
                / 1000,
            )
        except (OSError, ssl.SSLError, TimeoutError, ConnectionError) as exc:
            log.warning(
                "listener %s: TLS handshake with %s:%s failed, connection closed: %s",
                endpoint.name,
                peer[0],
                peer[1],
                _reason(exc),
            )
            conn.close()
            return
        try:
            principal = tls.principal(transport.get_extra_info("ssl_object"))
        except NoMatchingRule as exc:
            log.warning(
                "listener %s: connection from %s:%s closed: %s (ssl.principal.mapping.rules)",
                endpoint.name,
                peer[0],
                peer[1],
                exc,
            )
            transport.close()
            return
        writer = asyncio.StreamWriter(transport, protocol, reader, loop)
        log.info(
            "listener %s: TLS connection from %s:%s as %s (%s)",
            endpoint.name,
            peer[0],
            peer[1],
            principal,
            _cipher(transport),
        )
        await self._on_connection(endpoint, reader, writer, principal)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError) and exc.reason:
        return f"{exc.reason} ({exc.library or 'ssl'})"
    return str(exc) or type(exc).__name__


def _cipher(transport: asyncio.BaseTransport) -> str:
    cipher: Any = transport.get_extra_info("cipher")
    return f"{cipher[1]} {cipher[0]}" if cipher else "?"
