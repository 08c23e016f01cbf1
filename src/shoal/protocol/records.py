"""The records inside a v2 batch, for the few places that must look inside. Sans-I/O.

The hot paths (Produce, Fetch, ShareFetch) do not decode records, with exceptions that
a topic's or a share group's settings ask for: on Produce (log/validation.py),
recompression to the topic's compression.type (`recompressed`) and the key check of
compacted topics (`keyless_records`); on ShareFetch, the keys and scheduled times of
key-ordered and scheduled share groups (`record_facts`, below). Kafka's timestamp
lookups (ListOffsets) answer a record's exact offset, so they decode the one batch the
log's batch-granular index points at. Only what each use needs is decoded: each
record's offset and timestamp (CreateTime batches; a LogAppendTime batch gives every
record the batch's max timestamp, as Kafka does), whether it has a key, its key, its
`shoal.deliver.at` header.

A record (after the batch header, possibly compressed):

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
    key | value | headers                                   (the rest is skipped)

Compression codecs (attributes & 7) are shoal.protocol.compression's; data that does not
inflate raises BatchError(ErrorCode.corrupt_message). `recompressed` re-encodes a whole
batch's records with another codec (broker-side compression.type).

Share groups with key order or scheduled delivery (docs/design/key-order.md,
docs/design/scheduled-delivery.md) read the key and `shoal.deliver.at` header of the records
an acquisition reads for the first time: `record_facts`, written for CPython's cost
model (lookup tables, varints read inline; bench/record_facts_cost.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from shoal.protocol.compression import Codec, CompressionError, compress, decompress
from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import (
    COMPRESSION_MASK,
    CONTROL_MASK,
    HEADER_SIZE,
    LOG_OVERHEAD,
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


def _decompressed(payload: bytes | memoryview, header: BatchHeader) -> bytes:
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
milliseconds as decimal ASCII (docs/design/scheduled-delivery.md)."""
_DELIVER_AT_DIGITS_MAX = 19
"""A deliver-at value longer than this many digits is malformed (beyond int64)."""
_DELIVER_AT_MAX = 2**63 - 1
"""A deliver-at value above this (a Java long's maximum) is malformed too."""
_NAME_LENGTH = len(DELIVER_AT_HEADER)

_MORE = -(2**40)
"""Below every value a varint of one or two bytes holds: the tables' mark of "longer"."""
_ZIGZAG: tuple[int, ...] = tuple((b >> 1) ^ -(b & 1) if b < 0x80 else _MORE for b in range(256))
"""A varint's first byte -> its zigzag value when it is the varint's only byte, or
`_MORE` when its continuation bit is set (a tuple subscript by an int is one of
CPython's specialised instructions, cheaper than decoding with shifts)."""
_LOW: tuple[int, ...] = tuple((b & 0x7F) >> 1 if not b & 1 else _MORE for b in range(256))
"""The first byte of a two-byte varint -> its share of the zigzag value (bits 1..6), or
`_MORE` when the value is negative (the zigzag sign bit, bit 0, set)."""
_HIGH: tuple[int, ...] = tuple(b << 6 if b < 0x80 else _MORE for b in range(256))
"""The second byte of a two-byte varint -> its share of the zigzag value, or `_MORE`
when the varint goes on (a third byte). `_LOW[b0] + _HIGH[b1]` is the value of a
non-negative two-byte varint (up to 8191: record lengths and offset deltas), or
negative when the varint is negative or longer: then `_varint` reads it."""


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
    """Offsets whose `shoal.deliver.at` header did not parse (delivered at once), in
    offset order."""


