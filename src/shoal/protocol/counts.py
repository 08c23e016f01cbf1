"""Refuse an array count larger than the bytes left in the request, and find the
tagged fields Kafka would skip. Sans-I/O.

kio's native reader reserves memory for an array's elements from the count on the
wire before reading them: a 60-byte request announcing 2^31-1 nested structures made
it ask for 75 GB and abort the whole broker process (found by the wire fuzzer). Every
element takes at least one byte, so a count above the bytes left is malformed.
`check_counts(cls, frame, offset)` walks the request's layout (from kio's field
metadata, as kio would read it: lengths read, payloads skipped, known tagged fields
walked within their size) before kio decodes it, and raises `CountError` on the
first impossible count or length. Per request the cost is one pass over its fields
(per topic and partition); record batches and strings are skipped, never read.

The same walk finds unknown tagged fields. Kafka's generated readers skip a tag they
do not know (keeping its bytes), at every struct level and in the request header;
kio's reader raises instead. `scan` returns the edits (byte ranges and their
replacement) that take the unknown fields out: the field itself, the section's count,
and the size of an enclosing known tagged field. `strip` applies them, so that kio
decodes the same request without the unknown fields. Like Kafka's readers, the walk
accepts tags in any order and a tag twice (the earlier one is taken out, so kio keeps
the last value, as Kafka does); a size past the end of the request, or a known tag
whose content is not exactly its size, is refused.

`codec.decode_body` runs the same checks through `protocol/walk.py`: one function
generated per request class from these rules (its tests compare it with `scan` on
every request class). `scan` is the reference, and walks the request header and the
inside of known tagged fields.
"""

from __future__ import annotations

import dataclasses
import io
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
from kio.serial.writers import write_unsigned_varint


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

Edit = tuple[int, int, bytes]
"""Replace frame[start:end] with the bytes."""
Step = Callable[[memoryview, int, int, list[Edit]], int]
"""Given the frame, a position, the end and the edits found so far, returns the position
after one field (appending edits for the unknown tagged fields inside it)."""


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
        if pos < end and data[pos] < 0x80:  # a one-byte varint: the usual case
            return data[pos] - 1, pos + 1
        value, pos = _uvarint(data, pos, end)
        return value - 1, pos
    return _signed(data, pos, width, end), pos + width


def _fixed(size: int) -> Step:
    def step(data: memoryview, pos: int, end: int, edits: list[Edit]) -> int:
        return pos + size

    step.fixed_bytes = size  # type: ignore[attr-defined]  # folded by `_plan`
    return step


def _plan(steps: list[Step]) -> tuple[tuple[int, Step | None], ...]:
    """The steps as (fixed bytes to skip, then the step or None): a run of fixed-width
    fields becomes one addition instead of a call each."""
    plan: list[tuple[int, Step | None]] = []
    fixed = 0
    for field_step in steps:
        size = getattr(field_step, "fixed_bytes", None)
        if size is not None:
            fixed += size
        else:
            plan.append((fixed, field_step))
            fixed = 0
    if fixed:
        plan.append((fixed, None))
    return tuple(plan)


def _sized(flexible: bool, width: int) -> Step:
    def step(data: memoryview, pos: int, end: int, edits: list[Edit]) -> int:
        length, pos = _length(data, pos, end, flexible=flexible, width=width)
        if length > end - pos:
            raise CountError(f"a length of {length} with {end - pos} bytes left")
        return pos + max(length, 0)

    return step


def _array(flexible: bool, element: Step) -> Step:
    def step(data: memoryview, pos: int, end: int, edits: list[Edit]) -> int:
        count, pos = _length(data, pos, end, flexible=flexible, width=4)
        if count > end - pos:
            raise CountError(f"an array of {count} with {end - pos} bytes left")
        for _ in range(count):
            pos = element(data, pos, end, edits)
        return pos

    return step


