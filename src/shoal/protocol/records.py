"""The records inside a v2 batch, for the few places that must look inside. Sans-I/O.

The hot paths (Produce, Fetch, ShareFetch) do not decode records, with two exceptions
on Produce that a topic's settings ask for (log/validation.py): recompression to the
topic's compression.type (`recompressed`) and the key check of compacted topics
(`keyless_records`). Kafka's timestamp lookups (ListOffsets) answer a record's exact
offset, so they decode the one batch the log's batch-granular index points at. Only
what each use needs is decoded: each record's offset and timestamp (CreateTime
batches; a LogAppendTime batch gives every record the batch's max timestamp, as Kafka
does), or whether it has a key.

A record (after the batch header, possibly compressed):

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
    key | value | headers                                   (the rest is skipped)

Compression codecs (attributes & 7) are shoal.protocol.compression's; data that does not
inflate raises BatchError(ErrorCode.corrupt_message). `recompressed` re-encodes a whole
batch's records with another codec (broker-side compression.type).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from shoal.protocol.compression import Codec, CompressionError, compress, decompress
from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import (
    COMPRESSION_MASK,
    HEADER_SIZE,
    TIMESTAMP_TYPE_MASK,
    BatchError,
    BatchHeader,
    with_records,
)


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
    try:
        return decompress(payload, header.compression)
    except CompressionError as exc:
        raise BatchError(
            ErrorCode.corrupt_message,
            f"batch at offset {header.base_offset} does not decompress: {exc}",
        ) from exc


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
    return recompressed(batch, header, Codec.NONE, None)


def read_varint(data: bytes, position: int) -> tuple[int, int]:
    """A zigzag varint (or varlong) at `position`: (value, position after it); raises
    IndexError when the data ends inside it or it is longer than 64 bits."""
    return _varint(data, position)


def recompressed(
    batch: bytes,
    header: BatchHeader,
    codec: Codec,
    level: int | None,
    *,
    inflated_records: bytes | None = None,
) -> bytes:
    """`batch` (its bytes from offset 0) with its records inflated and compressed again
    with `codec` at `level` (Codec.NONE: left inflated); `inflated_records`: the
    records already inflated by the caller. Every header field but the codec bits,
    the length and the CRC is kept (producer id, epoch, sequence, the transactional
    and timestamp-type bits, timestamps, count): the records themselves are
    unchanged, so Kafka's consumers read the same records at the same offsets."""
    if inflated_records is None:
        inflated_records = decompressed(batch[HEADER_SIZE:], header)
    records = compress(inflated_records, codec, level)
    attributes = (header.attributes & ~COMPRESSION_MASK) | codec
    return with_records(batch, header, records, attributes=attributes)


def keyless_records(payload: bytes, count: int) -> list[int]:
    """Indexes of the records without a key (a negative key length) among the `count`
    records of `payload`, a batch's records already inflated. Reads each record's
    length and key length only. BatchError(INVALID_RECORD) if the records are cut
    short or do not fill the payload exactly (Kafka's DefaultRecord and
    DefaultRecordBatch: "Found invalid record structure", "Incorrect declared batch
    size, records still remaining in file")."""
    keyless = []
    position = 0
    end = len(payload)
    try:
        for index in range(count):
            length, position = _varint(payload, position)
            record_end = position + length
            if length < 0 or record_end > end:
                raise IndexError
            cursor = position + 1  # attributes
            while payload[cursor] & 0x80:  # timestamp delta
                cursor += 1
            cursor += 1
            while payload[cursor] & 0x80:  # offset delta
                cursor += 1
            cursor += 1
            if payload[cursor] == 0x01:  # zigzag -1: the usual null key, one byte
                keyless.append(index)
            else:
                key_length, _ = _varint(payload, cursor)
                if key_length < 0:
                    keyless.append(index)
            position = record_end
    except IndexError:
        raise BatchError(ErrorCode.invalid_record, "Found invalid record structure") from None
    if position != end:
        raise BatchError(
            ErrorCode.invalid_record,
            "Incorrect declared batch size, records still remaining in file",
        )
    return keyless


DELIVER_AT_HEADER = b"shoal.deliver.at"
"""The record header of scheduled delivery: the earliest delivery time, epoch
milliseconds as decimal ASCII (docs/scheduled-delivery.md)."""
_DELIVER_AT_DIGITS_MAX = 19
"""A deliver-at value longer than this many digits is malformed (beyond int64)."""


