"""A small synchronous Kafka client for the Spark connector: Metadata, ListOffsets, Fetch.

Spark runs the connector's code in plain Python worker processes (planner workers on
the driver, pooled executor workers, the long-lived stream runner), none of which has
an event loop; a blocking socket per broker is the simplest thing that works in all of
them. Requests are kio objects encoded with `shoal.protocol.codec`, one in flight per
connection (a lock serialises callers, so a reader's helper thread may share it).

`client_for(bootstrap)` caches one `ClusterClient` per bootstrap string and worker
process: Spark reuses Python workers across tasks, so a task finds its connections
open; they are closed when the process exits normally (`close_cached_clients`). A
connection that fails mid-request is closed and the (idempotent) request is retried
once on a fresh one; the broker may have closed an idle socket meanwhile.

Errors: `BrokerUnreachable` when no connection can be made or a request times out,
`KafkaError` when the broker answers with an error code (its Kafka name in `.code`).
"""

from __future__ import annotations

import atexit
import datetime
import logging
import os
import socket
import struct
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i32Timedelta, i64

from shoal.protocol import codec

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S: Final = 10.0
"""How long opening a TCP connection to a broker may take before `BrokerUnreachable`."""
REQUEST_TIMEOUT_S: Final = 30.0
"""How long a request may wait for its response (beyond the Fetch's own max wait)
before the connection is closed and `BrokerUnreachable` raised."""
RESPONSE_BYTES_MAX: Final = 256 * 2**20
"""A response frame larger than this is refused (the connection is closed): the
connector never asks for more than `FETCH_MAX_BYTES_CAP`, so this means a corrupt
stream, not a big fetch."""
LEADER_RETRIES: Final = 5
"""Metadata refreshes a request makes when a partition has no leader or the broker
answers NOT_LEADER_OR_FOLLOWER, before the error is raised."""
LEADER_RETRY_BACKOFF_S: Final = 0.2
"""Pause between those refreshes."""
FETCH_MAX_BYTES_CAP: Final = 64 * 2**20
"""Largest `max_bytes` a Fetch may ask for (the broker still sends a bigger first
batch whole)."""

_SIZE = struct.Struct(">i")
METADATA_VERSION: Final = 12
LIST_OFFSETS_VERSION: Final = 7
FETCH_VERSION: Final = 12

EARLIEST: Final = -2
"""ListOffsets timestamp for the log start offset."""
LATEST: Final = -1
"""ListOffsets timestamp for the high watermark (read_uncommitted) or the last stable
offset (read_committed)."""


class BrokerUnreachable(ConnectionError):
    """No connection to a broker could be made, or it stopped answering."""


