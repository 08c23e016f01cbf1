"""One segment of a partition log: a `.log` file of stored batches and its indexes.

Owns: the segment's files (`<base_offset:020d>.log`, `.index`, `.timeindex`,
`.txnindex` (log/transactions.py): the transactions aborted by markers in it), its
size, next offset and largest timestamp, writing batches (vectored writes: the
records of a produced batch are handed to the kernel as they came, only the 17-byte
prefix is re-stamped), reading byte ranges (pread), walking batch headers, finding the
batch that holds an offset or a timestamp, (re)building and persisting its indexes,
truncation during recovery, and setting its files aside for deletion (`retire`).

Invariants: the `.log` file holds whole batches back to back from position 0, with
increasing offsets from `base_offset` on: contiguous as appended, with gaps once the
cleaner has removed records (docs/design/compaction.md, "Gaps"); the first batch may start
above `base_offset`; `size_bytes` is the file's size; every
offset-index entry points at the start of the batch with that base offset, and
`Segment.locate` checks that before trusting it (a damaged index is rebuilt, never
followed). Index files are written when the segment is sealed (rolled) and at a clean
close; while a segment is active its indexes live in memory only.

A segment the cleaner writes has a `suffix` on every file name (`.cleaned`, then
`.swap`) until it is swapped in (log/clean_swap.py, docs/design/compaction.md).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from shoal.log.fileio import (
    DELETED_SUFFIX,
    file_name,
    pread_exact,
    pwritev_all,
    read_file,
    remove_if_exists,
    write_file,
)
from shoal.log.index import OffsetIndex, TimeIndex
from shoal.log.transactions import TXN_INDEX_SUFFIX, AbortEntry, write_txn_index
from shoal.protocol.record_batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    MIN_BATCH_LENGTH,
    STAMPED_PREFIX_SIZE,
    BatchHeader,
    compute_crc,
    parse_header,
    restamped,
    stamp_prefix,
    with_log_append_time,
)

logger = logging.getLogger(__name__)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
NO_TIMESTAMP = -1

HEADER_WALK_CHUNK_BYTES = 64 * 1024
"""Read size when walking headers only: several small batches per read."""
VERIFY_WALK_CHUNK_BYTES = 4 * 1024 * 1024
"""Read size when walking with CRC checks: every byte is read anyway."""


class WriteNotUndone(OSError):
    """A write failed and its partial bytes could not be cut off the file: the
    segment's content is unknown and the log must stop taking writes."""


def walk_batches(
    fd: int,
    start: int,
    end: int,
    *,
    verify_crc: bool = False,
    first_offset: int | None = None,
    exact_first: bool = False,
    contiguous: bool = False,
    chunk_bytes: int = HEADER_WALK_CHUNK_BYTES,
) -> Iterator[BatchHeader]:
    """Headers of the stored batches from byte `start`, positions absolute.

    Stops silently before the first batch that is incomplete before `end` or looks
    wrong: a length below the minimum, magic other than 2, a negative last offset
    delta, (with `verify_crc`) a CRC-32C mismatch, or (with `first_offset`) a base
    offset below `first_offset` for the first batch (other than `first_offset` with
    `exact_first`: an index entry names the batch it points at) or below the previous
    batch's next offset. Offsets increase but may leave gaps: the cleaner removes
    records and keeps the offsets of the others (docs/design/compaction.md, "Gaps"); with
    `contiguous` (a segment the cleaner never rewrote: the active one) a gap stops the
    walk too. The caller compares the end of the last batch it saw with `end` to
    learn whether the walk went all the way.
    """
    buffer = b""
    buffer_start = start
    position = start
    expected = first_offset
    exact = (exact_first or contiguous) and first_offset is not None
    while end - position >= HEADER_SIZE:
        at = position - buffer_start
        if at + HEADER_SIZE > len(buffer):
            buffer = pread_exact(fd, min(chunk_bytes, end - position), position)
            buffer_start, at = position, 0
            if len(buffer) < HEADER_SIZE:
                return
        header = parse_header(buffer, at)
        size = header.batch_length + LOG_OVERHEAD
        if (
            header.batch_length < MIN_BATCH_LENGTH
            or header.magic != MAGIC_V2
            or header.last_offset_delta < 0
            or position + size > end
            or (expected is not None and header.base_offset < expected)
            or (exact and header.base_offset != expected)
        ):
            return
        if verify_crc:
            if at + size > len(buffer):
                buffer = pread_exact(fd, max(size, min(chunk_bytes, end - position)), position)
                buffer_start, at = position, 0
                if len(buffer) < size:
                    return
                header = parse_header(buffer, 0)
            if compute_crc(buffer, header) != header.crc:
                return
        yield header._replace(position=position)
        exact = contiguous
        if expected is not None:
            expected = header.next_offset
        position += size


