"""The docs site's build hook (mkdocs.yml `hooks:` runs scripts/docs_hook.py, which
loads this package): reference tables generated from the
code, and bar charts drawn from bench/results, so neither can drift from what they show.

Two conventions, for any page under docs/ (outside fenced code blocks):

- A line `<!-- shoal:generate NAME -->` is replaced by generated markdown. NAMEs
  (`GENERATORS`): configs-broker, configs-topic, configs-group, configs-client-metrics
  (shoal.config's table), cli (the real argparse parsers of `shoal`), metrics (the
  families a broker's registry exports), apis (the handler registry, i.e. ApiVersions),
  limits (the named constants of shoal/limits.py, with their docstrings).
- A comment block opening with `<!-- shoal:chart` and closing with `-->` holds YAML
  (title, source, unit, bars, optional scale and note) and is replaced by an inline SVG
  horizontal bar chart of values read from the JSON file `source` (relative to the
  repository root); `bars` maps each label to a dotted path into that JSON (list
  indices as `name[0]` or `.0.`, or the item whose field has a value as
  `name[key=share_drain_rps]`, which survives a benchmark reordering its rows).
- A line `<!-- shoal:include FILE -->` is replaced by the repository-root markdown file
  FILE (CONTRIBUTING.md, CHANGELOG.md), its links rewritten for the site: `docs/X` to
  `X`, the root files to their pages (`INCLUDED_PAGES`); any other relative link in it
  fails the build, so a root file only links what the site has.

An unknown NAME, a malformed block, a missing file or a path that leads nowhere fails
the build (`DocsGenError`, raised as mkdocs' PluginError) with the page and the reason.

The code documented is this checkout's: `src/` beside this file goes first on the path.
Modules: page.py (placeholders, includes, the hook entry), reference.py (the
tables generated from the code), results.py (the tables and charts drawn from
bench/results), markdown.py (table cells and numbers as the pages show them).
Tests import the package with scripts/ on the path (tests/support/docs_site.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT: Path = Path(__file__).resolve().parents[2]
"""The repository root: chart sources and included files are relative to it."""
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))


class DocsGenError(Exception):
    """A placeholder or chart the build cannot honour; the message says why."""


# The package's face, after ROOT and DocsGenError (its modules import both from here).
from docsgen.markdown import cell  # noqa: E402
from docsgen.page import GENERATORS, expand, generate, include  # noqa: E402
from docsgen.reference import usage  # noqa: E402
from docsgen.results import SIDE_BY_SIDE, chart, lookup  # noqa: E402

__all__ = [
    "GENERATORS",
    "ROOT",
    "SIDE_BY_SIDE",
    "DocsGenError",
    "cell",
    "chart",
    "expand",
    "generate",
    "include",
    "lookup",
    "usage",
]
