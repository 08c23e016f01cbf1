"""The docs site's build hook, as mkdocs.yml's `hooks:` names it: the package
scripts/docsgen/ does the work (its docstring has the page conventions)."""

from __future__ import annotations

import sys
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from docsgen.page import on_page_markdown

__all__ = ["on_page_markdown"]
