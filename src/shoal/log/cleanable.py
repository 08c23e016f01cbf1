"""What a compacted log may clean and when, and the figures a clean reports.

Owns: the cleanable range of a partition log (Kafka's LogCleanerManager
cleanableOffsets and calculateCleanableBytes: first dirty offset, first uncleanable
offset, clean and dirty bytes, the dirty ratio), whether max.compaction.lag.ms is
overdue, and the values handed to the cleaner service: `CleanStats` (one clean) and
`CleanerProgress` (a log's state). Pure functions of the segment list and config;
the only I/O is reading a sealed segment's first batch header once (cached on it).
docs/design/compaction.md, "What is cleanable, and when".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shoal.log.segment import Segment
from shoal.log.settings import LogConfig


@dataclass(frozen=True, slots=True)
class CleanStats:
    """What one clean did. Its duration is the caller's to measure."""

    first_dirty_offset: int = 0
    end_offset: int = 0
    """The first offset not mapped: the cleaner checkpoint after this clean."""
    bytes_read: int = 0
    """Bytes read, building the key map and rewriting."""
    bytes_written: int = 0
    records_read: int = 0
    """Records of the rewritten segments (each counted once)."""
    records_retained: int = 0
    records_removed: int = 0
    tombstones_removed: int = 0
    invalid_records: int = 0
    """Keyless records, which a compacted log cannot keep."""
    batches_read: int = 0
    batches_written: int = 0
    keys_mapped: int = 0
    key_map_full: bool = False
    segments_replaced: int = 0
    segments_written: int = 0
    discarded: str | None = None
    """Why the result was not swapped in (an error, or the log changed), else None."""


@dataclass(frozen=True, slots=True)
class CleanerProgress:
    """A compacted log's state for metrics and `shoal topics --describe`."""

    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    """Bytes of the segments below the first dirty offset."""
    dirty_bytes: int
    """Bytes of the segments from the first dirty offset to the first uncleanable one."""
    cleanable_bytes: int
    """clean_bytes + dirty_bytes: what the dirty ratio is taken of."""
    dirty_ratio: float
    log_bytes: int
    last_clean: CleanStats | None


@dataclass(frozen=True, slots=True)
class CleanableRange:
    """Kafka's LogToClean: where cleaning may start and end, and the byte counts."""

    first_dirty_offset: int
    first_uncleanable_offset: int
    """Base offset of the first segment that may not be cleaned (a segment boundary)."""
    uncleanable_index: int
    """Index of that segment in the segment list."""
    clean_bytes: int
    dirty_bytes: int

    @property
    def dirty_ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0


def cleanable_range(
    segments: Sequence[Segment],
    *,
    checkpoint: int | None,
    log_start_offset: int,
    last_stable_offset: int,
    config: LogConfig,
    now_wall_ms: int,
) -> CleanableRange:
    """The cleanable range (Kafka's LogCleanerManager.cleanableOffsets and
    calculateCleanableBytes): from the cleaner checkpoint (the log start offset when
    there is none or it lies outside the log) to the segment holding the first of the
    last stable offset, the active segment's base and the first dirty segment younger
    than min.compaction.lag.ms."""
    log_end = segments[-1].next_offset
    first_dirty = checkpoint
    if first_dirty is None or not log_start_offset <= first_dirty <= log_end:
        first_dirty = log_start_offset
    uncleanable = min(last_stable_offset, segments[-1].base_offset)
    if config.min_compaction_lag_ms > 0:
        for index, segment in enumerate(segments[:-1]):
            next_base = segments[index + 1].base_offset
            if next_base <= first_dirty:
                continue
            if segment.max_timestamp > now_wall_ms - config.min_compaction_lag_ms:
                uncleanable = min(uncleanable, segment.base_offset)
                break
    uncleanable = max(uncleanable, first_dirty)
    # the segment holding the uncleanable offset is the first one not cleaned
    index = 0
    while index + 1 < len(segments) and segments[index + 1].base_offset <= uncleanable:
        index += 1
    first_uncleanable = segments[index].base_offset
    clean_bytes = dirty_bytes = 0
    for i, segment in enumerate(segments[:index]):
        next_base = segments[i + 1].base_offset
        if segment.base_offset < first_dirty:  # Kafka's logSegments(-1, firstDirty)
            clean_bytes += segment.size_bytes
        if next_base > min(first_dirty, first_uncleanable):
            dirty_bytes += segment.size_bytes
    return CleanableRange(first_dirty, first_uncleanable, index, clean_bytes, dirty_bytes)


def compaction_delay_ms(
    segments: Sequence[Segment], first_dirty: int, *, config: LogConfig, now_wall_ms: int
) -> int:
    """How far past max.compaction.lag.ms the earliest first batch of the dirty sealed
    segments is (Kafka's LogCleanerManager.maxCompactionDelay; first batches without
    a timestamp do not count), 0 when none is overdue: a log with a delay above 0 is
    due whatever its dirty ratio."""
    if config.max_compaction_lag_ms >= now_wall_ms:
        return 0  # the default (Long.MAX_VALUE) and any lag longer than all time
    clean_until = now_wall_ms - max(config.max_compaction_lag_ms, 0)
    earliest: int | None = None
    for index, segment in enumerate(segments[:-1]):
        if segments[index + 1].base_offset <= first_dirty:
            continue
        timestamp = segment.first_timestamp()
        if timestamp > 0 and (earliest is None or timestamp < earliest):
            earliest = timestamp
    return 0 if earliest is None or earliest >= clean_until else clean_until - earliest
