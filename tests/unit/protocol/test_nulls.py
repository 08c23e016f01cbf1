"""Nulls where Kafka's schema forbids them: the request is refused while decoding.

The frames are the wire fuzzer's finds, minimised (tests/e2e/test_wire_fuzz.py): each
made a handler iterate None ("handler of X failed") before protocol/nulls.py.
"""

from __future__ import annotations

import pytest

from shoal.protocol import codec


def _decode(frame: bytes) -> object:
    api_key, version = codec.peek_key_version(frame)
    _, offset = codec.decode_header(frame, api_key, version)
    return codec.decode_body(frame, offset, api_key, version)


HEADER_V2 = b"\x00\x01" + b"\x00\x01f" + b"\x00"  # correlation id 1 (low half), client "f"


def _frame(api_key: int, version: int, body: bytes) -> bytes:
    return api_key.to_bytes(2, "big") + version.to_bytes(2, "big") + b"\x00\x00" + HEADER_V2 + body


# SyncGroup v4: group "g", generation 1, member "m", no instance id, assignments null.
SYNC_GROUP_NULL_ASSIGNMENTS = _frame(
    14, 4, b"\x02g" + b"\x00\x00\x00\x01" + b"\x02m\x00" + b"\x00\x00"
)
# WriteTxnMarkers v2: markers null.
WRITE_TXN_MARKERS_NULL = _frame(27, 2, b"\x00\x00")


@pytest.mark.parametrize(
    ("frame", "field"),
    [(SYNC_GROUP_NULL_ASSIGNMENTS, "assignments"), (WRITE_TXN_MARKERS_NULL, "markers")],
)
def test_null_in_non_nullable_array_is_a_protocol_error(frame: bytes, field: str) -> None:
    with pytest.raises(codec.ProtocolError, match=f"non-nullable field {field} "):
        _decode(frame)


def test_null_nested_deeper_is_named_by_its_path() -> None:
    # WriteTxnMarkers v2: one marker (producer 1, epoch 1, commit, topics null,
    # coordinator epoch 0, transaction version 0).
    marker = b"\x00" * 7 + b"\x01" + b"\x00\x01" + b"\x01" + b"\x00" + b"\x00" * 4 + b"\x00\x00"
    frame = _frame(27, 2, b"\x02" + marker + b"\x00")
    with pytest.raises(codec.ProtocolError, match=r"markers\.topics"):
        _decode(frame)


def test_the_same_requests_with_empty_arrays_decode() -> None:
    sync = _decode(SYNC_GROUP_NULL_ASSIGNMENTS[:-2] + b"\x01\x00")
    assert sync.assignments == ()  # type: ignore[attr-defined]
    markers = _decode(WRITE_TXN_MARKERS_NULL[:-2] + b"\x01\x00")
    assert markers.markers == ()  # type: ignore[attr-defined]


def test_a_nullable_array_may_be_null() -> None:
    # Metadata v12: topics null (all topics), no auto-creation, no tagged fields.
    request = _decode(_frame(3, 12, b"\x00" + b"\x00" + b"\x00" + b"\x00"))
    assert request.topics is None  # type: ignore[attr-defined]
