"""The `shoal` command: dispatches to subcommands.

`shoal serve` runs the broker; other subcommands are client tools shaped like Kafka's
(`kafka-topics.sh`, `kafka-configs.sh`, `kafka-share-groups.sh`, `kafka-consumer-groups.sh`,
the console producer and consumers). `shoal --version` (and `--version` of each tool)
prints Shoal's version and the Kafka version it follows (cli/versions.py).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

SERVE = "serve"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `shoal` parser with every subcommand; with `command="serve"`, with that one
    only: the broker's start-up then imports none of the client tools' modules (the
    serve subparser, its help and its errors are the same either way)."""
    # imported here, after `main`'s `_without_hypothesis`
    from shoal.cli import serve
    from shoal.cli.versions import add_version_option

    parser = argparse.ArgumentParser(prog="shoal", description=__doc__)
    add_version_option(parser)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve.add_parser(commands)
    if command == SERVE:
        return parser
    from shoal.cli import (
        acls,
        configs,
        console_consumer,
        console_producer,
        console_share_consumer,
        consumer_groups,
        share_groups,
        topics,
        transactions,
    )

    console_share_consumer.add_parser(commands)
    console_producer.add_parser(commands)
    console_consumer.add_parser(commands)
    topics.add_parser(commands)
    share_groups.add_parser(commands)
    consumer_groups.add_parser(commands)
    transactions.add_parser(commands)
    acls.add_parser(commands)
    configs.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    _without_hypothesis()
    given = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(given[0] if given else None)
    args = parser.parse_args(given)
    args.argv = given[1:]  # the tool's own arguments, as Kafka's tools quote them in errors
    result: int = args.run(args)
    return result


def _without_hypothesis() -> None:
    """Keep kio from importing hypothesis. kio imports it whenever it is installed (as
    in a development environment), only to register its types' test strategies; that
    import (with pytest and trio) is about 0.6 s of CPU, more than the rest of a tool's
    or broker's start-up. No tool needs it. For the `shoal` program and `python -m
    shoal.cli.main` alike; a process that has imported it already (a test) keeps it."""
    if "hypothesis" not in sys.modules:
        sys.modules["hypothesis"] = None  # type: ignore[assignment]  # import -> ImportError


if __name__ == "__main__":
    sys.exit(main())