def record_facts(
    buffer: bytes | memoryview,
    headers: Sequence[BatchHeader],
    *,
    keys: bool,
    deliver_at: bool,
) -> RecordFacts:
    """The keys and/or scheduled times of the records of the batches `headers`
    describe in `buffer` (consecutive batches of one log read; each header's position
    indexes `buffer`). Control batches and empty batches are skipped. Runs on every
    acquisition of a key-ordered or scheduled share group: see `_walk_keys` for how
    it stays cheap, bench/record_facts_cost.py for what it costs.

    Only what is asked for is read. Keys: every record's length, offset delta and
    key; a record's offset is base offset + offset delta, so the holes a compacted
    batch has stay None. Deliver-at: a record's headers are walked only when the
    header name's bytes start inside the record (`bytes.find` over the batch's
    records); a batch without them is not walked at all, a batch with them is walked
    to its end. A record with several `shoal.deliver.at` headers: the last one wins,
    as for Kafka's `Headers.lastHeader`. A value is well-formed when it is 1..19 ASCII
    digits of at most 2**63 - 1; any other value (null included) puts the offset in
    `malformed`. The record's timestamp is the batch's max timestamp in a
    LogAppendTime batch (Kafka gives every record of one that time), its base
    timestamp + timestamp delta otherwise.

    Raises BatchError(ErrorCode.corrupt_message) when what it reads does not parse:
    a batch that does not inflate, a record running past its batch, records that do
    not fill it, a field running past its record, an offset delta outside the batch,
    a batch outside the read's offsets, a null header name, a negative header count."""
    assert headers
    first = headers[0].base_offset
    last = headers[-1].last_offset
    found_keys: list[bytes | None] | None = [None] * (last - first + 1) if keys else None
    found_at: dict[int, tuple[int, int]] = {}
    malformed: list[int] = []
    facts = RecordFacts(first, last, found_keys, found_at, malformed)
    if not keys and not deliver_at:
        return facts
    if isinstance(buffer, bytes):
        data, rebase = buffer, 0
    else:  # one copy of the read (bytes.find and bytes slices for keys)
        rebase = headers[0].position
        data = bytes(buffer[rebase : headers[-1].position + headers[-1].size])
    for header in headers:
        count = header.records_count
        attributes = header.attributes
        if count <= 0 or attributes & CONTROL_MASK:
            continue
        start = header.position - rebase + HEADER_SIZE
        limit = start + header.batch_length - (HEADER_SIZE - LOG_OVERHEAD)
        payload = data
        if attributes & COMPRESSION_MASK:
            payload = _decompressed(memoryview(data)[start:limit], header)
            start, limit = 0, len(payload)
        hit = payload.find(DELIVER_AT_HEADER, start, limit) if deliver_at else -1
        if hit < 0:
            if not keys:
                continue
            hit = limit
        shift = header.base_offset - first
        try:
            if found_keys is None:
                _walk_scheduled(payload, start, limit, count, hit, header, found_at, malformed)
            elif shift < 0 or shift + header.last_offset_delta >= len(found_keys):
                raise IndexError  # a batch outside the offsets of the read
            else:
                _walk_keys(
                    payload,
                    start,
                    limit,
                    count,
                    hit,
                    header,
                    found_keys,
                    shift,
                    found_at,
                    malformed,
                )
        except IndexError:
            raise BatchError(
                ErrorCode.corrupt_message,
                f"records of the batch at offset {header.base_offset} do not parse",
            ) from None
    return facts


def _walk_keys(
    payload: bytes,
    position: int,
    limit: int,
    count: int,
    hit: int,
    header: BatchHeader,
    keys: list[bytes | None],
    shift: int,
    found_at: dict[int, tuple[int, int]],
    malformed: list[int],
) -> None:
    """Put the keys of the `count` records of `payload[position:limit]` in `keys` (at
    offset delta + `shift`); read the deliver-at header of each record in which a hit
    of its name starts (`hit`: the first one, `limit` when none). IndexError when the
    records do not parse.

    The varints are read inline, from `_ZIGZAG` (one byte) and `_LOW` + `_HIGH` (two
    bytes: a record up to 8 KiB, an offset delta up to 8191), `_varint` for the rest:
    a call and a tuple per field cost twice the whole record's reading."""
    zigzag, low, high = _ZIGZAG, _LOW, _HIGH
    last_delta = header.last_offset_delta
    for _ in range(count):
        byte = payload[position]
        if byte < 0x80:
            length = zigzag[byte]
            position += 1
        else:
            length = low[byte] + high[payload[position + 1]]
            position += 2
            if length < 0:
                length, position = _varint(payload, position - 2)
        end = position + length
        if not position < end <= limit:
            raise IndexError
        cursor = position + 1  # after the attributes; the timestamp delta is skipped
        while payload[cursor] > 0x7F:
            cursor += 1
        byte = payload[cursor + 1]
        if byte < 0x80:
            delta = zigzag[byte]
            cursor += 2
        else:
            delta = low[byte] + high[payload[cursor + 2]]
            cursor += 3
            if delta < 0:
                delta, cursor = _varint(payload, cursor - 2)
        if not 0 <= delta <= last_delta:
            raise IndexError
        key_length = zigzag[payload[cursor]]
        cursor += 1
        if key_length < -64:
            key_length, cursor = _varint(payload, cursor - 1)
        if key_length >= 0:
            cursor += key_length
            keys[shift + delta] = payload[cursor - key_length : cursor]
        if cursor >= end:  # the value's length is still to come
            raise IndexError
        if hit < end:
            _read_deliver_at(payload, position, end, header, found_at, malformed)
            hit = payload.find(DELIVER_AT_HEADER, end, limit)
            if hit < 0:
                hit = limit
        position = end
    if position != limit:
        raise IndexError


