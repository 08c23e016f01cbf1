"""Transactions in a partition log: control batches and the aborted-transaction index.

Owns: the control-record types (`ControlType`), the aborted-transaction entry
(`AbortedTxn`) and its index entry (`AbortEntry`), building a transaction marker (one
control batch, as Kafka writes it), reading a stored marker back, and each segment's
`.txnindex` file.

A marker is a magic-2 batch with the transactional and control attributes, no
sequence, and one record: key = int16 version 0, int16 type (0 ABORT, 1 COMMIT);
value = int16 version 0, int32 coordinator epoch.

The aborted index of a segment lists, in marker order, every transaction aborted by
a marker stored in that segment: (producer id, first offset of the transaction, offset
of the ABORT marker, last stable offset just after the marker). Kafka keeps the same
facts in its `.txnindex` files. The stable offset bounds a search: once an abort left
the LSO above an offset, every transaction begun below that offset had ended, so no
later abort concerns records below it.

File `<base_offset:020d>.txnindex`: magic b"SHTX", int16 version 1, uint32 CRC-32C
of the rest, int64 covered end offset, then per entry int64 producer id, int64 first
offset, int64 last offset, int64 stable offset (big-endian). The entries are complete
for the markers below the covered end (the segment's next offset when the file was
written). Written when a segment is sealed and at a clean close, like the other
indexes; recovery takes the entries below the covered end and finds the rest by
replaying the segment's batches from there (from its base when the file is missing
or damaged).
"""

from __future__ import annotations

import enum
import struct
from pathlib import Path
from typing import NamedTuple

import crc32c

from shoal.log.fileio import file_name, read_file, write_file
from shoal.protocol.record_batch import (
    CONTROL_MASK,
    HEADER_SIZE,
    TRANSACTIONAL_MASK,
    BatchHeader,
    encode_batch,
)
from shoal.protocol.records import read_varint

TXN_INDEX_SUFFIX = ".txnindex"

_CONTROL_KEY = struct.Struct(">hh")
_CONTROL_VALUE = struct.Struct(">hi")
_CONTROL_VERSION = 0
_INDEX_HEAD = struct.Struct(">4shI")
_INDEX_MAGIC = b"SHTX"
_INDEX_VERSION = 1
_ENTRY = struct.Struct(">qqqq")
_COVERED = struct.Struct(">q")


class ControlType(enum.IntEnum):
    ABORT = 0
    COMMIT = 1


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    """Offset of the ABORT marker."""


class AbortEntry(NamedTuple):
    """An aborted transaction as its segment's index keeps it."""

    txn: AbortedTxn
    stable_offset: int
    """The last stable offset just after the marker was appended."""


def encode_control_batch(
    *,
    producer_id: int,
    producer_epoch: int,
    control: ControlType,
    coordinator_epoch: int,
    timestamp_ms: int,
) -> bytes:
    """One transaction marker batch (base offset 0, to be stamped by the log), written
    by the one batch writer: no sequence, partition leader epoch 0."""
    key = _CONTROL_KEY.pack(_CONTROL_VERSION, int(control))
    value = _CONTROL_VALUE.pack(_CONTROL_VERSION, coordinator_epoch)
    return encode_batch(
        [(key, value)],
        timestamp_ms=timestamp_ms,
        attributes=TRANSACTIONAL_MASK | CONTROL_MASK,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
    )


def read_marker(batch: bytes, header: BatchHeader) -> tuple[ControlType, int] | None:
    """(type, coordinator epoch) of the marker `header` describes (`batch` holds the
    whole batch from its start), or None if its record is unreadable or of an unknown
    type (Kafka ignores such control records)."""
    assert header.is_control
    try:
        _length, position = read_varint(batch, HEADER_SIZE)
        position += 1  # attributes
        _ts_delta, position = read_varint(batch, position)
        _offset_delta, position = read_varint(batch, position)
        key_length, position = read_varint(batch, position)
        if key_length < _CONTROL_KEY.size:
            return None
        _version, kind = _CONTROL_KEY.unpack_from(batch, position)
        position += key_length
        value_length, position = read_varint(batch, position)
        coordinator_epoch = -1
        if value_length >= _CONTROL_VALUE.size:
            _version, coordinator_epoch = _CONTROL_VALUE.unpack_from(batch, position)
    except (IndexError, struct.error):
        return None
    try:
        return ControlType(kind), coordinator_epoch
    except ValueError:
        return None


def txn_index_path(directory: Path, base_offset: int) -> Path:
    return directory / file_name(base_offset, TXN_INDEX_SUFFIX)


def write_txn_index(path: Path, entries: list[AbortEntry], *, covered_end: int, sync: bool) -> None:
    body = _COVERED.pack(covered_end) + b"".join(
        _ENTRY.pack(*entry.txn, entry.stable_offset) for entry in entries
    )
    head = _INDEX_HEAD.pack(_INDEX_MAGIC, _INDEX_VERSION, crc32c.crc32c(body))
    write_file(path, head + body, sync=sync)


def read_txn_index(path: Path) -> tuple[list[AbortEntry], int] | None:
    """(entries, covered end offset) of a `.txnindex` file, or None if it is missing
    or damaged."""
    data = read_file(path)
    if data is None or len(data) < _INDEX_HEAD.size + _COVERED.size:
        return None
    magic, version, crc = _INDEX_HEAD.unpack_from(data, 0)
    body = data[_INDEX_HEAD.size :]
    if magic != _INDEX_MAGIC or version != _INDEX_VERSION:
        return None
    if (len(body) - _COVERED.size) % _ENTRY.size or crc32c.crc32c(body) != crc:
        return None
    (covered_end,) = _COVERED.unpack_from(body, 0)
    entries = [
        _entry(*_ENTRY.unpack_from(body, at)) for at in range(_COVERED.size, len(body), _ENTRY.size)
    ]
    return entries, covered_end


def _entry(producer_id: int, first_offset: int, last_offset: int, stable_offset: int) -> AbortEntry:
    return AbortEntry(AbortedTxn(producer_id, first_offset, last_offset), stable_offset)
