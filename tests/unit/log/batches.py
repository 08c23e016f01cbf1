"""Real Kafka v2 record batches for tests, built the way a producer builds them.

Records are encoded per Kafka's v2 format (zigzag varints: length, attributes,
timestamp delta, offset delta, key, value, headers) and the batch CRC-32C is computed
with the `crc32c` package, so `validate_produced` accepts what this module builds.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import crc32c

from shoal.log.api import AppendResult
from shoal.log.partition import PartitionLog
from shoal.protocol.record_batch import BatchHeader, parse_header, stamp_prefix, validate_produced

_BATCH_HEADER = struct.Struct(">qiibIhiqqqhii")
BASE_TIMESTAMP_MS = 1_700_000_000_000
"""The default ManualClock's wall time at start, so retention tests line up."""


def varint(value: int) -> bytes:
    """Zigzag varint (Kafka's varint / varlong)."""
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


def _bytes_field(value: bytes | None) -> bytes:
    if value is None:
        return varint(-1)
    return varint(len(value)) + value


def encode_record(
    *,
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]] = (),
) -> bytes:
    body = bytearray(b"\x00")  # attributes
    body += varint(timestamp_delta)
    body += varint(offset_delta)
    body += _bytes_field(key)
    body += _bytes_field(value)
    body += varint(len(headers))
    for name, header_value in headers:
        encoded = name.encode()
        body += varint(len(encoded)) + encoded + _bytes_field(header_value)
    return varint(len(body)) + bytes(body)


def build_batch(
    records: Sequence[tuple[bytes | None, bytes | None]],
    *,
    timestamps_ms: Sequence[int] | None = None,
    base_offset: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    attributes: int = 0,
    leader_epoch: int = -1,
) -> bytes:
    """One v2 batch holding (key, value) `records`."""
    assert records, "a batch holds at least one record"
    if timestamps_ms is None:
        timestamps_ms = [BASE_TIMESTAMP_MS] * len(records)
    base_timestamp = timestamps_ms[0]
    encoded = b"".join(
        encode_record(offset_delta=i, timestamp_delta=ts - base_timestamp, key=key, value=value)
        for i, ((key, value), ts) in enumerate(zip(records, timestamps_ms, strict=True))
    )
    after_crc = struct.pack(
        ">hiqqqhii",
        attributes,
        len(records) - 1,
        base_timestamp,
        max(timestamps_ms),
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )
    crc = crc32c.crc32c(after_crc + encoded)
    batch_length = 4 + 1 + 4 + len(after_crc) + len(encoded)
    prefix = struct.pack(">qiibI", base_offset, batch_length, leader_epoch, 2, crc)
    return prefix + after_crc + encoded


def make_batch(
    count: int = 1,
    *,
    value_size: int = 16,
    timestamp_ms: int = BASE_TIMESTAMP_MS,
    producer_id: int = -1,
    producer_epoch: int = 0,
    base_sequence: int = -1,
    seed: int = 0,
) -> bytes:
    """A batch of `count` records with distinct keys and `value_size`-byte values."""
    records = [
        (f"k{seed}-{i}".encode(), bytes([(seed + i) % 256]) * value_size) for i in range(count)
    ]
    return build_batch(
        records,
        timestamps_ms=[timestamp_ms + i for i in range(count)],
        producer_id=producer_id,
        producer_epoch=producer_epoch if producer_id >= 0 else -1,
        base_sequence=base_sequence,
    )


def headers_of(records: bytes) -> list[BatchHeader]:
    return validate_produced(records, max_batch_bytes=1 << 30)


def append(log: PartitionLog, *batches: bytes, leader_epoch: int = 0) -> AppendResult:
    """Append `batches` as one produce request would."""
    records = b"".join(batches)
    return log.append(records, headers_of(records), leader_epoch=leader_epoch)


def stored(batch: bytes, *, base_offset: int, leader_epoch: int = 0) -> bytes:
    """The bytes the log must hold for `batch` appended at `base_offset`."""
    header = parse_header(batch)
    return stamp_prefix(header, base_offset=base_offset, leader_epoch=leader_epoch) + batch[17:]
