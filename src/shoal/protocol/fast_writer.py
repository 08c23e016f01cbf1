"""kio entity writers composed for speed: the same bytes as `kio.serial.entity_writer`,
built from kio's own schema metadata and primitive writers, for the per-request path.

kio's generic writer pays, for every entity written, a fresh `BytesIO` for its tagged
fields, a phantom-type check for each varint length and a per-field comparison of
every tagged field with its default. At one Produce or ShareFetch response per record
that was as much broker CPU as the handler itself (docs/performance/latency.md). This module
composes, once per entity class:

- one function per class, generated as source from kio's field list (`_compose`),
  writing the whole entity: nested structs and flexible arrays of structs as inline
  attribute chains and loops, so that a field, an element or a nested entity costs
  no call of its own (a response's per-partition entities were a writer call each,
  plus one per array and per string);
- the kio writer of each primitive field (`get_field_writer`, unchanged), except that
  compact strings, bytes and array lengths are written inline without constructing a
  phantom `uvarint` (same encoding, a length below 0x80 as its one byte), and that a
  run of consecutive fixed-width values (kio's int, bool, float, error-code, uuid and
  ms-time writers, `_FIXED`, and the zero byte of an empty tagged-field section),
  across nested structs, is packed by one `struct.Struct` of the codes those writers
  use;
- for a flexible entity, the tagged-field section as the single byte 0 when every
  tagged field holds its default (one inline comparison per tagged field), which is
  the case on every hot response; else the fields kio would write (same skip rule,
  tag order, tag and length varints, value by kio's tag-field writer). Every share
  state write carries one (its delivery complete count, KIP-1226), and kio's
  whole-entity writer was ~20% of that write. Legacy (non-flexible) arrays go through
  kio's array writer around the composed element writer.

Nothing here knows a message layout: fields, their order, types, nullability and tags
all come from the kio dataclasses. `tests/unit/protocol/test_fast_writer.py` checks the bytes
equal kio's for generated instances of every request and response class kio has.
"""

from __future__ import annotations

import dataclasses
import io
import struct
from collections.abc import Callable
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
from kio.serial._serialize import get_field_writer
from kio.serial._shared import NullableEntityMarker
from kio.serial.writers import legacy_array_writer, write_unsigned_varint
from kio.static.constants import uuid_zero

Writer = Callable[[Any, Any], None]

_NO_TAGGED_FIELDS = b"\x00"
"""The tagged-field section of a flexible entity with none set: a varint count 0."""
_NULL_COMPACT = b"\x00"
"""A null compact string, bytes or array: the varint length+1 of null, 0."""
_COMPACT_STRING_TYPES = frozenset({"string", "bytes", "records"})
_NULL_MARKER = struct.pack(">b", NullableEntityMarker.null.value)
_NOT_NULL_MARKER = struct.pack(">b", NullableEntityMarker.not_null.value)
"""KIP-893's int8 before a nullable struct, as kio's `_wrap_nullable` writes it."""


_ONE_BYTE_VARINTS = tuple(bytes((value,)) for value in range(0x80))
"""An unsigned varint below 0x80 is that one byte (the usual string or array length)."""


def _varint(buffer: Any, value: int) -> None:
    write_unsigned_varint(buffer, value)  # type: ignore[arg-type]  # a checked int


def _field_writer(field: dataclasses.Field[Any], flexible: bool, request_header: bool) -> Writer:
    """kio's writer of a field `_entity_source` does not write inline: a legacy
    (non-flexible) array of entities, through the composed entity writer, or any
    other primitive or primitive array."""
    kind = classify_field(field)
    if isinstance(kind, EntityTupleField):
        return legacy_array_writer(entity_writer(kind.type_))
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
    writers.write_datetime_i64: ("q", "_round({0}.timestamp() * 1000)"),
    writers.write_nullable_datetime_i64: (
        "q",
        "(-1 if {0} is None else _round({0}.timestamp() * 1000))",
    ),
    writers.write_uuid: ("16s", "(_UUID_ZERO if {0} is None else {0}.bytes)"),
}
"""kio's writers of fixed-width fields: the struct code each packs with and the
expression of the value it packs (for the time types, kio's conversion to ms; for a
uuid, kio's zero uuid for None)."""