@dataclass(slots=True)
class RecordFacts:
    """What a share-partition's acquisition reads inside the records of a log read
    (`record_facts`), by offset from `first_offset` to `last_offset`."""

    first_offset: int
    last_offset: int
    keys: list[bytes | None] | None
    """Each offset's key (None: a null key, a control record or no record there), by
    offset - first_offset; None when keys were not asked for."""
    deliver_at: dict[int, tuple[int, int]]
    """Offset -> (the `shoal.deliver.at` time, the record's timestamp), for the
    records with a well-formed header (empty when not asked for)."""
    malformed: list[int]
    """Offsets whose `shoal.deliver.at` header did not parse (delivered at once)."""


def record_facts(
    buffer: bytes | memoryview,
    headers: Sequence[BatchHeader],
    *,
    keys: bool,
    deliver_at: bool,
) -> RecordFacts:
    """The keys and/or scheduled times of the records of the batches `headers`
    describe in `buffer` (consecutive batches of one log read). Only what is asked
    for is decoded; a batch whose (inflated) records do not contain the header name
    skips the header walk. Raises BatchError on records that do not parse."""
    assert headers
    first = headers[0].base_offset
    last = headers[-1].last_offset
    found_keys: list[bytes | None] | None = [None] * (last - first + 1) if keys else None
    found_at: dict[int, tuple[int, int]] = {}
    malformed: list[int] = []
    for header in headers:
        if header.is_control or header.records_count <= 0:
            continue
        start = header.position + HEADER_SIZE
        payload = bytes(buffer[start : header.position + header.size])
        if header.compression:
            payload = _decompressed(payload, header)
        walk_headers = deliver_at and DELIVER_AT_HEADER in payload
        if not keys and not walk_headers:
            continue
        try:
            _walk_records(
                payload, header, first, found_keys, found_at if walk_headers else None, malformed
            )
        except IndexError:
            raise BatchError(
                ErrorCode.corrupt_message,
                f"records of the batch at offset {header.base_offset} are truncated",
            ) from None
    return RecordFacts(first, last, found_keys, found_at, malformed)


def _walk_records(
    payload: bytes,
    header: BatchHeader,
    first: int,
    keys: list[bytes | None] | None,
    deliver_at: dict[int, tuple[int, int]] | None,
    malformed: list[int],
) -> None:
    """Fill `keys` (by offset - first) and `deliver_at` from one batch's records."""
    base = header.base_offset
    base_timestamp = header.base_timestamp
    log_append_time = bool(header.attributes & TIMESTAMP_TYPE_MASK)
    position = 0
    size = len(payload)
    for _ in range(header.records_count):
        length, position = _varint(payload, position)
        end = position + length
        if length < 0 or end > size:
            raise IndexError
        timestamp_delta, cursor = _varint(payload, position + 1)  # after attributes
        offset_delta, cursor = _varint(payload, cursor)
        key_length, cursor = _varint(payload, cursor)
        offset = base + offset_delta
        if keys is not None and key_length >= 0:
            keys[offset - first] = payload[cursor : cursor + key_length]
        if deliver_at is not None:
            cursor += max(0, key_length)
            value_length, cursor = _varint(payload, cursor)
            cursor += max(0, value_length)
            count, cursor = _varint(payload, cursor)
            for _ in range(count):
                name_length, cursor = _varint(payload, cursor)
                name = payload[cursor : cursor + name_length]
                cursor += max(0, name_length)
                value_length, cursor = _varint(payload, cursor)
                if name == DELIVER_AT_HEADER:
                    value = payload[cursor : cursor + value_length] if value_length >= 0 else b""
                    at = _deliver_at(value)
                    if at is None:
                        malformed.append(offset)
                    else:
                        timestamp = (
                            header.max_timestamp
                            if log_append_time
                            else base_timestamp + timestamp_delta
                        )
                        deliver_at[offset] = (at, timestamp)
                cursor += max(0, value_length)
        position = end


def _deliver_at(value: bytes) -> int | None:
    """A `shoal.deliver.at` value as epoch milliseconds, or None when malformed: not
    1-19 ASCII digits."""
    if not 0 < len(value) <= _DELIVER_AT_DIGITS_MAX or not value.isdigit():
        return None
    return int(value)
