"""kio entity writers composed for speed: the same bytes as `kio.serial.entity_writer`,
built from kio's own schema metadata and primitive writers, for the per-request path.

kio's generic writer pays, for every entity written, a fresh `BytesIO` for its tagged
fields, a phantom-type check for each varint length and a per-field comparison of
every tagged field with its default. At one Produce or ShareFetch response per record
that was as much broker CPU as the handler itself (docs/latency.md). This module
composes, once per entity class:

- the kio writer of each primitive field (`get_field_writer`, unchanged), except that
  compact strings and bytes write their length without constructing a phantom
  `uvarint` (same encoding);
- nested entities and entity arrays through the composed writers, recursively (the
  array length likewise without the phantom);
- for a flexible entity, the tagged-field section as the single byte 0 when every
  tagged field holds its default, which is the case on every hot response; else the
  fields kio would write (same skip rule, tag order, tag and length varints, value by
  kio's tag-field writer). Every share state write carries one (its delivery
  complete count, KIP-1226), and kio's whole-entity writer was ~20% of that write.

Nothing here knows a message layout: fields, their order, types, nullability and tags
all come from the kio dataclasses. `tests/unit/test_fast_writer.py` checks the bytes
equal kio's for generated instances of every request and response class kio has.
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Callable, Sequence
from dataclasses import MISSING
from typing import Any

from kio.serial._implicit_defaults import get_tagged_field_default
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)
from kio.serial._serialize import _wrap_nullable, get_field_writer
from kio.serial.writers import legacy_array_writer, write_unsigned_varint

Writer = Callable[[Any, Any], None]

_NO_TAGGED_FIELDS = b"\x00"
"""The tagged-field section of a flexible entity with none set: a varint count 0."""
_NULL_COMPACT = b"\x00"
"""A null compact string, bytes or array: the varint length+1 of null, 0."""
_COMPACT_STRING_TYPES = frozenset({"string", "bytes", "records"})


def _varint(buffer: Any, value: int) -> None:
    write_unsigned_varint(buffer, value)  # type: ignore[arg-type]  # a checked int


def _write_compact_bytes(buffer: Any, value: str | bytes | None) -> None:
    if value is None:
        buffer.write(_NULL_COMPACT)
        return
    if isinstance(value, str):
        value = value.encode()
    _varint(buffer, len(value) + 1)
    buffer.write(value)


def _write_compact_bytes_required(buffer: Any, value: str | bytes) -> None:
    if value is None:
        raise TypeError("Unexpectedly received None value")
    _write_compact_bytes(buffer, value)


def _compact_array(item_writer: Writer) -> Writer:
    def write_array(buffer: Any, items: Sequence[Any] | None) -> None:
        if items is None:
            buffer.write(_NULL_COMPACT)
            return
        _varint(buffer, len(items) + 1)
        for item in items:
            item_writer(buffer, item)

    return write_array


def _field_writer(field: dataclasses.Field[Any], flexible: bool, request_header: bool) -> Writer:
    kind = classify_field(field)
    if isinstance(kind, EntityField):
        inner = entity_writer(kind.type_)
        return _wrap_nullable(inner) if is_optional(field) else inner
    if isinstance(kind, EntityTupleField):
        inner = entity_writer(kind.type_)
        return _compact_array(inner) if flexible else legacy_array_writer(inner)
    if (
        flexible
        and not kind.is_array
        and not (request_header and field.name == "client_id")
        and get_schema_field_type(field) in _COMPACT_STRING_TYPES
    ):
        return _write_compact_bytes if is_optional(field) else _write_compact_bytes_required
    writer: Writer = get_field_writer(
        field, flexible=flexible, is_request_header=request_header, is_tag=False
    )
    return writer


_WRITERS: dict[type[Any], Writer] = {}


def entity_writer(entity_type: type[Any]) -> Writer:
    """The composed writer of a kio entity class (see the module docstring), built
    once per class."""
    writer = _WRITERS.get(entity_type)
    if writer is None:
        writer = _WRITERS[entity_type] = _compose(entity_type)
    return writer


def _compose(entity_type: type[Any]) -> Writer:
    flexible = bool(entity_type.__flexible__)
    request_header = entity_type.__name__ == "RequestHeader"
    plain: list[tuple[str, Writer]] = []
    tagged: list[tuple[int, str, Any, Any, Writer]] = []
    for field in dataclasses.fields(entity_type):
        tag = get_field_tag(field)
        if tag is not None:
            value_writer = get_field_writer(
                field, flexible=flexible, is_request_header=request_header, is_tag=True
            )
            tagged.append(
                (tag, field.name, field.default, get_tagged_field_default(field), value_writer)
            )
        else:
            plain.append((field.name, _field_writer(field, flexible, request_header)))
    fields = tuple(plain)

    if not flexible:

        def write_legacy(buffer: Any, entity: Any) -> None:
            for name, writer in fields:
                writer(buffer, getattr(entity, name))

        return write_legacy

    if not tagged:

        def write_flexible(buffer: Any, entity: Any) -> None:
            for name, writer in fields:
                writer(buffer, getattr(entity, name))
            buffer.write(_NO_TAGGED_FIELDS)

        return write_flexible

    tags = tuple(sorted(tagged))  # kio writes tagged fields in tag order

    def write_tagged(buffer: Any, entity: Any) -> None:
        for name, writer in fields:
            writer(buffer, getattr(entity, name))
        present = []
        for tag, name, default, implicit, value_writer in tags:
            value = getattr(entity, name)
            # kio's rule for skipping a tagged field, kept exactly
            if not (value == default or (default == MISSING and value == implicit)):
                present.append((tag, value_writer, value))
        if not present:
            buffer.write(_NO_TAGGED_FIELDS)
            return
        _varint(buffer, len(present))
        for tag, value_writer, value in present:  # as kio's `write_tagged_field`
            encoded = io.BytesIO()
            value_writer(encoded, value)
            data = encoded.getvalue()
            _varint(buffer, tag)
            _varint(buffer, len(data))
            buffer.write(data)

    return write_tagged
