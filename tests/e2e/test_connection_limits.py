"""Connections at their limits: `max.connections` refuses the one too many,
`connections.max.idle.ms` closes an idle connection and one whose client never reads
its responses, `shoal.request.read.timeout.ms` closes a slowloris client, and 10k idle
connections are held. Each close is logged with its reason, and a well-behaved client
is served throughout.
"""

from __future__ import annotations

import resource
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker import BrokerProcess, Brokers, running, wait_until
from tests.support.wire import api_versions_request, call1

IDLE_MS = 2_000
REQUEST_READ_MS = 1_500
CLOSE_BOUND_S = 30.0  # generous: the machine is shared
API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 7, -1)  # api key, version, correlation, no client id


def _frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


_OPEN: list[socket.socket] = []


@pytest.fixture(autouse=True)
def _close_sockets() -> Iterator[None]:
    yield
    while _OPEN:
        _OPEN.pop().close()


def _connect(bootstrap: str, *, rcvbuf: int | None = None) -> socket.socket:
    host, _, port = bootstrap.rpartition(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    _OPEN.append(sock)
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(CLOSE_BOUND_S)
    sock.connect((host, int(port)))
    return sock


def _closed_by_broker(sock: socket.socket) -> bool:
    """Read until the broker ends the stream (True) or the bound passes (False)."""
    deadline = time.monotonic() + CLOSE_BOUND_S
    while time.monotonic() < deadline:
        try:
            if not sock.recv(65536):
                return True
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
    return False


def _served(bootstrap: str) -> bool:
    return int(call1(bootstrap, api_versions_request()).error_code) == 0


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    yield from running(
        tmp_path / "data",
        f"connections.max.idle.ms={IDLE_MS}",
        f"shoal.request.read.timeout.ms={REQUEST_READ_MS}",
    )


def test_idle_connection_is_closed_after_connections_max_idle_ms(broker: BrokerProcess) -> None:
    sock = _connect(broker.bootstrap)
    sock.sendall(_frame(API_VERSIONS_V0))
    started = time.monotonic()
    assert sock.recv(4)  # served once, then left idle
    assert _closed_by_broker(sock)
    assert time.monotonic() - started >= IDLE_MS / 1000 * 0.9
    assert broker.wait_for_log(r"idle for \d+ ms \(connections.max.idle.ms=2000\)")
    assert _served(broker.bootstrap)


def test_slowloris_client_is_closed_by_the_request_read_timeout(broker: BrokerProcess) -> None:
    sock = _connect(broker.bootstrap)
    body = API_VERSIONS_V0
    sock.sendall(struct.pack(">i", len(body)))  # the size, then one byte every 200 ms
    closed = False
    for byte in body[:-1]:
        time.sleep(0.2)
        try:
            sock.sendall(bytes([byte]))
        except (BrokenPipeError, ConnectionResetError):
            closed = True
            break
    assert closed or _closed_by_broker(sock)
    assert broker.wait_for_log(
        r"request frame not complete \d+ ms after its size arrived "
        r"\(shoal.request.read.timeout.ms=1500\)"
    )
    assert _served(broker.bootstrap)


def test_client_that_never_reads_is_muted_then_closed(broker: BrokerProcess) -> None:
    sock = _stuff_without_reading(broker.bootstrap)
    assert broker.wait_for_log(
        r"client has not read its response for \d+ ms \(connections.max.idle.ms=2000\)",
        timeout_s=CLOSE_BOUND_S,
    )
    sock.setblocking(True)
    sock.settimeout(CLOSE_BOUND_S)
    assert _closed_by_broker(sock)
    assert _served(broker.bootstrap)


def test_a_client_that_never_reads_does_not_hold_up_shutdown(brokers: Brokers) -> None:
    process = brokers.start("shoal.shutdown.timeout.ms=1000")
    _stuff_without_reading(process.bootstrap)
    assert process.stop(timeout_s=CLOSE_BOUND_S) == 0
    assert "shutdown complete" in process.log_text()


def _stuff_without_reading(bootstrap: str) -> socket.socket:
    """Pipeline requests and never read, until the broker stops reading them."""
    sock = _connect(bootstrap, rcvbuf=4096)
    sock.setblocking(False)
    sent_requests = 0
    request = _frame(API_VERSIONS_V0)
    deadline = time.monotonic() + CLOSE_BOUND_S
    stalled_since: float | None = None
    # Pipeline requests and never read: the broker stops reading once its responses
    # pile up, so our own send buffer fills and stays full.
    while time.monotonic() < deadline:
        try:
            sock.send(request)
            sent_requests += 1
            stalled_since = None
        except BlockingIOError:
            stalled_since = stalled_since or time.monotonic()
            if time.monotonic() - stalled_since > 0.5:
                break
            time.sleep(0.01)
        except (BrokenPipeError, ConnectionResetError):
            break
    assert sent_requests > 0
    return sock


def test_max_connections_refuses_the_one_too_many(brokers: Brokers) -> None:
    process = brokers.start("max.connections=3")
    held = [_connect(process.bootstrap) for _ in range(3)]
    for sock in held:
        sock.sendall(_frame(API_VERSIONS_V0))
        assert sock.recv(4)
    for _ in range(5):
        extra = _connect(process.bootstrap)
        assert _closed_by_broker(extra)
    assert process.wait_for_log(r"refusing connection from \S+: max.connections=3 reached")
    # a flood of refusals is logged once per limits.REFUSED_CONNECTIONS_LOG_INTERVAL_MS
    assert process.log_text().count("refusing connection") == 1
    held.pop().close()
    assert wait_until(lambda: _try_served(process.bootstrap), timeout_s=CLOSE_BOUND_S)


def _try_served(bootstrap: str) -> bool:
    try:
        return _served(bootstrap)
    except (OSError, TimeoutError):
        return False


IDLE_CONNECTIONS = 10_000


@pytest.mark.slow  # about 20 s on a shared machine (6 s of it opening the sockets)
def test_ten_thousand_idle_connections_are_held(tmp_path: Path) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = IDLE_CONNECTIONS + 1_000
    if hard != resource.RLIM_INFINITY and hard < wanted:
        pytest.skip(f"RLIMIT_NOFILE hard limit {hard} is below {wanted}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))  # the broker inherits
    held: list[socket.socket] = []
    try:
        for process in running(tmp_path / "data", f"max.connections={IDLE_CONNECTIONS + 10}"):
            started = time.monotonic()
            for _ in range(IDLE_CONNECTIONS):
                held.append(_connect(process.bootstrap))
            print(f"opened {IDLE_CONNECTIONS} connections in {time.monotonic() - started:.1f} s")
            # every one is accepted and served: the last one answers, the first one too
            for sock in (held[0], held[-1]):
                sock.sendall(_frame(API_VERSIONS_V0))
                assert sock.recv(4)
            assert _served(process.bootstrap)
            assert "max.connections" not in process.log_text()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
