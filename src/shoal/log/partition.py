"""One partition's log: segments of stored record batches.

Owns: the segments of one partition directory (oldest first, the last one active),
the log start and end offsets, offset assignment, segment rolling, reads, the flush
policy, retention, DeleteRecords, the idempotent-producer state of the partition, and
its transactions: markers (`append_control`), the last stable offset and the
aborted-transaction index (log/transactions.py).
Opening and crash recovery are in `recovery.py`; one segment's files in `segment.py`;
compaction (`clean_plan`, `finish_clean`, `cleaner_progress`) in `cleanable.py`,
`cleaner.py` and `clean_swap.py`.

Batches are stored verbatim after offset assignment: base offset and leader epoch are
patched in the 17-byte prefix, which lies outside the CRC, and the rest of each batch
is handed to the kernel as received (with LogAppendTime the batch is copied once to
set its timestamp and CRC). Appends and reads are per batch; no record is decoded.

Invariants:
- offsets increase within a segment (contiguous as appended; the cleaner leaves gaps,
  docs/design/compaction.md); segments are ordered by base offset and the active segment is
  never deleted or cleaned, so `log_end_offset` never decreases;
- `log_start_offset` lies in [first segment's base, log_end_offset] and only grows;
  it is checkpointed before any segment below it is deleted;
- every segment but the active one is fsynced (data and indexes) when it is rolled,
  so recovery checks the active segment batch by batch and trusts the others' shape;
- the directory's entries are durable before any record is: the partitions of the
  internal topics the broker makes at start are made without a directory fsync
  (log/topics.py; opened with `directory_durable=False`), so their first flush fsyncs
  the directory after the segment, in the same plan (as Kafka's `LocalLog.flush`
  flushes the directory when the flushed segments include a new one); a roll fsyncs
  it too;
- a producer-state snapshot is written at every roll and at a clean close;
- the last stable offset is the first offset of the earliest open transaction, else
  the log end offset; DeleteRecords and retention never move the log start offset
  past it (Kafka: DeleteRecords beyond it is OFFSET_OUT_OF_RANGE; retention stops at
  the segment holding it).

Flushing (fsync of the active segment) is either done in place (`flush`,
`flush_if_due`, and `append` by default) or handed to the caller as a `FlushPlan`
(`append(defer_flush=True)`, `flush_plan`, `flush_plan_if_due`) to run on another
thread, then `finish_flush` here; see `flush.py`. Data below a plan's end offset may
be acknowledged only after `finish_flush` returned.

The high watermark (what readers see: `read`, `high_watermark`, `last_stable_offset`)
is the log end offset, except while an fsync the flush policy called for in an
`append(defer_flush=True)` is pending: the appended records stay unreadable until
that plan (or any later one, whose fsync covers them) finishes successfully, as in
Kafka, where `UnifiedLog.append` flushes inside the append and the high watermark
moves after it (`Partition.appendRecordsToLeader`). A failed fsync never releases them
(the partition is offline); a plan never run keeps them held until a later flush. The
release announces an append (log/events.py), waking parked readers. docs/design/disk-io.md.

Costs to know (measured in docs/design/disk-io.md): a roll fsyncs the sealed segment, its
indexes, a producer-state snapshot and the directory synchronously, on the caller's
thread (once per `segment.bytes`, Kafka does this in the background); retention
unlinks whole segments on the caller's thread.

Longer than 600 lines (about 1,060): every operation that changes a partition's files
(append, roll, truncate, retention, DeleteRecords, markers, flush, the cleaner's
swap, close) moves the same offsets and segment list and keeps the one
offline/storage-error discipline of this class; markers append through the same
write path as produced batches. Segments, indexes, producer state, transactions and
the cleaner have their own modules; this class keeps only their bookkeeping.
"""

from __future__ import annotations

import logging
from bisect import bisect_right
from dataclasses import replace
from pathlib import Path
from typing import Any

from shoal import limits
from shoal.clock import Clock
from shoal.log.api import AppendResult, LogError, ReadResult
from shoal.log.clean_swap import (
    Step,
    read_cleaner_checkpoint,
    remove_cleaned,
    swap_group,
    write_cleaner_checkpoint,
)
from shoal.log.cleanable import (
    CleanableRange,
    CleanerProgress,
    CleanStats,
    cleanable_range,
    compaction_delay_ms,
)
from shoal.log.cleaner import CleanedGroup, CleanPlan, CleanResult, make_plan
from shoal.log.events import PartitionEvents
from shoal.log.fileio import fsync_directory, remove_paths
from shoal.log.flush import FlushPlan, Unflushed
from shoal.log.producer_state import ProducerEntry, write_snapshot
from shoal.log.recovery import LoadedLog, load_log, mark_clean_shutdown, write_log_start_offset
from shoal.log.segment import NO_TIMESTAMP, Segment, WriteNotUndone
from shoal.log.settings import LogConfig
from shoal.log.transactions import AbortedTxn, AbortEntry, ControlType, encode_control_batch
from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import (
    LOG_OVERHEAD,
    BatchHeader,
    iter_headers,
    parse_header,
    peek_size,
)

logger = logging.getLogger(__name__)

_RELATIVE_OFFSET_MAX = 2**31 - 1


