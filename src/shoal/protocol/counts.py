"""Refuse an array count larger than the bytes left in the request. Sans-I/O.

kio's native reader reserves memory for an array's elements from the count on the
wire before reading them: a 60-byte request announcing 2^31-1 nested structures made
it ask for 75 GB and abort the whole broker process (found by the wire fuzzer). Every
element takes at least one byte, so a count above the bytes left is malformed.
`check_counts(cls, frame, offset)` walks the request's layout (from kio's field
metadata, as kio would read it: lengths read, payloads skipped, known tagged fields
walked within their size) before kio decodes it, and raises `CountError` on the
first impossible count or length. Per request the cost is one pass over its fields
(per topic and partition); record batches and strings are skipped, never read.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from typing import Any

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
)


class CountError(Exception):
    """A count or length larger than the bytes left (codec.py makes it a ProtocolError)."""


FIXED_BYTES = {
    "int8": 1,
    "bool": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "float64": 8,
    "uuid": 16,
}
LENGTH_BYTES = {"string": 2, "bytes": 4, "records": 4}
"""Width of the length prefix of a non-compact (non-flexible) variable-size field."""

Step = Callable[[memoryview, int, int], int]
"""Given the frame, a position and the end, returns the position after one field."""


def _uvarint(data: memoryview, pos: int, end: int) -> tuple[int, int]:
    value = 0
    for shift in range(0, 35, 7):
        if pos >= end:
            raise CountError("a varint runs past the end of the request")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
    raise CountError("a varint longer than 5 bytes")


def _signed(data: memoryview, pos: int, width: int, end: int) -> int:
    if pos + width > end:
        raise CountError("a length runs past the end of the request")
    return int.from_bytes(data[pos : pos + width], "big", signed=True)


def _length(data: memoryview, pos: int, end: int, *, flexible: bool, width: int) -> tuple[int, int]:
    """(length or -1 for null, position after the length)."""
    if flexible:
        value, pos = _uvarint(data, pos, end)
        return value - 1, pos
    return _signed(data, pos, width, end), pos + width


def _fixed(size: int) -> Step:
    def step(data: memoryview, pos: int, end: int) -> int:
        return pos + size

    return step


def _sized(flexible: bool, width: int) -> Step:
    def step(data: memoryview, pos: int, end: int) -> int:
        length, pos = _length(data, pos, end, flexible=flexible, width=width)
        if length > end - pos:
            raise CountError(f"a length of {length} with {end - pos} bytes left")
        return pos + max(length, 0)

    return step


def _array(flexible: bool, element: Step) -> Step:
    def step(data: memoryview, pos: int, end: int) -> int:
        count, pos = _length(data, pos, end, flexible=flexible, width=4)
        if count > end - pos:
            raise CountError(f"an array of {count} with {end - pos} bytes left")
        for _ in range(count):
            pos = element(data, pos, end)
        return pos

    return step


def _nullable_entity(entity: Step) -> Step:
    def step(data: memoryview, pos: int, end: int) -> int:
        marker = _signed(data, pos, 1, end)
        return pos + 1 if marker < 0 else entity(data, pos + 1, end)

    return step


def _primitive(kafka_type: str, flexible: bool) -> Step:
    fixed = FIXED_BYTES.get(kafka_type)
    if fixed is not None:
        return _fixed(fixed)
    return _sized(flexible, LENGTH_BYTES[kafka_type])


def _field(field: dataclasses.Field[Any], flexible: bool) -> Step:
    kind = classify_field(field)
    if isinstance(kind, EntityTupleField):
        return _array(flexible, _entity(kind.type_))
    if isinstance(kind, PrimitiveTupleField):
        return _array(flexible, _primitive(get_schema_field_type(field), flexible))
    if isinstance(kind, EntityField):
        entity = _entity(kind.type_)
        return _nullable_entity(entity) if _nullable(field.type) else entity
    return _primitive(get_schema_field_type(field), flexible)


def _nullable(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    return origin in (types.UnionType, typing.Union) and type(None) in typing.get_args(annotation)


_ENTITIES: dict[Any, Step] = {}


def _entity(cls: Any) -> Step:
    cached = _ENTITIES.get(cls)
    if cached is not None:
        return cached
    flexible = bool(cls.__flexible__)
    steps: list[Step] = []
    tagged: dict[int, Step] = {}
    for field in dataclasses.fields(cls):
        tag = get_field_tag(field)
        if tag is None:
            steps.append(_field(field, flexible))
        else:
            tagged[int(tag)] = _field(field, flexible)

    def step(data: memoryview, pos: int, end: int) -> int:
        for field_step in steps:
            pos = field_step(data, pos, end)
        if flexible:
            pos = _tags(data, pos, end, tagged)
        if pos > end:
            raise CountError("the request ends inside a field")
        return pos

    _ENTITIES[cls] = step
    return step


def _tags(data: memoryview, pos: int, end: int, known: dict[int, Step]) -> int:
    count, pos = _uvarint(data, pos, end)
    if count > end - pos:
        raise CountError(f"{count} tagged fields with {end - pos} bytes left")
    for _ in range(count):
        tag, pos = _uvarint(data, pos, end)
        size, pos = _uvarint(data, pos, end)
        if size > end - pos:
            raise CountError(f"a tagged field of {size} bytes with {end - pos} left")
        inner = known.get(tag)
        if inner is not None:
            inner(data, pos, pos + size)
        pos += size
    return pos


def check_counts(cls: Any, frame: bytes, offset: int) -> None:
    """Raise `CountError` if a count or length in `frame[offset:]` (a `cls` body)
    exceeds the bytes left after it."""
    _entity(cls)(memoryview(frame), offset, len(frame))
