"""Bad input, Shoal against Kafka 4.2: malformed frames and invalid requests.

Each scenario sends the same bytes (a raw socket, tests/support/raw_wire.py) or the
same kio request at a pinned version to both brokers and compares the answer (error
codes, messages, the response version) and whether the connection stays open (a
following ApiVersions v0 is answered on it).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.client import requests
from shoal.client.requests import FetchPosition
from shoal.protocol import codec
from tests.differential.conftest import Pair, unique
from tests.support.batches import build_batch, values_batch
from tests.support.raw_wire import Raw, decoded, frame, request_frame
from tests.support.wire import api_versions_request, call1

READ_S = 10.0
"""How long a broker may take to answer or to close."""
CLOSED, SILENT = "closed", "no answer"


def _still_serving(raw: Raw) -> bool:
    """An ApiVersions v0 on the same connection is answered."""
    if not raw.send(frame(18, 0)):
        return False
    try:
        return raw.read_frame() is not None
    except (ConnectionResetError, TimeoutError):
        return False


def _exchange(
    bootstrap: str, data: bytes, read: Callable[[bytes], Any] | None = None
) -> tuple[Any, bool]:
    """Send `data`; (what came back: `read(frame)`, the raw frame when `read` is None,
    CLOSED or SILENT; whether the connection then still serves)."""
    raw = Raw(bootstrap)
    raw.sock.settimeout(READ_S)
    try:
        raw.send(data)
        try:
            answer = raw.read_frame()
        except ConnectionResetError:
            answer = None
        except TimeoutError:
            return SILENT, _still_serving(raw)
        if answer is None:
            return CLOSED, False
        return (read(answer) if read else answer), _still_serving(raw)
    finally:
        raw.close()


def _request(bootstrap: str, request: Any, read: Callable[[Any], Any]) -> tuple[Any, bool]:
    """Send the kio `request` (at its class's version) and `read` its decoded answer."""
    return _exchange(bootstrap, request_frame(request), lambda f: read(decoded(f, request)))


# ---- framing


def _api_versions_fallback(response_frame: bytes) -> Any:
    correlation_id, response = codec.decode_response(response_frame, 18, 0)
    return (
        correlation_id,
        response.error_code,
        sorted((int(k.api_key), int(k.min_version), int(k.max_version)) for k in response.api_keys),
    )


def test_api_versions_of_an_unknown_version(pair: Pair) -> None:
    """Kafka answers an ApiVersions it does not know with a v0 answer:
    UNSUPPORTED_VERSION and ApiVersions' own range, and keeps the connection."""
    data = frame(18, 99, b"\x00\x00\x00", flexible=True)
    kafka, shoal = pair.run(_exchange, data, _api_versions_fallback)
    assert kafka == shoal
    assert kafka[0][1] == ErrorCode.unsupported_version


@pytest.mark.parametrize(
    ("case", "data"),
    [
        ("produce v99", frame(0, 99, b"\x00" * 32)),
        ("metadata v99", frame(3, 99, b"\x00" * 8)),
        ("fetch v0 (removed in Kafka 4)", frame(1, 0, b"\x00" * 32)),
        ("unknown api key", frame(9999, 0)),
        ("negative api key", frame(-2, 0)),
        ("header only, body missing", frame(3, 12, b"", flexible=True)),
        ("garbage body", frame(0, 9, bytes(range(40)) * 2, flexible=True)),
        ("frame smaller than a header", struct.pack(">i", 2) + b"\x00\x12"),
        ("negative size", struct.pack(">i", -5)),
        ("size over socket.request.max.bytes", struct.pack(">i", 104_857_601) + b"\x00" * 64),
    ],
)
def test_malformed_frames(pair: Pair, case: str, data: bytes) -> None:
    kafka, shoal = pair.run(_exchange, data)
    assert kafka == shoal, case
    assert kafka == (CLOSED, False), case


def _truncated(bootstrap: str) -> Any:
    """The size says 100, ten bytes come, then the client stops sending."""
    raw = Raw(bootstrap)
    raw.sock.settimeout(READ_S)
    try:
        raw.send(struct.pack(">i", 100) + b"\x00\x12\x00\x03" + b"\x00" * 6)
        raw.half_close()
        return raw.closed_by_broker(READ_S)
    finally:
        raw.close()


def test_truncated_frame(pair: Pair) -> None:
    kafka, shoal = pair.run(_truncated)
    assert kafka == shoal == (True, b"")


def test_trailing_bytes_after_a_request(pair: Pair) -> None:
    """A well-formed Metadata request with junk after its body."""
    request = requests.metadata([]).build(12)
    raw_frame = request_frame(request)
    data = struct.pack(">i", len(raw_frame) - 4 + 5) + raw_frame[4:] + b"\xff" * 5
    kafka, shoal = pair.run(_exchange, data, lambda f: decoded(f, request).brokers != ())
    assert kafka == shoal


# ---- invalid requests


def _topic(bootstrap: str, name: str, partitions: int = 1) -> str:
    """Create `name` and wait until its partition 0 answers (Kafka's CreateTopics
    returns before its broker leads the new partitions)."""
    created = call1(bootstrap, requests.create_topic(name, partitions=partitions))
    assert created.topics[0].error_code == 0, created
    _usable(bootstrap, name)
    return name


def _usable(bootstrap: str, topic: str) -> None:
    deadline = time.monotonic() + READ_S
    while True:
        listed = call1(bootstrap, requests.list_offsets({(topic, 0): requests.LATEST_TIMESTAMP}))
        if listed.topics[0].partitions[0].error_code == 0:
            return
        assert time.monotonic() < deadline, listed
        time.sleep(0.05)


def _produce_codes(r: Any) -> Any:
    return [
        (p.index, p.error_code, p.error_message if hasattr(p, "error_message") else None)
        for t in r.responses
        for p in t.partition_responses
    ]


def _produce(bootstrap: str, topic: str, version: int, case: str) -> tuple[Any, bool]:
    batches = {
        "unknown partition": ((topic, 5), values_batch(1)),
        "unknown topic": ((f"{topic}-missing", 0), values_batch(1)),
        "bad crc": ((topic, 0), values_batch(2, corrupt_crc=True)),
        "magic 1": ((topic, 0), values_batch(2, magic=1)),
        "magic 3": ((topic, 0), values_batch(2, magic=3)),
        "truncated batch": ((topic, 0), values_batch(3)[:-7]),
        "too large": ((topic, 0), build_batch([b"x" * 1_048_600])),
        "empty records": ((topic, 0), b""),
    }
    if case == "acks=2":
        call = requests.produce({(topic, 0): values_batch(1)}, acks=2)
    else:
        where, records = batches[case]
        call = requests.produce({where: records})
    return _request(bootstrap, call.build(version), _produce_codes)


PRODUCE_CASES = [
    "unknown partition",
    "unknown topic",
    "bad crc",
    "magic 1",
    "magic 3",
    "truncated batch",
    "too large",
    "empty records",
    "acks=2",
]


def _codes_only(observation: tuple[Any, bool]) -> Any:
    """(index, code) of each partition, and whether the connection still serves."""
    answer, serving = observation
    if not isinstance(answer, list):
        return answer, serving
    return [(index, code) for index, code, _message in answer], serving


@pytest.mark.parametrize("version", [3, 7, 9])
@pytest.mark.parametrize("case", PRODUCE_CASES)
def test_produce_invalid(pair: Pair, case: str, version: int) -> None:
    kafka, shoal = pair.run(lambda b: _produce(b, _topic(b, unique("bad-produce")), version, case))
    assert _codes_only(kafka) == _codes_only(shoal), case
    assert kafka[1] is True, "Kafka keeps the connection"


@pytest.mark.parametrize("case", PRODUCE_CASES)
def test_produce_invalid_messages(pair: Pair, case: str) -> None:
    """The per-partition error message (Produce v8+) of each invalid produce."""
    kafka, shoal = pair.run(lambda b: _produce(b, _topic(b, unique("bad-msg")), 9, case))
    assert kafka == shoal, case


def _fetch(bootstrap: str, topic: str, case: str, version: int) -> tuple[Any, bool]:
    call1(bootstrap, requests.produce({(topic, 0): values_batch(3)}))
    position = {
        "offset past the end": ((topic, 0), FetchPosition(100, 1 << 20)),
        "negative offset": ((topic, 0), FetchPosition(-5, 1 << 20)),
        "unknown partition": ((topic, 3), FetchPosition(0, 1 << 20)),
        "unknown topic": ((f"{topic}-missing", 0), FetchPosition(0, 1 << 20)),
        "zero max bytes": ((topic, 0), FetchPosition(0, 0)),
    }[case]
    call = requests.fetch(dict([position]), max_wait_ms=0)
    return _request(
        bootstrap,
        call.build(version),
        lambda r: (
            getattr(r, "error_code", None),
            [(p.error_code, len(p.records or b"")) for t in r.responses for p in t.partitions],
        ),
    )


@pytest.mark.parametrize("version", [4, 7, 12])
@pytest.mark.parametrize(
    "case",
    [
        "offset past the end",
        "negative offset",
        "unknown partition",
        "unknown topic",
        "zero max bytes",
    ],
)
def test_fetch_invalid(pair: Pair, case: str, version: int) -> None:
    kafka, shoal = pair.run(lambda b: _fetch(b, _topic(b, unique("bad-fetch")), case, version))
    assert kafka == shoal, case


def _list_offsets(bootstrap: str, topic: str, timestamp: int, version: int) -> tuple[Any, bool]:
    call1(bootstrap, requests.produce({(topic, 0): values_batch(3)}))
    call = requests.list_offsets({(topic, 0): timestamp})
    return _request(
        bootstrap,
        call.build(version),
        lambda r: [(p.error_code, p.offset, p.timestamp) for t in r.topics for p in t.partitions],
    )


@pytest.mark.parametrize(
    ("timestamp", "version"),
    [(t, v) for v in (1, 7, 9) for t in (-1, -2, -3, -4, -5, -6, -100)],
)
def test_list_offsets_timestamps(pair: Pair, timestamp: int, version: int) -> None:
    kafka, shoal = pair.run(
        lambda b: _list_offsets(b, _topic(b, unique("bad-lo")), timestamp, version)
    )
    assert kafka == shoal, (timestamp, version)


def _create_topic(bootstrap: str, name: str, partitions: int, replication: int) -> Any:
    call = requests.create_topic(name, partitions=partitions, replication_factor=replication)
    return _request(
        bootstrap,
        call.build(7),
        lambda r: [(t.name, t.error_code, t.error_message) for t in r.topics],
    )


INVALID_TOPICS = [
    ("x" * 250, 1, 1),
    ("x" * 249, 1, 1),
    ("bad name", 1, 1),
    ("bad/name", 1, 1),
    (".", 1, 1),
    ("..", 1, 1),
    ("", 1, 1),
    ("{unique}", -2, 1),
    ("{unique}", 0, 1),
    ("{unique}", 1, -2),
    ("{unique}", 1, 0),
    ("{unique}", 1, 3),
]


@pytest.mark.parametrize(("name", "partitions", "replication"), INVALID_TOPICS)
def test_create_topics_invalid_codes(
    pair: Pair, name: str, partitions: int, replication: int
) -> None:
    name = name.replace("{unique}", unique("bad-ct"))
    kafka, shoal = pair.run(_create_topic, name, partitions, replication)
    codes = [
        ([(n, code) for n, code, _message in answer] if isinstance(answer, list) else answer, ok)
        for answer, ok in (kafka, shoal)
    ]
    assert codes[0] == codes[1]


@pytest.mark.parametrize(("name", "partitions", "replication"), INVALID_TOPICS)
def test_create_topics_invalid_messages(
    pair: Pair, name: str, partitions: int, replication: int
) -> None:
    name = name.replace("{unique}", unique("bad-ct"))
    kafka, shoal = pair.run(_create_topic, name, partitions, replication)
    assert kafka == shoal


def test_create_topics_too_many_partitions(pair: Pair) -> None:
    kafka, shoal = pair.run(_create_topic, unique("bad-many"), 1_000_000, 1)
    assert kafka == shoal
    assert kafka[0][0][1:] == (
        ErrorCode.policy_violation,
        "Excessively large number of partitions per request.",
    )


# ---- more framing and requests


def _acks_zero_then_api_versions(bootstrap: str, case: str) -> str:
    """Produce with acks=0 (no answer), then ApiVersions on the same connection:
    whether it is answered or the connection was closed."""
    topic = _topic(bootstrap, unique("acks0"))
    records = values_batch(2, corrupt_crc=True) if case == "bad crc" else values_batch(2)
    partition = 5 if case == "unknown partition" else 0
    request = requests.produce({(topic, partition): records}, acks=0).build(9)
    raw = Raw(bootstrap)
    raw.sock.settimeout(READ_S)
    try:
        raw.send(request_frame(request) + frame(18, 0))
        return "answered" if raw.read_frame() is not None else CLOSED
    except ConnectionResetError:
        return CLOSED
    finally:
        raw.close()


@pytest.mark.parametrize("case", ["valid", "bad crc", "unknown partition"])
def test_produce_acks_zero_failure(pair: Pair, case: str) -> None:
    kafka, shoal = pair.run(_acks_zero_then_api_versions, case)
    assert kafka == shoal
    assert kafka == ("answered" if case == "valid" else CLOSED)


def _batch_over_segment_bytes(bootstrap: str) -> tuple[Any, bool]:
    topic = unique("bad-seg")
    configs = {"segment.bytes": "1048576", "max.message.bytes": "4000000"}
    created = call1(bootstrap, requests.create_topic(topic, partitions=1, configs=configs))
    assert created.topics[0].error_code == 0, created
    _usable(bootstrap, topic)
    call = requests.produce({(topic, 0): build_batch([b"x" * 1_500_000])})
    return _request(bootstrap, call.build(9), _produce_codes)


def test_produce_larger_than_a_segment(pair: Pair) -> None:
    kafka, shoal = pair.run(_batch_over_segment_bytes)
    assert kafka == shoal
    assert kafka == ([(0, ErrorCode.record_list_too_large, None)], True)


def _with_tagged_header_field(bootstrap: str) -> tuple[Any, bool]:
    """ApiVersions v3 whose (flexible) header carries an unknown tagged field."""
    request = api_versions_request()
    data = bytearray(request_frame(request))
    (client_id_length,) = struct.unpack_from(">h", data, 12)
    at = 14 + client_id_length  # the header's tagged fields: none
    data[at : at + 1] = bytes([1, 9, 3]) + b"abc"  # one field: tag 9, three bytes
    struct.pack_into(">i", data, 0, len(data) - 4)
    return _exchange(bootstrap, bytes(data), lambda f: decoded(f, request).error_code)


def test_unknown_tagged_field_in_the_header(pair: Pair) -> None:
    kafka, shoal = pair.run(_with_tagged_header_field)
    assert kafka == shoal == (ErrorCode.none, True)


def _with_tagged_body_field(bootstrap: str) -> tuple[Any, bool]:
    """ApiVersions v3 whose body ends with an unknown tagged field."""
    request = api_versions_request()
    data = bytearray(request_frame(request))
    assert data[-1] == 0  # the body's tagged fields: none
    data[-1:] = bytes([1, 7, 2]) + b"zz"  # one field: tag 7, two bytes
    struct.pack_into(">i", data, 0, len(data) - 4)
    return _exchange(bootstrap, bytes(data), lambda f: decoded(f, request).error_code)


def test_unknown_tagged_field_in_the_body(pair: Pair) -> None:
    kafka, shoal = pair.run(_with_tagged_body_field)
    assert kafka == shoal == (ErrorCode.none, True)


@pytest.mark.parametrize(
    ("case", "header"),
    [
        ("client id longer than the frame", struct.pack(">hhih", 18, 0, 7, 500) + b"abc"),
        ("null client id", struct.pack(">hhih", 18, 0, 7, -1)),
    ],
)
def test_request_header_client_id(pair: Pair, case: str, header: bytes) -> None:
    data = struct.pack(">i", len(header)) + header
    kafka, shoal = pair.run(_exchange, data, lambda f: "answered")
    assert kafka == shoal, case


@pytest.mark.parametrize("name", ["bad name", "..", "x" * 250, ""])
def test_metadata_of_an_invalid_topic_name(pair: Pair, name: str) -> None:
    call = requests.metadata([name], allow_auto_topic_creation=True)
    kafka, shoal = pair.run(
        _request, call.build(12), lambda r: [(t.name, t.error_code) for t in r.topics]
    )
    assert kafka == shoal
    assert kafka[0] == [(name, ErrorCode.invalid_topic_exception)]


def _list_offsets_unknown(bootstrap: str) -> tuple[Any, bool]:
    topic = _topic(bootstrap, unique("bad-lou"))
    call = requests.list_offsets({(topic, 4): -1, (f"{topic}-missing", 0): -1})
    return _request(
        bootstrap,
        call.build(7),
        lambda r: sorted(
            (t.name == topic, p.partition_index, p.error_code)
            for t in r.topics
            for p in t.partitions
        ),
    )


def test_list_offsets_of_unknown_partitions(pair: Pair) -> None:
    kafka, shoal = pair.run(_list_offsets_unknown)
    assert kafka == shoal