class KafkaError(RuntimeError):
    """The broker answered a request with an error code."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"{code.name.upper()}: {message}")
        self.code = code


@dataclass(frozen=True, slots=True)
class FetchedPartition:
    """One partition of a Fetch response."""

    error: ErrorCode
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted: tuple[tuple[int, int], ...]
    """(producer id, first offset) of aborted transactions (read_committed only)."""
    records: bytes


@dataclass(frozen=True, slots=True)
class _Metadata:
    brokers: dict[int, tuple[str, int]]
    leaders: dict[tuple[str, int], int]
    partitions: dict[str, list[int]]


class BrokerConnection:
    """One blocking connection; `request()` sends a kio request and returns its response."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        client_id: str,
        connect_timeout_s: float,
        request_timeout_s: float,
    ) -> None:
        self.address = f"{host}:{port}"
        self._client_id = client_id
        self._request_timeout_s = request_timeout_s
        self._correlation_id = 0
        try:
            self._sock: socket.socket | None = socket.create_connection(
                (host, port), timeout=connect_timeout_s
            )
        except OSError as exc:
            raise BrokerUnreachable(f"cannot connect to {self.address}: {exc}") from exc
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    @property
    def closed(self) -> bool:
        return self._sock is None

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def request(self, body: Any, *, extra_timeout_s: float = 0.0) -> Any:
        sock = self._sock
        if sock is None:
            raise BrokerUnreachable(f"connection to {self.address} is closed")
        api_key, version = int(body.__api_key__), int(body.__version__)
        self._correlation_id += 1
        header = codec.request_header_for(api_key, version, self._correlation_id, self._client_id)
        try:
            sock.settimeout(self._request_timeout_s + extra_timeout_s)
            sock.sendall(codec.encode_request(header, body))
            frame = self._read_frame(sock)
        except (TimeoutError, OSError) as exc:
            self.close()
            reason = "timed out" if isinstance(exc, TimeoutError) else str(exc)
            raise BrokerUnreachable(
                f"{codec.api_name(api_key)} request to {self.address} failed: {reason}"
            ) from exc
        correlation_id, response = codec.decode_response(frame, api_key, version)
        if correlation_id != self._correlation_id:
            self.close()
            raise BrokerUnreachable(
                f"{self.address} answered correlation id {correlation_id}, "
                f"expected {self._correlation_id}"
            )
        return response

    def _read_frame(self, sock: socket.socket) -> bytes:
        (size,) = _SIZE.unpack(self._read_exactly(sock, 4))
        if not 0 < size <= RESPONSE_BYTES_MAX:
            raise OSError(
                f"response frame of {size} bytes (RESPONSE_BYTES_MAX {RESPONSE_BYTES_MAX})"
            )
        return self._read_exactly(sock, size)

    @staticmethod
    def _read_exactly(sock: socket.socket, size: int) -> bytes:
        buffer = bytearray(size)
        view = memoryview(buffer)
        position = 0
        while position < size:
            received = sock.recv_into(view[position:])
            if received == 0:
                raise OSError("connection closed by the broker")
            position += received
        return bytes(buffer)