class PartitionLog:
    def __init__(
        self,
        *,
        directory: Path,
        config: LogConfig,
        clock: Clock,
        loaded: LoadedLog,
        events: PartitionEvents | None = None,
        cleaner_checkpoint: int | None = None,
        directory_durable: bool = True,
    ) -> None:
        self._directory = directory
        self._events = events
        """Told of appends and log start moves (log/events.py); None for a bare log."""
        self.settings = config
        """The settings the log obeys now (its topic's effective config, typed); the
        produce path reads compression.type and cleanup.policy from them too."""
        self._clock = clock
        self._segments: list[Segment] = loaded.segments
        self._bases = [s.base_offset for s in self._segments]
        self._log_start_offset: int = loaded.log_start_offset
        self._producers = loaded.producers
        self._size_bytes = sum(s.size_bytes for s in self._segments)
        self._read_positions: dict[int, tuple[Segment, int]] = {}
        """Offset -> (segment, position) where recent reads ended: a sequential
        reader's next read starts there."""
        self._append_positions: dict[int, tuple[Segment, int]] = {}
        """The same for the starts of recent appends (a reader at the log end reads
        from one), kept apart so that a burst of appends between a reader's two
        reads does not push out where its last read ended."""
        self._deleted_paths: list[Path] = []
        self._unflushed = Unflushed()
        self._directory_durable = directory_durable
        """False for a partition made without its directory fsync until a flush (or a
        roll) fsynced the directory (see the invariants)."""
        self._held: list[FlushPlan] = []
        """Plans of deferred policy flushes not yet finished, oldest first; while any is
        pending the high watermark stays at the first one's `visible_from`."""
        self._offline_reason: str | None = None
        self._closed = False
        self._cleaner_checkpoint = cleaner_checkpoint
        """First dirty offset recorded by the last clean (log/clean_swap.py)."""
        self._last_clean: CleanStats | None = None

    @classmethod
    def open(
        cls,
        *,
        directory: Path,
        config: dict[str, Any],
        clock: Clock,
        events: PartitionEvents | None = None,
        directory_durable: bool = True,
    ) -> PartitionLog:
        """Open (creating if absent) and recover the log in `directory`. `config` is the
        topic's effective config (shoal.config.effective_topic_config), optionally with
        the broker's `producer.id.expiration.ms`. `events` hears of appends and log
        start moves. `directory_durable=False` for a directory whose entries were not
        fsynced (`topics.prepare_partition_directory(sync=False)`): its first flush
        fsyncs it."""
        settings = LogConfig.from_config(config)
        try:
            loaded = load_log(directory, settings, now_ms=clock.monotonic_ms())
            checkpoint = read_cleaner_checkpoint(directory)
        except OSError as exc:
            raise LogError(ErrorCode.kafka_storage_error, f"opening {directory}: {exc}") from exc
        return cls(
            directory=directory,
            config=settings,
            clock=clock,
            loaded=loaded,
            events=events,
            cleaner_checkpoint=checkpoint,
            directory_durable=directory_durable,
        )

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self._directory.name}, offsets {self._log_start_offset}.."
            f"{self.log_end_offset}, {len(self._segments)} segments)"
        )

    # -- state

    @property
    def directory(self) -> Path:
        return self._directory

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        """Next offset to assign (readers see up to `high_watermark`)."""
        return self._segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        """The end of what readers see: the log end offset, but below the records of a
        deferred policy flush still pending (see the module docstring)."""
        held = self._held
        return self._segments[-1].next_offset if not held else held[0].visible_from

    @property
    def size_bytes(self) -> int:
        return self._size_bytes

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the earliest open transaction, else the high watermark
        (never above it, as Kafka's `UnifiedLog.lastStableOffset`)."""
        first = self._producers.first_unstable_offset()
        high_watermark = self.high_watermark
        return high_watermark if first is None or first > high_watermark else first

    def producers(self) -> list[ProducerEntry]:
        """The state of every producer the partition remembers, by producer id
        (DescribeProducers); read-only."""
        return self._producers.entries()

    def open_transactions(self) -> list[tuple[int, int]]:
        """(producer id, first offset) of the open transactions, by first offset."""
        return self._producers.open_transactions()

    def aborted_transactions(self, start_offset: int, upper_offset: int) -> list[AbortedTxn]:
        """Aborted transactions whose records overlap [start_offset, upper_offset),
        ordered by first offset. Segments before the one holding `start_offset` are
        skipped (a transaction's marker is never below its records), and the search
        ends at the first abort that left the LSO above `upper_offset`."""
        found: list[AbortedTxn] = []
        first_segment = max(0, bisect_right(self._bases, start_offset) - 1)
        for segment in self._segments[first_segment:]:
            for txn, stable_offset in segment.aborted:
                if txn.last_offset >= start_offset and txn.first_offset < upper_offset:
                    found.append(txn)
                if stable_offset > upper_offset:
                    return sorted(found, key=lambda entry: (entry.first_offset, entry.last_offset))
        found.sort(key=lambda entry: (entry.first_offset, entry.last_offset))
        return found

    def segment_base_offsets(self) -> list[int]:
        """Base offsets of the segments, oldest first (the last is active)."""
        return list(self._bases)

    def update_config(self, config: dict[str, Any]) -> None:
        self.settings = LogConfig.from_config(config)

    # -- append

    def append(
        self,
        records: bytes,
        headers: list[BatchHeader],
        *,
        leader_epoch: int,
        defer_flush: bool = False,
    ) -> AppendResult:
        """Append validated batches (`headers` from validate_produced over `records`).
        Refuses records larger than `segment.bytes` with RECORD_LIST_TOO_LARGE, as Kafka
        (a segment holds every append whole). Checks idempotent-producer sequences;
        raises LogError on a sequence gap or a fenced epoch; a duplicate batch returns
        its stored offsets with duplicate=True.
        A transactional batch opens a transaction for its producer if none is open.

        When the flush policy (flush.messages, flush.ms) calls for an fsync, it is done
        here, unless `defer_flush`: then the result carries a `flush_plan` that the
        caller must run and finish (`finish_flush`) before acknowledging the append."""
        if self._closed or self._offline_reason is not None:
            self._check_usable()
        assert headers, "an append needs at least one batch"
        segment_bytes = self.settings.segment_bytes
        if len(records) > segment_bytes:  # Kafka's UnifiedLog.append, before any other
            raise LogError(  # check of the producer state: not even a duplicate is found
                ErrorCode.record_list_too_large,
                f"Message batch size is {len(records)} bytes in append to partition "
                f"{self._directory.name}, which exceeds the maximum configured segment "
                f"size of {segment_bytes}.",
            )
        # One batch without a producer id (coordinators' batches, plain producers')
        # has nothing for the producer state to check or remember.
        idempotent = len(headers) > 1 or headers[0].producer_id >= 0
        duplicate = self._producers.check(headers) if idempotent else None
        if duplicate is not None:
            return AppendResult(
                base_offset=duplicate.base_offset,
                last_offset=duplicate.last_offset,
                log_append_time_ms=-1,
                log_start_offset=self._log_start_offset,
                duplicate=True,
            )
        clock = self._clock
        wall_ms = clock.wall_ms()
        now_ms = clock.monotonic_ms()
        append_time_ms = wall_ms if self.settings.log_append_time else None
        base_offset = self._segments[-1].next_offset
        stored = self._write(
            records,
            headers,
            leader_epoch=leader_epoch,
            log_append_time_ms=append_time_ms,
            now_ms=now_ms,
            operation="append",
        )
        if idempotent:
            self._producers.record(stored, timestamp_ms=wall_ms)
        was_held = bool(self._held)  # then an in-place flush announces the release
        plan = self._apply_flush_policy(defer_flush=defer_flush, now_ms=now_ms)
        if plan is not None:  # unreadable until the plan is finished (finish_flush)
            plan.visible_from = base_offset
            self._held.append(plan)
        elif self._events is not None and not was_held:
            self._events.appended()
        last = stored[-1]
        return AppendResult(
            base_offset=base_offset,
            last_offset=last.base_offset + last.last_offset_delta,
            log_append_time_ms=-1 if append_time_ms is None else append_time_ms,
            log_start_offset=self._log_start_offset,
            flush_plan=plan,
        )

    def append_control(
        self,
        *,
        producer_id: int,
        producer_epoch: int,
        control: ControlType,
        coordinator_epoch: int,
        timestamp_ms: int,
    ) -> int:
        """Append a transaction marker for `producer_id`: its open transaction on
        this partition ends (a marker with none open is written anyway, as Kafka
        does), the last stable offset moves, an ABORT enters the aborted index.
        Returns the marker's offset. Raises LogError INVALID_PRODUCER_EPOCH for an
        epoch below the producer's, TRANSACTION_COORDINATOR_FENCED for a coordinator
        epoch below the last one seen. The flush policy runs in place."""
        self._check_usable()
        self._producers.check_marker(
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch,
        )
        batch = encode_control_batch(
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            control=control,
            coordinator_epoch=coordinator_epoch,
            timestamp_ms=timestamp_ms,
        )
        now_ms = self._clock.monotonic_ms()
        (stored,) = self._write(
            batch,
            [parse_header(batch)],
            leader_epoch=0,
            log_append_time_ms=None,
            now_ms=now_ms,
            operation="marker append",
        )
        aborted = self._producers.end_transaction(
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch,
            control=control,
            offset=stored.base_offset,
            timestamp_ms=self._clock.wall_ms(),
        )
        if aborted is not None:
            first = self._producers.first_unstable_offset()  # the LSO, not held below an fsync
            stable = self.log_end_offset if first is None else first
            self._segments[-1].aborted.append(AbortEntry(aborted, stable))
        was_held = bool(self._held)  # then an in-place flush announces the release
        self._apply_flush_policy(defer_flush=False, now_ms=now_ms)
        if self._events is not None and not was_held:
            self._events.appended()
        return stored.base_offset

    def _write(
        self,
        records: bytes,
        headers: list[BatchHeader],
        *,
        leader_epoch: int,
        log_append_time_ms: int | None,
        now_ms: int,
        operation: str,
    ) -> list[BatchHeader]:
        """Write batches at the log end (rolling first if due; `now_ms` is the monotonic
        time of the write); returns their stored headers. Counts them as unflushed; the
        caller applies the flush policy."""
        size = 0
        count = 0
        for header in headers:
            size += header.batch_length + LOG_OVERHEAD
            count += header.last_offset_delta + 1
        active = self._segments[-1]
        base_offset = active.next_offset
        if self._should_roll(size_bytes=size, last_offset=base_offset + count - 1, now_ms=now_ms):
            self._roll()
            active = self._segments[-1]
        try:
            position = active.size_bytes
            stored = active.append(
                records,
                headers,
                base_offset=base_offset,
                leader_epoch=leader_epoch,
                log_append_time_ms=log_append_time_ms,
                index_interval_bytes=self.settings.index_interval_bytes,
                now_ms=now_ms,
            )
        except OSError as exc:
            fatal = isinstance(exc, WriteNotUndone)
            raise self._storage_error(exc, operation, fatal=fatal) from exc
        self._size_bytes += size
        self._remember_position(self._append_positions, base_offset, active, position)
        self._unflushed.add(records=count, size_bytes=size, since_ms=now_ms)
        return stored

    def _apply_flush_policy(self, *, defer_flush: bool, now_ms: int) -> FlushPlan | None:
        """fsync now (or, with `defer_flush`, return the plan) if flush.messages or
        flush.ms calls for it (`now_ms`: the monotonic time of the write)."""
        unflushed = self._unflushed
        config = self.settings
        since_ms = unflushed.since_ms  # `unflushed.older_than`, without its call per append
        if unflushed.records < config.flush_messages and (
            since_ms is None or now_ms - since_ms < config.flush_ms
        ):
            return None
        if defer_flush:
            return self.flush_plan()
        self.flush()
        return None

    def _should_roll(self, *, size_bytes: int, last_offset: int, now_ms: int) -> bool:
        active = self._segments[-1]
        if active.size_bytes == 0:  # empty
            return False
        config = self.settings
        first_append_ms = active.first_append_ms
        return (
            active.size_bytes + size_bytes > config.segment_bytes
            or (first_append_ms is not None and now_ms - first_append_ms >= config.segment_ms)
            or last_offset - active.base_offset > _RELATIVE_OFFSET_MAX
            or len(active.index) >= config.index_entries_max
        )

    def _roll(self) -> None:
        """Seal the active segment (indexes written, everything fsynced), snapshot the
        producer state at the log end, and start a new active segment there.

        A failure while writing the new files (the indexes, the snapshot, the new
        segment: ENOSPC on a full disk) leaves the active segment as it was, so the
        append fails with KAFKA_STORAGE_ERROR and a later one rolls again once there
        is space. A failed fsync of the active segment or of the directory takes the
        partition offline: what reached the disk is unknown."""
        active = self._segments[-1]
        new_base = active.next_offset
        try:
            active.write_indexes(sync=True)
            self._producers.expire(
                now_ms=self._clock.wall_ms(), expiration_ms=self.settings.producer_id_expiration_ms
            )
            write_snapshot(self._directory, new_base, self._producers)
            segment = Segment.create(self._directory, new_base)
        except OSError as exc:
            raise self._storage_error(exc, "segment roll", fatal=False) from exc
        try:
            active.flush()
            active.close()
            self._segments.append(segment)
            self._bases.append(new_base)
            fsync_directory(self._directory)
            self._directory_durable = True
        except OSError as exc:
            if segment is not self._segments[-1]:
                segment.close()
            raise self._storage_error(exc, "segment roll", fatal=True) from exc
        self._unflushed = Unflushed()

    # -- read

    def read(
        self,
        offset: int,
        *,
        max_bytes: int,
        min_one_batch: bool = True,
        max_offset: int | None = None,
    ) -> ReadResult:
        """Whole batches from the batch containing `offset`, up to `max_bytes` (the
        first batch whole even if larger, when min_one_batch), across segments; with
        `max_offset` (read_committed: the last stable offset) only batches starting
        below it. Raises LogError OFFSET_OUT_OF_RANGE outside [log_start_offset,
        log_end_offset]; nothing at or above the high watermark is returned."""
        if self._closed or self._offline_reason is not None:
            self._check_usable()  # raises
        log_end = self._segments[-1].next_offset  # log_end_offset, without the property call
        if not self._log_start_offset <= offset <= log_end:
            raise LogError(
                ErrorCode.offset_out_of_range,
                f"offset {offset} is outside {self._log_start_offset}..{log_end} "
                f"of {self._directory.name}",
            )
        if self._held:  # a deferred policy flush is pending: read below the high watermark
            log_end = self._held[0].visible_from
            if max_offset is None or max_offset > log_end:
                max_offset = log_end
            if offset >= log_end:
                return ReadResult(b"", [], log_end, self._log_start_offset)
        if offset == log_end or (max_offset is not None and offset >= max_offset):
            return ReadResult(b"", [], log_end, self._log_start_offset)
        try:
            parts, headers = self._read_batches(offset, max(0, max_bytes), min_one_batch)
        except OSError as exc:
            raise self._storage_error(exc, "read", fatal=False) from exc
        records = parts[0] if len(parts) == 1 else b"".join(parts)
        if max_offset is not None and headers and headers[-1].base_offset >= max_offset:
            kept = [h for h in headers if h.base_offset < max_offset]
            end = kept[-1].position + kept[-1].size if kept else 0
            records, headers = records[:end], kept
        return ReadResult(records, headers, log_end, self._log_start_offset)

    def _read_batches(
        self, offset: int, budget: int, min_one_batch: bool
    ) -> tuple[list[bytes], list[BatchHeader]]:
        index, position = self._position_of(offset)
        segment = self._segments[index]
        parts: list[bytes] = []
        headers: list[BatchHeader] = []
        total = 0
        while True:
            available = segment.size_bytes - position
            if available > 0:
                data = segment.read(position, min(available, budget))
                found = iter_headers(data, base_position=total)
                if not found and not headers and min_one_batch:
                    data = self._read_first_batch(segment, position, data)
                    found = iter_headers(data, base_position=total)
                if not found:
                    break
                last = found[-1]
                end = last.position - total + last.batch_length + LOG_OVERHEAD  # + its size
                if end < len(data):
                    data = data[:end]
                parts.append(data)
                headers.extend(found)
                total += end
                budget -= end
                position += end
                if position < segment.size_bytes:
                    break
            if index + 1 >= len(self._segments) or budget <= LOG_OVERHEAD:
                break
            index += 1
            segment, position = self._segments[index], 0
        if headers:
            final = headers[-1]
            next_offset = final.base_offset + final.last_offset_delta + 1  # its next_offset
            self._remember_position(self._read_positions, next_offset, segment, position)
        return parts, headers

    @staticmethod
    def _read_first_batch(segment: Segment, position: int, data: bytes) -> bytes:
        """The whole batch at `position`, though larger than the read budget."""
        if len(data) < LOG_OVERHEAD:
            data = segment.read(position, LOG_OVERHEAD)
        size = peek_size(data, 0)
        assert size is not None
        return segment.read(position, size)

    def _position_of(self, offset: int) -> tuple[int, int]:
        """(segment index, file position) of the batch holding `offset` (which is in
        [log start, log end)), or of the next batch if `offset` was lost in a gap."""
        index = bisect_right(self._bases, offset) - 1
        segment = self._segments[index]
        cached = self._read_positions.get(offset) or self._append_positions.get(offset)
        if cached is not None and cached[0] is segment:
            return index, cached[1]
        position = segment.locate(offset)
        if position is not None:
            return index, position
        for later in range(index + 1, len(self._segments)):
            if not self._segments[later].is_empty:
                return later, 0
        return len(self._segments) - 1, self._segments[-1].size_bytes

    def _forget_deleted_positions(self) -> None:
        self._read_positions = {k: v for k, v in self._read_positions.items() if not v[0].deleted}
        self._append_positions = {
            k: v for k, v in self._append_positions.items() if not v[0].deleted
        }

    @staticmethod
    def _remember_position(
        positions: dict[int, tuple[Segment, int]], offset: int, segment: Segment, position: int
    ) -> None:
        positions.pop(offset, None)
        if len(positions) >= limits.READ_POSITIONS_CACHED:
            del positions[next(iter(positions))]
        positions[offset] = (segment, position)

    # -- timestamps

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        """(offset, max timestamp) of the first batch with max timestamp >=
        timestamp_ms: the batch's base offset (or the log start offset, if that lies
        inside the batch). Batch granularity: records are not decoded."""
        self._check_usable()
        log_start = self._log_start_offset
        try:
            for segment in self._segments:
                if segment.next_offset <= log_start or segment.max_timestamp < timestamp_ms:
                    continue
                header = segment.find_timestamp(timestamp_ms)
                if header is not None and header.next_offset <= log_start:
                    header = self._first_batch_at_or_after(segment, log_start, timestamp_ms)
                if header is not None:
                    return max(header.base_offset, log_start), header.max_timestamp
        except OSError as exc:
            raise self._storage_error(exc, "timestamp lookup", fatal=False) from exc
        return None

    @staticmethod
    def _first_batch_at_or_after(
        segment: Segment, offset: int, timestamp_ms: int
    ) -> BatchHeader | None:
        position = segment.locate(offset) or 0
        for header in segment.headers(position):
            if (
                header.next_offset > offset
                and header.max_timestamp >= timestamp_ms
                and header.records_count > 0
            ):
                return header
        return None

    def max_timestamp(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the batch with the largest timestamp: its base offset
        (clamped to the log start offset), batch granularity."""
        self._check_usable()
        best: tuple[int, int] | None = None
        for segment in self._segments:
            if segment.max_timestamp == NO_TIMESTAMP:
                continue
            if segment.next_offset <= self._log_start_offset:
                continue
            if best is None or segment.max_timestamp > best[1]:
                offset = max(segment.offset_of_max_timestamp, self._log_start_offset)
                best = (offset, segment.max_timestamp)
        return best

    # -- deletion

    def delete_records_before(self, offset: int, *, defer_delete: bool = False) -> int:
        """Move the log start offset up to `offset`; returns the new log start offset.
        Whole segments below it are deleted (with `defer_delete`, set aside for
        `take_deleted_paths`). Raises OFFSET_OUT_OF_RANGE beyond the last stable offset (the log end
        offset when no transaction is open) or below zero."""
        self._check_usable()
        if not 0 <= offset <= self.last_stable_offset:
            raise LogError(
                ErrorCode.offset_out_of_range,
                f"cannot delete records before {offset}: log end offset is "
                f"{self.log_end_offset}, last stable offset {self.last_stable_offset}",
            )
        if offset <= self._log_start_offset:
            return self._log_start_offset
        count = bisect_right(self._bases, offset) - 1
        try:
            self._advance_log_start(offset, segments_to_delete=count, defer_delete=defer_delete)
        except OSError as exc:
            raise self._storage_error(exc, "delete records", fatal=False) from exc
        return self._log_start_offset

    def enforce_retention(self, *, now_wall_ms: int, defer_delete: bool = False) -> int:
        """Delete segments past retention.ms / retention.bytes; returns bytes freed.
        When every segment is past retention.ms, the active segment is rolled first so
        it can go too; an empty active segment at the log end offset always remains.
        With `defer_delete` the files are renamed here and their removal is left to
        the caller (`take_deleted_paths`)."""
        self._check_usable()
        config = self.settings
        segments = self._segments
        stable = self.last_stable_offset
        try:
            count = 0
            # retention is the delete policy's: a compact-only topic keeps every
            # segment (its cleaner drops superseded records instead)
            if config.retention_ms >= 0 and config.delete_policy:
                while (
                    count < len(segments) - 1
                    and now_wall_ms - segments[count].max_timestamp > config.retention_ms
                ):
                    count += 1
                active = segments[-1]
                if (
                    count == len(segments) - 1
                    and stable == self.log_end_offset
                    and not active.is_empty
                    and now_wall_ms - active.max_timestamp > config.retention_ms
                ):
                    self._roll()
                    count += 1
            if config.retention_bytes >= 0 and config.delete_policy:
                excess = self._size_bytes - sum(s.size_bytes for s in segments[:count])
                excess -= config.retention_bytes
                while count < len(segments) - 1 and excess >= segments[count].size_bytes:
                    excess -= segments[count].size_bytes
                    count += 1
            # Retention stops at the segment holding the last stable offset.
            while count and segments[count - 1].next_offset > stable:
                count -= 1
            freed = 0
            if count:
                new_start = max(self._log_start_offset, segments[count].base_offset)
                freed = self._advance_log_start(
                    new_start, segments_to_delete=count, defer_delete=defer_delete
                )
            self._producers.expire(
                now_ms=now_wall_ms, expiration_ms=config.producer_id_expiration_ms
            )
        except OSError as exc:
            raise self._storage_error(exc, "retention", fatal=False) from exc
        return freed

    def _advance_log_start(
        self, offset: int, *, segments_to_delete: int, defer_delete: bool
    ) -> int:
        """Checkpoint the new log start offset, then delete the oldest segments (never
        the active one): renamed now, removed now or by the caller. Returns the bytes
        freed."""
        assert segments_to_delete < len(self._segments), "the active segment stays"
        moved = offset > self._log_start_offset
        if moved:
            write_log_start_offset(self._directory, offset)
            self._log_start_offset = offset
        freed = 0
        for _ in range(segments_to_delete):
            segment = self._segments.pop(0)
            self._bases.pop(0)
            self._size_bytes -= segment.size_bytes
            freed += segment.size_bytes
            renamed = segment.retire()
            if defer_delete:
                self._deleted_paths.extend(renamed)
            else:
                remove_paths(renamed)
        if segments_to_delete:
            self._forget_deleted_positions()
        self._producers.evict_before(self._log_start_offset)
        if moved and self._events is not None:
            self._events.log_start_moved()
        return freed

    def take_deleted_paths(self) -> list[Path]:
        """Files of deleted segments left for the caller to remove (`defer_delete`),
        with `fileio.remove_paths` on any thread; the list is handed over once."""
        paths, self._deleted_paths = self._deleted_paths, []
        return paths

    # -- compaction (log/cleaner.py, log/clean_swap.py, docs/design/compaction.md)

    def _cleanable(self, now_wall_ms: int) -> CleanableRange:
        return cleanable_range(
            self._segments,
            checkpoint=self._cleaner_checkpoint,
            log_start_offset=self._log_start_offset,
            last_stable_offset=self.last_stable_offset,
            config=self.settings,
            now_wall_ms=now_wall_ms,
        )

    def clean_plan(self, now_wall_ms: int) -> CleanPlan | None:
        """A plan to clean the log (see cleaner.py), or None: not compacted, closed,
        offline, nothing cleanable, or not due (dirty ratio not above
        min.cleanable.dirty.ratio and max.compaction.lag.ms not passed). Take it back
        with `finish_clean(plan.run(...))`, or `plan.discard()` if it will not run."""
        config = self.settings
        if self._closed or self._offline_reason is not None or not config.compact_policy:
            return None
        found = self._cleanable(now_wall_ms)
        if found.dirty_bytes == 0 or found.first_uncleanable_offset <= found.first_dirty_offset:
            return None
        try:
            due = (
                found.dirty_ratio > config.min_cleanable_dirty_ratio
                or compaction_delay_ms(
                    self._segments, found.first_dirty_offset, config=config, now_wall_ms=now_wall_ms
                )
                > 0
            )
            if not due:
                return None
            return make_plan(
                directory=self._directory,
                segments=self._segments,
                found=found,
                config=config,
                now_wall_ms=now_wall_ms,
                aborted=self.aborted_transactions(
                    self._segments[0].base_offset, found.first_uncleanable_offset
                ),
                last_records=self._producers.last_records(),
            )
        except OSError as exc:
            raise self._storage_error(exc, "clean plan", fatal=False) from exc

    def finish_clean(
        self, result: CleanResult, *, defer_delete: bool = False, on_step: Step | None = None
    ) -> CleanStats:
        """Swap a clean's result in (clean_swap.py), update the segments, sizes and
        the cleaner checkpoint; returns its stats. A result that failed, or whose
        source segments are no longer all in the log (retention, DeleteRecords,
        deletion meanwhile), is discarded: its files are removed and the stats say
        why. With `defer_delete` the replaced files are left for `take_deleted_paths`.
        `on_step` hears each durable step (tests). A failure of the swap itself takes
        the partition offline (KAFKA_STORAGE_ERROR): the directory is repaired by the
        next open."""
        result.plan.discard()
        stats = result.stats
        reason = stats.discarded if result.error is not None else None
        if reason is None and (self._closed or self._offline_reason is not None):
            reason = "the log was closed or went offline"
        if reason is None:
            live = {id(segment) for segment in self._segments}
            if any(id(s) not in live for g in result.groups for s in g.sources):
                reason = "segments it read left the log meanwhile"
        if reason is not None:
            for group in result.groups:
                remove_cleaned(group.outputs)
            stats = replace(stats, discarded=reason)
            logger.info("clean of %s discarded: %s", self._directory.name, reason)
            self._last_clean = stats
            return stats
        try:
            for group in result.groups:
                retired = swap_group(self._directory, group.sources, group.outputs, on_step)
                self._replace_segments(group)
                if defer_delete:
                    self._deleted_paths.extend(retired)
                else:
                    remove_paths(retired)
            if stats.end_offset != self._cleaner_checkpoint:
                write_cleaner_checkpoint(self._directory, stats.end_offset)
                self._cleaner_checkpoint = stats.end_offset
            if on_step is not None:
                on_step("checkpoint")
        except OSError as exc:
            raise self._storage_error(exc, "clean swap", fatal=True) from exc
        self._last_clean = stats
        return stats

    def _replace_segments(self, group: CleanedGroup) -> None:
        first = next(i for i, s in enumerate(self._segments) if s is group.sources[0])
        end = first + len(group.sources)
        assert all(a is b for a, b in zip(self._segments[first:end], group.sources, strict=True))
        self._segments[first:end] = group.outputs
        self._bases[first:end] = [s.base_offset for s in group.outputs]
        self._size_bytes += sum(s.size_bytes for s in group.outputs)
        self._size_bytes -= sum(s.size_bytes for s in group.sources)
        self._forget_deleted_positions()

    def cleaner_progress(self) -> CleanerProgress:
        """Dirty and cleanable bytes, dirty ratio, first dirty offset, the log's bytes
        and the last clean's stats (for metrics and `shoal topics --describe`)."""
        found = self._cleanable(self._clock.wall_ms())
        return CleanerProgress(
            first_dirty_offset=found.first_dirty_offset,
            first_uncleanable_offset=found.first_uncleanable_offset,
            clean_bytes=found.clean_bytes,
            dirty_bytes=found.dirty_bytes,
            cleanable_bytes=found.clean_bytes + found.dirty_bytes,
            dirty_ratio=found.dirty_ratio,
            log_bytes=self._size_bytes,
            last_clean=self._last_clean,
        )

    def compaction_delay_ms(self, now_wall_ms: int) -> int:
        """How far past max.compaction.lag.ms the earliest first batch of the dirty
        sealed segments is (Kafka's LogCleanerManager.maxCompactionDelay), 0 when none
        is overdue or the log is not compacted: the cleaner service takes overdue
        logs first and reports the largest delay (max-compaction-delay-secs)."""
        config = self.settings
        if self._closed or not config.compact_policy or config.max_compaction_lag_ms >= now_wall_ms:
            return 0
        first_dirty = self._cleanable(now_wall_ms).first_dirty_offset
        clean_until = now_wall_ms - max(config.max_compaction_lag_ms, 0)
        earliest: int | None = None
        for index, segment in enumerate(self._segments[:-1]):
            if self._segments[index + 1].base_offset <= first_dirty:
                continue
            timestamp = segment.first_timestamp()
            if timestamp > 0 and (earliest is None or timestamp < earliest):
                earliest = timestamp
        return 0 if earliest is None or earliest >= clean_until else clean_until - earliest

    # -- durability

    def flush(self) -> None:
        """fsync everything written so far, here and now."""
        self._flush_in_place(self.flush_plan())

    def flush_loaded(self) -> None:
        """fsync the active segment here and now, even if nothing was written since
        the open: after a crash its tail may still be in the page cache only (the
        process died between a write and its fsync). For an owner that acts on what it
        loads and must not act on what a power loss could still take (the transaction
        coordinator, server/services/txn_service.py)."""
        if self._segments[-1].size_bytes > 0:
            self._unflushed.add(records=0, size_bytes=0, since_ms=self._clock.monotonic_ms())
        self.flush()

    def flush_if_due(self, *, now_ms: int) -> None:
        """fsync here if a flush is due (see `flush_plan_if_due`; monotonic `now_ms`)."""
        self._flush_in_place(self.flush_plan_if_due(now_ms=now_ms))

    def _flush_in_place(self, plan: FlushPlan | None) -> None:
        if plan is not None:
            plan.run()
            self.finish_flush(plan)

    def flush_plan(self) -> FlushPlan | None:
        """A plan to fsync everything written so far (see flush.py), or None when there
        is nothing to flush or the log is closed or offline. Until a plan with the
        directory succeeded, a partition made without its directory fsync has the plan
        fsync the directory too. The unflushed count and
        age restart from the plan: call `finish_flush(plan)` after running it (or
        instead, if it will not run)."""
        if self._closed or self._offline_reason is not None:
            return None
        if self._unflushed.empty:
            return None
        active = self._segments[-1]
        covers = self._unflushed.take()
        try:
            return FlushPlan(
                fd=active.fd,
                path=active.log_path,
                end_offset=self.log_end_offset,
                covers=covers,
                directory=None if self._directory_durable else self._directory,
            )
        except OSError as exc:  # opening or duplicating the descriptor
            raise self._storage_error(exc, "flush", fatal=True) from exc

    def flush_plan_if_due(self, *, now_ms: int) -> FlushPlan | None:
        """`flush_plan()` if unflushed data is older than flush.ms or larger than
        `limits.LOG_UNFLUSHED_BYTES_MAX`, else None."""
        unflushed = self._unflushed
        if (
            unflushed.older_than(age_ms=self.settings.flush_ms, now_ms=now_ms)
            or unflushed.size_bytes >= limits.LOG_UNFLUSHED_BYTES_MAX
        ):
            return self.flush_plan()
        return None

    def finish_flush(self, plan: FlushPlan) -> None:
        """Take a plan back on the owner after `plan.run()`. A failed fsync takes the
        partition offline and raises LogError KAFKA_STORAGE_ERROR (what reached the
        disk is unknown). A plan that never ran is discarded and its records count as
        unflushed again. A successful fsync makes readable the records of every
        deferred policy flush it covers (its own and earlier ones) and announces them."""
        if plan.done and plan.error is None:
            if plan.directory is not None:
                self._directory_durable = True
            if self._held:
                self._release(plan.end_offset)
        if not plan.done:
            if not plan.discard():
                logger.warning("%r is finished while still running; its outcome is lost", plan)
            covers = plan.covers
            self._unflushed.add(
                records=covers.records, size_bytes=covers.size_bytes, since_ms=covers.since_ms
            )
            return
        if plan.error is not None:
            if self._offline_reason is not None:
                raise LogError(ErrorCode.kafka_storage_error, self._offline_reason)
            raise self._storage_error(plan.error, f"flush of {plan.path.name}", fatal=True)

    def _release(self, durable_end: int) -> None:
        """Everything below `durable_end` is on disk: the held plans it covers no
        longer hold the high watermark."""
        held = self._held
        released = 0
        while released < len(held) and held[released].end_offset <= durable_end:
            released += 1
        if released:
            del held[:released]
            if self._events is not None:
                self._events.appended()

    def close(self) -> None:
        """Flush, save the active segment's indexes and the producer state, and mark
        the directory cleanly shut down, so the next open skips the CRC scan."""
        if self._closed:
            return
        if self._offline_reason is not None:
            self.abandon()
            return
        remove_paths(self.take_deleted_paths())
        active = self._segments[-1]
        try:
            active.flush()
            active.write_indexes(sync=True)
            write_snapshot(self._directory, self.log_end_offset, self._producers)
            mark_clean_shutdown(self._directory)
        except OSError as exc:
            raise self._storage_error(exc, "close", fatal=True) from exc
        finally:
            self.abandon()

    def abandon(self) -> None:
        """Let go of the files without any shutdown step, as a crash would: no flush,
        no index or snapshot written, no clean-shutdown marker (for deleting a topic,
        and for tests and simulation of crashes). Files set aside for deletion and not
        taken stay; the next open removes them."""
        for segment in self._segments:
            segment.close()
        self._closed = True

    # -- errors

    def _check_usable(self) -> None:
        if self._closed:
            raise LogError(
                ErrorCode.unknown_topic_or_partition,
                f"partition log {self._directory.name} is closed",
            )
        if self._offline_reason is not None:
            raise LogError(
                ErrorCode.kafka_storage_error,
                f"partition log {self._directory.name} is offline after an earlier storage "
                f"error: {self._offline_reason}",
            )

    def _storage_error(self, exc: OSError, operation: str, *, fatal: bool) -> LogError:
        message = f"{operation} on {self._directory.name} failed: {exc}"
        if fatal:
            self._offline_reason = message
            logger.error("%s; the partition is offline until restart", message)
        else:
            logger.warning("%s", message)
        return LogError(ErrorCode.kafka_storage_error, message)
