"""Log compaction of one partition: what to clean, and the cleaning itself.

Owns: the `CleanPlan` (`make_plan`, on the log's owner) that reads the sealed
segments it names on any thread (Kafka's Cleaner: the key map over the dirty range,
then the log rewritten from its start into `.cleaned` segments) and its
`CleanResult`. What is cleanable and when, and the stats, are log/cleanable.py's; the
swap of the result into the log is log/clean_swap.py's, its bookkeeping
PartitionLog's (`finish_clean`). The design, in our words: docs/design/compaction.md.

    plan = log.clean_plan(now_wall_ms)          # owner: cheap; None if nothing due
    if plan is not None:
        result = await asyncio.to_thread(plan.run, key_map_entries=n)   # any thread
        stats = log.finish_clean(result)        # owner: crash-safe swap, checkpoint

Invariants:
- a plan reads only sealed segments (below the active one), through descriptors of
  its own opened on the owner, so retention or deletion meanwhile cannot pull a file
  from under it; `run` never raises (an error is kept in the result) and does no
  clock reads: its "now" is the plan's `now_wall_ms`;
- a record is kept if the latest offset of its key in the map is at or below its
  offset, or it lies past the mapped range; keyless records are removed; see
  docs/design/compaction.md for tombstones, transactions and producers' last batches;
- offsets never change: a rebuilt batch keeps its base offset, last offset delta and
  sequences; cleaning leaves gaps and never moves the log start offset.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from shoal.log.clean_batch import (
    CleanRecord,
    delete_horizon,
    iter_records,
    rebuild,
    records_payload,
)
from shoal.log.clean_swap import CLEANED_SUFFIX
from shoal.log.cleanable import CleanableRange, CleanStats
from shoal.log.fileio import pread_exact, pwritev_all, remove_if_exists
from shoal.log.index import OffsetIndex, TimeIndex
from shoal.log.key_map import KeyMap
from shoal.log.segment import Segment
from shoal.log.settings import LogConfig
from shoal.log.transactions import AbortedTxn, AbortEntry, ControlType, read_marker
from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import (
    BatchError,
    BatchHeader,
    iter_headers,
    parse_header,
    peek_size,
)

logger = logging.getLogger(__name__)

READ_CHUNK_BYTES = 1024 * 1024
"""Bytes read from a segment at a time (a larger batch is read whole)."""
WRITE_CHUNK_BYTES = 1024 * 1024
"""Cleaned bytes gathered before one write."""
_RELATIVE_OFFSET_MAX = 2**31 - 1

Throttle = Callable[[int], None]


@dataclass(slots=True)
class _Counters:
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_retained: int = 0
    tombstones_removed: int = 0
    invalid_records: int = 0
    batches_read: int = 0
    batches_written: int = 0


@dataclass(slots=True)
class CleanedGroup:
    """Segments written from consecutive source segments, replacing them at once."""

    sources: list[Segment]
    outputs: list[Segment] = field(default_factory=list)


@dataclass(slots=True)
class CleanResult:
    plan: CleanPlan
    groups: list[CleanedGroup]
    stats: CleanStats
    error: Exception | None = None
    """An OSError or BatchError that stopped `run`; the result then swaps nothing."""

    @property
    def end_offset(self) -> int:
        return self.stats.end_offset


def make_plan(
    *,
    directory: Path,
    segments: Sequence[Segment],
    found: CleanableRange,
    config: LogConfig,
    now_wall_ms: int,
    aborted: list[AbortedTxn],
    last_records: dict[int, tuple[int | None, int]],
) -> CleanPlan:
    """A plan over `segments[:found.uncleanable_index]`; opens their files."""
    sources = list(segments[: found.uncleanable_index])
    entries: dict[tuple[int, int], AbortEntry] = {}
    for segment in sources:
        for entry in segment.aborted:
            entries[entry.txn.producer_id, entry.txn.last_offset] = entry
    fds: list[int] = []
    try:
        for segment in sources:
            fds.append(os.open(segment.log_path, os.O_RDONLY))
    except OSError:
        for fd in fds:
            os.close(fd)
        raise
    return CleanPlan(
        directory=directory,
        sources=sources,
        fds=fds,
        first_dirty_offset=found.first_dirty_offset,
        first_uncleanable_offset=found.first_uncleanable_offset,
        config=config,
        now_wall_ms=now_wall_ms,
        aborted=aborted,
        abort_entries=entries,
        last_records=last_records,
    )


class _TxnTracker:
    """Which batches belong to aborted transactions, and which markers may go
    (Kafka's CleanedTransactionMetadata): aborted transactions enter as the walk
    reaches their first offset; a marker may go once no batch of its transaction was
    seen in this pass (an ABORT kept is re-entered in the cleaned aborted index)."""

    def __init__(self, aborted: list[AbortedTxn]) -> None:
        self._pending = sorted(aborted, key=lambda txn: txn.first_offset)
        self._next = 0
        self._aborted: dict[int, tuple[AbortedTxn, bool]] = {}
        self._committed: set[int] = set()

    def _reach(self, offset: int) -> None:
        pending = self._pending
        while self._next < len(pending) and pending[self._next].first_offset <= offset:
            txn = pending[self._next]
            self._aborted.setdefault(txn.producer_id, (txn, False))
            self._next += 1

    def on_data(self, header: BatchHeader) -> bool:
        """Whether the batch belongs to an aborted transaction."""
        self._reach(header.last_offset)
        if not header.is_transactional:
            return False
        ongoing = self._aborted.get(header.producer_id)
        if ongoing is not None:
            self._aborted[header.producer_id] = (ongoing[0], True)
            return True
        self._committed.add(header.producer_id)
        return False

    def on_control(
        self, header: BatchHeader, marker: ControlType | None, *, empty: bool
    ) -> tuple[bool, AbortedTxn | None]:
        """(the marker may be removed, the aborted transaction to index if it stays)."""
        self._reach(header.last_offset)
        if empty:
            return True, None  # a marker already cleaned to an empty header
        if marker is ControlType.ABORT:
            ongoing = self._aborted.pop(header.producer_id, None)
            if ongoing is not None and ongoing[1]:
                return False, ongoing[0]
            return True, None
        if marker is ControlType.COMMIT:
            if header.producer_id in self._committed:
                self._committed.discard(header.producer_id)
                return False, None
            return True, None
        return False, None


def _batches(
    fd: int, start: int, end: int, counters: _Counters, throttle: Throttle | None
) -> Iterator[tuple[BatchHeader, bytes]]:
    """(header with its position in the file, the batch's bytes) from `start`, read a
    chunk at a time."""
    position = start
    while position < end:
        data = pread_exact(fd, min(READ_CHUNK_BYTES, end - position), position)
        found = iter_headers(data, base_position=position)
        if not found:
            size = peek_size(data, 0)
            if size is not None and len(data) < size <= end - position:
                data = pread_exact(fd, size, position)
                found = iter_headers(data, base_position=position)
            if not found:
                raise BatchError(ErrorCode.corrupt_message, f"unreadable batch at {position}")
        used = found[-1].position + found[-1].size - position
        counters.bytes_read += used
        if throttle is not None:
            throttle(used)
        view = memoryview(data)
        for header in found:
            at = header.position - position
            yield header, bytes(view[at : at + header.size])
        position += used


class _Writer:
    """Writes cleaned batches into `.cleaned` segments, starting a new one when the
    next batch would not fit in segment.bytes or in its indexes."""

    def __init__(self, plan: CleanPlan, counters: _Counters, throttle: Throttle | None) -> None:
        self._plan = plan
        self._counters = counters
        self._throttle = throttle
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._written_end = 0
        self.segment: Segment | None = None
        self.outputs: list[Segment] = []

    def start(self, base_offset: int) -> None:
        self._finish_segment()
        directory = self._plan.directory
        leftover = Segment(directory, base_offset, size_bytes=0, suffix=CLEANED_SUFFIX)
        for path in leftover.file_paths():
            remove_if_exists(path)
        self.segment = Segment.create(directory, base_offset, suffix=CLEANED_SUFFIX)
        self.outputs.append(self.segment)
        self._written_end = 0

    def emit(self, header: BatchHeader, batch: bytes) -> None:
        segment = self.segment
        assert segment is not None
        config = self._plan.config
        if segment.size_bytes > 0 and (
            segment.size_bytes + len(batch) > config.segment_bytes
            or len(segment.index) >= config.index_entries_max
            or header.last_offset - segment.base_offset > _RELATIVE_OFFSET_MAX
        ):
            self.start(header.base_offset)
            segment = self.segment
            assert segment is not None
        stored = parse_header(batch)._replace(position=segment.size_bytes)
        assert stored.size == len(batch), "a batch's length field covers its bytes"
        segment.track(stored, index_interval_bytes=config.index_interval_bytes)
        segment.size_bytes += len(batch)
        self._pending.append(batch)
        self._pending_bytes += len(batch)
        self._counters.batches_written += 1
        if self._pending_bytes >= WRITE_CHUNK_BYTES:
            self._write()

    def _write(self) -> None:
        segment = self.segment
        if segment is None or not self._pending:
            return
        written = pwritev_all(segment.fd, self._pending, self._written_end)
        self._written_end += written
        self._counters.bytes_written += written
        self._pending, self._pending_bytes = [], 0
        if self._throttle is not None:
            self._throttle(written)

    def _finish_segment(self) -> None:
        segment = self.segment
        if segment is None:
            return
        self._write()
        segment.flush()
        segment.write_indexes(sync=True)
        segment.close()
        self.segment = None

    def finish(self) -> list[Segment]:
        self._finish_segment()
        outputs, self.outputs = self.outputs, []
        return outputs

    def abandon(self) -> None:
        if self.segment is not None:
            self.segment.close()
            self.segment = None


class CleanPlan:
    """One clean of one partition, made on the owner, run on any thread."""

    def __init__(
        self,
        *,
        directory: Path,
        sources: list[Segment],
        fds: list[int],
        first_dirty_offset: int,
        first_uncleanable_offset: int,
        config: LogConfig,
        now_wall_ms: int,
        aborted: list[AbortedTxn],
        abort_entries: dict[tuple[int, int], AbortEntry],
        last_records: dict[int, tuple[int | None, int]],
    ) -> None:
        self.directory = directory
        self.sources = sources
        """The sealed segments the plan may read, from the first one on."""
        self._fds = fds
        self._sizes = [s.size_bytes for s in sources]
        self.first_dirty_offset = first_dirty_offset
        self.first_uncleanable_offset = first_uncleanable_offset
        self.config = config
        self.now_wall_ms = now_wall_ms
        self._aborted = aborted
        self._abort_entries = abort_entries
        self._last_records = last_records
        self.done = False

    def __repr__(self) -> str:
        return (
            f"CleanPlan({self.directory.name}, dirty {self.first_dirty_offset}.."
            f"{self.first_uncleanable_offset}, {len(self.sources)} segments)"
        )

    def discard(self) -> None:
        """Close the plan's descriptors (a plan that will not run, or has run)."""
        fds, self._fds = self._fds, []
        for fd in fds:
            try:
                os.close(fd)
            except OSError as exc:
                logger.warning("closing a descriptor of %r: %s", self, exc)

    def run(self, *, key_map_entries: int, throttle: Throttle | None = None) -> CleanResult:
        """Map the dirty range's keys (at most `key_map_entries`), then rewrite the
        log from its start through the mapped range into `.cleaned` segments, fsynced.
        `throttle(n)` is called after each n bytes read or written. Never raises."""
        counters = _Counters()
        stats = CleanStats(first_dirty_offset=self.first_dirty_offset)
        writer: _Writer | None = None
        try:
            key_map = self._build_key_map(KeyMap(key_map_entries), counters, throttle)
            end_offset = max(self.first_dirty_offset, key_map.latest_offset + 1)
            stats = replace(
                stats, end_offset=end_offset, keys_mapped=len(key_map), key_map_full=key_map.full
            )
            mapped = counters.bytes_read
            counters = _Counters(bytes_read=mapped)
            groups: list[CleanedGroup] = []
            if end_offset > self.first_dirty_offset:
                writer = _Writer(self, counters, throttle)
                groups = self._rewrite(key_map, end_offset, writer, counters, throttle)
            return CleanResult(self, groups, self._stats(stats, counters, groups))
        except (OSError, BatchError) as exc:
            logger.warning("cleaning %s failed: %s", self.directory.name, exc)
            if writer is not None:
                writer.abandon()
                for segment in writer.outputs:
                    for path in segment.file_paths():
                        remove_if_exists(path)
            return CleanResult(self, [], replace(stats, discarded=str(exc)), error=exc)
        finally:
            self.done = True
            self.discard()

    @staticmethod
    def _stats(stats: CleanStats, counters: _Counters, groups: list[CleanedGroup]) -> CleanStats:
        return replace(
            stats,
            bytes_read=counters.bytes_read,
            bytes_written=counters.bytes_written,
            records_read=counters.records_read,
            records_retained=counters.records_retained,
            records_removed=counters.records_read - counters.records_retained,
            tombstones_removed=counters.tombstones_removed,
            invalid_records=counters.invalid_records,
            batches_read=counters.batches_read,
            batches_written=counters.batches_written,
            segments_replaced=sum(len(g.sources) for g in groups),
            segments_written=sum(len(g.outputs) for g in groups),
        )

    # -- the key map

    def _build_key_map(
        self, key_map: KeyMap, counters: _Counters, throttle: Throttle | None
    ) -> KeyMap:
        """Kafka's buildOffsetMap: every keyed record at or after the first dirty
        offset, aborted transactions left out; stops before the first batch whose keys
        do not all fit, the mapped range then ending at the batch before it. The first
        batch of the range is mapped whole even past the bound (key_map.py), so every
        clean makes progress, however many keys one batch holds."""
        start = self.first_dirty_offset
        end = self.first_uncleanable_offset
        tracker = _TxnTracker(self._aborted)
        sources = self.sources
        for index, segment in enumerate(sources):
            next_base = sources[index + 1].base_offset if index + 1 < len(sources) else end
            if next_base <= start:
                continue
            position = 0
            if segment.base_offset < start:
                _, position = segment.index.lookup(start)
            for header, batch in _batches(
                self._fds[index], position, self._sizes[index], counters, throttle
            ):
                if header.is_control:
                    empty = header.records_count == 0
                    marker = None if empty else read_marker(batch, header)
                    tracker.on_control(header, marker and marker[0], empty=empty)
                elif not tracker.on_data(header):
                    payload = records_payload(batch, header._replace(position=0))
                    first = key_map.latest_offset < start  # no batch of the range mapped yet
                    for record in iter_records(payload, header):
                        key = record.key
                        if (
                            key is not None
                            and record.offset >= start
                            and not key_map.put(key, record.offset, overflow=first)
                        ):
                            return key_map  # full: the mapped range ends before this batch
                if header.last_offset >= start:
                    key_map.latest_offset = max(key_map.latest_offset, header.last_offset)
            key_map.latest_offset = max(key_map.latest_offset, next_base - 1)
        return key_map

    # -- the rewrite

    def _groups(self, count: int) -> list[list[int]]:
        """Consecutive source indexes whose segments fit together in one segment
        (Kafka's groupSegmentsBySize: bytes, index entries, relative offsets)."""
        config = self.config
        sources = self.sources
        # segment.index.bytes bounds both index files in bytes (8 and 12 per entry)
        time_entries_max = config.index_entries_max * OffsetIndex.ENTRY_SIZE // TimeIndex.ENTRY_SIZE
        groups: list[list[int]] = []
        index = 0
        while index < count:
            group = [index]
            size = self._sizes[index]
            entries = len(sources[index].index)
            time_entries = len(sources[index].time_index)
            index += 1
            while index < count:
                segment = sources[index]
                last = (
                    sources[index + 1].base_offset - 1
                    if index + 1 < len(sources)
                    else self.first_uncleanable_offset - 1
                )
                if (
                    size + self._sizes[index] > config.segment_bytes
                    or entries + len(segment.index) > config.index_entries_max
                    or time_entries + len(segment.time_index) > time_entries_max
                    or (
                        self._sizes[index] > 0
                        and last - sources[group[0]].base_offset > _RELATIVE_OFFSET_MAX
                    )
                ):
                    break
                group.append(index)
                size += self._sizes[index]
                entries += len(segment.index)
                time_entries += len(segment.time_index)
                index += 1
            groups.append(group)
        return groups

    def _rewrite(
        self,
        key_map: KeyMap,
        end_offset: int,
        writer: _Writer,
        counters: _Counters,
        throttle: Throttle | None,
    ) -> list[CleanedGroup]:
        count = sum(1 for s in self.sources if s.base_offset < end_offset)
        tracker = _TxnTracker(self._aborted)
        groups: list[CleanedGroup] = []
        for group in self._groups(count):
            writer.start(self.sources[group[0]].base_offset)
            for index in group:
                for header, batch in _batches(
                    self._fds[index], 0, self._sizes[index], counters, throttle
                ):
                    self._clean_batch(header, batch, key_map, tracker, writer, counters)
            groups.append(CleanedGroup([self.sources[i] for i in group], writer.finish()))
        return groups

    def _is_last_of_producer(self, header: BatchHeader) -> bool:
        last = self._last_records.get(header.producer_id)
        if last is None:
            return False
        last_data_offset, epoch = last
        if last_data_offset is not None:
            return header.last_offset == last_data_offset
        return header.is_control and header.producer_epoch == epoch

    def _clean_batch(
        self,
        header: BatchHeader,
        batch: bytes,
        key_map: KeyMap,
        tracker: _TxnTracker,
        writer: _Writer,
        counters: _Counters,
    ) -> None:
        """Kafka's checkBatchRetention and shouldRetainRecord for one batch."""
        now = self.now_wall_ms
        local = header._replace(position=0)
        counters.batches_read += 1
        counters.records_read += header.records_count
        horizon = delete_horizon(header)
        kept_abort: AbortedTxn | None = None
        if header.is_control:
            empty = header.records_count == 0
            marker = None if empty else read_marker(batch, local)
            can_discard, kept_abort = tracker.on_control(header, marker and marker[0], empty=empty)
            discard_records = can_discard and horizon is not None and horizon <= now
        else:
            can_discard = tracker.on_data(header)
            discard_records = can_discard
        retain_empty = (
            header.producer_id >= 0 and self._is_last_of_producer(header)
        ) or header.next_offset == self.first_uncleanable_offset
        if discard_records and not retain_empty:
            return
        payload = records_payload(batch, local)
        kept: list[CleanRecord] = []
        tombstones = False
        control = header.is_control
        for record in iter_records(payload, header):
            if discard_records:
                keep = False
            elif control:
                keep = True
            else:
                keep = self._keep(record, key_map, horizon, counters)
            if keep:
                kept.append(record)
                tombstones = tombstones or not record.has_value
            elif not record.has_value and not control:
                counters.tombstones_removed += 1
        counters.records_retained += len(kept)
        if kept:
            needs_horizon = (tombstones or (can_discard and header.is_control)) and horizon is None
            if len(kept) == header.records_count and not needs_horizon:
                writer.emit(header, batch)  # every record kept: the batch as it is
            else:
                new_horizon = now + self.config.delete_retention_ms if needs_horizon else horizon
                writer.emit(header, rebuild(local, payload, kept, horizon_ms=new_horizon))
        elif retain_empty:
            writer.emit(header, rebuild(local, payload, [], horizon_ms=None))
        if kept_abort is not None and kept:
            segment = writer.segment
            assert segment is not None
            entry = self._abort_entries.get((kept_abort.producer_id, kept_abort.last_offset))
            segment.aborted.append(
                entry if entry is not None else AbortEntry(kept_abort, header.next_offset)
            )

    def _keep(
        self, record: CleanRecord, key_map: KeyMap, horizon: int | None, counters: _Counters
    ) -> bool:
        """Kafka's shouldRetainRecord: the latest record of its key, and for a
        tombstone, its batch's delete horizon not yet passed."""
        if record.offset > key_map.latest_offset:
            return True  # past the mapped range: kept whole
        if record.key is None:
            counters.invalid_records += 1
            return False
        if record.offset < key_map.get(record.key):
            return False
        return record.has_value or horizon is None or self.now_wall_ms < horizon
