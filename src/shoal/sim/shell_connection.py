"""The names of the shell scenario and its clients' connections.

Owns the scenario's names (topics, groups, the transactional id, the broker's
address, timings every actor shares) and `SimConnection`: one client's connection to
the broker over the simulated network (sim/pipes.py), with the project's client core
(`shoal.client.core`, its asyncio `Connection`), opened again after it broke; a
request that gets no answer raises `RequestFailed`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shoal.client.aio import Connection
from shoal.client.calls import Call
from shoal.client.core import ClientConnection

if TYPE_CHECKING:
    from shoal.sim.shell_world import ShellWorld

HOST, PORT = "127.0.0.1", 9092
TOPIC = "sim-topic"
TOPIC_PARTITIONS = 6
DATA_TOPIC = "sim-data"
CONSUMER_GROUP = "sim-cg"
TXN_GROUP = "sim-txn-group"
TXN_ID = "sim-txn"
OFFSETS_PARTITIONS = 2
TXN_TIMEOUT_MS = 20_000
MEMBERS = ("sim-member-0", "sim-member-1", "sim-member-2")
VALUES_PER_TXN = 10_000
REQUEST_TIMEOUT_S = 15.0
"""A client gives up on an answer after this long (virtual) and reconnects."""
TICK_MS = (500, 4_000)
"""The world acts (a fault, then the checks) every this many virtual ms."""
DOWNTIME_MS = (0, 3_000)
"""A crashed broker comes back after this long."""
TICKS_DEFAULT = 40
SHUTDOWN_BOUND_S = 120
"""A clean shutdown ends within this (virtual) time: `shoal.shutdown.timeout.ms`
(30 s by default) plus the work it waits for."""
STALL_MS = (25_000, 60_000)
"""A stalled client is away this long: past the transaction timeout (20 s) and,
sometimes, the consumer group's session timeout (45 s)."""


class RequestFailed(Exception):
    """No answer: the connection broke, the broker was down or the answer was late."""


class SimConnection:
    """One client's connection to the broker, opened again after it broke."""

    def __init__(self, world: ShellWorld, name: str) -> None:
        self._world = world
        self._name = name
        self._connection: Connection | None = None

    async def _open(self) -> Connection:
        if self._connection is not None and not self._connection.closed_by_peer:
            return self._connection
        if self._connection is not None:
            await self._connection.close()
            self._connection = None
        try:
            reader, writer = await self._world.network.connect(HOST, PORT)
        except ConnectionRefusedError as exc:
            raise RequestFailed(str(exc)) from exc
        core = ClientConnection(
            client_id=self._name, response_bytes_max=64 << 20, address=f"{HOST}:{PORT}"
        )
        connection = Connection(reader, writer, core)
        try:
            await connection.handshake(timeout_s=REQUEST_TIMEOUT_S)
        except (ConnectionError, TimeoutError) as exc:
            await connection.close()
            raise RequestFailed(f"handshake: {exc}") from exc
        self._connection = connection
        return connection

    async def call(self, call: Call | Any) -> Any:
        """The answer to `call` (a client `Call`, or a kio request at its version)."""
        connection = await self._open()
        try:
            if isinstance(call, Call):
                return await connection.call(call, timeout_s=REQUEST_TIMEOUT_S)
            return await connection.request(call, timeout_s=REQUEST_TIMEOUT_S)
        except (ConnectionError, TimeoutError) as exc:
            await connection.close()
            self._connection = None
            raise RequestFailed(f"{self._name}: {exc!r}") from exc

    async def close(self) -> None:
        if self._connection is not None:
            await self._connection.close()
            self._connection = None
