"""Reading an offset range of one partition into Arrow record batches (executor side).

`read_range` is what every Shoal data source's `read()` calls: the batch source with
offset ranges it planned, the share-group source with ranges its driver acquired. It
fetches with plain Fetch requests and turns each response into one Arrow record batch
(sliced to `max_rows_per_batch`), in offset order.

Decoding is columnar, so a record costs no Python object of its own. The kept batches
of a response are inflated (cramjam, via `shoal.protocol.records`) and joined into one
buffer (up to `DECODE_BYTES_MAX` at a time); a short Python loop walks the record
length varints to find where each record starts (the only per-record Python work);
numpy then decodes every other varint of all records at once (timestamp and offset
deltas, key and value lengths, header counts), and the key and value columns are cut
out of the buffer by Arrow's `take` over an array whose offsets interleave (start,
end) of each field, with no bytes object per value.
Headers, rare in practice, are parsed in Python for the records that have them.

Dropped: control batches (transaction markers); with isolation_level=1
(read_committed) the batches of aborted transactions, found from the Fetch response's
AbortedTransactions as Kafka's consumer does; offsets outside [start, end) (a Fetch
starts at the batch holding `start`). CRCs are checked, as Kafka's consumers do.

The output schema is Spark's Kafka source's with headers included (`includeHeaders`,
true by default in Shoal): `SCHEMA_DDL` for Spark, `ARROW_SCHEMA` for the batches (they
must match exactly); without headers `SCHEMA_DDL_WITHOUT_HEADERS` and
`ARROW_SCHEMA_WITHOUT_HEADERS`. A record without headers has null `headers`, as in
Spark.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pyarrow as pa
from kio.schema.errors import ErrorCode

from shoal.client import Client, ClientError, KafkaError
from shoal.client.security import ClientSecurity
from shoal.protocol.record_batch import (
    HEADER_SIZE,
    MAGIC_V2,
    TIMESTAMP_TYPE_MASK,
    BatchError,
    BatchHeader,
    compute_crc,
    iter_headers,
)
from shoal.protocol.records import decompressed
from shoal.protocol.records import read_varint as _varint
from shoal.spark.cluster import EARLIEST, client_for, fetch, list_offsets
from shoal.spark.options import FETCH_BYTES_DEFAULT, MAX_ROWS_PER_BATCH_DEFAULT

log = logging.getLogger(__name__)

SCHEMA_DDL_WITHOUT_HEADERS: Final = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int"
)
SCHEMA_DDL: Final = SCHEMA_DDL_WITHOUT_HEADERS + ", headers array<struct<key:string,value:binary>>"
HEADERS_TYPE: Final = pa.list_(
    pa.field("element", pa.struct([("key", pa.string()), ("value", pa.binary())]))
)
TIMESTAMP_TYPE: Final = pa.timestamp("us", tz="UTC")
ARROW_SCHEMA: Final = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", TIMESTAMP_TYPE),
        ("timestampType", pa.int32()),
        ("headers", HEADERS_TYPE),
    ]
)
ARROW_SCHEMA_WITHOUT_HEADERS: Final = ARROW_SCHEMA.remove(ARROW_SCHEMA.get_field_index("headers"))

FETCH_STALLS_MAX: Final = 20
"""Fetches in a row that return nothing new while the partition's high watermark (or
last stable offset) says the data is there, before `read_range` gives up."""
FETCH_WAIT_MS: Final = 200
"""Fetch MaxWaitMs: only waited when the range reaches past the end of the log."""
DECODE_BYTES_MAX: Final = 256 * 2**20
"""Record bytes (after decompression) decoded into one Arrow batch: a Fetch response
that inflates to more is decoded in several. A single batch inflating to more is
refused as CORRUPT_MESSAGE (Arrow binary offsets are 32-bit; Kafka's default
max.message.bytes is 1 MiB before compression)."""

_CONTROL_ABORT: Final = 0
_ZIGZAG_ONE: Final = np.uint64(1)


class OffsetRangeError(RuntimeError):
    """The requested offsets cannot be read: deleted from the log, or not yet written."""


def read_range(
    bootstrap: str,
    topic: str,
    partition: int,
    start: int,
    end: int,
    *,
    isolation_level: int = 0,
    max_rows_per_batch: int = MAX_ROWS_PER_BATCH_DEFAULT,
    fetch_max_bytes: int = FETCH_BYTES_DEFAULT,
    include_headers: bool = True,
    security: ClientSecurity | None = None,
) -> Iterator[pa.RecordBatch]:
    """Records with start <= offset < end via Fetch (decoded straight into Arrow
    columns; control records dropped; with isolation_level=1 aborted-transaction
    records dropped using AbortedTransactions), in offset order; without the `headers`
    column unless `include_headers`. Raises a clear error if the range is no longer in
    the log (OFFSET_OUT_OF_RANGE)."""
    assert 0 <= start <= end, f"bad range [{start}, {end})"
    assert max_rows_per_batch > 0 and fetch_max_bytes > 0
    client = client_for(bootstrap, security)
    constants = _Constants(topic, partition)
    aborted = _AbortedTransactions() if isolation_level else None
    offset = start
    stalls = 0
    while offset < end:
        fetched = fetch(
            client,
            topic,
            partition,
            offset,
            max_bytes=fetch_max_bytes,
            max_wait_ms=FETCH_WAIT_MS,
            isolation_level=isolation_level,
        )
        if fetched.error == ErrorCode.offset_out_of_range:
            raise OffsetRangeError(
                f"offsets [{offset}, {end}) of {topic}-{partition} are not in the log "
                f"(OFFSET_OUT_OF_RANGE; {_log_bounds(client, topic, partition)})"
            )
        if fetched.error != ErrorCode.none:
            raise KafkaError(fetched.error, context=f"Fetch {topic}-{partition} at offset {offset}")
        if aborted is not None:
            aborted.add(fetched.aborted)
        next_offset, kept = _kept_batches(fetched.records, offset, end, aborted)
        for decoded in decode_batches(kept, start=offset, end=end, constants=constants):
            batch = (
                decoded
                if include_headers
                else pa.RecordBatch.from_arrays(
                    decoded.columns[:-1], schema=ARROW_SCHEMA_WITHOUT_HEADERS
                )
            )
            for first in range(0, batch.num_rows, max_rows_per_batch):
                yield batch.slice(first, max_rows_per_batch)
        if next_offset > offset:
            offset, stalls = next_offset, 0
        else:
            readable = fetched.last_stable_offset if isolation_level else fetched.high_watermark
            stalls += 1
            if readable <= offset or stalls > FETCH_STALLS_MAX:
                raise OffsetRangeError(
                    f"offsets [{offset}, {end}) of {topic}-{partition} are not readable: the "
                    f"partition's {'last stable offset' if isolation_level else 'high watermark'}"
                    f" is {readable}"
                )


def _log_bounds(client: Client, topic: str, partition: int) -> str:
    try:
        earliest = list_offsets(client, topic, {partition: EARLIEST})[partition]
    except ClientError as exc:
        return f"log start offset unknown: {exc}"
    return f"the log now starts at offset {earliest}"


# ---- choosing batches


class _AbortedTransactions:
    """Kafka's read_committed filter: a producer id is 'aborting' from the first offset
    of one of its aborted transactions until its ABORT marker."""

    def __init__(self) -> None:
        self._pending: list[tuple[int, int]] = []  # (first_offset, producer_id), sorted
        self._seen: set[tuple[int, int]] = set()
        self._aborting: set[int] = set()

    def add(self, aborted: tuple[tuple[int, int], ...]) -> None:
        new = [(first, pid) for pid, first in aborted if (first, pid) not in self._seen]
        if new:
            self._seen.update(new)
            self._pending = sorted(self._pending + new)

    def skips(self, header: BatchHeader, payload: bytes) -> bool:
        """True if the batch is dropped: a control batch (an ABORT marker ends its
        producer's aborted transaction), or part of an aborted transaction."""
        while self._pending and self._pending[0][0] <= header.last_offset:
            self._aborting.add(self._pending.pop(0)[1])
        if header.is_control:
            if _control_type(payload) == _CONTROL_ABORT:
                self._aborting.discard(header.producer_id)
            return True
        return header.is_transactional and header.producer_id in self._aborting


def _control_type(payload: bytes) -> int:
    """The type (0 ABORT, 1 COMMIT) in the key of a control batch's record."""
    try:
        _, position = _varint(payload, 0)  # length
        _, position = _varint(payload, position + 1)  # after attributes: timestamp delta
        _, position = _varint(payload, position)  # offset delta
        key_length, position = _varint(payload, position)
    except IndexError:
        key_length = -1
    if key_length < 4 or position + 4 > len(payload):
        raise BatchError(
            ErrorCode.corrupt_message, "a control record's key is shorter than 4 bytes"
        )
    return int.from_bytes(payload[position + 2 : position + 4], "big", signed=True)


@dataclass(frozen=True, slots=True)
class _Kept:
    header: BatchHeader
    payload: bytes
    """The batch's records, decompressed."""


def _kept_batches(
    records: bytes, start: int, end: int, aborted: _AbortedTransactions | None
) -> tuple[int, list[_Kept]]:
    """The data batches of a Fetch response's record set that hold offsets in
    [start, end), and the offset after the last batch looked at."""
    view = memoryview(records)
    next_offset = start
    kept = []
    for header in iter_headers(view):
        if header.next_offset <= start:
            continue
        if header.base_offset >= end:
            break
        next_offset = header.next_offset
        if header.magic != MAGIC_V2:
            raise BatchError(
                ErrorCode.corrupt_message, f"batch at {header.base_offset} has magic {header.magic}"
            )
        if compute_crc(view, header) != header.crc:
            raise BatchError(
                ErrorCode.corrupt_message,
                f"CRC-32C mismatch in the batch at offset {header.base_offset}",
            )
        if header.records_count == 0 or (aborted is None and header.is_control):
            continue  # no record: a batch the log cleaner emptied (docs/design/compaction.md)
        body = records[header.position + HEADER_SIZE : header.position + header.size]
        payload = decompressed(body, header) if header.compression else body
        if aborted is not None and aborted.skips(header, payload):
            continue
        kept.append(_Kept(header, payload))
    return next_offset, kept


# ---- decoding into columns


class _Constants:
    """The per-range constant columns' scalars."""

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = pa.scalar(topic, pa.string())
        self.partition = pa.scalar(partition, pa.int32())


def decode_batches(
    kept: list[_Kept], *, start: int, end: int, constants: _Constants
) -> Iterator[pa.RecordBatch]:
    """Arrow batches of the records of `kept` with start <= offset < end: one per run
    of batches whose payloads add up to at most DECODE_BYTES_MAX."""
    for group in _groups(kept):
        data = group[0].payload if len(group) == 1 else b"".join(k.payload for k in group)
        try:
            batch = _decode(data, group, start, end, constants)
        except IndexError:
            raise BatchError(
                ErrorCode.corrupt_message,
                f"records of the batches at offsets {group[0].header.base_offset}.."
                f"{group[-1].header.last_offset} are malformed",
            ) from None
        if batch is not None:
            yield batch


def _groups(kept: list[_Kept]) -> Iterator[list[_Kept]]:
    group: list[_Kept] = []
    size = 0
    for k in kept:
        if len(k.payload) > DECODE_BYTES_MAX:
            raise BatchError(
                ErrorCode.corrupt_message,
                f"the batch at offset {k.header.base_offset} holds {len(k.payload)} bytes of "
                f"records, more than DECODE_BYTES_MAX {DECODE_BYTES_MAX}",
            )
        if k.header.records_count > len(k.payload) or k.header.records_count <= 0:
            raise BatchError(
                ErrorCode.corrupt_message,
                f"the batch at offset {k.header.base_offset} claims "
                f"{k.header.records_count} records in {len(k.payload)} bytes",
            )
        if group and size + len(k.payload) > DECODE_BYTES_MAX:
            yield group
            group, size = [], 0
        group.append(k)
        size += len(k.payload)
    if group:
        yield group


def _decode(
    data: bytes, kept: list[_Kept], start: int, end: int, constants: _Constants
) -> pa.RecordBatch | None:
    counts = np.array([k.header.records_count for k in kept], np.int64)
    record_starts = np.array(_record_starts(data, kept), np.int64)
    buffer = np.frombuffer(data, np.uint8)
    lengths, bodies = _varints(buffer, record_starts)
    record_ends = bodies + lengths
    timestamp_deltas, cursor = _varints(buffer, bodies + 1)  # past the attributes byte
    offset_deltas, cursor = _varints(buffer, cursor)
    key_lengths, cursor = _varints(buffer, cursor)
    key_starts = cursor
    value_lengths, cursor = _varints(buffer, key_starts + np.maximum(key_lengths, 0))
    value_starts = cursor
    header_counts, header_starts = _varints(buffer, value_starts + np.maximum(value_lengths, 0))
    if (
        (lengths < 0).any()
        or (key_lengths < -1).any()
        or (value_lengths < -1).any()
        or (header_counts < 0).any()
        or (header_starts > record_ends).any()
    ):
        raise IndexError
    base_offsets = np.array([k.header.base_offset for k in kept], np.int64)
    offsets = np.repeat(base_offsets, counts) + offset_deltas
    log_append = np.array([bool(k.header.attributes & TIMESTAMP_TYPE_MASK) for k in kept], np.bool_)
    batch_timestamps = np.array(
        [
            k.header.max_timestamp if append else k.header.base_timestamp
            for k, append in zip(kept, log_append, strict=True)
        ],
        np.int64,
    )
    timestamps = np.repeat(batch_timestamps, counts)
    record_log_append = np.repeat(log_append, counts)
    timestamps += np.where(record_log_append, 0, timestamp_deltas)
    wanted = (offsets >= start) & (offsets < end)
    if not wanted.all():
        keep = np.flatnonzero(wanted)
        if not len(keep):
            return None
        offsets, timestamps, record_log_append = (
            offsets[keep],
            timestamps[keep],
            record_log_append[keep],
        )
        key_starts, key_lengths = key_starts[keep], key_lengths[keep]
        value_starts, value_lengths = value_starts[keep], value_lengths[keep]
        header_counts, header_starts = header_counts[keep], header_starts[keep]
        record_ends = record_ends[keep]
    rows = len(offsets)
    arrow_data = pa.py_buffer(data)
    return pa.RecordBatch.from_arrays(
        [
            _binary_column(arrow_data, key_starts, key_lengths),
            _binary_column(arrow_data, value_starts, value_lengths),
            pa.repeat(constants.topic, rows),
            pa.repeat(constants.partition, rows),
            pa.array(offsets, pa.int64()),
            pa.array(timestamps * 1000, TIMESTAMP_TYPE),
            pa.array(record_log_append.astype(np.int32), pa.int32()),
            _headers_column(data, header_counts, header_starts, record_ends),
        ],
        schema=ARROW_SCHEMA,
    )


def _record_starts(data: bytes, kept: list[_Kept]) -> list[int]:
    """Where each record of the joined payloads starts: the one per-record Python loop.
    Length varints of one and two bytes (records under 8 KiB) are decoded inline."""
    starts: list[int] = []
    append = starts.append
    position = 0
    for k in kept:
        end = position + len(k.payload)
        for _ in range(k.header.records_count):
            append(position)
            b = data[position]
            if b < 0x80:
                position += 1 + ((b >> 1) ^ -(b & 1))
                continue
            b2 = data[position + 1]
            if b2 < 0x80:
                raw = (b & 0x7F) | (b2 << 7)
                position += 2 + ((raw >> 1) ^ -(raw & 1))
            else:
                length, after = _varint(data, position)
                position = after + length
        if position != end:
            raise IndexError  # the records do not fill the batch exactly
    return starts


def _varints(buffer: np.ndarray[Any, Any], positions: np.ndarray[Any, Any]) -> tuple[Any, Any]:
    """The zigzag varints starting at `positions` of `buffer`, all at once: (values,
    positions after them). IndexError when one runs past the buffer or 10 bytes."""
    raw = np.zeros(len(positions), np.uint64)
    after = positions.copy()
    pending = np.arange(len(positions))
    shift = 0
    while len(pending):
        if shift > 63:
            raise IndexError
        at = after[pending]
        if len(at) and at.max() >= len(buffer):
            raise IndexError
        byte = buffer[at]
        raw[pending] |= (byte & 0x7F).astype(np.uint64) << np.uint64(shift)
        after[pending] = at + 1
        pending = pending[byte >= 0x80]
        shift += 7
    values = (raw >> _ZIGZAG_ONE).view(np.int64) ^ -((raw & _ZIGZAG_ONE).view(np.int64))
    return values, after


def _binary_column(
    data: pa.Buffer, starts: np.ndarray[Any, Any], lengths: np.ndarray[Any, Any]
) -> pa.Array:
    """A binary column of the fields at (start, length) of `data`; length -1 is null.
    The fields lie in order in `data`, so [s0, e0, s1, e1, ...] are valid offsets of
    an array whose even elements are the fields (and odd ones the bytes between);
    `take` copies the even ones out."""
    rows = len(starts)
    valid = lengths >= 0
    if not valid.any():
        return pa.nulls(rows, pa.binary())
    bounds = np.empty(2 * rows, np.int32)
    bounds[0::2] = starts
    bounds[1::2] = starts + np.where(valid, lengths, 0)
    interleaved = pa.Array.from_buffers(
        pa.binary(), 2 * rows - 1, [None, pa.py_buffer(bounds), data]
    )
    fields = interleaved.take(pa.array(np.arange(0, 2 * rows, 2, dtype=np.int64)))
    if valid.all():
        return fields
    validity = pa.py_buffer(np.packbits(valid, bitorder="little"))
    _, field_offsets, field_data = fields.buffers()
    return pa.Array.from_buffers(pa.binary(), rows, [validity, field_offsets, field_data])


def _headers_column(
    data: bytes,
    counts: np.ndarray[Any, Any],
    starts: np.ndarray[Any, Any],
    record_ends: np.ndarray[Any, Any],
) -> pa.Array:
    rows = len(counts)
    with_headers = np.flatnonzero(counts)
    if not len(with_headers):
        return pa.nulls(rows, HEADERS_TYPE)
    cells: list[list[tuple[str, bytes | None]] | None] = [None] * rows
    for row in with_headers.tolist():
        cells[row] = _record_headers(
            data, int(counts[row]), int(starts[row]), int(record_ends[row])
        )
    return pa.array(cells, HEADERS_TYPE)


def _record_headers(
    data: bytes, count: int, position: int, record_end: int
) -> list[tuple[str, bytes | None]]:
    headers = []
    try:
        for _ in range(count):
            size, position = _varint(data, position)
            if size < 0:
                raise IndexError
            key = data[position : position + size].decode("utf-8")
            position += size
            size, position = _varint(data, position)
            value = None
            if size >= 0:
                value = data[position : position + size]
                position += size
            headers.append((key, value))
    except UnicodeDecodeError:
        raise IndexError from None
    if position > record_end:
        raise IndexError
    return headers
