"""Run the `shoal` admin tools as subprocesses and read the tables they print.

`shoal(...)` runs `python -m shoal.cli.main ARGS` and returns the completed process
(text output). `tables(text)` splits output into its tables (blocks separated by
blank lines whose first line is a header) and reads each row as {header: cell},
with column boundaries taken from the header line, so cells are read by position,
not by splitting on blanks.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
TOOL_TIMEOUT_S = 120.0


def shoal(*args: str, timeout_s: float = TOOL_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "shoal.cli.main", *args],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=timeout_s,
        check=False,
    )


def tables(text: str) -> list[list[dict[str, str]]]:
    """Every table in `text`: blocks of non-blank lines whose first line is all
    upper-case headers."""
    out = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line for line in block.splitlines() if line.strip()]
        if lines and _is_header(lines[0]):
            out.append(parse_table(lines))
    return out


def rows(text: str) -> list[dict[str, str]]:
    """The rows of every table in `text`, in order."""
    return [row for table in tables(text) for row in table]


def _is_header(line: str) -> bool:
    return bool(line.strip()) and line == line.upper() and line.split(maxsplit=1)[0].isalpha()


def parse_table(lines: list[str]) -> list[dict[str, str]]:
    header = lines[0]
    starts = _column_starts(header)
    ends = [*starts[1:], None]
    names = [header[s:e].strip() for s, e in zip(starts, ends, strict=True)]
    return [
        dict(
            zip(names, (line[s:e].strip() for s, e in zip(starts, ends, strict=True)), strict=True)
        )
        for line in lines[1:]
    ]


def _column_starts(header: str) -> list[int]:
    """Where each header name begins; a word in parentheses after a single space
    belongs to the previous name ("COORDINATOR (ID)")."""
    starts = []
    for match in re.finditer(r"\S+", header):
        gap = header[: match.start()]
        single_space = gap.endswith(" ") and not gap.endswith("  ")
        if starts and single_space and match.group().startswith("("):
            continue
        starts.append(match.start())
    return starts