def fixed_codes(entity_type: type[Any]) -> str:
    """The `struct` codes writing an `entity_type` whose fields are all fixed-width
    values packed as they are (a response header: its correlation id), and the zero
    byte of its empty tagged-field section if flexible: so its bytes can be packed
    from the values without building the entity. ValueError for any other class."""
    flexible = bool(entity_type.__flexible__)
    codes = []
    for field in dataclasses.fields(entity_type):
        fixed = None
        if get_field_tag(field) is None and not isinstance(
            classify_field(field), EntityField | EntityTupleField
        ):
            fixed = _FIXED.get(_field_writer(field, flexible, False))
        if fixed is None or fixed[1] != "{}":
            raise ValueError(f"{entity_type.__name__}.{field.name} is not a plain fixed field")
        codes.append(fixed[0])
    return "".join(codes) + ("x" if flexible else "")


class _Source:
    """The source of one writer function and the names it uses (kio's writers,
    `struct` packers, tagged-field defaults)."""

    def __init__(self) -> None:
        self.namespace: dict[str, Any] = {
            "_round": round,
            "_varint": _varint,
            "_ONE": _ONE_BYTE_VARINTS,
            "_MISSING": MISSING,
            "_UUID_ZERO": uuid_zero.bytes,
            "_TWO": struct.Struct(">BB").pack,
        }
        self.lines = ["def write(buffer, entity):", "    write = buffer.write"]

    def name(self, prefix: str, value: Any) -> str:
        name = f"_{prefix}{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def emit(self, indent: int, *lines: str) -> None:
        self.lines.extend("    " * indent + line for line in lines)


class _Run:
    """Consecutive fixed-width values (and zero bytes) to pack with one `struct.Struct`."""

    def __init__(self, source: _Source, indent: int) -> None:
        self.source = source
        self.indent = indent
        self.codes: list[str] = []
        self.values: list[str] = []

    def end(self) -> None:
        if self.codes:
            self.source.emit(self.indent, self.then())
        self.clear()

    def clear(self) -> None:
        self.codes.clear()
        self.values.clear()

    def then(self, codes: str = "", *values: str) -> str:
        """A statement writing the run followed by `codes` of `values` (the run is
        kept: the caller clears it once every branch has written it)."""
        packer = struct.Struct(">" + "".join(self.codes) + codes)
        if not packer.size:
            return "pass"
        every = [*self.values, *values]
        if every:
            return f"write({self.source.name('pack', packer.pack)}({', '.join(every)}))"
        return f"write({packer.pack()!r})"  # zero bytes only (empty tag sections)

    def then_compact_length(self, indent: int, length: str) -> None:
        """The run, then an unsigned varint `length` (an int expression) without kio's
        phantom: one byte below 0x80 (packed with the run), two below 0x4000 (a record
        batch of a few KiB), else kio's."""
        self.source.emit(
            indent,
            f"n = {length}",
            "if n < 0x80:",
            f"    {self.then('B', 'n')}" if self.codes else "    write(_ONE[n])",
            "else:",
        )
        if self.codes:
            self.source.emit(indent + 1, self.then())
        self.source.emit(
            indent + 1,
            "if n < 0x4000:",  # two bytes: low seven bits with the continuation bit first
            "    write(_TWO(n & 0x7F | 0x80, n >> 7))",
            "else:",
            "    _varint(buffer, n)",
        )


