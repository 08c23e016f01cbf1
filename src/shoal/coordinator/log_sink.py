"""Coordinator records on an internal topic: the durable `RecordSink`, and loading.

Owns the bytes a coordinator's records become in a partition log and back:

- `LogRecordSink` writes one append (all records of one coordinator write) as ONE
  magic-2 record batch on one partition: no compression, producer id -1, every
  record stamped with the clock's wall time, built by `record_batch.encode_batch`
  (the bytes kio's batch writer makes, without its per-field typed values). One batch
  makes the append all-or-nothing on disk: recovery keeps a batch whole or drops it.
  A batch above `batch_bytes_max` (default `limits.COORDINATOR_BATCH_BYTES_MAX`)
  raises `CoordinatorBatchTooLarge` before anything is written; a storage failure
  raises `RecordSinkUnavailable`. Both are `RecordSinkError`s: the runtime replays
  nothing and the caller answers COORDINATOR_NOT_AVAILABLE. A `sync` sink fsyncs
  its log after every append, before returning (so before the runtime replays the
  records or anyone answers), whatever the topic's flush policy: the transaction
  coordinator's sink is one (server/services/txn_service.py says why).
- `read_log` reads a partition from its log start to its end and yields
  `(offset, record)` in offset order, decoding batches with kio's batch reader.
  Control batches and records below the log start offset (a start inside a batch)
  are skipped. A record type the decoder does not know (`UnknownRecordType`, from
  `coordinator.records`) is logged and skipped, as Kafka's coordinator loader does;
  any other record that fails to decode raises `CoordinatorLogCorrupt` naming
  partition and offset.

Sans-I/O in the layering sense: no asyncio; the partition log does the file work.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from kio.records.readers import read_batch
from kio.serial.errors import SerialError

from shoal import limits
from shoal.clock import Clock
from shoal.coordinator.records import UnknownRecordType
from shoal.coordinator.sink import RecordSinkFull, RecordSinkUnavailable
from shoal.log.api import LogError
from shoal.log.partition import PartitionLog
from shoal.protocol.record_batch import LOG_OVERHEAD, BatchHeader, encode_batch, parse_header

logger = logging.getLogger(__name__)

R = TypeVar("R")

Encode = Callable[[R], tuple[bytes, bytes | None]]
"""A record's (key, value) bytes; value None is a tombstone."""
Decode = Callable[[bytes, bytes | None], R]
"""The record of (key, value) bytes; raises `UnknownRecordType` or `ValueError`."""

_LEADER_EPOCH = 0


class CoordinatorBatchTooLarge(RecordSinkFull):
    """One append would make a record batch above the sink's byte bound."""


class CoordinatorLogCorrupt(Exception):
    """A batch or record of an internal topic cannot be read back."""

    def __init__(self, message: str, *, partition: str, offset: int) -> None:
        super().__init__(f"{partition} at offset {offset}: {message}")
        self.partition = partition
        self.offset = offset


@dataclass(frozen=True, slots=True)
class PreparedBatch:
    """An append built and checked, not yet written."""

    records: bytes
    headers: list[BatchHeader]


