"""Idempotent-producer state of one partition: epochs, recent batches, snapshots.

Owns: for every producer id seen in the partition, its current epoch, the sequence and
offset ranges of its last `PRODUCER_BATCHES_RETAINED` batches, when it last wrote, its
open transaction (first offset) and the last transaction coordinator epoch seen in
its markers; the checks an append must pass (`check`, `check_marker`), recording
appended or replayed batches (`record`) and markers (`end_transaction`), dropping idle
producers (never one with an open transaction), and the snapshot file format.

Transactions: a transactional batch opens a transaction for its producer at its base
offset when none is open; a marker (control batch) ends it. The first offsets of the
open transactions bound the last stable offset (`first_unstable_offset`).

Rules (Kafka's, for batches with producer_id >= 0 and base_sequence >= 0):
- an epoch below the producer's current one -> INVALID_PRODUCER_EPOCH;
- a higher epoch must start at sequence 0 (else OUT_OF_ORDER_SEQUENCE_NUMBER) and
  resets the producer's batches;
- same epoch: a batch whose (first, last) sequence equals a remembered batch's is a
  duplicate (answered with the original offsets, nothing written); otherwise its first
  sequence must follow the last one (mod 2**31), else OUT_OF_ORDER_SEQUENCE_NUMBER;
- a producer id the partition has no state for may start at any sequence and epoch;
- a non-transactional batch from a producer with an open transaction -> INVALID_TXN_STATE;
- a marker with an epoch below the producer's -> INVALID_PRODUCER_EPOCH, with a
  coordinator epoch below the last one seen -> TRANSACTION_COORDINATOR_FENCED.

Snapshot file `<offset:020d>.snapshot`: the state of every producer after all
batches below `offset`. Big-endian: magic b"SHPS", int16 version 2, uint32 CRC-32C
of the rest, int32 producer count; per producer: int64 id, int16 epoch, int64 last
write time (ms), int64 last offset, int8 batch count, int64 first offset of the open
transaction (-1: none), int32 coordinator epoch (-1: none), then per batch int32 first
sequence, int32 last sequence, int64 base offset, int64 last offset. Version 1 (no
transaction fields) is still read.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import crc32c

from shoal import limits
from shoal.log.api import LogError
from shoal.log.fileio import file_name, parse_file_name, remove_if_exists, write_atomic
from shoal.log.transactions import AbortedTxn, ControlType
from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import BatchHeader

SNAPSHOT_SUFFIX = ".snapshot"
_SEQUENCE_MODULUS = 2**31

_SNAPSHOT_MAGIC = b"SHPS"
_SNAPSHOT_VERSION = 2
_SNAPSHOT_HEAD = struct.Struct(">4shI")
_COUNT = struct.Struct(">i")
_PRODUCER_V1 = struct.Struct(">qhqqb")
_PRODUCER = struct.Struct(">qhqqbqi")
NO_TXN = -1
_BATCH = struct.Struct(">iiqq")


class BatchMetadata(NamedTuple):
    first_sequence: int
    last_sequence: int
    base_offset: int
    last_offset: int


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int
    last_timestamp_ms: int
    last_offset: int
    batches: deque[BatchMetadata] = field(
        default_factory=lambda: deque(maxlen=limits.PRODUCER_BATCHES_RETAINED)
    )
    txn_first_offset: int = NO_TXN
    """First offset of the producer's open transaction in this partition, or -1."""
    coordinator_epoch: int = -1

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        if header.producer_epoch != self.epoch:
            return None
        for batch in self.batches:
            if (
                batch.first_sequence == header.base_sequence
                and batch.last_sequence == header.last_sequence
            ):
                return batch
        return None


