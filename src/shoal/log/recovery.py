"""Opening a partition directory: find its segments, check them, recover a torn tail.

Owns: the partition directory's small durable files besides segments and snapshots
(the log start offset checkpoint and the clean-shutdown marker), and the open-time
procedure that turns whatever a crash left into a consistent log:

0. What a crash left of a cleaner's swap is completed or undone
   (log/clean_swap.py `complete_swaps`, docs/design/compaction.md).
1. Leftovers are removed: temp files, segment files set aside for deletion
   (`.deleted`), index files without a `.log`, segments wholly below the
   checkpointed log start offset (a crash between checkpoint and unlink).
2. Sealed segments (all but the last) were fsynced when rolled: their index files are
   used if consistent with the `.log` (see `Segment.load_indexes`), else rebuilt from
   batch headers and rewritten.
3. The active (last) segment is checked batch by batch: length sane and inside the
   file, magic 2, CRC-32C valid, offsets contiguous (the cleaner never rewrites the
   active segment; sealed ones may have gaps). At the first bad or torn batch
   the file is truncated there, with a warning naming the file and position. After a
   clean shutdown (marker present) the CRC pass is skipped when the saved indexes are
   consistent and the tail is complete.
4. Offsets must increase across segments: a gap (records the cleaner removed, or a
   lost unflushed tail; logged as a warning unless the log is compacted) is kept; an
   overlap is cut off the earlier segment.
5. Aborted-transaction indexes (`.txnindex`) give their entries below the offset
   they cover (the segment's end when written: at its roll, or at a clean close for
   the active one); what they do not cover (all of a segment whose file is missing
   or damaged) is found by the replay of step 6, which then starts at or below the
   first uncovered offset (and the completed files of sealed segments are written).
   A transaction begun below the first segment and aborted in an uncovered part,
   with no producer snapshot below it left, cannot be indexed: its records are gone
   and consumers never see them.
6. Producer state (with open transactions) is the newest readable snapshot at or
   below the log end offset (and below every segment whose aborted index is rebuilt)
   plus a replay of the batch headers after it (all segments when there is no such
   snapshot). Markers met in the replay end transactions; an ABORT adds its entry to
   its segment's aborted index when that index is being rebuilt.
7. The clean-shutdown marker is removed, durably, before the log is used.

Files: `log-start-offset.checkpoint` holds "1\\n<offset>\\n" (version, value), written
atomically; `clean-shutdown` is empty.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from shoal.log.clean_swap import complete_swaps
from shoal.log.fileio import (
    DELETED_SUFFIX,
    TEMP_SUFFIX,
    fsync_directory,
    parse_file_name,
    read_file,
    remove_if_exists,
    remove_paths,
    write_atomic,
)
from shoal.log.producer_state import (
    ProducerStateTable,
    snapshot_offsets,
    snapshot_path,
)
from shoal.log.segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, Segment
from shoal.log.settings import LogConfig
from shoal.log.transactions import (
    TXN_INDEX_SUFFIX,
    AbortEntry,
    read_marker,
    read_txn_index,
)
from shoal.protocol.record_batch import BatchHeader

logger = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE = "clean-shutdown"
LOG_START_OFFSET_FILE = "log-start-offset.checkpoint"
_CHECKPOINT_VERSION = "1"


@dataclass(slots=True)
class LoadedLog:
    segments: list[Segment]
    log_start_offset: int
    producers: ProducerStateTable


def write_log_start_offset(directory: Path, offset: int) -> None:
    data = f"{_CHECKPOINT_VERSION}\n{offset}\n".encode()
    write_atomic(directory / LOG_START_OFFSET_FILE, data)


def read_log_start_offset(directory: Path) -> int | None:
    data = read_file(directory / LOG_START_OFFSET_FILE)
    if data is None:
        return None
    lines = data.decode("ascii", errors="replace").split()
    if len(lines) == 2 and lines[0] == _CHECKPOINT_VERSION and lines[1].isdigit():
        return int(lines[1])
    logger.warning("ignoring unreadable %s", directory / LOG_START_OFFSET_FILE)
    return None


def mark_clean_shutdown(directory: Path) -> None:
    (directory / CLEAN_SHUTDOWN_FILE).touch()
    fsync_directory(directory)


def load_log(directory: Path, config: LogConfig, *, now_ms: int) -> LoadedLog:
    """Open and recover the partition log in `directory`, creating it if absent."""
    if not directory.exists():
        directory.mkdir(parents=True)
        fsync_directory(directory.parent)
    complete_swaps(directory)
    marker = directory / CLEAN_SHUTDOWN_FILE
    clean = marker.exists()
    checkpoint = read_log_start_offset(directory)
    segments = _open_segments(directory, checkpoint)
    for segment in segments[:-1]:
        _load_sealed(segment, config)
    _load_active(segments[-1], config, clean=clean)
    _check_continuity(segments, config)

    log_start = max(checkpoint or 0, segments[0].base_offset)
    log_end = segments[-1].next_offset
    if log_start > log_end:
        # Data below the log start was lost (an unflushed tail): restart the log at the
        # log start offset so no offset is handed out twice.
        logger.warning(
            "%s: log end offset %d is below the log start offset %d; starting an empty "
            "segment at %d",
            directory,
            log_end,
            log_start,
            log_start,
        )
        for segment in segments:
            remove_paths(segment.retire())
        segments = [Segment.create(directory, log_start)]
        fsync_directory(directory)
    active = segments[-1]
    if not active.is_empty:
        active.first_append_ms = now_ms
    rebuild = _load_txn_indexes(segments)
    producers = _load_producer_state(directory, segments, log_start, rebuild)
    for segment in segments[:-1]:
        if segment.base_offset in rebuild:
            segment.write_indexes(sync=True)
    if clean:
        marker.unlink()
        fsync_directory(directory)
    return LoadedLog(segments, log_start, producers)


def _open_segments(directory: Path, checkpoint: int | None) -> list[Segment]:
    names = [p.name for p in directory.iterdir()]
    bases = set()
    for name in names:
        base = parse_file_name(name, LOG_SUFFIX)
        if base is not None:
            bases.add(base)
    for name in names:
        path = directory / name
        if name.endswith((TEMP_SUFFIX, DELETED_SUFFIX)):
            remove_if_exists(path)
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            base = parse_file_name(name, suffix)
            if base is not None and base not in bases:
                remove_if_exists(path)
    ordered = sorted(bases)
    if checkpoint is not None:
        # Segments whose successor starts at or below the log start hold nothing
        # readable: a crash came between the checkpoint and their deletion.
        while len(ordered) > 1 and ordered[1] <= checkpoint:
            remove_paths(Segment.open_existing(directory, ordered.pop(0)).retire())
    if not ordered:
        segment = Segment.create(directory, checkpoint or 0)
        fsync_directory(directory)
        return [segment]
    return [Segment.open_existing(directory, base) for base in ordered]


def _truncate(segment: Segment, position: int, reason: str) -> None:
    logger.warning(
        "truncating %s at position %d (%d bytes dropped): %s",
        segment.log_path,
        position,
        segment.size_bytes - position,
        reason,
    )
    segment.truncate(position)


def _load_sealed(segment: Segment, config: LogConfig) -> None:
    if segment.load_indexes():
        return
    logger.info("rebuilding the indexes of %s", segment.log_path)
    bad = segment.scan(verify_crc=False, index_interval_bytes=config.index_interval_bytes)
    if bad is not None:
        _truncate(segment, bad, "incomplete or malformed batch in a sealed segment")
    segment.write_indexes(sync=True)


def _load_active(segment: Segment, config: LogConfig, *, clean: bool) -> None:
    if clean and segment.load_indexes():
        return
    # the active segment is never cleaned: its offsets must be contiguous
    bad = segment.scan(
        verify_crc=True, index_interval_bytes=config.index_interval_bytes, contiguous=True
    )
    if bad is not None:
        _truncate(segment, bad, "torn or corrupt batch (bad length, magic, CRC or offset)")


def _check_continuity(segments: list[Segment], config: LogConfig) -> None:
    for earlier, later in pairwise(segments):
        if earlier.next_offset < later.base_offset:
            # a compacted log has gaps the cleaner left (docs/design/compaction.md, "Gaps")
            log = logger.debug if config.compact_policy else logger.warning
            log(
                "offsets %d..%d are missing between %s and %s (cleaned away, or data lost "
                "before a crash)",
                earlier.next_offset,
                later.base_offset - 1,
                earlier.log_path.name,
                later.log_path.name,
            )
        elif earlier.next_offset > later.base_offset:
            position = earlier.locate(later.base_offset)
            assert position is not None
            _truncate(earlier, position, f"overlaps {later.log_path.name}")
            earlier.scan(verify_crc=False, index_interval_bytes=config.index_interval_bytes)
            earlier.write_indexes(sync=True)


def _load_txn_indexes(segments: list[Segment]) -> dict[int, int]:
    """Load the aborted indexes; returns, per segment base offset whose index does not
    cover the whole segment, the offset from which the replay must complete it."""
    uncovered: dict[int, int] = {}
    for segment in segments:
        loaded = read_txn_index(segment.txn_index_path)
        entries, covered_end = loaded if loaded is not None else ([], segment.base_offset)
        covered_end = min(covered_end, segment.next_offset)
        segment.aborted = [e for e in entries if e.txn.last_offset < covered_end]
        if covered_end < segment.next_offset:
            uncovered[segment.base_offset] = max(covered_end, segment.base_offset)
    return uncovered


def _load_producer_state(
    directory: Path, segments: list[Segment], log_start: int, rebuild: dict[int, int]
) -> ProducerStateTable:
    log_end = segments[-1].next_offset
    replay_from_max = min(rebuild.values(), default=log_end)
    table: ProducerStateTable | None = None
    start = segments[0].base_offset
    for offset in reversed(snapshot_offsets(directory)):
        path = snapshot_path(directory, offset)
        if offset > log_end:
            remove_if_exists(path)
            continue
        if offset > replay_from_max:
            continue
        try:
            table = ProducerStateTable.from_snapshot(path.read_bytes())
        except ValueError as exc:
            logger.warning("ignoring producer snapshot %s: %s", path, exc)
            remove_if_exists(path)
            continue
        start = offset
        break
    if table is None:
        table = ProducerStateTable()
    for segment in segments:
        if segment.next_offset <= start:
            continue
        position = segment.locate(start) if segment.base_offset < start else 0
        batches = (h for h in segment.headers(position or 0) if h.base_offset >= start)
        _replay(table, segment, batches, index_from=rebuild.get(segment.base_offset))
    table.evict_before(log_start)
    return table


def _replay(
    table: ProducerStateTable,
    segment: Segment,
    headers: Iterable[BatchHeader],
    *,
    index_from: int | None,
) -> None:
    """Replay stored batches into the producer state; markers end transactions, and
    an ABORT at or after `index_from` enters the segment's aborted index."""
    for header in headers:
        if not header.is_control:
            table.record((header,), timestamp_ms=None)
            continue
        if header.records_count == 0:
            # a marker the cleaner emptied: its transaction is gone from the log, so
            # there is nothing to end (Kafka's ProducerAppendInfo skips it too)
            continue
        marker = read_marker(segment.read(header.position, header.size), header)
        if marker is None:
            logger.warning(
                "%s: control batch at offset %d has no readable marker; skipped",
                segment.log_path,
                header.base_offset,
            )
            continue
        aborted = table.end_transaction(
            producer_id=header.producer_id,
            producer_epoch=header.producer_epoch,
            coordinator_epoch=marker[1],
            control=marker[0],
            offset=header.base_offset,
            timestamp_ms=header.max_timestamp,
        )
        if aborted is not None and index_from is not None and aborted.last_offset >= index_from:
            stable = table.first_unstable_offset()
            stable = header.next_offset if stable is None else stable
            segment.aborted.append(AbortEntry(aborted, stable))