class ClusterClient:
    """Metadata, ListOffsets and Fetch against one cluster, routed to partition leaders."""

    def __init__(
        self,
        bootstrap: str,
        *,
        client_id: str = "shoal-spark",
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        request_timeout_s: float = REQUEST_TIMEOUT_S,
    ) -> None:
        self.bootstrap = bootstrap
        self._addresses = parse_bootstrap(bootstrap)
        self._client_id = client_id
        self._connect_timeout_s = connect_timeout_s
        self._request_timeout_s = request_timeout_s
        self._lock = threading.RLock()
        self._connections: dict[tuple[str, int], BrokerConnection] = {}
        self._address_locks: dict[tuple[str, int], threading.Lock] = {}
        self._metadata = _Metadata({}, {}, {})

    def close(self) -> None:
        with self._lock:
            for connection in self._connections.values():
                connection.close()
            self._connections.clear()

    # ---- public requests

    def check_reachable(self) -> None:
        """Raise BrokerUnreachable unless some bootstrap broker answers Metadata."""
        self._refresh_metadata(())

    def partitions(self, topics: Sequence[str]) -> dict[str, list[int]]:
        """Partition ids of each topic; KafkaError UNKNOWN_TOPIC_OR_PARTITION for a
        topic that does not exist (topics are never auto-created)."""
        metadata = self._refresh_metadata(topics)
        return {topic: metadata.partitions[topic] for topic in topics}

    def list_offsets(
        self, topic: str, timestamps: Mapping[int, int], *, isolation_level: int = 0
    ) -> dict[int, int]:
        """Offset per partition for a timestamp (EARLIEST, LATEST or epoch ms)."""
        from kio.schema.list_offsets.v7 import request as lo

        result: dict[int, int] = {}
        for address, partitions in self._group_by_leader(topic, list(timestamps)).items():
            request = lo.ListOffsetsRequest(
                replica_id=BrokerId(-1),
                isolation_level=i8(isolation_level),
                topics=(
                    lo.ListOffsetsTopic(
                        name=TopicName(topic),
                        partitions=tuple(
                            lo.ListOffsetsPartition(
                                partition_index=i32(p),
                                timestamp=i64(timestamps[p]),
                            )
                            for p in partitions
                        ),
                    ),
                ),
            )
            response = self._request(address, request)
            for topic_response in response.topics:
                for part in topic_response.partitions:
                    _raise_for(part.error_code, f"ListOffsets {topic}-{part.partition_index}")
                    result[int(part.partition_index)] = int(part.offset)
        return result

    def fetch(
        self,
        topic: str,
        partition: int,
        offset: int,
        *,
        max_bytes: int,
        max_wait_ms: int = 500,
        isolation_level: int = 0,
    ) -> FetchedPartition:
        """Fetch one partition from `offset`; errors are returned in `.error`, except
        leadership errors, which are retried after a metadata refresh."""
        from kio.schema.fetch.v12 import request as fr

        max_bytes = min(max_bytes, FETCH_MAX_BYTES_CAP)
        request = fr.FetchRequest(
            max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=max_wait_ms)),
            min_bytes=i32(1),
            max_bytes=i32(max_bytes),
            isolation_level=i8(isolation_level),
            topics=(
                fr.FetchTopic(
                    topic=TopicName(topic),
                    partitions=(
                        fr.FetchPartition(
                            partition=i32(partition),
                            fetch_offset=i64(offset),
                            partition_max_bytes=i32(max_bytes),
                        ),
                    ),
                ),
            ),
            forgotten_topics_data=(),
        )
        for attempt in range(LEADER_RETRIES + 1):
            address = self._leader(topic, partition)
            response = self._request(address, request, extra_timeout_s=max_wait_ms / 1000)
            _raise_for(response.error_code, f"Fetch {topic}-{partition}")
            (part,) = response.responses[0].partitions
            error = ErrorCode(part.error_code)
            if error in _LEADERSHIP_ERRORS and attempt < LEADER_RETRIES:
                self._backoff(f"Fetch {topic}-{partition}", error)
                continue
            return FetchedPartition(
                error=error,
                high_watermark=int(part.high_watermark),
                last_stable_offset=int(part.last_stable_offset),
                log_start_offset=int(part.log_start_offset),
                aborted=tuple(
                    (int(a.producer_id), int(a.first_offset))
                    for a in part.aborted_transactions or ()
                ),
                records=part.records or b"",
            )
        raise AssertionError("unreachable: the last attempt returns or raises")

    # ---- routing

    def _group_by_leader(
        self, topic: str, partitions: Sequence[int]
    ) -> dict[tuple[str, int], list[int]]:
        grouped: dict[tuple[str, int], list[int]] = {}
        for partition in partitions:
            grouped.setdefault(self._leader(topic, partition), []).append(partition)
        return grouped

    def _leader(self, topic: str, partition: int) -> tuple[str, int]:
        for attempt in range(LEADER_RETRIES + 1):
            with self._lock:
                node = self._metadata.leaders.get((topic, partition))
                address = self._metadata.brokers.get(node) if node is not None else None
            if address is not None:
                return address
            if attempt:
                self._backoff(f"leader of {topic}-{partition}", ErrorCode.leader_not_available)
            metadata = self._refresh_metadata((topic,))
            if partition not in metadata.partitions.get(topic, []):
                raise KafkaError(
                    ErrorCode.unknown_topic_or_partition,
                    f"{topic} has no partition {partition} on {self.bootstrap}",
                )
        raise KafkaError(
            ErrorCode.leader_not_available,
            f"{topic}-{partition} has no leader after {LEADER_RETRIES} metadata refreshes",
        )

    def _backoff(self, what: str, error: ErrorCode) -> None:
        log.info("%s: %s; refreshing metadata", what, error.name)
        time.sleep(LEADER_RETRY_BACKOFF_S)
        with self._lock:
            self._metadata = _Metadata({}, {}, {})

    def _refresh_metadata(self, topics: Sequence[str]) -> _Metadata:
        from kio.schema.metadata.v12 import request as md

        request = md.MetadataRequest(
            topics=tuple(md.MetadataRequestTopic(topic_id=None, name=TopicName(t)) for t in topics),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        response = self._request_any(request)
        brokers = {int(b.node_id): (str(b.host), int(b.port)) for b in response.brokers}
        leaders: dict[tuple[str, int], int] = {}
        partitions: dict[str, list[int]] = {}
        for topic in response.topics:
            name = str(topic.name)
            _raise_for(topic.error_code, f"Metadata for topic '{name}' on {self.bootstrap}")
            partitions[name] = sorted(int(p.partition_index) for p in topic.partitions)
            for p in topic.partitions:
                if int(p.leader_id) >= 0:
                    leaders[(name, int(p.partition_index))] = int(p.leader_id)
        with self._lock:
            merged = _Metadata(
                {**self._metadata.brokers, **brokers},
                {**self._metadata.leaders, **leaders},
                {**self._metadata.partitions, **partitions},
            )
            self._metadata = merged
        return merged

    # ---- connections

    def _request_any(self, body: Any) -> Any:
        """Send to the first bootstrap broker that answers."""
        failures = []
        for address in self._addresses:
            try:
                return self._request(address, body)
            except BrokerUnreachable as exc:
                failures.append(str(exc))
        raise BrokerUnreachable(
            f"no broker of bootstrap '{self.bootstrap}' is reachable: " + "; ".join(failures)
        )

    def _request(self, address: tuple[str, int], body: Any, *, extra_timeout_s: float = 0.0) -> Any:
        """One request on the connection to `address` (one request at a time on it;
        other brokers' connections are not held up)."""
        with self._lock:
            address_lock = self._address_locks.setdefault(address, threading.Lock())
        with address_lock:
            for attempt in (0, 1):
                connection = self._connections.get(address)
                if connection is None or connection.closed:
                    connection = self._connections[address] = BrokerConnection(
                        *address,
                        client_id=self._client_id,
                        connect_timeout_s=self._connect_timeout_s,
                        request_timeout_s=self._request_timeout_s,
                    )
                try:
                    return connection.request(body, extra_timeout_s=extra_timeout_s)
                except BrokerUnreachable:
                    self._connections.pop(address, None)
                    if attempt:
                        raise
                    log.info("connection to %s:%d failed; retrying on a new one", *address)
        raise AssertionError("unreachable: the second attempt returns or raises")


_LEADERSHIP_ERRORS = frozenset(
    {
        ErrorCode.not_leader_or_follower,
        ErrorCode.leader_not_available,
        ErrorCode.fenced_leader_epoch,
        ErrorCode.unknown_leader_epoch,
    }
)


def _raise_for(code: int, what: str) -> None:
    if code != 0:
        error = ErrorCode(code)
        raise KafkaError(error, what)


def parse_bootstrap(bootstrap: str) -> list[tuple[str, int]]:
    """`host:port[,host:port...]` as (host, port) pairs; ValueError if malformed."""
    addresses = []
    for raw in bootstrap.split(","):
        item = raw.strip()
        host, sep, port = item.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"'{item}' is not host:port")
        addresses.append((host.strip("[]"), int(port)))
    return addresses


_CLIENTS: dict[tuple[int, str], ClusterClient] = {}
_CLIENTS_LOCK = threading.Lock()


def client_for(bootstrap: str) -> ClusterClient:
    """The worker process's ClusterClient for `bootstrap` (created on first use). Keyed
    by process id too: a forked worker must not share its parent's sockets."""
    key = (os.getpid(), bootstrap)
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            client = _CLIENTS[key] = ClusterClient(bootstrap)
        return client


@atexit.register
def close_cached_clients() -> None:
    """Close this process's cached clients (a forked child leaves its parent's alone)."""
    pid = os.getpid()
    with _CLIENTS_LOCK:
        for key in [key for key in _CLIENTS if key[0] == pid]:
            _CLIENTS.pop(key).close()
