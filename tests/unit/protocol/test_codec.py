"""Header versions and framing of the kio codec, checked against golden bytes."""

from __future__ import annotations

import datetime
import io
import struct
from typing import Any

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.api_versions.v3.response import ApiVersionsResponse
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v1.request import MetadataRequest as MetadataV1
from kio.schema.metadata.v12.response import MetadataResponse as MetadataResponseV12

from shoal.protocol import codec
from shoal.protocol.framing import FrameDecoder


def test_flexible_request_uses_header_v2() -> None:
    header = codec.request_header_for(18, 3, 7, "c")
    frame = codec.encode_request(
        header, ApiVersionsRequest(client_software_name="n", client_software_version="1")
    )
    # size, key 18, version 3, correlation 7, client id "c" (int16 length), tags 0,
    # then compact strings "n" and "1" and the body's empty tag section.
    assert frame == struct.pack(">ihhih", 17, 18, 3, 7, 1) + b"c\x00" + b"\x02n\x021\x00"


def test_non_flexible_request_uses_header_v1() -> None:
    header = codec.request_header_for(3, 1, 9, "c")
    frame = codec.encode_request(header, MetadataV1(topics=None))
    assert frame == struct.pack(">ihhih", 15, 3, 1, 9, 1) + b"c" + struct.pack(">i", -1)
    key, version = codec.peek_key_version(frame[4:])
    decoded, offset = codec.decode_header(frame[4:], key, version)
    assert (decoded.correlation_id, decoded.client_id, offset) == (9, "c", 11)
    assert codec.decode_body(frame[4:], offset, key, version).topics is None


def test_api_versions_response_header_is_always_v0() -> None:
    response = ApiVersionsResponse(
        error_code=ErrorCode.none, api_keys=(), throttle_time=datetime.timedelta(0)
    )
    frame = bytes(codec.encode_response(18, 3, 5, response))
    # No tagged-field byte after the correlation id, although v3 is flexible.
    assert frame[:10] == struct.pack(">iih", len(frame) - 4, 5, 0)
    assert codec.decode_response(frame[4:], 18, 3) == (5, response)


def test_flexible_response_header_has_tags() -> None:
    response = MetadataResponseV12(
        throttle_time=datetime.timedelta(0),
        brokers=(),
        cluster_id=None,
        controller_id=1,
        topics=(),
    )
    frame = bytes(codec.encode_response(3, 12, 5, response))
    assert frame[4:9] == struct.pack(">i", 5) + b"\x00"


def test_trailing_bytes_are_ignored_as_kafka_does() -> None:
    header = codec.request_header_for(3, 1, 9, "c")
    frame = codec.encode_request(header, MetadataV1(topics=None))[4:] + b"junk"
    key, version = codec.peek_key_version(frame)
    _, offset = codec.decode_header(frame, key, version)
    assert codec.decode_body(frame, offset, key, version) == MetadataV1(topics=None)


def test_librdkafka_all_topics_metadata_v13() -> None:
    """librdkafka 2.16 pads the null topic array of an all-topics Metadata v13 to four
    bytes (observed on the wire); Kafka reads the fields and ignores the rest."""
    frame = bytes.fromhex("0003000d00000003000772646b61666b610000000000010000")
    key, version = codec.peek_key_version(frame)
    header, offset = codec.decode_header(frame, key, version)
    assert header.client_id == "rdkafka"
    body = codec.decode_body(frame, offset, key, version)
    assert body.topics is None


def test_garbage_body_is_a_protocol_error() -> None:
    header = codec.request_header_for(18, 3, 1, "c")
    frame = codec.encode_request(
        header, ApiVersionsRequest(client_software_name="n", client_software_version="1")
    )[4:]
    frame = frame[:12] + b"\xff\xff\xff\xff\xff"
    with pytest.raises(codec.ProtocolError):
        codec.decode_body(frame, 12, 18, 3)


def test_short_frame_is_a_protocol_error() -> None:
    with pytest.raises(codec.ProtocolError):
        codec.peek_key_version(b"\x00\x01")