class ProducerStateTable:
    """Every producer's state in one partition."""

    def __init__(self) -> None:
        self._producers: dict[int, ProducerEntry] = {}
        self._open: dict[int, int] = {}
        """Producer id -> first offset of its open transaction (mirrors the entries)."""

    def __len__(self) -> int:
        return len(self._producers)

    def get(self, producer_id: int) -> ProducerEntry | None:
        return self._producers.get(producer_id)

    def entries(self) -> list[ProducerEntry]:
        """Every producer's entry, by producer id (callers must not change them)."""
        return [self._producers[pid] for pid in sorted(self._producers)]

    def check(self, headers: Iterable[BatchHeader]) -> BatchMetadata | None:
        """Check the batches of one append, in order, against the state and each other.
        Returns the stored batch the first duplicate repeats (the append must then
        write nothing), else None. Raises LogError; changes nothing."""
        # Per producer id: (epoch, last sequence) after the earlier batches of this append.
        pending: dict[int, tuple[int, int]] = {}
        for header in headers:
            if header.producer_id < 0 or header.base_sequence < 0:  # not idempotent
                continue
            entry = self._producers.get(header.producer_id)
            if (
                entry is not None
                and entry.txn_first_offset != NO_TXN
                and not header.is_transactional
                and header.producer_epoch == entry.epoch
            ):
                raise LogError(
                    ErrorCode.invalid_txn_state,
                    f"producer {header.producer_id} has a transaction open at offset "
                    f"{entry.txn_first_offset} and sent a non-transactional batch",
                )
            if header.producer_id in pending:
                epoch, last_sequence = pending[header.producer_id]
            elif entry is not None:
                duplicate = entry.find_duplicate(header)
                if duplicate is not None:
                    return duplicate
                epoch = entry.epoch
                last_sequence = entry.batches[-1].last_sequence if entry.batches else -1
            else:
                pending[header.producer_id] = (header.producer_epoch, header.last_sequence)
                continue
            _check_sequence(header, epoch=epoch, last_sequence=last_sequence)
            pending[header.producer_id] = (header.producer_epoch, header.last_sequence)
        return None

    def record(self, headers: Iterable[BatchHeader], *, timestamp_ms: int | None) -> None:
        """Remember stored batches (after an append, or replayed from the log on
        recovery). `timestamp_ms` is the write time; None takes each batch's max
        timestamp (replay)."""
        for header in headers:
            if header.producer_id < 0 or header.base_sequence < 0:  # not idempotent
                continue
            when = header.max_timestamp if timestamp_ms is None else timestamp_ms
            entry = self._producers.get(header.producer_id)
            if entry is None:
                entry = ProducerEntry(
                    header.producer_id, header.producer_epoch, when, header.last_offset
                )
                self._producers[header.producer_id] = entry
            elif entry.epoch != header.producer_epoch:
                entry.epoch = header.producer_epoch
                entry.batches.clear()
            entry.last_timestamp_ms = max(entry.last_timestamp_ms, when)
            entry.last_offset = header.last_offset
            if header.is_transactional and entry.txn_first_offset == NO_TXN:
                entry.txn_first_offset = header.base_offset
                self._open[header.producer_id] = header.base_offset
            entry.batches.append(
                BatchMetadata(
                    header.base_sequence,
                    header.last_sequence,
                    header.base_offset,
                    header.last_offset,
                )
            )

    def check_marker(
        self, *, producer_id: int, producer_epoch: int, coordinator_epoch: int
    ) -> None:
        """Raise LogError if a marker from this producer epoch and coordinator epoch
        is fenced; changes nothing."""
        entry = self._producers.get(producer_id)
        if entry is None:
            return
        if producer_epoch < entry.epoch:
            raise LogError(
                ErrorCode.invalid_producer_epoch,
                f"marker for producer {producer_id} has epoch {producer_epoch}, older than "
                f"the current epoch {entry.epoch}",
            )
        if coordinator_epoch < entry.coordinator_epoch:
            raise LogError(
                ErrorCode.transaction_coordinator_fenced,
                f"marker for producer {producer_id} comes from coordinator epoch "
                f"{coordinator_epoch}, older than {entry.coordinator_epoch}",
            )

    def end_transaction(
        self,
        *,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        control: ControlType,
        offset: int,
        timestamp_ms: int,
    ) -> AbortedTxn | None:
        """Record a marker stored at `offset` (appended or replayed): the producer's
        open transaction ends. Returns the aborted transaction to index (an ABORT that
        ended an open transaction), else None (a COMMIT, or a marker with nothing
        open, which Kafka writes anyway)."""
        entry = self._producers.get(producer_id)
        if entry is None:
            entry = ProducerEntry(producer_id, producer_epoch, timestamp_ms, offset)
            self._producers[producer_id] = entry
        elif producer_epoch != entry.epoch:
            entry.epoch = producer_epoch
            entry.batches.clear()
        entry.last_timestamp_ms = max(entry.last_timestamp_ms, timestamp_ms)
        entry.last_offset = offset
        entry.coordinator_epoch = max(entry.coordinator_epoch, coordinator_epoch)
        first, entry.txn_first_offset = entry.txn_first_offset, NO_TXN
        self._open.pop(producer_id, None)
        if control is ControlType.ABORT and first != NO_TXN:
            return AbortedTxn(producer_id, first, offset)
        return None

    def last_records(self) -> dict[int, tuple[int | None, int]]:
        """Producer id -> (last offset of its last remembered data batch, or None if
        it has none (its last entry is a marker), its epoch): the batches the cleaner
        keeps (Kafka's lastRecordsOfActiveProducers, docs/design/compaction.md)."""
        return {
            pid: (entry.batches[-1].last_offset if entry.batches else None, entry.epoch)
            for pid, entry in self._producers.items()
        }

    def open_transactions(self) -> list[tuple[int, int]]:
        """(producer id, first offset) of the open transactions, by first offset."""
        return sorted(self._open.items(), key=lambda item: (item[1], item[0]))

    def first_unstable_offset(self) -> int | None:
        """The first offset of the earliest open transaction, or None."""
        return min(self._open.values()) if self._open else None

    def expire(self, *, now_ms: int, expiration_ms: int) -> int:
        """Forget producers idle for `expiration_ms` (not those with an open
        transaction, as in Kafka); returns how many."""
        idle = [
            pid
            for pid, entry in self._producers.items()
            if now_ms - entry.last_timestamp_ms >= expiration_ms
            and entry.txn_first_offset == NO_TXN
        ]
        for pid in idle:
            del self._producers[pid]
        return len(idle)

    def evict_before(self, log_start_offset: int) -> None:
        """Forget producers whose every batch lies below the log start offset."""
        gone = [
            p
            for p, e in self._producers.items()
            if e.last_offset < log_start_offset and e.txn_first_offset == NO_TXN
        ]
        for pid in gone:
            del self._producers[pid]

    def to_snapshot(self) -> bytes:
        parts = [_COUNT.pack(len(self._producers))]
        for entry in self._producers.values():
            parts.append(
                _PRODUCER.pack(
                    entry.producer_id,
                    entry.epoch,
                    entry.last_timestamp_ms,
                    entry.last_offset,
                    len(entry.batches),
                    entry.txn_first_offset,
                    entry.coordinator_epoch,
                )
            )
            parts.extend(_BATCH.pack(*batch) for batch in entry.batches)
        body = b"".join(parts)
        head = _SNAPSHOT_HEAD.pack(_SNAPSHOT_MAGIC, _SNAPSHOT_VERSION, crc32c.crc32c(body))
        return head + body

    @classmethod
    def from_snapshot(cls, data: bytes) -> ProducerStateTable:
        """Parse a snapshot; raises ValueError if it is damaged or of another version."""
        if len(data) < _SNAPSHOT_HEAD.size + _COUNT.size:
            raise ValueError("snapshot is truncated")
        magic, version, crc = _SNAPSHOT_HEAD.unpack_from(data, 0)
        body = memoryview(data)[_SNAPSHOT_HEAD.size :]
        if magic != _SNAPSHOT_MAGIC or version not in (1, _SNAPSHOT_VERSION):
            raise ValueError(f"not a version 1 or {_SNAPSHOT_VERSION} producer snapshot")
        layout = _PRODUCER if version == _SNAPSHOT_VERSION else _PRODUCER_V1
        if crc32c.crc32c(body) != crc:
            raise ValueError("snapshot CRC mismatch")
        table = cls()
        try:
            (count,) = _COUNT.unpack_from(body, 0)
            position = _COUNT.size
            for _ in range(count):
                fields = layout.unpack_from(body, position)
                position += layout.size
                pid, epoch, when, last_offset, batches = fields[:5]
                entry = ProducerEntry(pid, epoch, when, last_offset)
                if len(fields) > 5:
                    entry.txn_first_offset, entry.coordinator_epoch = fields[5:]
                for _ in range(batches):
                    entry.batches.append(BatchMetadata(*_BATCH.unpack_from(body, position)))
                    position += _BATCH.size
                table._producers[pid] = entry
                if entry.txn_first_offset != NO_TXN:
                    table._open[pid] = entry.txn_first_offset
        except struct.error as exc:
            raise ValueError(f"snapshot is malformed: {exc}") from None
        if position != len(body):
            raise ValueError("snapshot has trailing bytes")
        return table


