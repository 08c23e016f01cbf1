"""Aligned plain-text tables, shaped like the ones Kafka's admin tools print.

A table is a header row and data rows of strings. Every column but the last is
left-justified to the widest of its cells, its header and its minimum width (Kafka's
tools pad names to at least 15 characters and fixed columns such as PARTITION to
their own widths); columns are separated by one space; the last column is not
padded, and no line ends in spaces. Unlike Kafka's printf formats a cell longer than
its minimum widens the column instead of pushing the rest of its row out of line.
"""

from __future__ import annotations

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
) -> list[str]:
    """The table's lines (header first), without line ends."""
    assert headers, "a table needs at least one column"
    for row in rows:
        assert len(row) == len(headers), f"row {row!r} does not match headers {headers!r}"
    widths = [
        max(len(h), min_widths[i] if i < len(min_widths) else 0) for i, h in enumerate(headers)
    ]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    return [_line(headers, widths)] + [_line(row, widths) for row in rows]


def _line(cells: Sequence[str], widths: Sequence[int]) -> str:
    padded = [cell.ljust(width) for cell, width in zip(cells[:-1], widths[:-1], strict=True)]
    return " ".join([*padded, cells[-1]]).rstrip()


def print_table(
    out: IO[str], headers: Sequence[str], rows: Sequence[Sequence[str]], widths: Sequence[int]
) -> None:
    """A blank line, then the table (how Kafka's group tools print each table)."""
    print(file=out)
    for line in format_table(headers, rows, min_widths=widths):
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
