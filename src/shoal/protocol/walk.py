"""The request pre-pass of `codec.decode_body`, generated per request class: the count
checks and unknown-tag edits of `counts.scan` and a null pre-check for `nulls`, in one
function with no call per field or nested entity. Sans-I/O.

`counts.scan` walks a body through a closure per field (the reference: it stays for the
request header and inside known tagged fields), and `nulls.null_field` then walks the
decoded entity once more. Per ShareFetch, ShareAcknowledge or Produce that was ~25
Python calls and two thirds of the decode's CPU (kio's native reader being the rest).
`walker(cls)` generates, once per class, the source of one function (as `dataclasses`
generates `__init__`, and `fast_writer` its writers) from kio's field metadata: the
untagged fields in wire order, nested entities and arrays of entities as nested loops,
runs of fixed-width fields as one addition. Each count and length is checked exactly
as `counts.scan` checks it, with the same `CountError` messages; a tagged-field section
that is not the usual single byte 0 is handed to `counts` (`_tags`, unchanged), so the
edits for unknown tags are the same list.

Nulls: kio decodes None only from a null (negative) length on the wire. The walk notes
whether a non-nullable untagged field outside tagged sections (the fields `nulls`
checks) has one; only then does `codec` run `nulls.null_field` on the decoded entity,
which names the field as before. A request without a null costs no second walk.

`tests/unit/protocol/test_walk.py` compares the walk with `counts.scan` on kio-encoded
generated instances of every request class, truncated and mutated.
"""

from __future__ import annotations

import dataclasses
import struct
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

from shoal.protocol import counts

Walk = Callable[[Any, int], tuple[int, list[counts.Edit], bool]]
"""Given the frame and the body's offset: (position after the body, edits taking out
its unknown tagged fields, whether a non-nullable field may hold a null). Raises
`counts.CountError` as `counts.scan` does."""

_WALKERS: dict[Any, Walk] = {}


def walker(cls: Any) -> Walk:
    """The generated walk of request class `cls` (built once per class)."""
    walk = _WALKERS.get(cls)
    if walk is None:
        assert cls.__name__ != "RequestHeader", "the header's client id is special: counts.scan"
        walk = _WALKERS[cls] = _Generator(cls).build()
    return walk


class _Generator:
    def __init__(self, root: Any) -> None:
        self.root = root
        self.lines = [
            "def walk(data, pos):",
            "    end = len(data)",
            "    edits = []",
            "    suspect = False",
        ]
        self.namespace: dict[str, Any] = {
            "_CountError": counts.CountError,
            "_uvarint": counts._uvarint,
            "_tags": counts._tags,
        }

    def build(self) -> Walk:
        self._entity(self.root, 1)
        self.lines.append("    return pos, edits, suspect")
        exec("\n".join(self.lines), self.namespace)  # source built above from kio's fields
        walk: Walk = self.namespace["walk"]
        walk.__qualname__ = f"walk_{self.root.__name__}"
        return walk

    def _name(self, prefix: str, value: Any) -> str:
        name = f"_{prefix}{len(self.namespace)}"
        self.namespace[name] = value
        return name

    def _emit(self, indent: int, *lines: str) -> None:
        self.lines.extend("    " * indent + line for line in lines)

    def _entity(self, cls: Any, indent: int) -> None:
        """The walk of one `cls` at `pos`, as `counts._entity`'s step."""
        flexible = bool(cls.__flexible__)
        fixed = 0
        tagged: dict[int, counts.Step] = {}
        for field in dataclasses.fields(cls):
            tag = get_field_tag(field)
            if tag is not None:
                tagged[int(tag)] = counts._field(field, flexible)
                continue
            kind = classify_field(field)
            size = None
            if not isinstance(kind, EntityTupleField | PrimitiveTupleField | EntityField):
                size = counts.FIXED_BYTES.get(get_schema_field_type(field))
            if size is not None:
                fixed += size
                continue
            if fixed:
                self._emit(indent, f"pos += {fixed}")
                fixed = 0
            may_be_null = counts._nullable(field.type)
            if isinstance(kind, EntityTupleField | PrimitiveTupleField):
                self._length(indent, flexible, 4)
                self._emit(
                    indent,
                    "if n > end - pos:",
                    '    raise _CountError(f"an array of {n} with {end - pos} bytes left")',
                )
                self._null(indent, may_be_null)
                if isinstance(kind, EntityTupleField):
                    self._emit(indent, "for _ in range(n):")
                    self._entity(kind.type_, indent + 1)
                    continue
                element = get_schema_field_type(field)
                element_size = counts.FIXED_BYTES.get(element)
                if element_size is not None:
                    self._emit(indent, "if n > 0:", f"    pos += n * {element_size}")
                else:
                    self._emit(indent, "for _ in range(n):")
                    self._sized(indent + 1, flexible, counts.LENGTH_BYTES[element], True)
            elif isinstance(kind, EntityField):
                if may_be_null:
                    self._emit(
                        indent,
                        "if pos + 1 > end:",
                        '    raise _CountError("a length runs past the end of the request")',
                        "pos += 1",
                        "if data[pos - 1] < 0x80:",  # the marker: negative for null
                    )
                    self._entity(kind.type_, indent + 1)
                else:
                    self._entity(kind.type_, indent)
            else:
                width = counts.LENGTH_BYTES[get_schema_field_type(field)]
                self._sized(indent, flexible, width, may_be_null)
        if fixed:
            self._emit(indent, f"pos += {fixed}")
        if flexible:
            known = self._name("known", tagged)
            self._emit(
                indent,
                "if pos < end and data[pos] == 0:",
                "    pos += 1",
                "else:",
                f"    pos = _tags(data, pos, end, {known}, edits)",
            )
        self._emit(
            indent,
            "if pos > end:",
            '    raise _CountError("the request ends inside a field")',
        )

    def _length(self, indent: int, flexible: bool, width: int) -> None:
        """`n, pos = counts._length(...)` inlined."""
        if flexible:
            self._emit(
                indent,
                "if pos < end and data[pos] < 0x80:",
                "    n = data[pos] - 1",
                "    pos += 1",
                "else:",
                "    n, pos = _uvarint(data, pos, end)",
                "    n -= 1",
            )
            return
        unpack = self._name("unpack", struct.Struct(">h" if width == 2 else ">i").unpack_from)
        self._emit(
            indent,
            f"if pos + {width} > end:",
            '    raise _CountError("a length runs past the end of the request")',
            f"n = {unpack}(data, pos)[0]",
            f"pos += {width}",
        )

    def _null(self, indent: int, may_be_null: bool) -> None:
        if not may_be_null:
            self._emit(indent, "if n < 0:", "    suspect = True")

    def _sized(self, indent: int, flexible: bool, width: int, may_be_null: bool) -> None:
        """A string or bytes field, as `counts._sized`'s step (an array's element
        strings are not `nulls`' business: `may_be_null` True)."""
        self._length(indent, flexible, width)
        self._emit(
            indent,
            "if n > end - pos:",
            '    raise _CountError(f"a length of {n} with {end - pos} bytes left")',
        )
        self._null(indent, may_be_null)
        self._emit(indent, "if n > 0:", "    pos += n")
