"""The generated request walk (protocol/walk.py) against the reference path.

For generated instances of request classes (every version of the per-record APIs,
the oldest and newest of every other API kio knows and of Shoal's extensions),
encoded by kio, then truncated at every length and with every byte set to 0x00,
0x01, 0x80 and 0xff:
- the walk returns the same position and unknown-tag edits as `counts.scan`, or
  raises the same `CountError` message;
- `codec.decode_body` (walk, kio, `nulls` only after a null length) gives the same
  body or the same error message as the reference: `counts.scan`, kio's reader and
  `nulls.null_field` on every body.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.serial import entity_writer as kio_entity_writer
from kio.static.constants import EntityType
from kio.static.primitive import Records

from shoal.protocol import codec, counts, nulls, walk

st.register_type_strategy(Records, st.binary(max_size=16))  # type: ignore[type-abstract]

HOT_APIS = frozenset({0, 1, 78, 79})
MUTATIONS = (0x00, 0x01, 0x80, 0xFF)
"""Null (compact), empty (compact), a varint's continuation, null / negative."""
FEW_MUTATIONS = (0x00, 0xFF)
"""For the APIs off the per-record path (the suite's time)."""


def _request_classes() -> list[Any]:
    classes: list[Any] = []
    for api_key, name in sorted(codec.API_NAMES.items()):
        versions = sorted(codec.SCHEMA_NAMES[name])
        if api_key not in HOT_APIS:
            versions = [versions[0], versions[-1]]
        for version in versions:
            cls = codec._entity_class(api_key, version, EntityType.request)
            if cls is not None:
                classes.append(cls)
    return classes


CLASSES = _request_classes()


def _scanned(cls: Any, frame: bytes) -> tuple[int, list[counts.Edit]] | str:
    try:
        return counts.scan(cls, frame, 0)
    except counts.CountError as exc:
        return f"CountError: {exc}"


def _walked(cls: Any, frame: bytes) -> tuple[tuple[int, list[counts.Edit]] | str, bool]:
    try:
        end, edits, suspect = walk.walker(cls)(frame, 0)
    except counts.CountError as exc:
        return f"CountError: {exc}", False
    return (end, edits), suspect


def _reference_decode(cls: Any, frame: bytes) -> str:
    """`codec.decode_body`'s outcome the reference way, as text."""
    what = f"{codec.api_name(int(cls.__api_key__))} v{int(cls.__version__)}"
    try:
        end, edits = counts.scan(cls, frame, 0)
    except counts.CountError as exc:
        return f"malformed {what} body: {exc}"
    data = counts.strip(frame, 0, end, edits) if edits else frame
    try:
        body, _ = codec.request_reader(cls)(data, 0)
    except Exception as exc:  # noqa: BLE001  # kio raises several types for malformed input
        return f"malformed {what} body: {exc}"
    null = nulls.null_field(body)
    if null is not None:
        return f"non-nullable field {null} of {what} is null"
    return repr(body)


def _decoded(cls: Any, frame: bytes) -> str:
    try:
        return repr(codec.decode_body(frame, 0, int(cls.__api_key__), int(cls.__version__)))
    except codec.ProtocolError as exc:
        return str(exc)


def _variants(frame: bytes, mutations: tuple[int, ...]) -> list[bytes]:
    variants = [frame[:length] for length in range(len(frame))]
    for at in range(len(frame)):
        for value in mutations:
            if frame[at] != value:
                variants.append(frame[:at] + bytes((value,)) + frame[at + 1 :])
    return variants


def _check(cls: Any, frame: bytes, mutations: tuple[int, ...]) -> None:
    for variant in [frame, *_variants(frame, mutations)]:
        walked, suspect = _walked(cls, variant)
        assert walked == _scanned(cls, variant), variant
        decoded = _decoded(cls, variant)
        assert decoded == _reference_decode(cls, variant), variant
        if "non-nullable field" in decoded:
            assert suspect, variant


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__name__}")
def test_walk_is_scan_and_decode_is_the_reference(cls: Any) -> None:
    hot = int(cls.__api_key__) in HOT_APIS
    mutations, longest = (MUTATIONS, 400) if hot else (FEW_MUTATIONS, 160)

    @settings(max_examples=2 if hot else 1, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.from_type(cls))
    def check(entity: Any) -> None:
        buffer = io.BytesIO()
        kio_entity_writer(cls)(buffer, entity)
        frame = buffer.getvalue()
        if len(frame) <= longest:  # every truncation and mutation of the frame
            _check(cls, frame, mutations)
        else:  # a long one (hypothesis' records, strings): as it is and its prefixes
            for variant in [frame, *(frame[:n] for n in range(0, len(frame), 7))]:
                assert _walked(cls, variant)[0] == _scanned(cls, variant)

    check()


def test_every_api_is_covered() -> None:
    assert len(CLASSES) > 80
    assert {int(c.__api_key__) for c in CLASSES} >= HOT_APIS


def test_null_in_a_non_nullable_field_is_suspected_and_named() -> None:
    """SyncGroup v4 with a null assignments array: the walk flags it, nulls names it."""
    header_v2 = b"\x00\x0e\x00\x04" + b"\x00\x00\x00\x01" + b"\x00\x01f" + b"\x00"
    body = b"\x02g" + b"\x00\x00\x00\x01" + b"\x02m\x00" + b"\x00\x00"
    cls = codec.request_class(14, 4)
    assert walk.walker(cls)(body, 0)[2] is True
    with pytest.raises(codec.ProtocolError, match="non-nullable field assignments "):
        codec.decode_body(header_v2 + body, len(header_v2), 14, 4)
