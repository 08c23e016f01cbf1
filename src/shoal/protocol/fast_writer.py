"""kio entity writers composed for speed: the same bytes as `kio.serial.entity_writer`,
built from kio's own schema metadata and primitive writers, for the per-request path.

kio's generic writer pays, for every entity written, a fresh `BytesIO` for its tagged
fields, a phantom-type check for each varint length and a per-field comparison of
every tagged field with its default. At one Produce or ShareFetch response per record
that was as much broker CPU as the handler itself (docs/latency.md). This module
composes, once per entity class:

- the kio writer of each primitive field (`get_field_writer`, unchanged), except that
  compact strings and bytes write their length without constructing a phantom
  `uvarint` (same encoding, a length below 0x80 as its one byte), and that a run of
  consecutive fixed-width fields (kio's int, bool, float, error-code and ms-timedelta
  writers, `_FIXED`) is packed by one `struct.Struct` of the codes those writers use;
- the untagged fields written by one function generated per class from the field
  list (`_plain_writer`), so a field costs no call of its own;
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
import struct
from collections.abc import Callable, Sequence
from dataclasses import MISSING
from typing import Any

from kio.serial import writers
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


_ONE_BYTE_VARINTS = tuple(bytes((value,)) for value in range(0x80))
"""An unsigned varint below 0x80 is that one byte (the usual string or array length)."""


def _varint(buffer: Any, value: int) -> None:
    write_unsigned_varint(buffer, value)  # type: ignore[arg-type]  # a checked int


def _write_compact_bytes(buffer: Any, value: str | bytes | None) -> None:
    if value is None:
        buffer.write(_NULL_COMPACT)
        return
    if isinstance(value, str):
        value = value.encode()
    length = len(value) + 1
    if length < 0x80:
        buffer.write(_ONE_BYTE_VARINTS[length])
    else:
        _varint(buffer, length)
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
        length = len(items) + 1
        if length < 0x80:
            buffer.write(_ONE_BYTE_VARINTS[length])
        else:
            _varint(buffer, length)
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


_FIXED: dict[Any, tuple[str, str]] = {
    writers.write_boolean: ("?", "{}"),
    writers.write_int8: ("b", "{}"),
    writers.write_int16: ("h", "{}"),
    writers.write_int32: ("i", "{}"),
    writers.write_int64: ("q", "{}"),
    writers.write_uint8: ("B", "{}"),
    writers.write_uint16: ("H", "{}"),
    writers.write_uint32: ("I", "{}"),
    writers.write_uint64: ("Q", "{}"),
    writers.write_float64: ("d", "{}"),
    writers.write_error_code: ("h", "{}"),  # an IntEnum: packed as its value
    writers.write_timedelta_i32: ("i", "_round({}.total_seconds() * 1000)"),
    writers.write_timedelta_i64: ("q", "_round({}.total_seconds() * 1000)"),
}
"""kio's writers of fixed-width fields: the struct code each packs with and the
expression of the value it packs (for the time types, kio's conversion to ms)."""


def _plain_writer(entity_type: type[Any], plain: list[tuple[str, Writer]], tail: bytes) -> Writer:
    """One function writing the untagged fields in order, then `tail`: consecutive
    fixed-width fields (`_FIXED`) packed by one `struct.Struct`, every other field by
    its writer. Generated as source (as `dataclasses` generates `__init__`) from the
    field list, so a field costs no call of its own."""
    namespace: dict[str, Any] = {"_round": round, "_tail": tail}
    lines = ["def write(buffer, entity):", "    write = buffer.write"]
    run_codes: list[str] = []
    run_values: list[str] = []

    def end_run() -> None:
        if run_codes:
            packer = f"_pack{len(namespace)}"
            namespace[packer] = struct.Struct(">" + "".join(run_codes)).pack
            lines.append(f"    write({packer}({', '.join(run_values)}))")
            run_codes.clear()
            run_values.clear()

    for name, writer in plain:
        assert name.isidentifier(), (entity_type, name)
        fixed = _FIXED.get(writer)
        if fixed is not None:
            run_codes.append(fixed[0])
            run_values.append(fixed[1].format(f"entity.{name}"))
            continue
        end_run()
        field_writer = f"_write{len(namespace)}"
        namespace[field_writer] = writer
        lines.append(f"    {field_writer}(buffer, entity.{name})")
    end_run()
    if tail:
        lines.append("    write(_tail)")
    if len(lines) == 2:
        lines.append("    return None")
    exec("\n".join(lines), namespace)  # source built above from kio's fields
    write: Writer = namespace["write"]
    write.__qualname__ = f"write_{entity_type.__name__}"
    return write


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

    if not flexible:
        return _plain_writer(entity_type, plain, b"")

    if not tagged:
        return _plain_writer(entity_type, plain, _NO_TAGGED_FIELDS)

    write_fields = _plain_writer(entity_type, plain, b"")
    tags = tuple(sorted(tagged))  # kio writes tagged fields in tag order

    def write_tagged(buffer: Any, entity: Any) -> None:
        write_fields(buffer, entity)
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
