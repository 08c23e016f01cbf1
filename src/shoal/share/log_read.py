"""The log reads of a share-partition leader, as values: what the pure
`SharePartitionManager` asks of a partition log, and how its caller performs it.

The manager only looks at a log's positions (`read_committed.LogPositions`: log
start, high watermark, last stable offset). An acquisition names each read it needs as a
`LogRead` (`AcquireRound.next_read`); the caller performs it over the partition log
(`perform_read`, a `ShareLog`) and hands back a `LogSlice`: the batches read, or the
read's error with the log start offset, plus the isolation inputs of the read
(share/read_committed.py: the read limit and, under read_committed, the aborted
transactional batches). The MinBytes estimate (`available_bytes`) is measured the
same way (`bytes_between`), and so is the start offset `share.auto.offset.reset`
gives a share-partition with none persisted (`reset_offset`). So the manager stays
synchronous and deterministic, and every read of a ShareFetch is the caller's.
`PartitionLogs` finds a partition's log by topic id in the broker's log manager, for
both (the manager looks down into the log layer for positions, never up into the
shell).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from shoal import limits
from shoal.clock import Clock
from shoal.log.api import LogError, ReadResult
from shoal.log.manager import LogManager
from shoal.log.partition import PartitionLog
from shoal.protocol.errors import ErrorCode
from shoal.share.leader_settings import IsolationLevel, resolve_reset_offset
from shoal.share.read_committed import LogPositions, StableLog, isolation_inputs, read_limit
from shoal.share.sessions import TopicIdPartition

log = logging.getLogger(__name__)


class ShareLog(StableLog, Protocol):
    """What the caller reads of a partition log for the manager (`PartitionLog` has
    it)."""

    def read(self, offset: int, *, max_bytes: int, min_one_batch: bool = True) -> ReadResult: ...

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None: ...


LogLookup = Callable[[uuid.UUID, int], "LogPositions | ErrorCode"]
"""(topic id, partition) -> the partition log, or UNKNOWN_TOPIC_ID /
UNKNOWN_TOPIC_OR_PARTITION."""


class PartitionLogs:
    """The broker's partition logs by (topic id, partition), over its `LogManager`
    (log/manager.py): the manager's `LogLookup` (it looks down into the log layer,
    never up into the shell) and the shell's for the reads it performs. Found logs
    are remembered until `forget` (a topic change: a deletion is the only way a found
    log leaves the log manager; creations and growth only add), so a fetch's rounds
    and the acknowledgements skip the two lookups. Bounded by the partitions that
    exist (the topic and partition limits)."""

    __slots__ = ("_found", "_logs")

    def __init__(self, logs: LogManager) -> None:
        self._logs = logs
        self._found: dict[tuple[int, int], PartitionLog] = {}

    def __call__(self, topic_id: uuid.UUID, partition: int) -> PartitionLog | ErrorCode:
        """The partition log of (`topic_id`, `partition`), or why there is none."""
        key = (topic_id.int, partition)  # the int: hashed in C (a UUID's is a Python call)
        found = self._found.get(key)
        if found is not None:
            return found
        logs = self._logs
        info = logs.topic_by_id(topic_id)
        if info is None:
            return ErrorCode.unknown_topic_id
        partition_log = logs.partition(info.name, partition)
        if partition_log is None:
            return ErrorCode.unknown_topic_or_partition
        self._found[key] = partition_log
        return partition_log

    def forget(self) -> None:
        """Topics changed: look every log up again."""
        self._found.clear()


@dataclass(frozen=True, slots=True)
class LogRead:
    """A read an acquisition needs: from `offset`, within `max_bytes`, enough for
    `max_records` records; `min_one_batch`: a first batch larger than `max_bytes`
    still comes (the first of the request, §7.10)."""

    partition: TopicIdPartition
    offset: int
    max_bytes: int
    max_records: int
    min_one_batch: bool
    isolation_level: IsolationLevel


@dataclass(frozen=True, slots=True)
class LogSlice:
    """A `LogRead` performed: `read`, or `error` (a `LogError`'s code), with the log
    positions the acquisition goes on with."""

    read: ReadResult | None
    error: ErrorCode | None
    log_start_offset: int
    read_limit: int
    """Where a read at the isolation level stops: the high watermark, or the LSO."""
    end_offset_limit: int | None = None
    """`SharePartition.acquire`'s limit (the LSO under read_committed, else None)."""
    aborted: Sequence[tuple[int, int]] = ()
    """The aborted transactional batches of the read (read_committed only)."""


def perform_read(partition_log: ShareLog, read: LogRead) -> LogSlice:
    """Perform `read` over `partition_log` (`read_for_acquisition`), with the
    isolation inputs of what it returned."""
    try:
        result = read_for_acquisition(
            partition_log,
            read.offset,
            max_bytes=read.max_bytes,
            max_records=read.max_records,
            min_one_batch=read.min_one_batch,
        )
    except LogError as exc:
        return LogSlice(
            None,
            exc.code,
            partition_log.log_start_offset,
            read_limit(read.isolation_level, partition_log),
        )
    limit = read_limit(read.isolation_level, partition_log)
    if not result.headers:
        return LogSlice(result, None, partition_log.log_start_offset, limit)
    end_offset_limit, aborted = isolation_inputs(
        read.isolation_level, partition_log, read.offset, result.headers
    )
    return LogSlice(result, None, partition_log.log_start_offset, limit, end_offset_limit, aborted)


def read_for_acquisition(
    partition_log: ShareLog,
    offset: int,
    *,
    max_bytes: int,
    max_records: int,
    min_one_batch: bool,
) -> ReadResult:
    """Read what one acquisition of at most `max_records` records can use, within
    `max_bytes`: a probe of `SHARE_FETCH_PROBE_BYTES` gives the bytes per record, then
    one more read covers `max_records` of them plus the largest batch seen (batch mode
    stretches to whole log batches). Reading the whole MaxBytes every time would cost
    tens of MiB per request for a few hundred records."""
    probe_bytes = min(max_bytes, limits.SHARE_FETCH_PROBE_BYTES)
    probe = partition_log.read(offset, max_bytes=probe_bytes, min_one_batch=True)
    if not probe.headers:
        return probe
    if probe.headers[0].size > max_bytes and not min_one_batch:
        return ReadResult(b"", [], probe.high_watermark, probe.log_start_offset)
    probe_end = probe.headers[-1].next_offset
    if probe_end - offset >= max_records or probe_end >= probe.high_watermark:
        return probe  # enough records, or the log ends within the probe
    records_seen = sum(h.records_count for h in probe.headers)
    bytes_per_record = len(probe.records) / max(1, records_seen)
    largest = max(h.size for h in probe.headers)
    wanted = min(max_bytes, int(bytes_per_record * max_records) + largest)
    if wanted <= len(probe.records):
        return probe
    return partition_log.read(offset, max_bytes=wanted, min_one_batch=min_one_batch)


def bytes_between(ranges: Sequence[tuple[ShareLog, int, int]], *, cap: int) -> int:
    """The log bytes of the batches in [offset, limit) of each (log, offset, limit) of
    `ranges`, summed up to `cap` (`SharePartitionManager.available_bytes`): once at
    most one byte is left to find, or when a read stops at the budget with more below
    its limit, or fails, the answer is `cap`."""
    total = 0
    for partition_log, offset, limit in ranges:
        if cap - total <= 1:
            # Only "anything at all?" is left: a batch lies in [offset, limit), the
            # limit being a batch boundary, so no read is needed to know it.
            return cap
        try:
            read = partition_log.read(offset, max_bytes=cap - total)
        except LogError:
            return cap
        below = [h for h in read.headers if h.last_offset < limit]
        if below and len(below) == len(read.headers) and below[-1].next_offset < limit:
            return cap  # the read stopped at the budget: more is there
        total += sum(h.size for h in below)
        if total >= cap:
            break
    return min(total, cap)


def reset_offset(strategy: str, partition_log: ShareLog, *, clock: Clock) -> int | ErrorCode:
    """The start offset `share.auto.offset.reset` = `strategy` gives over
    `partition_log` (`resolve_reset_offset`), for a share-partition whose persisted
    start offset is -1; UNKNOWN_SERVER_ERROR (logged) when it cannot be resolved."""

    def by_timestamp(timestamp_ms: int) -> int | None:
        found = partition_log.offset_for_timestamp(timestamp_ms)
        return None if found is None else found[0]

    try:
        return resolve_reset_offset(
            strategy,
            clock=clock,
            log_start_offset=lambda: partition_log.log_start_offset,
            high_watermark=lambda: partition_log.high_watermark,
            offset_for_timestamp=by_timestamp,
        )
    except (ValueError, LogError) as exc:
        log.warning("share.auto.offset.reset %r not resolved: %s", strategy, exc)
        return ErrorCode.unknown_server_error
