"""Opening a partition directory: find its segments, check them, recover a torn tail.

Owns: the partition directory's small durable files besides segments and snapshots
(the log start offset checkpoint and the clean-shutdown marker), and the open-time
procedure that turns whatever a crash left into a consistent log:

1. Leftovers are removed: temp files, segment files set aside for deletion
   (`.deleted`), index files without a `.log`, segments wholly below the
   checkpointed log start offset (a crash between checkpoint and unlink).
2. Sealed segments (all but the last) were fsynced when rolled: their index files are
   used if consistent with the `.log` (see `Segment.load_indexes`), else rebuilt from
   batch headers and rewritten.
3. The active (last) segment is checked batch by batch: length sane and inside the
   file, magic 2, CRC-32C valid, offsets contiguous. At the first bad or torn batch
   the file is truncated there, with a warning naming the file and position. After a
   clean shutdown (marker present) the CRC pass is skipped when the saved indexes are
   consistent and the tail is complete.
4. Offsets must continue across segments: a gap (a lost unflushed tail) is logged and
   kept; an overlap is cut off the earlier segment.
5. Producer state is the newest readable snapshot at or below the log end offset plus
   a replay of the batch headers after it (all segments when there is no snapshot).
6. The clean-shutdown marker is removed, durably, before the log is used.

Files: `log-start-offset.checkpoint` holds "1\\n<offset>\\n" (version, value), written
atomically; `clean-shutdown` is empty.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

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
    producers = _load_producer_state(directory, segments, log_start)
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
        for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
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
    bad = segment.scan(verify_crc=True, index_interval_bytes=config.index_interval_bytes)
    if bad is not None:
        _truncate(segment, bad, "torn or corrupt batch (bad length, magic, CRC or offset)")


def _check_continuity(segments: list[Segment], config: LogConfig) -> None:
    for earlier, later in pairwise(segments):
        if earlier.next_offset < later.base_offset:
            logger.warning(
                "offsets %d..%d are missing between %s and %s (data lost before a crash)",
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


def _load_producer_state(
    directory: Path, segments: list[Segment], log_start: int
) -> ProducerStateTable:
    log_end = segments[-1].next_offset
    table: ProducerStateTable | None = None
    start = segments[0].base_offset
    for offset in reversed(snapshot_offsets(directory)):
        path = snapshot_path(directory, offset)
        if offset > log_end:
            remove_if_exists(path)
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
        batches = segment.headers(position or 0)
        table.record((h for h in batches if h.base_offset >= start), timestamp_ms=None)
    table.evict_before(log_start)
    return table
