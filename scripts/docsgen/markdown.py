"""Markdown as the generated pages show it: prose in one table cell, values as inline
code, tables, and numbers with about three significant digits."""

from __future__ import annotations

import re
from collections.abc import Iterable

_CODE_SPAN = re.compile(r"(`[^`]*`)")
_MARKUP = re.compile(r"([*_\\\[\]])")


def cell(text: object) -> str:
    """Prose (a doc, a help text) as one markdown table cell: on one line, its bars
    escaped and, outside its `code spans`, what markdown would read as markup (`*`,
    `_`, brackets, a `<` starting a tag) shown as written."""
    parts = _CODE_SPAN.split(" ".join(str(text).split()))
    for index in range(0, len(parts), 2):  # the even parts lie outside code spans
        parts[index] = _MARKUP.sub(r"\\\1", parts[index]).replace("<", "&lt;")
    return "".join(parts).replace("|", "\\|")


def code(text: object) -> str:
    """A value as inline code in a table cell (`` `` `` with a space pad when the text
    has backticks)."""
    value = " ".join(str(text).split()).replace("|", "\\|")
    return f"`` {value} ``" if "`" in value else f"`{value}`"


def md_table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> str:
    """A markdown table of `header` and `rows` (cells already escaped)."""
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def format_value(value: float) -> str:
    """A value as a chart prints it: grouped thousands, about three significant digits."""
    magnitude = abs(value)
    if magnitude >= 100 or value == int(value):
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"
