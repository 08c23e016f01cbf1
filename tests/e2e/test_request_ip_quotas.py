"""Request quotas (KIP-124) and ip connection-rate quotas (KIP-612) end to end, set and
read with `shoal configs` as kafka-configs.sh sets them: a client-id flooding Metadata
requests over its `request_percentage` gets throttle_time_ms and is muted while another
client-id is not, and connections from 127.0.0.1 past its `connection_creation_rate`
are refused with the reason logged, then accepted again once the window has passed."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12 import request as metadata12

from shoal.client.quota_requests import alter_client_quotas
from shoal.protocol import codec
from tests.support.broker import BrokerProcess, running
from tests.support.cli import shoal
from tests.support.wire import call1

WINDOW = ("quota.window.num=2", "quota.window.size.seconds=1")
"""A 2 x 1 s window: a rate is taken over at least 1 s, and forgotten after 2 s."""


def _configs(broker: BrokerProcess, *args: str) -> str:
    done = shoal("configs", "--bootstrap-server", broker.bootstrap, *args)
    assert done.returncode == 0, done.stderr
    return str(done.stdout.strip())


def _metadata_frame(client_id: str, correlation_id: int) -> bytes:
    request = metadata12.MetadataRequest(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
    header = codec.request_header_for(3, 12, correlation_id, client_id)
    return codec.encode_request(header, request)


def _exactly(sock: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError(f"closed after {len(data)} of {count} bytes")
        data += chunk
    return data


def _metadata_throttle_ms(sock: socket.socket, client_id: str, correlation_id: int) -> int:
    sock.sendall(_metadata_frame(client_id, correlation_id))
    size = struct.unpack(">i", _exactly(sock, 4))[0]
    correlation, response = codec.decode_response(_exactly(sock, size), 3, 12)
    assert correlation == correlation_id
    return int(response.throttle_time.total_seconds() * 1000)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for both tests (the flood uses client-id quotas, set before any ip one)."""
    yield from running(tmp_path_factory.mktemp("quotas") / "data", *WINDOW)


def test_request_percentage_throttles_a_flood(broker: BrokerProcess) -> None:
    added = _configs(
        broker,
        "--alter",
        "--entity-type",
        "clients",
        "--entity-name",
        "flood",
        "--add-config",
        "request_percentage=1",
    )
    assert added == "Completed updating config for client flood."
    # 1% of the loop is 10 ms of handler time per second: a flood of Metadata requests
    # passes it within a few hundred requests
    throttles: list[int] = []
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as flood:
        for n in range(2000):
            throttles.append(_metadata_throttle_ms(flood, "flood", n))
            if throttles[-1] > 0 and len(throttles) > 3 and throttles[-3] > 0:
                break
        with socket.create_connection(("127.0.0.1", broker.port), timeout=30) as calm:
            assert _metadata_throttle_ms(calm, "calm", 1) == 0
        # the flood's connection was muted for the throttle time: its next answer waits
        muted_from = time.monotonic()
        _metadata_throttle_ms(flood, "flood", 9999)
        waited_s = time.monotonic() - muted_from
    first = next(i for i, ms in enumerate(throttles) if ms > 0)
    print(
        f"throttled from request {first} after {time.monotonic() - started:.2f} s: {throttles[-3:]}"
    )
    assert 0 < max(throttles) <= 2000  # bounded by the whole window
    assert waited_s >= throttles[-1] / 1000 * 0.5
    assert broker.wait_for_log(r"throttling requests of client 'flood' .* over its quota")
    # a confluent-kafka client on the same client-id sees the broker answer (throttled)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "client.id": "flood"})
    assert admin.list_topics(timeout=30).brokers


def _answers(port: int) -> bool:
    """Whether a new connection gets an ApiVersions answer (False: closed at once)."""
    frame = codec.encode_request(
        codec.request_header_for(18, 0, 1, "ip-test"), codec.request_class(18, 0)()
    )
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(frame)
            return len(_exactly(sock, 4)) == 4
    except ConnectionError:
        return False


def test_connection_creation_rate_of_an_ip(broker: BrokerProcess) -> None:
    ip = ("--entity-type", "ips", "--entity-name", "127.0.0.1")
    added = _configs(broker, "--alter", *ip, "--add-config", "connection_creation_rate=5")
    assert added == "Completed updating config for ip 127.0.0.1."
    # the tool's connections (at most 2) count too: 3 more fit in the first second
    answered = [_answers(broker.port) for _ in range(30)]
    assert answered[:3] == [True] * 3, answered
    assert answered.count(False) >= 1, answered
    assert broker.wait_for_log(
        r"refusing connection from 127\.0\.0\.1:\d+: connection_creation_rate=5/s of ip "
        r"127\.0\.0\.1 exceeded"
    )
    time.sleep(2.2)  # refused connections were not counted: the window empties
    described = _configs(broker, "--describe", "--entity-type", "ips")
    assert described == "Quota configs for ip '127.0.0.1' are connection_creation_rate=5.0"
    deleted = call1(broker.bootstrap, alter_client_quotas([(LOOPBACK, {RATE: None})]))
    assert [e.error_code for e in deleted.entries] == [ErrorCode.none]
    assert all(_answers(broker.port) for _ in range(12))
    # Kafka's rules for ip entities: only connection_creation_rate, never with a user
    refused = call1(
        broker.bootstrap,
        alter_client_quotas(
            [
                ([("ip", None)], {"producer_byte_rate": 10.0}),
                ([*LOOPBACK, ("user", "u")], {RATE: 1.0}),
            ]
        ),
    )
    assert [e.error_code for e in refused.entries] == [ErrorCode.invalid_request] * 2


LOOPBACK = [("ip", "127.0.0.1")]
RATE = "connection_creation_rate"
