"""A structure-aware Kafka request fuzzer: frames from kio's schemas, with mutations.

`FrameFuzzer(seed, apis)` yields request frames (size prefix included) for every
(api key, version) in `apis` (the ranges a broker announced in ApiVersions). Each
frame is encoded field by field from the kio request dataclass (its `kafka_type`
metadata, nullability, tags and flexibility), by this module's own writer rather than
kio's, so that one emitted field can be broken on purpose:

- integers: boundary values (min, max, -1, 0) of their width; booleans other than 0/1;
- strings and bytes: negative lengths, lengths past the end, invalid UTF-8;
- arrays: null where not nullable, -2, huge counts, counts larger than what follows;
- compact varints: overlong encodings, a varint cut off at the end of the frame;
- tagged fields: unknown tags, sizes past the end, duplicated tags;
- record batches (Produce): bad CRC, batch length, magic, attributes (compression
  codecs with garbage payloads, timestamp type), record counts, timestamps;
- the header: api key, api version, correlation id, client id.

Unmutated frames (`frame(mutate=False)`) are well formed with odd values, so handlers
see those too. `raw_frame()` gives the raw-byte kind: random frames, random size
prefixes, truncations and concatenations. Everything is drawn from one `random.Random`
so a seed replays exactly.
"""

from __future__ import annotations

import dataclasses
import random
import struct
import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import crc32c
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
)

from shoal.protocol import codec
from tests.support.batches import HEADER, build_batch

INT_WIDTH = {
    "int8": 1,
    "int16": 2,
    "int32": 4,
    "int64": 8,
    "uint16": 2,
    "error_code": 2,
    "timedelta_i32": 4,
    "timedelta_i64": 8,
    "datetime_i64": 8,
}
INT_FORMAT = {1: ">b", 2: ">h", 4: ">i", 8: ">q"}
FIELDS_MUTATED_MAX = 48
"""A mutated frame breaks one of its first this-many emitted fields (or its tail)."""


class _Cut(Exception):
    """Stop encoding here: the frame ends inside a field (a truncated varint)."""


@dataclass(frozen=True)
class ApiRange:
    api_key: int
    min_version: int
    max_version: int


def uvarint(value: int, *, overlong: int = 0) -> bytes:
    """Kafka's unsigned varint; `overlong` extra zero groups (still decodable by a
    lenient reader, refused by a strict one)."""
    out = bytearray()
    value &= (1 << 64) - 1
    while True:
        byte = value & 0x7F
        value >>= 7
        if not value:
            break
        out.append(byte | 0x80)
    if overlong:
        out.append(byte | 0x80)
        out += b"\x80" * (overlong - 1) + b"\x00"
    else:
        out.append(byte)
    return bytes(out)


