"""Build real Kafka v2 record batches for tests: varint records, CRC-32C, optional codec.

Shared by unit, wire and end-to-end tests (one builder, not one per test package).
`decode_records` reads them back, so tests can check byte-exact round trips.
"""

from __future__ import annotations

import gzip
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

import crc32c

HEADER = struct.Struct(">qiibIhiqqqhii")
COMPRESSION_NONE = 0
COMPRESSION_GZIP = 1


@dataclass(frozen=True)
class Record:
    value: bytes | None
    key: bytes | None = None
    headers: Sequence[tuple[str, bytes | None]] = field(default_factory=tuple)
    timestamp_delta: int = 0


def _varint(value: int) -> bytes:
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        byte = zigzag & 0x7F
        zigzag >>= 7
        if zigzag:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _bytes_field(data: bytes | None) -> bytes:
    return _varint(-1) if data is None else _varint(len(data)) + data


def encode_record(record: Record, offset_delta: int) -> bytes:
    body = (
        b"\x00"
        + _varint(record.timestamp_delta)
        + _varint(offset_delta)
        + _bytes_field(record.key)
        + _bytes_field(record.value)
        + _varint(len(record.headers))
        + b"".join(_bytes_field(k.encode()) + _bytes_field(v) for k, v in record.headers)
    )
    return _varint(len(body)) + body


def build_batch(
    records: Sequence[Record | bytes],
    *,
    base_offset: int = 0,
    base_timestamp: int = 1_700_000_000_000,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    compression: int = COMPRESSION_NONE,
    transactional: bool = False,
    control: bool = False,
    magic: int = 2,
    corrupt_crc: bool = False,
) -> bytes:
    """A complete v2 record batch holding `records` (bytes = a value-only record)."""
    items = [r if isinstance(r, Record) else Record(value=r) for r in records]
    payload = b"".join(encode_record(r, i) for i, r in enumerate(items))
    if compression == COMPRESSION_GZIP:
        payload = gzip.compress(payload)
    elif compression != COMPRESSION_NONE:
        raise ValueError(f"compression {compression} not supported by the test builder")
    attributes = compression | (0x10 if transactional else 0) | (0x20 if control else 0)
    max_timestamp = base_timestamp + max((r.timestamp_delta for r in items), default=0)
    batch_length = HEADER.size - 12 + len(payload)
    header = bytearray(
        HEADER.pack(
            base_offset,
            batch_length,
            0,
            magic,
            0,
            attributes,
            len(items) - 1,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            len(items),
        )
    )
    batch = header + payload
    crc = int(crc32c.crc32c(bytes(batch[21:])))
    if corrupt_crc:
        crc ^= 0xFFFF
    struct.pack_into(">I", batch, 17, crc)
    return bytes(batch)


def values_batch(count: int, *, prefix: bytes = b"v", **kwargs: object) -> bytes:
    """A batch of `count` value-only records `prefix0`, `prefix1`, ..."""
    return build_batch([prefix + str(i).encode() for i in range(count)], **kwargs)  # type: ignore[arg-type]


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def _read_bytes(data: bytes, pos: int) -> tuple[bytes | None, int]:
    length, pos = _read_varint(data, pos)
    if length < 0:
        return None, pos
    return data[pos : pos + length], pos + length


@dataclass(frozen=True)
class DecodedRecord:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


def decode_records(data: bytes) -> list[DecodedRecord]:
    """Every record of the (uncompressed or gzip) batches in `data`, with offsets."""
    out: list[DecodedRecord] = []
    pos = 0
    while pos + HEADER.size <= len(data):
        fields = HEADER.unpack_from(data, pos)
        base_offset, batch_length, base_timestamp, count = (
            fields[0],
            fields[1],
            fields[7],
            fields[12],
        )
        end = pos + 12 + batch_length
        payload = data[pos + HEADER.size : end]
        if fields[5] & 0x07 == COMPRESSION_GZIP:
            payload = gzip.decompress(payload)
        cursor = 0
        for _ in range(count):
            _, cursor = _read_varint(payload, cursor)
            cursor += 1  # attributes
            ts_delta, cursor = _read_varint(payload, cursor)
            offset_delta, cursor = _read_varint(payload, cursor)
            key, cursor = _read_bytes(payload, cursor)
            value, cursor = _read_bytes(payload, cursor)
            n_headers, cursor = _read_varint(payload, cursor)
            headers = []
            for _ in range(n_headers):
                name, cursor = _read_bytes(payload, cursor)
                header_value, cursor = _read_bytes(payload, cursor)
                headers.append(((name or b"").decode(), header_value))
            out.append(
                DecodedRecord(
                    base_offset + offset_delta,
                    base_timestamp + ts_delta,
                    key,
                    value,
                    tuple(headers),
                )
            )
        pos = end
    return out