class LogRecordSink(Generic[R]):
    """A `RecordSink` on one partition log of an internal topic (module docstring)."""

    def __init__(
        self,
        *,
        log: PartitionLog,
        encode: Encode[R],
        clock: Clock,
        batch_bytes_max: int = limits.COORDINATOR_BATCH_BYTES_MAX,
        sync: bool = False,
    ) -> None:
        assert batch_bytes_max > 0, batch_bytes_max
        self._log = log
        self._encode = encode
        self._clock = clock
        self._batch_bytes_max = batch_bytes_max
        self._sync = sync

    @property
    def log(self) -> PartitionLog:
        return self._log

    def append(self, records: Sequence[R], /) -> int:
        """Write `records` as one batch; returns the offset of the first."""
        data, header = self._encoded(records)
        return self._write(data, [header])

    def prepare(self, records: Sequence[R]) -> PreparedBatch:
        """Encode `records` into one batch and check its size. Raises
        `CoordinatorBatchTooLarge`; writes nothing."""
        data, header = self._encoded(records)
        return PreparedBatch(data, [header])

    def write(self, batch: PreparedBatch) -> int:
        """Append a prepared batch (fsynced first if the sink is `sync`); returns its
        base offset. A storage failure raises `RecordSinkUnavailable` (the log's
        `LogError` as its cause; a failed fsync has taken the log offline)."""
        return self._write(batch.records, batch.headers)

    def _encoded(self, records: Sequence[R]) -> tuple[bytes, BatchHeader]:
        """`prepare` without its `PreparedBatch` (`append` writes at once)."""
        assert records, "a coordinator append has at least one record"
        encode = self._encode
        data = encode_batch(
            [encode(records[0])] if len(records) == 1 else [encode(r) for r in records],
            timestamp_ms=self._clock.wall_ms(),
            partition_leader_epoch=_LEADER_EPOCH,
        )
        if len(data) > self._batch_bytes_max:
            raise CoordinatorBatchTooLarge(
                f"{len(records)} coordinator records make a {len(data)}-byte batch for "
                f"{self._log.directory.name}, above the bound of {self._batch_bytes_max} "
                "bytes (limits.COORDINATOR_BATCH_BYTES_MAX)"
            )
        # Built here (CRC included): only its header is needed, not
        # `validate_produced`'s checks of a peer's batch (a CRC pass per state write).
        header = parse_header(data)
        assert header.batch_length + LOG_OVERHEAD == len(data), header
        return data, header

    def _write(self, data: bytes, headers: list[BatchHeader]) -> int:
        try:
            result = self._log.append(data, headers, leader_epoch=_LEADER_EPOCH)
            if self._sync:
                self._log.flush()
        except LogError as exc:
            raise RecordSinkUnavailable(
                f"{self._log.directory.name}: append failed: {exc}"
            ) from exc
        assert not result.duplicate, "coordinator batches carry no producer id"
        return result.base_offset


def read_log(log: PartitionLog, decode: Decode[R], *, buffer_bytes: int) -> Iterator[tuple[int, R]]:
    """Every record of `log` from its log start to its end, in offset order, reading
    `buffer_bytes` at a time (a larger batch is still read whole). Raises
    `CoordinatorLogCorrupt` (module docstring) and the log's `LogError`."""
    assert buffer_bytes > 0, buffer_bytes
    name = log.directory.name
    start = log.log_start_offset
    offset = start
    while offset < log.log_end_offset:
        result = log.read(offset, max_bytes=buffer_bytes)
        if not result.headers:
            raise CoordinatorLogCorrupt(
                f"no batch to read below the log end offset {log.log_end_offset}",
                partition=name,
                offset=offset,
            )
        for header in result.headers:
            if not header.is_control:
                yield from _records_of(name, result.records, header, decode, start=start)
        offset = result.headers[-1].next_offset


def _records_of(
    name: str, buffer: bytes, header: BatchHeader, decode: Decode[R], *, start: int
) -> Iterator[tuple[int, R]]:
    if header.compression:
        raise CoordinatorLogCorrupt(
            f"compressed batch (codec {header.compression}); coordinators write none",
            partition=name,
            offset=header.base_offset,
        )
    try:
        batch, _ = read_batch(buffer, header.position)
    except (ValueError, SerialError) as exc:
        raise CoordinatorLogCorrupt(
            f"unreadable batch: {exc}", partition=name, offset=header.base_offset
        ) from exc
    for entry in batch.records:
        offset = int(entry.offset)
        if offset < start:
            continue
        if entry.key is None:
            raise CoordinatorLogCorrupt("record without a key", partition=name, offset=offset)
        try:
            record = decode(entry.key, entry.value)
        except UnknownRecordType as exc:
            logger.warning("skipping record at %s offset %d: %s", name, offset, exc)
            continue
        except (ValueError, SerialError) as exc:
            raise CoordinatorLogCorrupt(
                f"undecodable record: {exc}", partition=name, offset=offset
            ) from exc
        yield offset, record
