"""Request frames with unknown tagged fields, for the codec's unit tests and the e2e
check that such a frame gets a normal answer: a valid request encoded by kio, then an
empty tag section (of the header, the body or one nested struct) replaced by one with
fields the schema does not know."""

from __future__ import annotations

import io
from typing import Any

from kio.schema.api_versions.v3.request import ApiVersionsRequest

from shoal.protocol import codec, fast_writer
from tests.support.wire_fuzz import uvarint


def fields(*tags: int, size: int = 2) -> bytes:
    """Tagged fields `tags`, each with `size` bytes of payload (no count before them)."""
    return b"".join(uvarint(tag) + uvarint(size) + b"\x5a" * size for tag in tags)


def section(*tags: int, size: int = 2) -> bytes:
    """A tagged-field section: the count, then `fields(*tags, size=size)`."""
    return uvarint(len(tags)) + fields(*tags, size=size)


def encoded(entity: Any) -> bytes:
    buffer = io.BytesIO()
    fast_writer.entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def request_frame(request: Any) -> bytes:
    key, version = int(request.__api_key__), int(request.__version__)
    return codec.encode_request(codec.request_header_for(key, version, 7, "cli"), request)[4:]


def with_tags(frame: bytes, entity: Any, section: bytes) -> bytes:
    """Replace the empty tag section at the end of `entity`'s bytes inside `frame`."""
    inner = encoded(entity)
    assert inner.endswith(b"\x00") and frame.count(inner) == 1
    at = frame.index(inner) + len(inner) - 1
    return frame[:at] + section + frame[at + 1 :]


API_VERSIONS = ApiVersionsRequest(client_software_name="librdkafka", client_software_version="2")
HEADER_END = 2 + 2 + 4 + 2 + len("cli")
"""Where a `request_frame`'s header v2 tag section is (key, version, correlation, client id)."""