def _entity_source(
    source: _Source, entity_type: type[Any], var: str, run: _Run, depth: int, root: bool
) -> None:
    """Append the writing of the `entity_type` at expression `var` (module docstring):
    untagged fields in order, nested entities and flexible arrays of entities inline
    (loop variables e<depth>, a<depth>), then the tagged-field section. Fixed-width
    values join `run` (the caller's, across a nested entity) until something else is
    written; the caller ends it."""
    flexible = bool(entity_type.__flexible__)
    request_header = root and entity_type.__name__ == "RequestHeader"
    indent = run.indent
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
            continue
        assert field.name.isidentifier(), (entity_type, field.name)
        value = f"{var}.{field.name}"
        kind = classify_field(field)
        if isinstance(kind, EntityField):
            if not is_optional(field):
                _entity_source(source, kind.type_, value, run, depth, False)
                continue
            run.end()
            inner = f"e{depth + 1}"
            source.emit(  # KIP-893's marker, as kio's `_wrap_nullable`
                indent,
                f"{inner} = {value}",
                f"if {inner} is None:",
                f"    write({_NULL_MARKER!r})",
                "else:",
                f"    write({_NOT_NULL_MARKER!r})",
            )
            inner_run = _Run(source, indent + 1)
            _entity_source(source, kind.type_, inner, inner_run, depth + 1, False)
            inner_run.end()
            continue
        if isinstance(kind, EntityTupleField) and flexible:
            items, item = f"a{depth}", f"e{depth + 1}"
            source.emit(  # the run so far, then the array's length (0: null)
                indent,
                f"{items} = {value}",
                f"if {items} is None:",
                f"    {run.then('x')}",
                "else:",
            )
            run.then_compact_length(indent + 1, f"len({items}) + 1")
            run.clear()
            source.emit(indent + 1, f"for {item} in {items}:")
            body_at = len(source.lines)
            item_run = _Run(source, indent + 2)
            _entity_source(source, kind.type_, item, item_run, depth + 1, False)
            item_run.end()
            if len(source.lines) == body_at:
                source.emit(indent + 2, "pass")
            continue
        if (
            flexible
            and not kind.is_array
            and not (request_header and field.name == "client_id")
            and get_schema_field_type(field) in _COMPACT_STRING_TYPES
        ):
            refusal = (  # the run so far, then null (0); kio refuses None if required
                f"    {run.then('x')}"
                if is_optional(field)
                else "    raise TypeError('Unexpectedly received None value')"
            )
            source.emit(indent, f"v = {value}", "if v is None:", refusal, "else:")
            source.emit(indent + 1, "if isinstance(v, str):", "    v = v.encode()")
            run.then_compact_length(indent + 1, "len(v) + 1")
            run.clear()
            source.emit(indent + 1, "write(v)")
            continue
        writer = _field_writer(field, flexible, request_header)
        fixed = _FIXED.get(writer)
        if fixed is not None:
            run.codes.append(fixed[0])
            run.values.append(fixed[1].format(value))
            continue
        run.end()
        source.emit(indent, f"{source.name('write', writer)}(buffer, {value})")
    if not flexible:
        return
    if not tagged:
        run.codes.append("x")  # the tagged-field section of none: the byte 0
        return
    run.end()
    tags = tuple(sorted(tagged))  # kio writes tagged fields in tag order
    defaults = []
    for _, name, default, implicit, _ in tags:
        if default is MISSING:
            implicit_name = source.name("implicit", implicit)
            defaults.append(f"({var}.{name} == _MISSING or {var}.{name} == {implicit_name})")
        else:
            defaults.append(f"{var}.{name} == {source.name('default', default)}")
    # kio's rule for skipping a tagged field, kept exactly: every one at its default
    # (every hot response) is the section of none, the byte 0
    source.emit(
        indent,
        f"if {' and '.join(defaults)}:",
        f"    write({_NO_TAGGED_FIELDS!r})",
        "else:",
        f"    {source.name('tags', _tags_writer(tags))}(buffer, {var})",
    )


def _tags_writer(tags: tuple[tuple[int, str, Any, Any, Writer], ...]) -> Writer:
    """The tagged-field section with some field set, as kio writes it."""

    def write_tags(buffer: Any, entity: Any) -> None:
        present = []
        for tag, name, default, implicit, value_writer in tags:
            value = getattr(entity, name)
            # kio's rule for skipping a tagged field, kept exactly
            if not (value == default or (default == MISSING and value == implicit)):
                present.append((tag, value_writer, value))
        _varint(buffer, len(present))
        for tag, value_writer, value in present:  # as kio's `write_tagged_field`
            encoded = io.BytesIO()
            value_writer(encoded, value)
            data = encoded.getvalue()
            _varint(buffer, tag)
            _varint(buffer, len(data))
            buffer.write(data)

    return write_tags


def _compose(entity_type: type[Any]) -> Writer:
    """One function writing an `entity_type`, generated as source (as `dataclasses`
    generates `__init__`) from kio's field list, nested entities included, so that a
    field, an element or a nested entity costs no call of its own."""
    source = _Source()
    run = _Run(source, 1)
    _entity_source(source, entity_type, "entity", run, 0, True)
    run.end()
    if len(source.lines) == 2:
        source.emit(1, "return None")
    exec("\n".join(source.lines), source.namespace)  # source built above from kio's fields
    write: Writer = source.namespace["write"]
    write.__qualname__ = f"write_{entity_type.__name__}"
    return write
