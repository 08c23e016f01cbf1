"""Which log batches of a read belong to aborted transactions (read_committed, §9).

A share-partition whose group has `share.isolation.level=read_committed` reads the
log only up to the last stable offset (LSO) and, after acquiring, archives the
records of aborted transactions (docs/design/share-partition.md §9; Kafka's
`SharePartition.filterAbortedTransactionalAcquiredRecords`). The shell passes both as
data: the LSO, and the aborted transactions the log's aborted index lists for the
read's range (`PartitionLog.aborted_transactions(start, upper)`), each with its
producer id, its first offset and the offset of its ABORT marker. This module turns
them plus the read's batch headers into the (first, last) offset ranges that
`SharePartition.acquire(aborted=...)` archives.

A batch is aborted when it is a transactional data batch (not a control batch) of
producer P lying inside [first offset, marker offset] of one of P's aborted
transactions: Kafka's consumer-side rule (a producer's batches after an aborted
transaction's first offset are skipped until its ABORT marker), stated with the
marker's offset the index already holds, so no control record needs decoding.
Control batches (COMMIT and ABORT markers) are never aborted: they stay inside the
acquired ranges and clients GAP-acknowledge them (§7.6).

No look-ahead beyond the end offset is needed: the read stops at the LSO, so
records of an open transaction never enter the in-flight window (the design
documents' transient "Uncommitted" state was not shipped, §9); the window can
therefore not fill with uncommitted records, and the group waits at the LSO until
the transaction's marker moves it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from shoal.protocol.record_batch import BatchHeader
from shoal.share.leader_settings import IsolationLevel


class AbortedRange(Protocol):
    """One aborted transaction of the log's aborted index (`log.transactions.AbortedTxn`
    has these fields)."""

    @property
    def producer_id(self) -> int: ...

    @property
    def first_offset(self) -> int: ...

    @property
    def last_offset(self) -> int:
        """The offset of the transaction's ABORT marker."""
        ...


class LogPositions(Protocol):
    """A partition log's positions, never its data: what the share-partition manager
    sees of a log (`PartitionLog` has them)."""

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    @property
    def high_watermark(self) -> int:
        """The end of what readers see: the log end, but below records whose fsync the
        flush policy called for and which is still pending (log/partition.py)."""
        ...

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the earliest open transaction, else the high watermark."""
        ...


class StableLog(LogPositions, Protocol):
    """What isolation needs of a partition log (`PartitionLog` has it)."""

    def aborted_transactions(self, start_offset: int, upper_offset: int) -> Sequence[AbortedRange]:
        """Aborted transactions overlapping [start_offset, upper_offset), by first offset."""
        ...


def read_limit(level: IsolationLevel, partition_log: LogPositions) -> int:
    """Where a read for a group at `level` stops (exclusive, §7.2): the last stable
    offset under read_committed, else the high watermark."""
    if level is IsolationLevel.READ_COMMITTED:
        return partition_log.last_stable_offset
    return partition_log.high_watermark


def isolation_inputs(
    level: IsolationLevel,
    partition_log: StableLog,
    offset: int,
    headers: Sequence[BatchHeader],
) -> tuple[int | None, list[tuple[int, int]]]:
    """`SharePartition.acquire`'s `end_offset_limit` and `aborted` for a read from
    `offset` returning `headers`: under read_committed the LSO and the aborted
    transactional batches below it (the aborted index is asked only when the read
    holds transactional data below the LSO); under read_uncommitted (None, [])."""
    if level is not IsolationLevel.READ_COMMITTED:
        return None, []
    upper = partition_log.last_stable_offset
    usable = [h for h in headers if h.last_offset < upper]
    if not has_transactional(usable):
        return upper, []
    return upper, aborted_batches(usable, partition_log.aborted_transactions(offset, upper))


def aborted_batches(
    headers: Sequence[BatchHeader], aborted: Iterable[AbortedRange]
) -> list[tuple[int, int]]:
    """(first, last) offsets of the aborted transactional data batches among `headers`,
    in offset order, adjacent ranges joined."""
    by_producer: dict[int, list[tuple[int, int]]] = {}
    for txn in aborted:
        assert txn.first_offset <= txn.last_offset, f"aborted transaction {txn} is inverted"
        by_producer.setdefault(txn.producer_id, []).append((txn.first_offset, txn.last_offset))
    if not by_producer:
        return []
    result: list[tuple[int, int]] = []
    for header in headers:
        if not header.is_transactional or header.is_control:
            continue
        spans = by_producer.get(header.producer_id)
        if spans is None:
            continue
        base = header.base_offset
        if not any(first <= base <= marker for first, marker in spans):
            continue
        if result and result[-1][1] + 1 == base:
            result[-1] = (result[-1][0], header.last_offset)
        else:
            result.append((base, header.last_offset))
    return result


def has_transactional(headers: Sequence[BatchHeader]) -> bool:
    """Whether any data batch of the read is transactional (only then is the aborted
    index worth asking)."""
    return any(h.is_transactional and not h.is_control for h in headers)