class Segment:
    """A `.log` file with batches at increasing offsets from `base_offset`, and its
    indexes."""

    def __init__(
        self, directory: Path, base_offset: int, *, size_bytes: int, suffix: str = ""
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.suffix = suffix
        """Appended to every file name: "" for a live segment, `.cleaned` or `.swap`
        for one the cleaner is writing or swapping in."""
        self.size_bytes = size_bytes
        self.next_offset = base_offset
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = base_offset
        self.first_append_ms: int | None = None
        """Monotonic time of the first append (or of opening a non-empty segment)."""
        self.deleted = False
        self.index = OffsetIndex(base_offset)
        self.time_index = TimeIndex(base_offset)
        self.aborted: list[AbortEntry] = []
        """Transactions aborted by markers in this segment, in marker order."""
        self.first_batch_timestamp: int | None = None
        """Max timestamp of the first batch, once `first_timestamp` read it (a sealed
        segment's first batch never changes)."""
        self._bytes_since_index_entry = 0
        self._fd: int | None = None

    def __repr__(self) -> str:
        return (
            f"Segment({self.log_path}, offsets {self.base_offset}..{self.next_offset - 1}, "
            f"{self.size_bytes} bytes)"
        )

    # -- files

    @classmethod
    def create(cls, directory: Path, base_offset: int, *, suffix: str = "") -> Segment:
        """A new empty segment (its directory entry is not yet fsynced)."""
        segment = cls(directory, base_offset, size_bytes=0, suffix=suffix)
        remove_if_exists(segment.index_path)
        remove_if_exists(segment.time_index_path)
        remove_if_exists(segment.txn_index_path)
        segment._fd = os.open(segment.log_path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        return segment

    @classmethod
    def open_existing(cls, directory: Path, base_offset: int, *, suffix: str = "") -> Segment:
        """An existing segment; its state is unknown until loaded or rebuilt."""
        path = directory / (file_name(base_offset, LOG_SUFFIX) + suffix)
        return cls(directory, base_offset, size_bytes=path.stat().st_size, suffix=suffix)

    @property
    def log_path(self) -> Path:
        return self.directory / (file_name(self.base_offset, LOG_SUFFIX) + self.suffix)

    @property
    def index_path(self) -> Path:
        return self.directory / (file_name(self.base_offset, INDEX_SUFFIX) + self.suffix)

    @property
    def time_index_path(self) -> Path:
        return self.directory / (file_name(self.base_offset, TIME_INDEX_SUFFIX) + self.suffix)

    @property
    def txn_index_path(self) -> Path:
        return self.directory / (file_name(self.base_offset, TXN_INDEX_SUFFIX) + self.suffix)

    def file_paths(self) -> tuple[Path, Path, Path, Path]:
        """The `.log` file and its three index files (which may not exist)."""
        return (self.log_path, self.index_path, self.time_index_path, self.txn_index_path)

    def first_timestamp(self) -> int:
        """Max timestamp of the segment's first batch (Kafka's rolling-based
        timestamp, which max.compaction.lag.ms counts from), NO_TIMESTAMP if empty."""
        if self.first_batch_timestamp is None:
            header = next(self.headers(0), None)
            self.first_batch_timestamp = NO_TIMESTAMP if header is None else header.max_timestamp
        return self.first_batch_timestamp

    @property
    def fd(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.log_path, os.O_RDWR)
        return self._fd

    @property
    def is_empty(self) -> bool:
        return self.size_bytes == 0

    def flush(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def retire(self) -> list[Path]:
        """Close the segment and rename its files (the .log first) to
        `<name>.deleted`; returns the new paths, to remove later with
        `fileio.remove_paths` on any thread (unlinking a large file takes long; a
        rename does not). Recovery removes `.deleted` leftovers."""
        self.close()
        self.deleted = True
        renamed = []
        for path in self.file_paths():
            target = path.with_name(path.name + DELETED_SUFFIX)
            try:
                path.rename(target)
            except FileNotFoundError:
                continue
            renamed.append(target)
        return renamed

    def truncate(self, position: int) -> None:
        """Cut the file at `position` (a batch boundary found by a walk) and fsync."""
        os.ftruncate(self.fd, position)
        os.fsync(self.fd)
        self.size_bytes = position

    # -- appending

    def append(
        self,
        records: bytes,
        headers: Sequence[BatchHeader],
        *,
        base_offset: int,
        leader_epoch: int,
        log_append_time_ms: int | None,
        index_interval_bytes: int,
        now_ms: int,
    ) -> list[BatchHeader]:
        """Write the batches of `records` (validated, `headers` with positions in
        `records`) with offsets from `base_offset`; returns the stored headers
        (positions in this file). With `log_append_time_ms`, each batch is copied
        once to set LogAppendTime; otherwise the records are never copied. On a failed
        write the file is cut back and the OSError propagates."""
        assert base_offset == self.next_offset, "offsets must be contiguous"
        view = memoryview(records)
        buffers: list[bytes | memoryview] = []
        stored: list[BatchHeader] = []
        offset = base_offset
        position = self.size_bytes
        for produced in headers:
            header = produced
            start = header.position
            size = header.batch_length + LOG_OVERHEAD
            batch = view[start : start + size]
            if log_append_time_ms is not None:
                patched = with_log_append_time(bytes(batch), header, now_ms=log_append_time_ms)
                batch = memoryview(patched)
                header = parse_header(patched)
            buffers.append(stamp_prefix(header, base_offset=offset, leader_epoch=leader_epoch))
            buffers.append(batch[STAMPED_PREFIX_SIZE:])
            stored.append(
                restamped(header, position=position, base_offset=offset, leader_epoch=leader_epoch)
            )
            position += size
            offset += header.last_offset_delta + 1
        fd = self._fd if self._fd is not None else self.fd  # open: no property call
        try:
            pwritev_all(fd, buffers, self.size_bytes)
        except OSError as exc:
            try:
                os.ftruncate(self.fd, self.size_bytes)
            except OSError as cut_exc:
                raise WriteNotUndone(
                    cut_exc.errno, f"{exc}; cutting back {self.log_path} failed: {cut_exc}"
                ) from exc
            raise
        for header in stored:
            self.track(header, index_interval_bytes=index_interval_bytes)
        self.size_bytes = position
        if self.first_append_ms is None:
            self.first_append_ms = now_ms
        return stored

    def track(self, header: BatchHeader, *, index_interval_bytes: int) -> None:
        """Account for a stored batch at the end of the segment: next offset, largest
        timestamp, index entries."""
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
            self.offset_of_max_timestamp = header.base_offset
        if self._bytes_since_index_entry >= index_interval_bytes:
            self.index.append(header.base_offset, header.position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_index_entry = 0
        # header.size and header.next_offset, without their property calls
        self._bytes_since_index_entry += header.batch_length + LOG_OVERHEAD
        self.next_offset = header.base_offset + header.last_offset_delta + 1

    # -- reading

    def read(self, position: int, size: int) -> bytes:
        fd = self._fd if self._fd is not None else self.fd
        data = os.pread(fd, size, position)  # pread_exact's first read, inline (hot path)
        if len(data) == size or not data:
            return data
        return data + pread_exact(fd, size - len(data), position + len(data))  # short read

    def headers(
        self, position: int = 0, *, first_offset: int | None = None, exact_first: bool = False
    ) -> Iterator[BatchHeader]:
        return walk_batches(
            self.fd, position, self.size_bytes, first_offset=first_offset, exact_first=exact_first
        )

    def locate(self, offset: int) -> int | None:
        """Position of the batch holding `offset` (of the next batch when `offset` lies
        in a gap the cleaner left), or None if the segment has none."""
        if not self.base_offset <= offset < self.next_offset:
            return None
        entry_offset, position = self.index.lookup(offset)
        for header in self.headers(position, first_offset=entry_offset, exact_first=position > 0):
            if header.next_offset > offset:
                return header.position
        logger.warning("offset index of %s is damaged; rebuilding it", self.log_path)
        self.rebuild_indexes()
        for header in self.headers(0, first_offset=self.base_offset):
            if header.next_offset > offset:
                return header.position
        return None

    def find_timestamp(self, timestamp_ms: int) -> BatchHeader | None:
        """The first batch with max timestamp >= `timestamp_ms` and a record, if any
        (a batch the cleaner emptied keeps its max timestamp but holds no record to
        answer with; Kafka's search passes over it to the next batch)."""
        if self.max_timestamp < timestamp_ms:
            return None
        start = self.time_index.start_offset_for(timestamp_ms)
        position = self.locate(start) or 0
        for header in self.headers(position):
            if header.max_timestamp >= timestamp_ms and header.records_count > 0:
                return header
        return None

    # -- indexes

    def _reset_state(self) -> None:
        self.next_offset = self.base_offset
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = self.base_offset
        self.index = OffsetIndex(self.base_offset)
        self.time_index = TimeIndex(self.base_offset)
        self._bytes_since_index_entry = 0

    def scan(
        self, *, verify_crc: bool, index_interval_bytes: int, contiguous: bool = False
    ) -> int | None:
        """Rebuild all state from the file's batches. Returns the position of the first
        bad or incomplete batch (the caller truncates there), or None if every byte
        is a good batch. With `contiguous`, a batch that does not start at the
        previous one's next offset (the first: at the base offset) is bad too."""
        self._reset_state()
        end = 0
        chunk = VERIFY_WALK_CHUNK_BYTES if verify_crc else HEADER_WALK_CHUNK_BYTES
        for header in walk_batches(
            self.fd,
            0,
            self.size_bytes,
            verify_crc=verify_crc,
            first_offset=self.base_offset,
            contiguous=contiguous,
            chunk_bytes=chunk,
        ):
            self.track(header, index_interval_bytes=index_interval_bytes)
            end = header.position + header.size
        return None if end == self.size_bytes else end

    def rebuild_indexes(self, *, index_interval_bytes: int = 4096) -> None:
        """Rebuild the in-memory indexes from the file (a damaged index was found)."""
        bad = self.scan(verify_crc=False, index_interval_bytes=index_interval_bytes)
        if bad is not None:
            logger.warning("%s has an unreadable batch at position %d", self.log_path, bad)

    def write_indexes(self, *, sync: bool) -> None:
        """Persist the indexes (offset, time, aborted transactions); the time index
        gains a final entry for the segment's largest timestamp first, so that entry
        is the segment's max on reload."""
        if self.max_timestamp != NO_TIMESTAMP:
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
        write_file(self.index_path, self.index.to_bytes(), sync=sync)
        write_file(self.time_index_path, self.time_index.to_bytes(), sync=sync)
        write_txn_index(self.txn_index_path, self.aborted, covered_end=self.next_offset, sync=sync)

    def load_indexes(self) -> bool:
        """Use the index files if they are consistent with the `.log` file: well
        formed, the last offset entry at a batch with its offset, and whole batches
        from there to the end of the file. Returns False (state untouched) if not."""
        index_data = read_file(self.index_path)
        time_data = read_file(self.time_index_path)
        if index_data is None or time_data is None:
            return False
        index = OffsetIndex.from_bytes(self.base_offset, index_data, file_size=self.size_bytes)
        if index is None:
            return False
        last_entry = index.last()
        start_offset, start_position = last_entry or (self.base_offset, 0)
        end, next_offset = start_position, start_offset
        tail_max_timestamp, tail_max_offset = NO_TIMESTAMP, self.base_offset
        exact = last_entry is not None
        for header in self.headers(start_position, first_offset=start_offset, exact_first=exact):
            end, next_offset = header.position + header.size, header.next_offset
            if header.max_timestamp > tail_max_timestamp:
                tail_max_timestamp, tail_max_offset = header.max_timestamp, header.base_offset
        if end != self.size_bytes:
            return False
        time_index = TimeIndex.from_bytes(self.base_offset, time_data, next_offset=next_offset)
        if time_index is None:
            return False
        self.index, self.time_index = index, time_index
        self.next_offset = next_offset
        self.max_timestamp, self.offset_of_max_timestamp = NO_TIMESTAMP, self.base_offset
        last_time_entry = time_index.last()
        if last_time_entry is not None:
            self.max_timestamp, self.offset_of_max_timestamp = last_time_entry
        if tail_max_timestamp > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = tail_max_timestamp, tail_max_offset
        self._bytes_since_index_entry = self.size_bytes - start_position
        return True
