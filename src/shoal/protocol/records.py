"""The records inside a v2 batch, for the few places that must look inside. Sans-I/O.

The hot paths (Produce, Fetch, ShareFetch) never decode records; Kafka's timestamp
lookups (ListOffsets) answer a record's exact offset, so they decode the one batch the
log's batch-granular index points at. Only what those lookups need is decoded: each
record's offset and timestamp (CreateTime batches; a LogAppendTime batch gives every
record the batch's max timestamp, as Kafka does).

A record (after the batch header, possibly compressed):

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
    key | value | headers                                   (the rest is skipped)

Compression codecs (attributes & 7): 1 gzip, 2 snappy (raw, or Kafka's Java clients'
xerial framing), 3 lz4 (frame), 4 zstd, decoded with cramjam. Malformed data raises
BatchError(ErrorCode.corrupt_message).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

import cramjam

from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import (
    COMPRESSION_MASK,
    HEADER_SIZE,
    TIMESTAMP_TYPE_MASK,
    BatchError,
    BatchHeader,
    with_records,
)

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE = 16
_BLOCK_LENGTH = struct.Struct(">i")


def record_timestamps(buffer: bytes | memoryview, header: BatchHeader) -> Iterator[tuple[int, int]]:
    """(offset, timestamp) of each record of the batch `header` describes in `buffer`."""
    if header.attributes & TIMESTAMP_TYPE_MASK:
        for delta in range(header.last_offset_delta + 1):
            yield header.base_offset + delta, header.max_timestamp
        return
    start = header.position + HEADER_SIZE
    payload = _decompressed(bytes(buffer[start : header.position + header.size]), header)
    position = 0
    try:
        for _ in range(header.records_count):
            length, position = _varint(payload, position)
            end = position + length
            timestamp_delta, cursor = _varint(payload, position + 1)  # after attributes
            offset_delta, _ = _varint(payload, cursor)
            if length < 0 or end > len(payload):
                raise IndexError
            yield header.base_offset + offset_delta, header.base_timestamp + timestamp_delta
            position = end
    except IndexError:
        raise BatchError(
            ErrorCode.corrupt_message,
            f"records of the batch at offset {header.base_offset} are truncated",
        ) from None


def _decompressed(payload: bytes, header: BatchHeader) -> bytes:
    codec = header.compression
    try:
        match codec:
            case 0:
                return payload
            case 1:
                return bytes(cramjam.gzip.decompress(payload))
            case 2:
                return _snappy(payload)
            case 3:
                return bytes(cramjam.lz4.decompress(payload))
            case 4:
                return bytes(cramjam.zstd.decompress(payload))
    except (cramjam.DecompressionError, struct.error) as exc:
        raise BatchError(
            ErrorCode.corrupt_message,
            f"batch at offset {header.base_offset} does not decompress: {exc}",
        ) from exc
    raise BatchError(ErrorCode.corrupt_message, f"unknown compression codec {codec}")


def _snappy(payload: bytes) -> bytes:
    if not payload.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(payload))
    blocks = []
    position = _XERIAL_HEADER_SIZE
    while position < len(payload):
        (length,) = _BLOCK_LENGTH.unpack_from(payload, position)
        position += _BLOCK_LENGTH.size
        blocks.append(bytes(cramjam.snappy.decompress_raw(payload[position : position + length])))
        position += length
    return b"".join(blocks)


def _varint(data: bytes, position: int) -> tuple[int, int]:
    """A zigzag varint (or varlong) at `position`: (value, position after it)."""
    shift = raw = 0
    while True:
        byte = data[position]
        position += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), position
        shift += 7
        if shift > 63:
            raise IndexError


def first_at_or_after(
    buffer: bytes | memoryview, header: BatchHeader, *, timestamp_ms: int, min_offset: int
) -> tuple[int, int] | None:
    """(offset, timestamp) of the batch's first record at or after `min_offset` whose
    timestamp is at least `timestamp_ms`."""
    for offset, timestamp in record_timestamps(buffer, header):
        if offset >= min_offset and timestamp >= timestamp_ms:
            return offset, timestamp
    return None


def decompressed(payload: bytes, header: BatchHeader) -> bytes:
    """The records of a batch (its bytes after the 61-byte header) inflated per the
    header's codec; BatchError(ErrorCode.corrupt_message) if they do not inflate. Public for
    readers that decode records themselves (the Spark connector)."""
    return _decompressed(payload, header)


def inflated(batch: bytes, header: BatchHeader) -> bytes:
    """`batch` (its bytes from offset 0) as an uncompressed batch: the same header
    without the codec bits, the records inflated, length and CRC recomputed; for
    readers that decode records with a reader that does not inflate (kio's)."""
    records = decompressed(batch[HEADER_SIZE:], header)
    return with_records(batch, header, records, attributes=header.attributes & ~COMPRESSION_MASK)


def read_varint(data: bytes, position: int) -> tuple[int, int]:
    """A zigzag varint (or varlong) at `position`: (value, position after it); raises
    IndexError when the data ends inside it or it is longer than 64 bits."""
    return _varint(data, position)
