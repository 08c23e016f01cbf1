"""`--version` of `shoal` and of its Kafka-shaped tools: one line naming Shoal's
version (the package's, `shoal.__version__`, which pyproject.toml reads) and the
Kafka version whose protocol and tools Shoal follows.

Kafka's tools print only Kafka's version (`4.2.2`); Shoal's print
`shoal 0.1.0 (Apache Kafka 4.2 protocol and tools)` and exit 0, so a script can tell
which tool answered and what it speaks (docs/reference/cli.md).
"""

from __future__ import annotations

import argparse

from shoal import KAFKA_VERSION, __version__


def version_text() -> str:
    return f"shoal {__version__} (Apache Kafka {KAFKA_VERSION} protocol and tools)"


def add_version_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--version", action="version", version=version_text(), help="print the version and exit"
    )
