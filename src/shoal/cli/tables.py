"""Aligned plain-text tables, shaped like the ones Kafka's admin tools print.

A table is a header row and data rows of strings. Every column but the last is
left-justified to the widest of its cells, its header and its minimum width (Kafka's
tools pad names to at least 15 characters and fixed columns such as PARTITION to
their own widths); columns are separated by one space. By default the last column is
not padded and no line ends in spaces; where Kafka's format pads its last column too
(`kafka-consumer-groups --list --state`, `--describe --members`) `pad_last` pads each
last cell to the column's minimum width, and `end` adds what Kafka's format prints
after it (the members table's one space). Unlike Kafka's printf formats a cell longer
than its minimum widens the column instead of pushing the rest of its row out of line.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import IO

NAME_WIDTH_MIN = 15
"""Kafka's minimum width of free-text columns (group, topic, consumer id, host)."""
MISSING = "-"
"""What a cell shows when the value is unknown, as Kafka's tools print it."""


def format_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    min_widths: Sequence[int] = (),
    pad_last: bool = False,
    end: str = "",
) -> list[str]:
    """The table's lines (header first), without line ends."""
    assert headers, "a table needs at least one column"
    for row in rows:
        assert len(row) == len(headers), f"row {row!r} does not match headers {headers!r}"
    minimum = [min_widths[i] if i < len(min_widths) else 0 for i in range(len(headers))]
    widths = [max(len(h), least) for h, least in zip(headers, minimum, strict=True)]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    # Kafka's printf pads the last cell to its format's width, not to the longest cell
    widths[-1] = minimum[-1] if pad_last else 0
    return [_line(line, widths, end) for line in [headers, *rows]]


def _line(cells: Sequence[str], widths: Sequence[int], end: str) -> str:
    padded = [cell.ljust(width) for cell, width in zip(cells, widths, strict=True)]
    line = " ".join(padded)
    return line + end if widths[-1] else line.rstrip()


def print_table(
    out: IO[str],
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    widths: Sequence[int],
    *,
    pad_last: bool = False,
    end: str = "",
) -> None:
    """A blank line, then the table (how Kafka's group tools print each table)."""
    print(file=out)
    for line in format_table(headers, rows, min_widths=widths, pad_last=pad_last, end=end):
        print(line, file=out)


def assignment_text(assignment: dict[str, tuple[int, ...]]) -> str:
    """`topic:0,1;other:3`, topics and partitions sorted, as Kafka prints it."""
    return ";".join(
        f"{topic}:{','.join(str(p) for p in sorted(partitions))}"
        for topic, partitions in sorted(assignment.items())
        if partitions
    )


def cell(value: int | None) -> str:
    """A number's cell, or MISSING when it is unknown."""
    return MISSING if value is None else str(value)


KEY_CELL_CHARS_MAX = 40
"""A record key's cell is cut to this many characters ("…" ends a cut one)."""


def time_cell(epoch_ms: int | None) -> str:
    """An epoch time in milliseconds as UTC ISO 8601 with milliseconds
    (2026-11-29T10:00:00.000Z), or MISSING."""
    if epoch_ms is None:
        return MISSING
    moment = datetime.datetime.fromtimestamp(epoch_ms / 1000, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{epoch_ms % 1000:03d}Z"


def key_cell(key: bytes) -> str:
    """A record key: its text when it is printable UTF-8, "" when empty, else 0x and
    its hex; cut to `KEY_CELL_CHARS_MAX` characters."""
    if not key:
        return '""'
    try:
        text = key.decode("utf-8")
    except UnicodeDecodeError:
        text = ""
    if not text or not text.isprintable():
        text = "0x" + key.hex()
    if len(text) > KEY_CELL_CHARS_MAX:
        text = text[: KEY_CELL_CHARS_MAX - 1] + "…"
    return text