def _api_versions(max_version: int) -> ApiVersionsResponse:
    return ApiVersionsResponse(
        error_code=ErrorCode.none,
        api_keys=(_api_key(max_version),),
        throttle_time=datetime.timedelta(0),
    )


def _api_key(max_version: int) -> Any:
    from kio.schema.api_versions.v3.response import ApiVersion
    from kio.static.primitive import i16

    return ApiVersion(api_key=i16(3), min_version=i16(0), max_version=i16(max_version))


def test_a_constant_body_is_encoded_as_the_entity_would_be() -> None:
    kept = _api_versions(12)
    reference = bytes(codec.encode_response(18, 3, 5, kept))
    assert codec.constant_body(kept) is kept
    assert bytes(codec.encode_response(18, 3, 5, kept)) == reference
    assert bytes(codec.encode_response(18, 3, 9, kept))[8:] == reference[8:]  # same body
    assert codec.decode_response(bytes(codec.encode_response(18, 3, 9, kept))[4:], 18, 3) == (
        9,
        kept,
    )


def _sent(response: ApiVersionsResponse) -> ApiVersionsResponse:
    """What a client decodes of `response` encoded by `encode_response`."""
    frame = bytes(codec.encode_response(18, 3, 1, response))
    correlation_id, decoded = codec.decode_response(frame[4:], 18, 3)
    assert correlation_id == 1
    return decoded  # type: ignore[no-any-return]


def test_only_the_kept_object_gets_the_kept_bytes() -> None:
    kept = codec.constant_body(_api_versions(12))
    different = _api_versions(13)
    assert _sent(different) == different
    assert _sent(_api_versions(12)) == kept  # an equal object: encoded, not looked up
    codec.constant_body(different)  # replaces the kept one of the class
    assert _sent(kept) == kept
    assert _sent(different) == different


def test_frame_size_is_bounded() -> None:
    decoder = FrameDecoder(max_bytes=100, min_bytes=8)
    assert decoder.frame_size(struct.pack(">i", 100)) == 100
    assert decoder.frame_size(struct.pack(">i", 8) + b"rest") == 8
    for size in (7, 101, -1):
        with pytest.raises(codec.ProtocolError, match=f"frame size {size} outside"):
            decoder.frame_size(struct.pack(">i", size))


def _kio_frame(header: Any, body: Any) -> bytes:
    """The reference: kio's own writers of the response header and the body."""
    from kio.serial import entity_writer

    buffer = io.BytesIO()
    entity_writer(type(header))(buffer, header)
    entity_writer(type(body))(buffer, body)
    return struct.pack(">i", len(buffer.getvalue())) + buffer.getvalue()


def test_encoded_responses_equal_kio_header_and_body_writers() -> None:
    """encode_response's per-class plan (header version, packer, body writer) and its
    constant-body concatenation write what kio's writers write."""
    from kio.schema.metadata.v1.response import MetadataResponse as MetadataResponseV1
    from kio.schema.response_header.v0.header import ResponseHeader as V0
    from kio.schema.response_header.v1.header import ResponseHeader as V1
    from kio.static.primitive import i32

    metadata12 = MetadataResponseV12(
        throttle_time=datetime.timedelta(0),
        brokers=(),
        cluster_id="c",
        controller_id=1,
        topics=(),
    )
    metadata1 = MetadataResponseV1(brokers=(), controller_id=1, topics=())
    kept = codec.constant_body(_api_versions(7))
    cases = [
        (18, 3, _api_versions(12), V0),  # flexible, yet header v0
        (18, 3, kept, V0),  # the constant body
        (3, 12, metadata12, V1),
        (3, 1, metadata1, V0),
        (3, 12, metadata12, V1),  # the plan kept
        (18, 3, kept, V0),
    ]
    for correlation_id, (key, version, body, header) in enumerate(cases, 5):
        reference = _kio_frame(header(correlation_id=i32(correlation_id)), body)
        assert bytes(codec.encode_response(key, version, correlation_id, body)) == reference
