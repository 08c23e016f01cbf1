"""The docs site's build hook (the package scripts/docsgen/), imported for tests, and the
rows of the markdown tables it generates."""

from __future__ import annotations

import importlib
import re
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SCRIPTS = ROOT / "scripts"


@cache
def docsgen() -> ModuleType:
    """The build hook's package, scripts/docsgen/ (scripts/ is not a package path)."""
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    return importlib.import_module("docsgen")


def table_rows(markdown: str) -> list[list[str]]:
    """The cells of every body row of the markdown tables in `markdown` (header and
    delimiter rows left out), as the page shows them: `\\|`, `\\*`, `\\_` and `&lt;`
    read back as the characters they escape."""
    rows = []
    lines = markdown.splitlines()
    for index, line in enumerate(lines):
        if not line.startswith("| ") or re.fullmatch(r"\|(---\|)+", line):
            continue
        if index + 1 < len(lines) and re.fullmatch(r"\|(---\|)+", lines[index + 1]):
            continue  # a header row
        cells = re.split(r"(?<!\\) \| ", line[2:-2])
        rows.append([re.sub(r"\\([|*_\[\]\\])", r"\1", c).replace("&lt;", "<") for c in cells])
    return rows


def code_names(cell: str) -> list[str]:
    """The inline-code spans of a cell (`` `a`, `b` `` -> ["a", "b"])."""
    return re.findall(r"`([^`]+)`", cell)
