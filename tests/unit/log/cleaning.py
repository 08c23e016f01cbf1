"""Helpers for cleaner tests: keyed batches, reading a log back whole, one clean."""

from __future__ import annotations

from shoal.clock import ManualClock
from shoal.log.cleanable import CleanStats
from shoal.log.partition import PartitionLog
from tests.support.batches import (
    COMPRESSION_NONE,
    DecodedRecord,
    Record,
    build_batch,
    decode_records,
)
from tests.unit.log.batches import headers_of

COMPACT = ["compact"]


def keyed(
    clock: ManualClock,
    *pairs: tuple[bytes | None, bytes | None],
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    compression: int = COMPRESSION_NONE,
) -> bytes:
    """One batch of (key, value) records at the clock's wall time."""
    return build_batch(
        [Record(key=key, value=value, timestamp_delta=i) for i, (key, value) in enumerate(pairs)],
        base_timestamp=clock.wall_ms(),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        transactional=transactional,
        compression=compression,
    )


def put(log: PartitionLog, clock: ManualClock, *pairs: tuple[bytes | None, bytes | None]) -> int:
    """Append one plain batch of `pairs`; returns its base offset."""
    batch = keyed(clock, *pairs)
    return log.append(batch, headers_of(batch), leader_epoch=0).base_offset


def append_batch(log: PartitionLog, batch: bytes) -> int:
    return log.append(batch, headers_of(batch), leader_epoch=0).base_offset


def read_all(log: PartitionLog, start: int | None = None) -> list[DecodedRecord]:
    """Every record from `start` (the log start) to the log end."""
    data = log.read(log.log_start_offset if start is None else start, max_bytes=1 << 30).records
    return decode_records(data)


def latest(log: PartitionLog) -> dict[bytes | None, bytes | None]:
    """Key -> the value a consumer reading the whole log ends with."""
    out: dict[bytes | None, bytes | None] = {}
    for record in read_all(log):
        out[record.key] = record.value
    return out


def clean(log: PartitionLog, clock: ManualClock, *, entries: int = 10_000) -> CleanStats:
    """Plan, run and finish one clean, which must be due."""
    plan = log.clean_plan(clock.wall_ms())
    assert plan is not None, "a clean was expected to be due"
    result = plan.run(key_map_entries=entries)
    assert result.error is None, result.error
    return log.finish_clean(result)
