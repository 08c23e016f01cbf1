"""Kafka v2 record batch headers: parse, validate, re-stamp. Records stay bytes.

A record batch (magic 2) starts with a 61-byte header:

    offset  field                 type    covered by CRC
    0       base_offset           int64   no
    8       batch_length          int32   no   (bytes after this field)
    12      partition_leader_epoch int32  no
    16      magic                 int8    no
    17      crc                   uint32  no   (CRC-32C of bytes 21..end)
    21      attributes            int16   yes
    23      last_offset_delta     int32   yes
    27      base_timestamp        int64   yes
    35      max_timestamp         int64   yes
    43      producer_id           int64   yes
    51      producer_epoch        int16   yes
    53      base_sequence         int32   yes
    57      records_count         int32   yes
    61      records...

Shoal validates and assigns offsets by reading and patching this header only; the
records inside are decoded on the produce path only where a topic's settings ask
(log/validation.py). Everything here is per batch.
`encode_batch` is the one writer of the batches the broker builds itself from records
it holds as (key, value) bytes, with headers when needed, uncompressed or with a codec:
coordinator records (coordinator/log_sink.py), transaction markers (log/transactions.py),
dead-letter copies (server/services/share_dlq.py) and the simulator's produced batches
(sim/broker.py).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import NamedTuple, NoReturn

import crc32c

from shoal.protocol.compression import Codec, compress
from shoal.protocol.errors import ErrorCode

HEADER_SIZE = 61
LOG_OVERHEAD = 12
"""base_offset + batch_length: the bytes before what batch_length counts."""
MAGIC_V2 = 2
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
LEGACY_RECORD_OVERHEAD = 14
"""The smallest size field any batch (a v0 legacy record) may have: below it Kafka
refuses the batch as corrupt before reading its magic."""
MAGIC_OFFSET = 16
NO_BATCH = "Produce requests must have at least one record batch per partition"
"""INVALID_RECORD's reason when a partition's records hold no whole batch (Kafka's)."""

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20

NO_PRODUCER_ID = -1
NO_SEQUENCE = -1

_HEADER = struct.Struct(">qiibIhiqqqhii")
_UP_TO_CRC = struct.Struct(">qiibI")
_AFTER_CRC = struct.Struct(">hiqqqhii")
_LENGTH_AND_MAGIC = struct.Struct(">qiib")
_MAX_TIMESTAMP = struct.Struct(">q")
_ATTRIBUTES = struct.Struct(">h")
_CRC = struct.Struct(">I")
_BATCH_LENGTH = struct.Struct(">i")


class BatchError(ValueError):
    """A batch is malformed. `code` is the Kafka error the producer gets; `answered`:
    Kafka 4.2 sends this message back too (Produce's ErrorMessage, v8+), which it does
    only for what it finds while reading the request's batches, before the log."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        answered: bool = False,
        record_errors: tuple[tuple[int, str], ...] = (),
    ) -> None:
        super().__init__(message)
        self.code = code
        self.answered = answered
        self.record_errors = record_errors
        """(index in its batch, reason) of each record refused (Produce v8+'s
        RecordErrors), when the batch is refused for its records (log/validation.py)."""


class BatchHeader(NamedTuple):
    """A parsed batch header, plus where the batch lies in the buffer it came from."""

    position: int
    """Byte position of the batch in its buffer (or segment file)."""
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) % (2**31)


_new_header = tuple.__new__
"""`_new_header(BatchHeader, (position, *fields))` builds a header without the
namedtuple's Python-level `__new__` (one frame less per batch on the append path)."""


def parse_header(buffer: bytes | bytearray | memoryview, position: int = 0) -> BatchHeader:
    """Parse the header at `position`; the caller has checked 61 bytes are there."""
    return _new_header(BatchHeader, (position, *_HEADER.unpack_from(buffer, position)))


def restamped(
    header: BatchHeader, *, position: int, base_offset: int, leader_epoch: int
) -> BatchHeader:
    """`header` as stored: at `position`, with its assigned base offset and leader epoch
    (what `header._replace(...)` gives, built in one step)."""
    return _new_header(BatchHeader, (position, base_offset, header[2], leader_epoch, *header[4:]))


def peek_size(buffer: bytes | bytearray | memoryview, position: int) -> int | None:
    """Total size of the batch at `position`, or None if its length field is incomplete."""
    if len(buffer) - position < LOG_OVERHEAD:
        return None
    return int.from_bytes(buffer[position + 8 : position + 12], "big", signed=True) + LOG_OVERHEAD


def compute_crc(buffer: bytes | bytearray | memoryview, header: BatchHeader) -> int:
    start = header.position + 21
    end = header.position + header.size
    return int(crc32c.crc32c(memoryview(buffer)[start:end]))


def iter_headers(
    buffer: bytes | bytearray | memoryview, *, base_position: int = 0
) -> list[BatchHeader]:
    """Headers of the complete batches in `buffer`, in order; a trailing partial batch
    is left out. Positions are `base_position` plus the offset within the buffer. No
    validation beyond the length field: for data already in the log."""
    headers = []
    position = 0
    end = len(buffer)
    while end - position >= HEADER_SIZE:
        header = _new_header(
            BatchHeader, (position + base_position, *_HEADER.unpack_from(buffer, position))
        )
        size = header.batch_length + LOG_OVERHEAD
        if header.batch_length < MIN_BATCH_LENGTH or position + size > end:
            break
        headers.append(header)
        position += size
    return headers


def first_is_transactional(records: bytes) -> bool:
    """Whether the first batch of `records` is marked transactional (False when there is
    no whole header to read): Kafka's ProduceRequest looks at the first batch of each
    partition to decide whether a request carries transactional records."""
    if len(records) < HEADER_SIZE:
        return False
    (attributes,) = _ATTRIBUTES.unpack_from(records, 21)
    return bool(attributes & TRANSACTIONAL_MASK)


def validate_produced(records: bytes, *, max_batch_bytes: int) -> list[BatchHeader]:
    """Validate the record batches of one partition of a Produce request.

    Checks what Kafka checks without decoding records: complete batches, magic 2,
    CRC-32C, a sane record count, size within `max_batch_bytes`. Raises BatchError
    with the Kafka error name: CORRUPT_MESSAGE, INVALID_RECORD or MESSAGE_TOO_LARGE,
    chosen as Kafka 4.2 chooses them (tests/differential/test_bad_input.py): a size
    field below 14 or a magic outside 0..2 is CORRUPT_MESSAGE, no whole batch at all
    (empty, or the first one cut short) INVALID_RECORD, a whole batch of magic 0 or 1
    INVALID_RECORD.
    Per batch: one unpack of the header and one CRC-32C over its bytes (the fields are
    read by index here, this being the hot path of every Produce).
    """
    if not records:
        raise BatchError(ErrorCode.invalid_record, NO_BATCH)
    view = memoryview(records)
    headers: list[BatchHeader] = []
    position = 0
    end = len(records)
    while position < end:
        remaining = end - position
        if remaining < HEADER_SIZE:
            _refuse_short(view, position, remaining, first=not headers)
        fields = _HEADER.unpack_from(view, position)
        # fields: base_offset, batch_length, leader epoch, magic, crc, attributes,
        # last_offset_delta, base_timestamp, max_timestamp, producer id, epoch,
        # base_sequence, records_count
        batch_length = fields[1]
        size = batch_length + LOG_OVERHEAD
        if batch_length < LEGACY_RECORD_OVERHEAD or not 0 <= fields[3] <= MAGIC_V2:
            _refuse_short(view, position, remaining, first=not headers)
        if size > remaining:
            _refuse_incomplete(remaining, first=not headers)
        if fields[3] != MAGIC_V2:
            raise BatchError(ErrorCode.invalid_record, f"record batch magic {fields[3]} is not 2")
        if batch_length < MIN_BATCH_LENGTH:
            raise BatchError(
                ErrorCode.corrupt_message,
                f"batch length {batch_length} is below a v2 batch header's",
            )
        if size > max_batch_bytes:
            raise BatchError(
                ErrorCode.message_too_large,
                f"batch of {size} bytes exceeds max.message.bytes {max_batch_bytes}",
            )
        if crc32c.crc32c(view[position + 21 : position + size]) != fields[4]:
            raise BatchError(ErrorCode.corrupt_message, "record batch CRC-32C mismatch")
        records_count = fields[12]
        if records_count <= 0 or fields[6] != records_count - 1:
            raise BatchError(
                ErrorCode.invalid_record,
                f"batch has {records_count} records but last offset delta {fields[6]}",
            )
        if fields[5] & CONTROL_MASK:
            raise BatchError(ErrorCode.invalid_record, "clients may not produce control batches")
        headers.append(_new_header(BatchHeader, (position, *fields)))
        position += size
    return headers


def _refuse_short(view: memoryview, position: int, remaining: int, *, first: bool) -> NoReturn:
    """Refuse the batch at `position`, of which fewer bytes than a v2 header may be
    left, or whose size or magic is out of range: Kafka's checks of a batch's size
    field and magic (ByteBufferLogInputStream.nextBatchSize), then whether it is whole."""
    if remaining >= LOG_OVERHEAD:
        batch_length = _BATCH_LENGTH.unpack_from(view, position + 8)[0]
        if batch_length < LEGACY_RECORD_OVERHEAD:
            raise BatchError(
                ErrorCode.corrupt_message,
                f"Record size {batch_length} is less than the minimum record overhead "
                f"({LEGACY_RECORD_OVERHEAD})",
            )
        if remaining > MAGIC_OFFSET:
            magic = struct.unpack_from(">b", view, position + MAGIC_OFFSET)[0]
            if not 0 <= magic <= MAGIC_V2:
                raise BatchError(
                    ErrorCode.corrupt_message,
                    f"Invalid magic found in record: {magic}",
                    answered=True,
                )
            if batch_length + LOG_OVERHEAD <= remaining:  # whole, and shorter than v2's header
                if magic != MAGIC_V2:
                    raise BatchError(
                        ErrorCode.invalid_record, f"record batch magic {magic} is not 2"
                    )
                raise BatchError(
                    ErrorCode.corrupt_message,
                    f"batch length {batch_length} is below a v2 batch header's",
                )
    _refuse_incomplete(remaining, first=first)


def _refuse_incomplete(remaining: int, *, first: bool) -> NoReturn:
    """The batch is not whole: when it is the partition's first, Kafka sees no batch at
    all (INVALID_RECORD, ProduceRequest.validateRecords); after whole ones, the rest is
    refused as corrupt."""
    if first:
        raise BatchError(ErrorCode.invalid_record, NO_BATCH)
    raise BatchError(ErrorCode.corrupt_message, f"truncated batch ({remaining} bytes left)")


def stamp_prefix(header: BatchHeader, *, base_offset: int, leader_epoch: int) -> bytes:
    """The first 17 bytes of the batch re-stamped with its assigned base offset and
    leader epoch. These bytes are outside the CRC, so the rest of the batch is written
    unchanged after them: `stamp_prefix(...) + batch[17:]`."""
    return _LENGTH_AND_MAGIC.pack(base_offset, header.batch_length, leader_epoch, header.magic)


STAMPED_PREFIX_SIZE = 17


def with_records(batch: bytes, header: BatchHeader, records: bytes, *, attributes: int) -> bytes:
    """A copy of `batch` (starting at offset 0) whose records are `records` and whose
    attributes are `attributes`: the batch length and the CRC are recomputed."""
    patched = bytearray(batch[:HEADER_SIZE])
    patched += records
    _BATCH_LENGTH.pack_into(patched, 8, len(patched) - LOG_OVERHEAD)
    _ATTRIBUTES.pack_into(patched, 21, attributes)
    _CRC.pack_into(patched, 17, int(crc32c.crc32c(memoryview(patched)[21:])))
    return bytes(patched)


def with_log_append_time(batch: bytes, header: BatchHeader, *, now_ms: int) -> bytes:
    """A copy of `batch` (starting at offset 0) with LogAppendTime: the timestamp-type
    bit set and max_timestamp = now; the CRC is recomputed."""
    patched = bytearray(batch)
    _ATTRIBUTES.pack_into(patched, 21, header.attributes | TIMESTAMP_TYPE_MASK)
    _MAX_TIMESTAMP.pack_into(patched, 35, now_ms)
    _CRC.pack_into(patched, 17, int(crc32c.crc32c(memoryview(patched)[21:])))
    return bytes(patched)


def with_new_records(
    header: BatchHeader,
    records: bytes,
    *,
    attributes: int,
    base_timestamp: int,
    max_timestamp: int,
    records_count: int,
) -> bytes:
    """A batch with `header`'s offsets, leader epoch, producer id, epoch and sequence
    but new `records` (already encoded, compressed per `attributes`), attributes,
    timestamps and record count; length and CRC computed. For the log cleaner, which
    keeps a batch's offset range and sequences when it removes records from it
    (Kafka's MemoryRecords.filterTo)."""
    covered = _AFTER_CRC.pack(
        attributes,
        header.last_offset_delta,
        base_timestamp,
        max_timestamp,
        header.producer_id,
        header.producer_epoch,
        header.base_sequence,
        records_count,
    )
    crc = crc32c.crc32c(records, crc32c.crc32c(covered))
    length = HEADER_SIZE - LOG_OVERHEAD + len(records)
    prefix = _UP_TO_CRC.pack(
        header.base_offset, length, header.partition_leader_epoch, MAGIC_V2, crc
    )
    return prefix + covered + records


def signed_varint(value: int) -> bytes:
    """`value` as a zig-zag varint (the record fields' encoding, varlong included)."""
    zigzag = (value << 1) ^ (value >> 63)
    if zigzag <= 0x7F:
        return _SMALL_VARINTS[zigzag]
    out = bytearray()
    while zigzag > 0x7F:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


_SMALL_VARINTS = tuple(bytes((n,)) for n in range(0x80))
_NULL_LENGTH = signed_varint(-1)
_RECORD_FIXED = b"\x00\x00"
"""A record's attributes (0) and timestamp delta (0: every record of the batch has the
batch's timestamp)."""
_NO_HEADERS = signed_varint(0)

RecordHeaders = Sequence[tuple[bytes | None, bytes | None]]
"""A record's headers: (key, value) pairs in order, None a null key or value (Kafka
never writes a null key; a copied record may carry one and it is copied as is)."""


def encode_batch(
    records: Sequence[tuple[bytes | None, bytes | None]],
    *,
    timestamp_ms: int,
    attributes: int = 0,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = 0,
    headers: Sequence[RecordHeaders] | None = None,
    codec: Codec = Codec.NONE,
    level: int | None = None,
) -> bytes:
    """One uncompressed magic-2 batch (base offset 0, for the log to stamp) of the
    (key, value) `records` (None: a null key or value, a value None a tombstone),
    each at offset delta = its index, all stamped `timestamp_ms`, with record
    attributes 0. `attributes` are the batch's (transactional, control, timestamp
    type; never a codec). `headers[i]`, when given, are the headers of `records[i]`;
    without them no record has any. Uncompressed, the bytes kio's `write_new_batch`
    writes for the same records (tests/unit/protocol/test_record_batch.py compares
    them); with `codec`, the records compressed at `level` (None: Kafka's default for
    the codec) by shoal.protocol.compression, the codec in the attributes."""
    assert records, "a record batch has at least one record"
    assert not attributes & COMPRESSION_MASK, "the codec is given as `codec`"
    assert headers is None or len(headers) == len(records), "one headers entry per record"
    parts: list[bytes] = []
    for delta, (key, value) in enumerate(records):
        # `_append_nullable` of the key and the value, inline (one record per
        # coordinator state write); a delta below 64 is the one-byte varint 2 * delta
        body = [
            _RECORD_FIXED,
            _SMALL_VARINTS[delta << 1] if delta < 64 else signed_varint(delta),
        ]
        if key is None:
            body.append(_NULL_LENGTH)
        else:
            body += (signed_varint(len(key)), key)
        if value is None:
            body.append(_NULL_LENGTH)
        else:
            body += (signed_varint(len(value)), value)
        if headers is None:
            body.append(_NO_HEADERS)
        else:
            _append_headers(body, headers[delta])
        record = b"".join(body)
        parts += (signed_varint(len(record)), record)
    data = b"".join(parts)
    if codec is not Codec.NONE:
        data = compress(data, codec, level)
    count = len(records)
    covered = _AFTER_CRC.pack(
        attributes | codec,
        count - 1,
        timestamp_ms,
        timestamp_ms,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    )
    crc = crc32c.crc32c(data, crc32c.crc32c(covered))
    length = HEADER_SIZE - LOG_OVERHEAD + len(data)
    return _UP_TO_CRC.pack(0, length, partition_leader_epoch, MAGIC_V2, crc) + covered + data


def _append_headers(body: list[bytes], headers: RecordHeaders) -> None:
    body.append(signed_varint(len(headers)))
    for key, value in headers:
        _append_nullable(body, key)
        _append_nullable(body, value)


def _append_nullable(body: list[bytes], data: bytes | None) -> None:
    """A record's (or header's) key or value: its varint length and bytes, or -1."""
    if data is None:
        body.append(_NULL_LENGTH)
    else:
        body += (signed_varint(len(data)), data)
