"""A page's placeholders: `shoal:generate` lines, `shoal:chart` blocks and
`shoal:include` lines, expanded when the site is built (`on_page_markdown`, the MkDocs
hook), and the table of generators."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from docsgen import ROOT, DocsGenError, reference, results
from docsgen.results import chart

GENERATORS: dict[str, Callable[[], str]] = {
    "configs-broker": functools.partial(reference.configs, "broker"),
    "configs-topic": functools.partial(reference.configs, "topic"),
    "configs-group": functools.partial(reference.configs, "group"),
    "configs-client-metrics": functools.partial(reference.configs, "client-metrics"),
    "cli": reference.cli,
    "metrics": reference.metrics,
    "apis": reference.apis,
    "extensions": reference.extensions,
    "side-by-side": results.side_by_side,
    "limits": reference.limits,
}
"""NAME of a `<!-- shoal:generate NAME -->` line -> what writes its markdown."""


def generate(name: str) -> str:
    """The markdown a `<!-- shoal:generate NAME -->` line becomes."""
    generator = GENERATORS.get(name)
    if generator is None:
        known = ", ".join(sorted(GENERATORS))
        raise DocsGenError(f"unknown shoal:generate NAME {name!r} (known: {known})")
    return generator()


_GENERATE = re.compile(r"^<!-- shoal:generate ([A-Za-z0-9_-]+) -->[ \t]*$")
_CHART_OPEN = re.compile(r"^<!-- shoal:chart[ \t]*$")
_INCLUDE = re.compile(r"^<!-- shoal:include ([A-Za-z0-9_.-]+\.md) -->[ \t]*$")
INCLUDED_PAGES = {
    "README.md": "index.md",
    "CONTRIBUTING.md": "contributing.md",
    "CHANGELOG.md": "changelog.md",
}
"""The repository-root files the site shows, and the page (under docs/) that shows each."""
_LINK = re.compile(r"(\]\()([^)\s]+)(\))")
_ANY_MARK = re.compile(r"<!--\s*shoal:")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")


def expand(markdown: str, *, root: Path = ROOT) -> str:
    """`markdown` with every `shoal:generate` line and `shoal:chart` block replaced;
    fenced code blocks are left alone (a page may show the conventions)."""
    lines = markdown.split("\n")
    out: list[str] = []
    fence: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = None
            out.append(line)
        elif opened:
            fence = opened.group(1)
            out.append(line)
        elif match := _GENERATE.match(line.strip()):
            out.append(generate(match.group(1)))
        elif match := _INCLUDE.match(line.strip()):
            out.append(include(match.group(1), root=root))
        elif _CHART_OPEN.match(line.strip()):
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "-->"), None)
            if end is None:
                raise DocsGenError("a `<!-- shoal:chart` block is never closed by a `-->` line")
            out.append(chart("\n".join(lines[i + 1 : end]), root=root))
            i = end
        elif _ANY_MARK.search(line):
            raise DocsGenError(
                f"malformed shoal placeholder {line.strip()!r}: write "
                "`<!-- shoal:generate NAME -->` alone on its line, or open a chart "
                "block with `<!-- shoal:chart` alone on its line"
            )
        else:
            out.append(line)
        i += 1
    return "\n".join(out)


def include(name: str, *, root: Path = ROOT) -> str:
    """The root file `name`, its links pointed at the site's pages (see the module doc)."""
    if name not in INCLUDED_PAGES:
        raise DocsGenError(f"shoal:include: {name} is not one of {sorted(INCLUDED_PAGES)}")
    text = (root / name).read_text(encoding="utf-8")

    def relink(match: re.Match[str]) -> str:
        target = match.group(2)
        path, hash_, anchor = target.partition("#")
        if not path or "://" in path or path.startswith("mailto:"):
            return match.group(0)
        if path.startswith("docs/"):
            path = path.removeprefix("docs/")
        elif path in INCLUDED_PAGES:
            path = INCLUDED_PAGES[path]
        else:
            raise DocsGenError(
                f"shoal:include: {name} links {target!r}, which the site does not have: "
                "link a docs/ page, or write the path as code"
            )
        return f"{match.group(1)}{path}{hash_}{anchor}{match.group(3)}"

    return _LINK.sub(relink, text)


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """MkDocs hook: expand the page's placeholders; a failure stops the build."""
    from mkdocs.exceptions import PluginError

    try:
        return expand(markdown)
    except DocsGenError as error:
        raise PluginError(f"docs/{page.file.src_uri}: {error}") from error
