"""The `shoal` command: dispatches to subcommands.

`shoal serve` runs the broker; other subcommands are client tools shaped like Kafka's
(`kafka-topics.sh`, `kafka-share-groups.sh`, `kafka-consumer-groups.sh`, console consumers).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from shoal.cli import (
    acls,
    configs,
    console_share_consumer,
    consumer_groups,
    serve,
    share_groups,
    topics,
    transactions,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="shoal", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve.add_parser(commands)
    console_share_consumer.add_parser(commands)
    topics.add_parser(commands)
    share_groups.add_parser(commands)
    consumer_groups.add_parser(commands)
    transactions.add_parser(commands)
    acls.add_parser(commands)
    configs.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    result: int = args.run(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