def _nullable_entity(entity: Step) -> Step:
    def step(data: memoryview, pos: int, end: int, edits: list[Edit]) -> int:
        marker = _signed(data, pos, 1, end)
        return pos + 1 if marker < 0 else entity(data, pos + 1, end, edits)

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
    header = cls.__name__ == "RequestHeader"
    for field in dataclasses.fields(cls):
        tag = get_field_tag(field)
        if header and field.name == "client_id":  # a legacy string in every header version
            steps.append(_field(field, False))
        elif tag is None:
            steps.append(_field(field, flexible))
        else:
            tagged[int(tag)] = _field(field, flexible)

    plan = _plan(steps)

    def step(data: memoryview, pos: int, end: int, edits: list[Edit]) -> int:
        for fixed, field_step in plan:
            pos += fixed
            if field_step is not None:
                pos = field_step(data, pos, end, edits)
        if flexible:
            pos = _tags(data, pos, end, tagged, edits)
        if pos > end:
            raise CountError("the request ends inside a field")
        return pos

    _ENTITIES[cls] = step
    return step


def _tags(data: memoryview, pos: int, end: int, known: dict[int, Step], edits: list[Edit]) -> int:
    if pos < end and data[pos] == 0:  # no tagged fields: the usual case
        return pos + 1
    count_at = pos
    count, pos = _uvarint(data, pos, end)
    count_end = pos
    if count > end - pos:
        raise CountError(f"{count} tagged fields with {end - pos} bytes left")
    first_edit = len(edits)
    unknown = 0
    spans: dict[int, tuple[int, int]] = {}
    """Each known tag's field: [start, end) in the frame."""
    repeated: list[tuple[int, int]] = []
    """Fields of known tags that came again later in the section."""
    for _ in range(count):
        field_at = pos
        tag, pos = _uvarint(data, pos, end)
        size_at = pos
        size, pos = _uvarint(data, pos, end)
        if size > end - pos:
            raise CountError(f"a tagged field of {size} bytes with {end - pos} left")
        inner = known.get(tag)
        if inner is None:  # Kafka keeps it as an unknown tagged field; Shoal drops it
            unknown += 1
            edits.append((field_at, pos + size, b""))
        else:
            inner_first = len(edits)
            if inner(data, pos, pos + size, edits) != pos + size:
                # Kafka reads a known tagged field by its type, not its size: a size
                # that disagrees with the content desynchronises the rest.
                raise CountError(f"a tagged field of {size} bytes holds a different size")
            if len(edits) > inner_first:  # unknown fields inside: the size shrinks
                removed = sum(stop - start - len(new) for start, stop, new in edits[inner_first:])
                edits.insert(inner_first, (size_at, pos, _uvarint_bytes(size - removed)))
            earlier = spans.get(tag)
            if earlier is not None:
                # A known tag twice: Kafka keeps the last value; kio refuses a repeated
                # struct-typed tag, so the earlier one is taken out.
                repeated.append(earlier)
                unknown += 1
            spans[tag] = (field_at, pos + size)
        pos += size
    if repeated:
        kept = [
            edit
            for edit in edits[first_edit:]
            if not any(start <= edit[0] and edit[1] <= stop for start, stop in repeated)
        ]
        kept.extend((start, stop, b"") for start, stop in repeated)
        kept.sort(key=lambda edit: edit[0])
        edits[first_edit:] = kept
    if unknown:
        edits.insert(first_edit, (count_at, count_end, _uvarint_bytes(count - unknown)))
    return pos


def _uvarint_bytes(value: int) -> bytes:
    buffer = io.BytesIO()
    write_unsigned_varint(buffer, value)  # type: ignore[arg-type]  # a checked int
    return buffer.getvalue()


def check_counts(cls: Any, frame: bytes, offset: int) -> None:
    """Raise `CountError` if a count or length in `frame[offset:]` (a `cls` body)
    exceeds the bytes left after it."""
    scan(cls, frame, offset)


def scan(cls: Any, frame: bytes, offset: int) -> tuple[int, list[Edit]]:
    """Walk a `cls` at `frame[offset:]`: (position after it, edits taking out its unknown
    tagged fields). Raises `CountError` on a count or length past the end."""
    edits: list[Edit] = []
    pos = _entity(cls)(memoryview(frame), offset, len(frame), edits)
    return pos, edits


def strip(frame: bytes, offset: int, end: int, edits: list[Edit]) -> bytes:
    """`frame[offset:end]` with the edits applied (positions are in `frame`)."""
    pieces: list[bytes | memoryview] = []
    view = memoryview(frame)
    at = offset
    for start, stop, new in edits:
        pieces.append(view[at:start])
        pieces.append(new)
        at = stop
    pieces.append(view[at:end])
    return b"".join(pieces)
