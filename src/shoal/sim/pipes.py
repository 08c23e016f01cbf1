"""The simulator's network: in-memory connections between simulated clients and the
real broker, with seeded latency, slow deliveries, dropped connections and crashes.

`Network` is a `server.listeners.Transport`: the broker's listeners `serve` on it as
they would on TCP, and a client `connect`s to a served address and gets asyncio
streams (a `StreamReader` and a `StreamWriter`, as `asyncio.open_connection` gives).
Under the streams each side has a `_PipeEnd`, an `asyncio.Transport` whose writes
reach the other side after a delay drawn from the run's generator (in order: a
connection's bytes never overtake each other), with the flow control asyncio's
streams expect (the writer pauses above its high-water mark until the bytes are
delivered; the reader pauses its transport when its buffer is full, and deliveries
wait).

Faults: a delivery is sometimes slow (`slow_delivery`: tens to hundreds of ms); the
world drops a connection (`drop`: both ends see a reset, as a broken TCP connection);
a broker crash (`kill_process`) kills every connection served by that process: its
ends go silent (nothing it had not yet delivered arrives) and the clients see a
reset. A connect to an address nobody serves is refused.

The server side of each connection is created in the context of the process that
served the address (shoal.sim.loop.PROCESS), so it dies with it.
"""

from __future__ import annotations

import asyncio
import contextvars
import random
from collections import deque
from dataclasses import dataclass
from typing import Any

from shoal.server.listeners import STREAM_LIMIT_BYTES, Accepted, Bound
from shoal.sim.faults import Faults
from shoal.sim.loop import PROCESS

LATENCY_NS = (20_000, 400_000)
"""A delivery's usual delay: 20 to 400 microseconds."""
SLOW_NS = (10_000_000, 400_000_000)
"""A slow delivery's delay: 10 to 400 ms."""
HIGH_WATER_BYTES = 64 * 1024
CLIENT_PORTS_FIRST = 40_000


class _PipeEnd(asyncio.Transport):
    """One side of an in-memory connection (module docstring)."""

    def __init__(self, network: Network, *, process: int, extra: dict[str, Any]) -> None:
        super().__init__(extra)
        self._network = network
        self._loop = network.loop
        self.process = process
        self.peer: _PipeEnd | None = None
        self._protocol: asyncio.BaseProtocol | None = None
        self._closing = False
        self._lost = False
        self._eof = False
        self._in_flight = 0
        self._last_due_ns = 0
        self._high = HIGH_WATER_BYTES
        self._low = HIGH_WATER_BYTES // 4
        self._writing_paused = False
        self._reading_paused = False
        self._inbox: deque[bytes] = deque()
        self._outbox: deque[tuple[int, bytes]] = deque()
        """Chunks written and not yet delivered, with the ns they are due at."""

    # ---- asyncio.Transport

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._protocol = protocol

    def get_protocol(self) -> asyncio.BaseProtocol:
        assert self._protocol is not None
        return self._protocol

    def is_closing(self) -> bool:
        return self._closing

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._closing or self._lost or not data:
            return
        chunk = bytes(data)
        self._in_flight += len(chunk)
        due = max(self._loop.clock.ns + self._network.delay_ns(), self._last_due_ns)
        self._last_due_ns = due
        self._outbox.append((due, chunk))
        self._loop.call_at(due / 1e9, self._deliver_due)
        if self._in_flight > self._high and not self._writing_paused:
            self._writing_paused = True
            assert isinstance(self._protocol, asyncio.Protocol)
            self._protocol.pause_writing()

    def _deliver_due(self) -> None:
        """Deliver, in the order written, every chunk whose time has come (timers of
        one instant do not keep their order: the queue does)."""
        now = self._loop.clock.ns
        while self._outbox and self._outbox[0][0] <= now:
            _, chunk = self._outbox.popleft()
            self._in_flight -= len(chunk)
            if self._writing_paused and self._in_flight <= self._low and not self._lost:
                self._writing_paused = False
                assert isinstance(self._protocol, asyncio.Protocol)
                self._protocol.resume_writing()
            if self.peer is not None:
                self.peer._receive(chunk)

    def _receive(self, chunk: bytes) -> None:
        if self._lost or self._eof:
            return
        if self._reading_paused or self._inbox:
            self._inbox.append(chunk)
            return
        assert isinstance(self._protocol, asyncio.Protocol)
        self._protocol.data_received(chunk)

    def can_write_eof(self) -> bool:
        return False

    def get_write_buffer_size(self) -> int:
        return self._in_flight

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._high = HIGH_WATER_BYTES if high is None else high
        self._low = self._high // 4 if low is None else low

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._low, self._high

    def pause_reading(self) -> None:
        self._reading_paused = True

    def resume_reading(self) -> None:
        if not self._reading_paused:
            return
        self._reading_paused = False
        self._loop.call_soon(self._drain_inbox)

    def is_reading(self) -> bool:
        return not self._reading_paused

    def _drain_inbox(self) -> None:
        while self._inbox and not self._reading_paused and not self._lost:
            assert isinstance(self._protocol, asyncio.Protocol)
            self._protocol.data_received(self._inbox.popleft())
        if not self._inbox and self._eof_pending:
            self._eof_pending = False
            self._peer_closed()

    _eof_pending = False

    def close(self) -> None:
        """Close after what was written is delivered: the peer reads an end of file."""
        if self._closing:
            return
        self._closing = True
        due = max(self._loop.clock.ns, self._last_due_ns)
        self._loop.call_at(due / 1e9, self._closed_after_writes)

    def _closed_after_writes(self) -> None:
        self._deliver_due()  # what is due at this instant goes first, whatever its timer
        if self.peer is not None:
            self.peer._end_of_file()
        self._connection_lost(None)

    def _end_of_file(self) -> None:
        if self._lost:
            return
        if self._inbox:
            self._eof_pending = True
            return
        self._peer_closed()

    def _peer_closed(self) -> None:
        self._eof = True
        assert isinstance(self._protocol, asyncio.Protocol)
        keep_open = self._protocol.eof_received()
        if not keep_open:
            self.close()

    def abort(self) -> None:
        """Reset: nothing more is delivered either way; the peer sees a reset."""
        self._closing = True
        peer, self.peer = self.peer, None
        self._connection_lost(None)
        if peer is not None:
            peer.peer = None
            peer.reset(ConnectionResetError("connection reset by peer"))

    def reset(self, exc: Exception) -> None:
        """This end sees its connection broken (`exc`), delivered soon."""
        self._closing = True
        self.peer = None
        self._loop.call_soon(self._connection_lost, exc, context=self._network.world_context)

    def reset_both(self) -> None:
        """The network breaks this connection: both ends see a reset."""
        peer = self.peer
        self.reset(ConnectionResetError("connection dropped by the network"))
        if peer is not None:
            peer.reset(ConnectionResetError("connection dropped by the network"))

    def silence(self) -> None:
        """This end's process died: nothing more happens on it."""
        self._closing = self._lost = True
        self.peer = None

    def _connection_lost(self, exc: Exception | None) -> None:
        if self._lost:
            return
        self._lost = True
        self._network.forget(self)
        if self._protocol is not None:
            self._protocol.connection_lost(exc)


