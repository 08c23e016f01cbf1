"""One client connection, sans-I/O: requests in, bytes out; bytes in, responses out.

`ClientConnection` owns what Kafka's protocol asks of a client per connection:

- correlation ids, one per request, increasing from 1;
- the in-flight FIFO (correlation id, api key, version) of requests that expect a
  response: the broker answers in request order, so the first response received
  belongs to the oldest request in flight;
- the received bytes, cut into frames by the one frame reader (`FrameDecoder`),
  bounded by `response_bytes_max`;
- the broker's API versions, learnt from ApiVersions, the first request a driver
  sends on a new connection (`api_versions_request` / `learn_versions`), and the
  version chosen for each `Call` from them (`build`).

A correlation mismatch, a response nobody asked for, an oversize or undecodable frame
is the peer's fault: `ProtocolError`, after which the connection is closed and every
request in flight fails. The drivers (sync.py, aio.py) only move the bytes.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from shoal.client.calls import Call
from shoal.client.errors import ErrorCode, check
from shoal.client.settings import CLIENT_SOFTWARE_NAME, CLIENT_SOFTWARE_VERSION
from shoal.client.versions import BrokerVersions, choose_version, parse_api_versions
from shoal.protocol import codec
from shoal.protocol.codec import ProtocolError
from shoal.protocol.framing import FrameDecoder
from shoal.protocol.schema import request_schema

API_VERSIONS_VERSION = 3
"""The ApiVersions version the handshake tries first: the first flexible one (it carries
the client software name), served by Kafka brokers since 2.4 and by Shoal. A broker
that refuses it with UNSUPPORTED_VERSION is asked again at the highest version its
answer names, or at v0, which every broker serves (KIP-511)."""


@dataclass(frozen=True, slots=True)
class InFlight:
    """A request sent that expects a response."""

    correlation_id: int
    api_key: int
    version: int


@dataclass(frozen=True, slots=True)
class Received:
    """A response matched to its request."""

    request: InFlight
    response: Any


class ClientConnection:
    """See the module docstring."""

    def __init__(self, *, client_id: str, response_bytes_max: int, address: str = "") -> None:
        self.client_id = client_id
        self.address = address
        self._decoder = FrameDecoder(max_bytes=response_bytes_max, what="response")
        self._in_flight: deque[InFlight] = deque()
        self._last_correlation_id = 0
        self.versions: BrokerVersions | None = None
        self._api_versions_version = API_VERSIONS_VERSION
        self.closed_reason: str | None = None

    # ---- handshake and versions

    def api_versions_request(
        self,
        *,
        software_name: str = CLIENT_SOFTWARE_NAME,
        software_version: str = CLIENT_SOFTWARE_VERSION,
    ) -> Any:
        return request_schema(codec.API_VERSIONS_KEY, self._api_versions_version).make(
            "ApiVersionsRequest",
            client_software_name=software_name,
            client_software_version=software_version,
        )

    def learn_versions(self, response: Any) -> BrokerVersions | None:
        """Keep the broker's versions from its ApiVersions response. None when the broker
        refused our ApiVersions version: send `api_versions_request()` again (it is now
        at a version the broker serves). `KafkaError` if it refused the handshake."""
        refused = response.error_code == ErrorCode.unsupported_version
        if refused and self._api_versions_version > 0:
            served = parse_api_versions(response).get(codec.API_VERSIONS_KEY, (0, 0))[1]
            self._api_versions_version = min(served, self._api_versions_version - 1)
            return None
        check(response.error_code, None, context=f"ApiVersions to {self.address or 'broker'}")
        self.versions = parse_api_versions(response)
        return self.versions

    def build(self, call: Call) -> Any:
        """The kio request for `call` at the version chosen from the broker's versions."""
        assert self.versions is not None, "ApiVersions first"
        where = f"the broker at {self.address}" if self.address else "the broker"
        return call.build(choose_version(call, self.versions, where=where))

    def supports(self, api_key: int, version: int | None = None) -> bool:
        assert self.versions is not None, "ApiVersions first"
        low, high = self.versions.get(api_key, (0, -1))
        return high >= 0 if version is None else low <= version <= high

    # ---- requests out

    def send(self, request: Any, *, expect_response: bool = True) -> tuple[InFlight, bytes]:
        """The frame of a kio request (version from its class); it joins the in-flight
        FIFO unless no response is expected."""
        if self.closed_reason is not None:
            raise ConnectionError(f"connection to {self.address} is closed: {self.closed_reason}")
        api_key, version = int(request.__api_key__), int(request.__version__)
        self._last_correlation_id += 1
        header = codec.request_header_for(
            api_key, version, self._last_correlation_id, self.client_id
        )
        frame = codec.encode_request(header, request)
        sent = InFlight(self._last_correlation_id, api_key, version)
        if expect_response:
            self._in_flight.append(sent)
        return sent, frame

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    @property
    def wanted(self) -> int:
        """Bytes that would complete the frame in hand (at least 1 while waiting)."""
        return max(1, self._decoder.wanted)

    # ---- responses in

    def receive(self, data: bytes | bytearray | memoryview) -> list[Received]:
        """Feed received bytes; the responses they complete, in order. `ProtocolError`
        (and the connection closed) when the broker breaks the protocol."""
        self._decoder.feed(data)
        received = []
        try:
            for frame in self._decoder.frames():
                received.append(self._match(frame))
        except ProtocolError as exc:
            self.close(str(exc))
            raise
        return received

    def _match(self, frame: bytes) -> Received:
        if not self._in_flight:
            raise ProtocolError(f"{self.address}: a response without a request in flight")
        request = self._in_flight.popleft()
        try:
            correlation_id, response = codec.decode_response(
                frame, request.api_key, request.version
            )
        except Exception as exc:  # kio raises several types for malformed input
            raise ProtocolError(
                f"{self.address}: undecodable response to api {request.api_key} "
                f"v{request.version}: {exc}"
            ) from exc
        if correlation_id != request.correlation_id:
            raise ProtocolError(
                f"{self.address}: correlation id {correlation_id} where "
                f"{request.correlation_id} was expected"
            )
        return Received(request, response)

    def close(self, reason: str) -> list[InFlight]:
        """Mark the connection closed; the requests that will now never be answered."""
        if self.closed_reason is None:
            self.closed_reason = reason
        lost = list(self._in_flight)
        self._in_flight.clear()
        return lost


__all__ = ["API_VERSIONS_VERSION", "ClientConnection", "InFlight", "Received"]
