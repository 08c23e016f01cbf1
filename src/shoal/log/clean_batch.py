"""One stored batch as the cleaner sees it: its records, and the batch rebuilt with
only the records kept. Sans-I/O.

Owns: splitting a batch's records (inflated when compressed) into `CleanRecord`s
without copying their bytes, the delete horizon of a batch (KIP-534: attribute bit
0x40 set and the base timestamp holding the horizon, Kafka's DefaultRecordBatch), and
`rebuild`: the batch with the kept records, the same base offset, last offset delta,
producer id, epoch and base sequence, compressed again with the batch's own codec at
its default level (as Kafka's cleaner does), so offsets and sequence numbers survive
cleaning (Kafka's MemoryRecords.filterTo; docs/design/compaction.md, "Rewriting a batch").

A record's bytes are copied as they are when the base timestamp does not change
(its offset and timestamp deltas stay right); when the delete horizon is set the
base timestamp becomes the horizon and each record's timestamp delta is re-encoded
so its absolute timestamp is unchanged (it may turn negative, as in Kafka).

Record layout (after the batch header, possibly compressed):
    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
    keyLength varint | key | valueLength varint | value | headers
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

from shoal.protocol.compression import Codec, compress
from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import (
    COMPRESSION_MASK,
    CONTROL_MASK,
    HEADER_SIZE,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchError,
    BatchHeader,
    signed_varint,
    with_new_records,
)
from shoal.protocol.records import decompressed, read_varint

DELETE_HORIZON_MASK = 0x40
"""Batch attribute bit: the base timestamp is the delete horizon (KIP-534)."""
NO_TIMESTAMP = -1


class CleanRecord(NamedTuple):
    """One record of a batch, by position in the batch's (inflated) records."""

    offset: int
    timestamp: int
    key: bytes | None
    has_value: bool
    start: int
    """Position of the record's length varint."""
    body: int
    """Position of its offset delta (the bytes after the timestamp delta)."""
    end: int
    attributes: int


def delete_horizon(header: BatchHeader) -> int | None:
    """The batch's delete horizon (wall ms), or None if it has none."""
    if header.attributes & DELETE_HORIZON_MASK:
        return header.base_timestamp
    return None


def records_payload(batch: bytes, header: BatchHeader) -> bytes:
    """The records of `batch` (its bytes from offset 0), inflated."""
    return decompressed(batch[HEADER_SIZE:], header)


def _zigzag(data: bytes, position: int) -> tuple[int, int]:
    """A varint at `position`; the one-byte case (most record fields) inline."""
    byte = data[position]
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), position + 1
    return read_varint(data, position)


def iter_records(payload: bytes, header: BatchHeader) -> Iterator[CleanRecord]:
    """The records of the batch `header` describes; raises BatchError
    (CORRUPT_MESSAGE) if they do not parse."""
    position = 0
    size = len(payload)
    base_offset = header.base_offset
    base_timestamp = header.base_timestamp
    try:
        for _ in range(header.records_count):
            start = position
            length, position = _zigzag(payload, position)
            end = position + length
            if length < 1 or end > size:
                raise IndexError
            attributes = payload[position]
            timestamp_delta, body = _zigzag(payload, position + 1)
            offset_delta, cursor = _zigzag(payload, body)
            key_length, cursor = _zigzag(payload, cursor)
            key = None
            if key_length >= 0:
                key = payload[cursor : cursor + key_length]
                cursor += key_length
            value_length, cursor = _zigzag(payload, cursor)
            if cursor > end:
                raise IndexError
            yield CleanRecord(
                base_offset + offset_delta,
                base_timestamp + timestamp_delta,
                key,
                value_length >= 0,
                start,
                body,
                end,
                attributes,
            )
            position = end
    except IndexError:
        raise BatchError(
            ErrorCode.corrupt_message,
            f"records of the batch at offset {base_offset} do not parse",
        ) from None


def rebuild(
    header: BatchHeader,
    payload: bytes,
    kept: Sequence[CleanRecord],
    *,
    horizon_ms: int | None,
) -> bytes:
    """The batch with only the `kept` records of `payload` (its inflated records),
    with `horizon_ms` as delete horizon (None: none), compressed with the batch's
    codec. With no record kept, the empty batch header Kafka writes to keep a
    producer's last sequence (records count 0, timestamps the batch's max, no codec)."""
    base_attributes = header.attributes & (TIMESTAMP_TYPE_MASK | TRANSACTIONAL_MASK | CONTROL_MASK)
    if not kept:
        return with_new_records(
            header,
            b"",
            attributes=base_attributes,
            base_timestamp=header.max_timestamp,
            max_timestamp=header.max_timestamp,
            records_count=0,
        )
    parts: list[bytes] = []
    if horizon_ms is None:
        base_timestamp = header.base_timestamp
        parts = [payload[r.start : r.end] for r in kept]
    else:
        base_timestamp = horizon_ms
        for record in kept:
            body = (
                bytes((record.attributes,))
                + signed_varint(record.timestamp - base_timestamp)
                + payload[record.body : record.end]
            )
            parts += (signed_varint(len(body)), body)
    if header.attributes & TIMESTAMP_TYPE_MASK:
        max_timestamp = header.max_timestamp  # LogAppendTime: the batch's time stays
    else:
        max_timestamp = max(r.timestamp for r in kept)
    codec = Codec(header.attributes & COMPRESSION_MASK)
    attributes = base_attributes | codec | (0 if horizon_ms is None else DELETE_HORIZON_MASK)
    records = compress(b"".join(parts), codec)
    return with_new_records(
        header,
        records,
        attributes=attributes,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        records_count=len(kept),
    )