def _check_sequence(header: BatchHeader, *, epoch: int, last_sequence: int) -> None:
    if header.producer_epoch < epoch:
        raise LogError(
            ErrorCode.invalid_producer_epoch,
            f"producer {header.producer_id} epoch {header.producer_epoch} is older than "
            f"the current epoch {epoch}",
        )
    if header.producer_epoch > epoch:
        if header.base_sequence != 0:
            raise LogError(
                ErrorCode.out_of_order_sequence_number,
                f"producer {header.producer_id} new epoch {header.producer_epoch} must "
                f"start at sequence 0, not {header.base_sequence}",
            )
        return
    if last_sequence >= 0 and header.base_sequence != (last_sequence + 1) % _SEQUENCE_MODULUS:
        raise LogError(
            ErrorCode.out_of_order_sequence_number,
            f"producer {header.producer_id} epoch {epoch}: sequence {header.base_sequence} "
            f"does not follow {last_sequence}",
        )


def snapshot_offsets(directory: Path) -> list[int]:
    """Offsets of the snapshot files in `directory`, ascending."""
    offsets = (parse_file_name(p.name, SNAPSHOT_SUFFIX) for p in directory.iterdir())
    return sorted(o for o in offsets if o is not None)


def snapshot_path(directory: Path, offset: int) -> Path:
    return directory / file_name(offset, SNAPSHOT_SUFFIX)


def write_snapshot(directory: Path, offset: int, table: ProducerStateTable) -> None:
    """Durably write the state as of `offset`, then keep only the newest snapshots."""
    write_atomic(snapshot_path(directory, offset), table.to_snapshot())
    for old in snapshot_offsets(directory)[: -limits.PRODUCER_SNAPSHOTS_KEPT]:
        remove_if_exists(snapshot_path(directory, old))
