"""The sans-I/O connection core: golden frames, correlation, limits, no-response
requests; wired to the broker's own codec in memory."""

from __future__ import annotations

import datetime

import pytest
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32Timedelta

from shoal.client import requests
from shoal.client.calls import Call
from shoal.client.core import ClientConnection
from shoal.client.errors import KafkaError
from shoal.protocol import codec
from shoal.protocol.codec import ProtocolError
from shoal.protocol.framing import encode_size
from shoal.protocol.schema import response_schema

NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))
API_VERSIONS_V3_FRAME = bytes.fromhex(
    "00000011"  # size 17
    "0012"
    "0003"
    "00000001"  # ApiVersions v3, correlation id 1
    "0001"
    "63"
    "00"  # client id "c", no tagged fields (header v2)
    "02"
    "73"
    "02"
    "31"
    "00"  # software name "s", version "1", no tagged fields
)


def connection(limit: int = 1 << 20) -> ClientConnection:
    return ClientConnection(client_id="c", response_bytes_max=limit, address="b:1")


def api_versions_response(correlation_id: int, code: ErrorCode = ErrorCode.none) -> bytes:
    s = response_schema(18, 3)
    body = s.response(
        error_code=code,
        api_keys=(
            s.make("ApiVersion", api_key=18, min_version=0, max_version=4),
            s.make("ApiVersion", api_key=16, min_version=0, max_version=3),
        ),
        throttle_time=NO_THROTTLE,
        supported_features=(),
        finalized_features_epoch=-1,
        finalized_features=(),
        zk_migration_ready=False,
    )
    return bytes(codec.encode_response(18, 3, correlation_id, body))


def test_api_versions_request_frame_is_golden() -> None:
    core = connection()
    sent, frame = core.send(core.api_versions_request(software_name="s", software_version="1"))
    assert frame == API_VERSIONS_V3_FRAME
    assert (sent.correlation_id, sent.api_key, sent.version) == (1, 18, 3)
    # and the broker's decoder reads it back
    key, version = codec.peek_key_version(frame[4:])
    header, offset = codec.decode_header(frame[4:], key, version)
    body = codec.decode_body(frame[4:], offset, key, version)
    assert (header.client_id, header.correlation_id) == ("c", 1)
    assert (body.client_software_name, body.client_software_version) == ("s", "1")


def test_response_bytes_in_any_split_give_the_response_once() -> None:
    core = connection()
    core.send(core.api_versions_request())
    data = api_versions_response(1)
    received = []
    for i in range(len(data)):
        received += core.receive(data[i : i + 1])
    (one,) = received
    assert one.request.correlation_id == 1
    assert core.learn_versions(one.response) == {18: (0, 4), 16: (0, 3)}
    assert core.in_flight == 0


def test_pipelined_responses_match_in_order() -> None:
    core = connection()
    core.send(core.api_versions_request())
    core.send(core.api_versions_request())
    received = core.receive(api_versions_response(1) + api_versions_response(2))
    assert [r.request.correlation_id for r in received] == [1, 2]


def test_correlation_mismatch_is_a_protocol_error_that_closes() -> None:
    core = connection()
    core.send(core.api_versions_request())
    with pytest.raises(ProtocolError, match="correlation id 7 where 1 was expected"):
        core.receive(api_versions_response(7))
    assert core.closed_reason is not None
    with pytest.raises(ConnectionError):
        core.send(core.api_versions_request())


def test_response_without_request_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="without a request"):
        connection().receive(api_versions_response(1))


def test_response_bigger_than_the_limit_closes_before_buffering() -> None:
    core = connection(limit=100)
    core.send(core.api_versions_request())
    with pytest.raises(ProtocolError, match="response size 101 outside"):
        core.receive(encode_size(101))
    assert core.closed_reason is not None


def test_garbage_response_is_a_protocol_error() -> None:
    core = connection()
    core.send(core.api_versions_request())
    with pytest.raises(ProtocolError, match="undecodable"):
        core.receive(encode_size(3) + b"\x00\x00\x00")


def test_request_without_response_leaves_nothing_in_flight() -> None:
    core = connection()
    core.versions = {0: (3, 12)}
    request = core.build(requests.produce({("t", 0): b""}, acks=0))
    sent, _ = core.send(request, expect_response=False)
    assert core.in_flight == 0 and sent.correlation_id == 1
    assert int(request.acks) == 0 and int(request.__version__) == 12


def test_refused_handshake_raises() -> None:
    core = connection()
    core.send(core.api_versions_request())
    (one,) = core.receive(api_versions_response(1, ErrorCode.cluster_authorization_failed))
    with pytest.raises(KafkaError, match="CLUSTER_AUTHORIZATION_FAILED"):
        core.learn_versions(one.response)


def test_build_picks_the_version_from_the_broker() -> None:
    core = connection()
    core.versions = {16: (0, 3)}
    assert int(core.build(requests.list_groups()).__version__) == 3
    with pytest.raises(KafkaError, match=r"the broker at b:1 cannot answer ListGroups \(API 16\)"):
        core.build(requests.list_groups(types=["share"]))
    exact = Call.exact(requests.list_groups().build(1))
    assert int(core.build(exact).__version__) == 1


def test_a_broker_refusing_api_versions_v3_is_asked_at_v0() -> None:
    core = connection()
    core.send(core.api_versions_request())
    (one,) = core.receive(api_versions_response(1, ErrorCode.unsupported_version))
    # kio reads the old broker's v0 error body as v3 without api keys: fall back to v0
    object.__setattr__(one.response, "api_keys", ())
    assert core.learn_versions(one.response) is None
    retry = core.api_versions_request()
    assert int(retry.__version__) == 0
    _, frame = core.send(retry)
    assert codec.peek_key_version(frame[4:]) == (18, 0)