class _Writer:
    """Encodes one request, breaking the emitted field numbered `target` (or none)."""

    def __init__(self, rng: random.Random, names: Sequence[str], target: int | None) -> None:
        self.rng = rng
        self.names = names
        self.target = target
        self.emitted = 0
        self.out = bytearray()
        self.mutation = "none"

    def _hit(self, what: str) -> bool:
        index = self.emitted
        self.emitted += 1
        if index == self.target:
            self.mutation = what
            return True
        return False

    # ---- lengths and counts

    def _length(self, length: int | None, *, flexible: bool, width: int, what: str) -> None:
        """A string/bytes (width 2 or 4) or array (width 4) length; None is null."""
        if self._hit(f"{what} length"):
            self._bad_length(length, flexible=flexible, width=width)
            return
        if flexible:
            self.out += uvarint(0 if length is None else length + 1)
        else:
            self.out += struct.pack(INT_FORMAT[width], -1 if length is None else length)

    def _bad_length(self, length: int | None, *, flexible: bool, width: int) -> None:
        rng = self.rng
        choice = rng.randrange(6)
        if flexible and choice == 0:
            self.out += uvarint(0 if length is None else length + 1, overlong=rng.randrange(1, 6))
            self.mutation += " overlong"
            return
        if flexible and choice == 1:
            self.out += b"\x80" * rng.randrange(1, 10)
            self.mutation += " varint cut"
            raise _Cut
        limit = (1 << (8 * width - 1)) - 1
        value = rng.choice([-1, -2, -limit - 1, limit, (length or 0) + rng.randrange(1, 5000)])
        self.mutation += f" {value}"
        if flexible:
            self.out += uvarint(value + 1 if value >= -1 else value)
        else:
            self.out += struct.pack(INT_FORMAT[width], value)

    # ---- primitives

    def primitive(self, kafka_type: str, name: str, *, flexible: bool, nullable: bool) -> None:
        rng = self.rng
        width = INT_WIDTH.get(kafka_type)
        if width is not None:
            self._int(width, name, unsigned=kafka_type == "uint16")
        elif kafka_type == "bool":
            broken = self._hit(f"{name} bool")
            self.out.append(rng.randrange(2, 256) if broken else rng.randrange(2))
        elif kafka_type == "float64":
            broken = self._hit(f"{name} float")
            value = rng.choice([float("nan"), float("inf"), -0.0]) if broken else rng.random()
            self.out += struct.pack(">d", value)
        elif kafka_type == "uuid":
            self._hit(f"{name} uuid")
            self.out += rng.choice([bytes(16), rng.randbytes(16)])
        elif kafka_type == "string":
            self._string(name, flexible=flexible, nullable=nullable)
        elif kafka_type == "bytes":
            data = None if nullable and rng.random() < 0.2 else rng.randbytes(rng.randrange(40))
            self._blob(data, name, flexible=flexible)
        elif kafka_type == "records":
            self._records(name, flexible=flexible, nullable=nullable)
        else:
            raise AssertionError(f"unknown kafka_type {kafka_type} of {name}")

    def _int(self, width: int, name: str, *, unsigned: bool) -> None:
        rng = self.rng
        if self._hit(f"{name} int{8 * width}"):
            limit = (1 << (8 * width - 1)) - 1
            value = rng.choice([-limit - 1, limit, -1, 0, -2, limit // 2 + 1])
            self.mutation += f" {value}"
        elif "timeout" in name or "wait" in name or name.endswith("_ms"):
            value = rng.choice([0, 1, 10, 100])  # keep parked requests short
        elif "partition" in name or name in ("index", "partition_index"):
            value = rng.choice([0, 0, 1, 2])
        else:
            value = rng.choice([0, 0, 1, 1, 2, 3, -1, rng.randrange(1000)])
        if unsigned:
            self.out += struct.pack(">H", value & 0xFFFF)
        else:
            lo = -(1 << (8 * width - 1))
            value = max(lo, min(-lo - 1, value))
            self.out += struct.pack(INT_FORMAT[width], value)

    def _string(self, name: str, *, flexible: bool, nullable: bool) -> None:
        rng = self.rng
        if nullable and rng.random() < 0.15:
            self._length(None, flexible=flexible, width=2, what=name)
            return
        data = rng.choice(self.names).encode()
        if self._hit(f"{name} content"):
            data = rng.choice([b"\xff\xfe\xc3", b"\xed\xa0\x80", b"a\x00b", b"x" * 30_000])
            self.mutation += f" {data[:8]!r}"
        self._length(len(data), flexible=flexible, width=2, what=name)
        self.out += data

    def _blob(self, data: bytes | None, name: str, *, flexible: bool) -> None:
        self._length(None if data is None else len(data), flexible=flexible, width=4, what=name)
        if data is not None:
            self.out += data

    def _records(self, name: str, *, flexible: bool, nullable: bool) -> None:
        rng = self.rng
        if nullable and rng.random() < 0.05:
            self._blob(None, name, flexible=flexible)
            return
        broken = self._hit(f"{name} batch")
        batch, kind = record_batch(rng, broken=broken)
        if broken:
            self.mutation += f" {kind}"
        self._blob(batch, name, flexible=flexible)

    # ---- structures

    def entity(self, cls: Any) -> None:
        flexible = bool(cls.__flexible__)
        tagged: list[tuple[int, Any]] = []
        for field in dataclasses.fields(cls):
            tag = get_field_tag(field)
            if tag is not None:
                tagged.append((int(tag), field))
                continue
            self.field(field, flexible=flexible)
        if flexible:
            self.tagged_fields(tagged)

    def field(self, field: dataclasses.Field[Any], *, flexible: bool, tagged: bool = False) -> None:
        kind = classify_field(field)
        nullable = _nullable(field.type) and not tagged  # a null tagged field is left out
        if isinstance(kind, EntityTupleField | PrimitiveTupleField):
            rng = self.rng
            if nullable and rng.random() < 0.1:
                self._length(None, flexible=flexible, width=4, what=f"{field.name}[]")
                return
            count = rng.choice([0, 1, 1, 1, 2, 3])
            self._length(count, flexible=flexible, width=4, what=f"{field.name}[]")
            for _ in range(count):
                if isinstance(kind, EntityTupleField):
                    self.entity(kind.type_)
                else:
                    self.primitive(
                        get_schema_field_type(field), field.name, flexible=flexible, nullable=False
                    )
        elif isinstance(kind, EntityField):
            if nullable:
                self.out += b"\x01"
            self.entity(kind.type_)
        else:
            self.primitive(
                get_schema_field_type(field), field.name, flexible=flexible, nullable=nullable
            )

    def tagged_fields(self, known: list[tuple[int, Any]]) -> None:
        rng = self.rng
        chosen = [item for item in known if rng.random() < 0.3]
        if self._hit("tagged fields"):
            self._bad_tags(chosen)
            return
        self.out += uvarint(len(chosen))
        for tag, field in chosen:
            inner = _Writer(rng, self.names, None)
            inner.field(field, flexible=True, tagged=True)
            self.out += uvarint(tag) + uvarint(len(inner.out)) + inner.out

    def _bad_tags(self, known: list[tuple[int, Any]]) -> None:
        rng = self.rng
        choice = rng.randrange(4)
        if choice == 0:  # unknown tags: Kafka skips them
            tags = sorted(rng.sample(range(1000, 100_000), rng.randrange(1, 4)))
            self.out += uvarint(len(tags))
            for tag in tags:
                data = rng.randbytes(rng.randrange(20))
                self.out += uvarint(tag) + uvarint(len(data)) + data
            self.mutation += " unknown tags"
        elif choice == 1:  # a size past the end
            self.out += uvarint(1) + uvarint(rng.randrange(50_000)) + uvarint(1 << 30) + b"ab"
            self.mutation += " size past end"
        elif choice == 2:  # the same tag twice / out of order
            tag = known[0][0] if known else 7
            self.out += uvarint(2) + uvarint(tag) + b"\x00" + uvarint(tag) + b"\x00"
            self.mutation += " repeated tag"
        else:  # a count with no tags after it
            self.out += uvarint(rng.choice([1, 200, 1 << 31]))
            self.mutation += " count without tags"


def _nullable(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    return origin in (types.UnionType, typing.Union) and type(None) in typing.get_args(annotation)


# ---- record batches


BATCH_MUTATIONS = (
    "crc",
    "batch-length",
    "magic",
    "codec-garbage",
    "attributes",
    "record-count",
    "timestamps",
    "truncated",
    "trailing",
    "records-garbage",
)


def record_batch(rng: random.Random, *, broken: bool) -> tuple[bytes, str]:
    """A valid v2 batch of a few records, or (broken) one with a header or payload
    fault; returns (batch, the fault's name)."""
    count = rng.randrange(1, 4)
    batch = bytearray(build_batch([b"fuzz-%d" % i for i in range(count)]))
    if not broken:
        return bytes(batch), "valid"
    kind = rng.choice(BATCH_MUTATIONS)
    if kind == "crc":
        batch[17] ^= 0xFF
        return bytes(batch), kind
    if kind == "batch-length":
        struct.pack_into(">i", batch, 8, rng.choice([-1, 0, 5, 1 << 30, len(batch) - 11]))
    elif kind == "magic":
        batch[16] = rng.choice([0, 1, 3, 255])
    elif kind == "codec-garbage":
        codec_id = rng.randrange(1, 8)
        struct.pack_into(">h", batch, 21, codec_id)
        batch[HEADER.size :] = rng.randbytes(rng.randrange(1, 64))
        struct.pack_into(">i", batch, 8, len(batch) - 12)
    elif kind == "attributes":
        struct.pack_into(">h", batch, 21, rng.choice([-1, 0x08, 0x10, 0x20, 0x30, 0x7FFF]))
    elif kind == "record-count":
        struct.pack_into(">i", batch, HEADER.size - 4, rng.choice([-1, 0, 1 << 30, count + 5]))
    elif kind == "timestamps":
        struct.pack_into(">qq", batch, 27, rng.choice([-1, -(1 << 63)]), (1 << 63) - 1)
    elif kind == "truncated":
        del batch[rng.randrange(1, len(batch)) :]
        return bytes(batch), kind
    elif kind == "trailing":
        batch += rng.randbytes(rng.randrange(1, 30))
        return bytes(batch), kind
    else:
        batch[HEADER.size :] = rng.randbytes(len(batch) - HEADER.size)
    struct.pack_into(">I", batch, 17, int(crc32c.crc32c(bytes(batch[21:]))))  # a valid CRC
    return bytes(batch), kind


# ---- frames


@dataclass(frozen=True)
class Frame:
    data: bytes
    what: str
    """api, version and the mutation applied, for reports and regression tests."""


class FrameFuzzer:
    """Seeded source of fuzzed request frames for the announced `apis`."""

    def __init__(self, seed: int, apis: Sequence[ApiRange], names: Sequence[str]) -> None:
        self.rng = random.Random(seed)
        self.targets = [
            (a.api_key, version)
            for a in apis
            for version in range(a.min_version, a.max_version + 1)
            if codec.request_class(a.api_key, version) is not None
        ]
        self.names = list(names)

    def frame(self, *, mutate: bool = True) -> Frame:
        """One structure-aware frame: well formed (odd values, valid encoding) unless
        `mutate`, when one field, the header or the tail is broken."""
        rng = self.rng
        api_key, version = rng.choice(self.targets)
        cls = codec.request_class(api_key, version)
        header_fault = mutate and rng.random() < 0.05
        target = rng.randrange(FIELDS_MUTATED_MAX) if mutate and not header_fault else None
        writer = _Writer(rng, self.names, target)
        try:
            writer.entity(cls)
        except _Cut:
            pass
        body = bytes(writer.out)
        mutation = writer.mutation
        if target is not None and mutation == "none":
            body, mutation = self._tail_mutation(body)
        header, header_mutation = self._header(api_key, version, broken=header_fault)
        name = codec.api_name(api_key)
        what = f"{name} v{version}: {header_mutation or mutation}"
        return Frame(struct.pack(">i", len(header) + len(body)) + header + body, what)

    def _tail_mutation(self, body: bytes) -> tuple[bytes, str]:
        rng = self.rng
        if body and rng.random() < 0.5:
            cut = rng.randrange(len(body))
            return body[:cut], f"body cut at {cut} of {len(body)}"
        if body:
            data = bytearray(body)
            position = rng.randrange(len(data))
            data[position] ^= 1 << rng.randrange(8)
            return bytes(data), f"bit flipped at {position}"
        return rng.randbytes(4), "random body"

    def _header(self, api_key: int, version: int, *, broken: bool) -> tuple[bytes, str | None]:
        rng = self.rng
        flexible = codec.is_flexible(api_key, version)
        correlation = rng.randrange(1 << 31)
        client_id: bytes | None = b"fuzz"
        mutation = None
        if broken:
            choice = rng.randrange(5)
            if choice == 0:
                api_key = rng.choice([-1, 99, 1000, 32767, -32768])
                mutation = f"header api key {api_key}"
            elif choice == 1:
                version = rng.choice([-1, version + 1, 100, 32767])
                mutation = f"header version {version}"
            elif choice == 2:
                correlation = rng.choice([-1, 0, (1 << 31) - 1, -(1 << 31)])
                mutation = f"header correlation {correlation}"
            elif choice == 3:
                client_id = rng.choice([None, b"\xff\xfe", b"c" * 30_000])
                mutation = "header client id"
            else:
                header = struct.pack(">hhih", api_key, version, correlation, rng.choice([-2, 9999]))
                return header, "header client id length"
        header = struct.pack(">hhi", api_key, version, correlation)
        if client_id is None:
            header += struct.pack(">h", -1)
        else:
            header += struct.pack(">h", len(client_id)) + client_id
        if flexible:
            header += b"\x00" if not broken or rng.random() < 0.5 else b"\x01\x05\x02xx"
        return header, mutation

    def raw_frame(self) -> Frame:
        """Raw bytes: random frames, random size prefixes, truncations, concatenations."""
        rng = self.rng
        choice = rng.randrange(5)
        if choice == 0:
            body = rng.randbytes(rng.randrange(0, 600))
            return Frame(struct.pack(">i", len(body)) + body, "raw random frame")
        if choice == 1:
            size = rng.choice([-1, 0, 3, 7, 1 << 30, -(1 << 31), rng.randrange(1 << 20)])
            return Frame(struct.pack(">i", size) + rng.randbytes(rng.randrange(64)), "raw size")
        if choice == 2:
            data = self.frame().data
            cut = rng.randrange(len(data))
            return Frame(data[:cut], f"raw truncated at {cut}")
        if choice == 3:
            first, second = self.frame().data, self.frame().data
            joined = first[:-1] + second if rng.random() < 0.5 else first + second[4:]
            return Frame(joined, "raw concatenation")
        return Frame(rng.randbytes(rng.randrange(1, 200)), "raw random bytes")
