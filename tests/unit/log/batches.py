"""Log-test helpers on top of the shared batch builder (tests/support/batches.py):
batches shaped for log tests, appending them as a produce request would, and the bytes
the log must hold after offset assignment."""

from __future__ import annotations

from shoal.log.api import AppendResult
from shoal.log.partition import PartitionLog
from shoal.protocol.record_batch import BatchHeader, parse_header, stamp_prefix, validate_produced
from tests.support.batches import Record, build_batch

BASE_TIMESTAMP_MS = 1_700_000_000_000
"""The default ManualClock's wall time at start, so retention tests line up."""


def make_batch(
    count: int = 1,
    *,
    value_size: int = 16,
    timestamp_ms: int = BASE_TIMESTAMP_MS,
    producer_id: int = -1,
    producer_epoch: int = 0,
    base_sequence: int = -1,
    seed: int = 0,
    transactional: bool = False,
) -> bytes:
    """A batch of `count` records with distinct keys and `value_size`-byte values."""
    records = [
        Record(
            key=f"k{seed}-{i}".encode(),
            value=bytes([(seed + i) % 256]) * value_size,
            timestamp_delta=i,
        )
        for i in range(count)
    ]
    return build_batch(
        records,
        base_timestamp=timestamp_ms,
        producer_id=producer_id,
        producer_epoch=producer_epoch if producer_id >= 0 else -1,
        base_sequence=base_sequence,
        transactional=transactional,
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
