"""A raw socket to a broker, for tests that send bytes no client would: hand-made
frames (`frame`), kio requests at any version with any header (`request_frame`), and
what the broker did (a response frame, or closing the connection within a bound);
`answer_times` sends a pipeline of requests in one write and times each answer."""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

from shoal.protocol import codec

CLOSE_BOUND_S = 10.0


class Raw:
    def __init__(self, bootstrap: str) -> None:
        host, _, port = bootstrap.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=CLOSE_BOUND_S)

    def send(self, data: bytes) -> bool:
        """Write `data`; False if the broker had already closed the connection."""
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            return False
        return True

    def half_close(self) -> None:
        self.sock.shutdown(socket.SHUT_WR)

    def read_frame(self) -> bytes | None:
        """One response frame (without its size), or None at end of stream."""
        size_bytes = self._read_exactly(4)
        if size_bytes is None:
            return None
        (size,) = struct.unpack(">i", size_bytes)
        return self._read_exactly(size)

    def _read_exactly(self, count: int) -> bytes | None:
        data = bytearray()
        while len(data) < count:
            chunk = self.sock.recv(count - len(data))
            if not chunk:
                return None
            data += chunk
        return bytes(data)

    def closed_by_broker(self, timeout_s: float = CLOSE_BOUND_S) -> tuple[bool, bytes]:
        """Read until end of stream; (closed within the bound, bytes received)."""
        received = bytearray()
        deadline = time.monotonic() + timeout_s
        try:
            while time.monotonic() < deadline:
                self.sock.settimeout(max(deadline - time.monotonic(), 0.01))
                chunk = self.sock.recv(65536)
                if not chunk:
                    return True, bytes(received)
                received += chunk
        except ConnectionResetError:
            return True, bytes(received)
        except TimeoutError:
            pass
        return False, bytes(received)

    def close(self) -> None:
        self.sock.close()


def frame(api_key: int, version: int, body: bytes = b"", *, flexible: bool = False) -> bytes:
    """A size-prefixed request: header v1 (v2 if flexible) + body bytes as given."""
    client_id = b"hostile"
    header = struct.pack(">hhih", api_key, version, 7, len(client_id)) + client_id
    if flexible:
        header += b"\x00"  # no tagged fields
    return struct.pack(">i", len(header) + len(body)) + header + body


def request_frame(request: Any, *, correlation_id: int = 7, client_id: str = "raw") -> bytes:
    """The size-prefixed frame of kio `request` at its class's version."""
    key, version = int(request.__api_key__), int(request.__version__)
    header = codec.request_header_for(key, version, correlation_id, client_id)
    return codec.encode_request(header, request)


def decoded(raw_frame: bytes, request: Any) -> Any:
    """The response body in `raw_frame` (a frame `Raw.read_frame` returned) to `request`."""
    return codec.decode_response(raw_frame, int(request.__api_key__), int(request.__version__))[1]


def answer_times(bootstrap: str, *requests: Any) -> dict[int, float]:
    """Send the kio `requests` in one write, as a client's pipeline (correlation ids 1,
    2, ... in order), and return the seconds from that write to each answer's arrival,
    by correlation id."""
    raw = Raw(bootstrap)
    try:
        frames = b"".join(
            request_frame(request, correlation_id=index)
            for index, request in enumerate(requests, start=1)
        )
        started = time.monotonic()
        assert raw.send(frames), "the broker closed the connection"
        times: dict[int, float] = {}
        for _ in requests:
            answer = raw.read_frame()
            assert answer is not None, f"the broker closed after answering {sorted(times)}"
            (correlation_id,) = struct.unpack_from(">i", answer, 0)
            times[correlation_id] = time.monotonic() - started
        return times
    finally:
        raw.close()
