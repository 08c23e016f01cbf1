"""The sparse offset index and time index of one segment, in memory and on disk.

Owns: the two lookup tables that let a read or a timestamp search start near its
target instead of at the start of a segment, and their file formats (Kafka's):

- `.index`: 8-byte entries, big-endian int32 offset relative to the segment's base
  offset, then uint32 byte position of the batch with that base offset.
- `.timeindex`: 12-byte entries, big-endian int64 timestamp, then int32 relative
  offset: "every batch up to this entry's creation has max timestamp <= timestamp,
  and the batch at offset is where that maximum was seen".

Invariants (checked when a file is loaded, asserted when an entry is added): in both
tables every column is strictly increasing, relative offsets are >= 0. Offset-index
entries point at batch starts; a reader still checks the batch it finds there (see
`Segment.locate`), so a damaged but well-formed file costs a rebuild, not a wrong read.

Columns are held in `array`s, so a lookup is a C-level `bisect` and saving or loading
a table is a handful of slice copies, never a loop over entries.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left, bisect_right
from itertools import pairwise

_INT32_MAX = 2**31 - 1
_UINT32_MAX = 2**32 - 1

assert array("i").itemsize == 4 and array("I").itemsize == 4 and array("q").itemsize == 8


def _to_big_endian(column: array[int]) -> bytes:
    copy = array(column.typecode, column)
    if sys.byteorder == "little":
        copy.byteswap()
    return copy.tobytes()


def _interleave(columns: list[array[int]]) -> bytes:
    """Rows of big-endian fields, one field per column."""
    entry_size = sum(c.itemsize for c in columns)
    count = len(columns[0])
    out = bytearray(entry_size * count)
    start = 0
    for column in columns:
        raw = _to_big_endian(column)
        width = column.itemsize
        for k in range(width):
            out[start + k :: entry_size] = raw[k::width]
        start += width
    return bytes(out)


def _deinterleave(data: bytes, typecodes: str) -> list[array[int]] | None:
    """The columns of rows of big-endian fields, or None if `data` is not whole rows."""
    widths = [array(t).itemsize for t in typecodes]
    entry_size = sum(widths)
    if len(data) % entry_size:
        return None
    count = len(data) // entry_size
    columns = []
    start = 0
    for typecode, width in zip(typecodes, widths, strict=True):
        raw = bytearray(width * count)
        for k in range(width):
            raw[k::width] = data[start + k :: entry_size]
        column = array(typecode)
        column.frombytes(bytes(raw))
        if sys.byteorder == "little":
            column.byteswap()
        columns.append(column)
        start += width
    return columns


def _strictly_increasing(column: array[int]) -> bool:
    return all(a < b for a, b in pairwise(column))


class OffsetIndex:
    """Batch base offset -> file position, for some batches of one segment."""

    ENTRY_SIZE = 8

    def __init__(self, base_offset: int) -> None:
        self.base_offset = base_offset
        self._relative: array[int] = array("i")
        self._positions: array[int] = array("I")

    def __len__(self) -> int:
        return len(self._relative)

    def append(self, offset: int, position: int) -> None:
        relative = offset - self.base_offset
        assert 0 <= relative <= _INT32_MAX, "relative offset must fit an int32"
        assert 0 <= position <= _UINT32_MAX, "position must fit a uint32"
        assert not self._relative or (
            relative > self._relative[-1] and position > self._positions[-1]
        ), "index entries must increase"
        self._relative.append(relative)
        self._positions.append(position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """(offset, position) of the last entry at or before `offset`; the segment's
        start when there is none."""
        i = bisect_right(self._relative, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._relative[i], self._positions[i]

    def last(self) -> tuple[int, int] | None:
        if not self._relative:
            return None
        return self.base_offset + self._relative[-1], self._positions[-1]

    def to_bytes(self) -> bytes:
        return _interleave([self._relative, self._positions])

    @classmethod
    def from_bytes(cls, base_offset: int, data: bytes, *, file_size: int) -> OffsetIndex | None:
        """The index in `data`, or None if it is not well formed for a segment file of
        `file_size` bytes."""
        columns = _deinterleave(data, "iI")
        if columns is None:
            return None
        relative, positions = columns
        if relative and (relative[0] < 0 or positions[-1] >= file_size):
            return None
        if not (_strictly_increasing(relative) and _strictly_increasing(positions)):
            return None
        index = cls(base_offset)
        index._relative, index._positions = relative, positions
        return index


class TimeIndex:
    """Max timestamp so far -> offset of the batch where it was seen."""

    ENTRY_SIZE = 12

    def __init__(self, base_offset: int) -> None:
        self.base_offset = base_offset
        self._timestamps: array[int] = array("q")
        self._relative: array[int] = array("i")

    def __len__(self) -> int:
        return len(self._timestamps)

    def maybe_append(self, timestamp_ms: int, offset: int) -> None:
        """Add an entry if `timestamp_ms` is above the last one's."""
        if self._timestamps and timestamp_ms <= self._timestamps[-1]:
            return
        relative = offset - self.base_offset
        assert 0 <= relative <= _INT32_MAX, "relative offset must fit an int32"
        if self._relative and relative <= self._relative[-1]:
            # A larger timestamp seen in the same batch as the previous entry: the
            # newer entry supersedes it.
            self._timestamps.pop()
            self._relative.pop()
        self._timestamps.append(timestamp_ms)
        self._relative.append(relative)

    def start_offset_for(self, timestamp_ms: int) -> int:
        """An offset at or before the first batch with max timestamp >= `timestamp_ms`:
        the batch of the last entry with a smaller timestamp, else the segment start."""
        i = bisect_left(self._timestamps, timestamp_ms) - 1
        if i < 0:
            return self.base_offset
        return self.base_offset + self._relative[i]

    def last(self) -> tuple[int, int] | None:
        """(timestamp, offset) of the last entry."""
        if not self._timestamps:
            return None
        return self._timestamps[-1], self.base_offset + self._relative[-1]

    def to_bytes(self) -> bytes:
        return _interleave([self._timestamps, self._relative])

    @classmethod
    def from_bytes(cls, base_offset: int, data: bytes, *, next_offset: int) -> TimeIndex | None:
        """The index in `data`, or None if it is not well formed for a segment whose
        offsets end before `next_offset`."""
        columns = _deinterleave(data, "qi")
        if columns is None:
            return None
        timestamps, relative = columns
        if relative and (relative[0] < 0 or base_offset + relative[-1] >= next_offset):
            return None
        if not (_strictly_increasing(timestamps) and _strictly_increasing(relative)):
            return None
        index = cls(base_offset)
        index._timestamps, index._relative = timestamps, relative
        return index