@dataclass(slots=True)
class _Served:
    accepted: Accepted
    context: contextvars.Context
    process: int


class _SimBound:
    def __init__(self, network: Network, address: tuple[str, int]) -> None:
        self._network = network
        self._address = address
        self.port = address[1]

    def close(self) -> None:
        self._network.unserve(self._address)


class Network:
    """The simulated network of one run (module docstring)."""

    def __init__(self, loop: Any, rng: random.Random, faults: Faults) -> None:
        self.loop = loop
        self._rng = rng
        self._faults = faults
        self._served: dict[tuple[str, int], _Served] = {}
        self._ends: list[_PipeEnd] = []
        self._next_client_port = CLIENT_PORTS_FIRST
        self.world_context = contextvars.copy_context()
        self.world_context.run(PROCESS.set, 0)
        self.connections = 0

    def delay_ns(self) -> int:
        if self._faults.fires("slow_delivery"):
            return self._rng.randint(*SLOW_NS)
        return self._rng.randint(*LATENCY_NS)

    # ---- server.listeners.Transport

    async def serve(self, host: str, port: int, accepted: Accepted) -> Bound:
        address = (host, port or 9092)
        self._served[address] = _Served(accepted, contextvars.copy_context(), PROCESS.get())
        return _SimBound(self, address)

    def unserve(self, address: tuple[str, int]) -> None:
        self._served.pop(address, None)

    # ---- clients

    async def connect(
        self, host: str, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A client's connection to `host`:`port` (ConnectionRefusedError if nobody
        serves it)."""
        await asyncio.sleep(self.delay_ns() / 1e9)  # the handshake's round trip
        served = self._served.get((host, port))
        if served is None:
            raise ConnectionRefusedError(f"nothing serves {host}:{port}")
        self._next_client_port += 1
        client_address = ("127.0.0.1", self._next_client_port)
        client = _PipeEnd(
            self,
            process=PROCESS.get(),
            extra={"peername": (host, port), "sockname": client_address},
        )
        server = _PipeEnd(
            self,
            process=served.process,
            extra={"peername": client_address, "sockname": (host, port)},
        )
        client.peer, server.peer = server, client
        self._ends += [client, server]
        self.connections += 1
        reader, writer = _streams(client, self.loop)
        context = served.context.copy()

        def start_server_side() -> None:
            server_reader, server_writer = _streams(server, self.loop)
            self.loop.create_task(served.accepted(server_reader, server_writer))

        context.run(start_server_side)
        return reader, writer

    # ---- faults

    def forget(self, end: _PipeEnd) -> None:
        if end in self._ends:
            self._ends.remove(end)

    def open_connections(self) -> int:
        return sum(1 for end in self._ends if end.process == 0)

    def drop_one(self) -> bool:
        """Reset a connection drawn from the open ones; False if there is none."""
        clients = [end for end in self._ends if end.process == 0 and end.peer is not None]
        if not clients:
            return False
        self._rng.choice(clients).reset_both()
        return True

    def kill_process(self, process: int) -> None:
        """`process` died: its ends go silent, their peers see a reset."""
        for end in list(self._ends):
            if end.process != process:
                continue
            peer = end.peer
            end.silence()
            self.forget(end)
            if peer is not None:
                peer.reset(ConnectionResetError("connection reset: the broker died"))
        for address, served in list(self._served.items()):
            if served.process == process:
                del self._served[address]


def _streams(
    end: _PipeEnd, loop: asyncio.AbstractEventLoop
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader = asyncio.StreamReader(limit=STREAM_LIMIT_BYTES, loop=loop)
    protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
    end.set_protocol(protocol)
    protocol.connection_made(end)
    return reader, asyncio.StreamWriter(end, protocol, reader, loop)