def _walk_scheduled(
    payload: bytes,
    position: int,
    limit: int,
    count: int,
    hit: int,
    header: BatchHeader,
    found_at: dict[int, tuple[int, int]],
    malformed: list[int],
) -> None:
    """`_walk_keys` without keys: of the records without a hit, only the length is
    read (the walk still goes to the batch's end: truncated records are refused
    whichever facts are asked for)."""
    zigzag, low, high = _ZIGZAG, _LOW, _HIGH
    for _ in range(count):
        byte = payload[position]
        if byte < 0x80:
            length = zigzag[byte]
            position += 1
        else:
            length = low[byte] + high[payload[position + 1]]
            position += 2
            if length < 0:
                length, position = _varint(payload, position - 2)
        end = position + length
        if not position < end <= limit:
            raise IndexError
        if hit < end:
            _read_deliver_at(payload, position, end, header, found_at, malformed)
            hit = payload.find(DELIVER_AT_HEADER, end, limit)
            if hit < 0:
                hit = limit
        position = end
    if position != limit:
        raise IndexError


def _read_deliver_at(
    payload: bytes,
    position: int,
    end: int,
    header: BatchHeader,
    found_at: dict[int, tuple[int, int]],
    malformed: list[int],
) -> None:
    """Read the record of `payload[position:end]` (after its length) whole and note
    its last `shoal.deliver.at` header, if it has one, in `found_at` or `malformed`.
    IndexError when the record does not parse exactly to `end`. Varints inline as in
    `_walk_keys`."""
    zigzag, low, high = _ZIGZAG, _LOW, _HIGH
    cursor = position + 1  # after the attributes
    timestamp_delta = zigzag[payload[cursor]]
    cursor += 1
    if timestamp_delta < -64:
        timestamp_delta, cursor = _varint(payload, cursor - 1)
    byte = payload[cursor]
    if byte < 0x80:
        delta = zigzag[byte]
        cursor += 1
    else:
        delta = low[byte] + high[payload[cursor + 1]]
        cursor += 2
        if delta < 0:
            delta, cursor = _varint(payload, cursor - 2)
    if not 0 <= delta <= header.last_offset_delta:
        raise IndexError
    for _ in range(2):  # the key, the value: skipped
        byte = payload[cursor]
        if byte < 0x80:
            cursor += 1 + (byte >> 1 if not byte & 1 else 0)  # a negative length: null
        else:
            length = low[byte] + high[payload[cursor + 1]]
            cursor += 2
            if length < 0:
                length, cursor = _varint(payload, cursor - 2)
            if length > 0:
                cursor += length
    count = zigzag[payload[cursor]]
    cursor += 1
    if count < -64:
        count, cursor = _varint(payload, cursor - 1)
    if count < 0:
        raise IndexError  # Kafka refuses a negative header count
    value: bytes | None = None
    found = False
    for _ in range(count):
        if cursor >= end:  # each header takes two bytes at least: the loop ends
            raise IndexError
        name_length = zigzag[payload[cursor]]
        cursor += 1
        if name_length < -64:
            name_length, cursor = _varint(payload, cursor - 1)
        if name_length < 0:
            raise IndexError  # a null header name: Kafka refuses the record
        name = cursor
        cursor += name_length
        value_length = zigzag[payload[cursor]]
        cursor += 1
        if value_length < -64:
            value_length, cursor = _varint(payload, cursor - 1)
        if name_length == _NAME_LENGTH and payload.startswith(DELIVER_AT_HEADER, name):
            found = True  # a later one overrides it
            value = payload[cursor : cursor + value_length] if value_length >= 0 else None
        if value_length > 0:
            cursor += value_length
    if cursor != end:
        raise IndexError
    if not found:
        return
    offset = header.base_offset + delta
    at = _deliver_at(value)
    if at is None:
        malformed.append(offset)
    elif header.attributes & TIMESTAMP_TYPE_MASK:
        found_at[offset] = (at, header.max_timestamp)
    else:
        found_at[offset] = (at, header.base_timestamp + timestamp_delta)


def _deliver_at(value: bytes | None) -> int | None:
    """A `shoal.deliver.at` value as epoch milliseconds, or None when malformed: null,
    not 1-19 ASCII digits, or above 2**63 - 1."""
    if value is None or not 0 < len(value) <= _DELIVER_AT_DIGITS_MAX or not value.isdigit():
        return None
    at = int(value)
    return at if at <= _DELIVER_AT_MAX else None
