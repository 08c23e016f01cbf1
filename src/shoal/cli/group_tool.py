"""What `shoal share-groups` and `shoal consumer-groups` do alike, written once: the
options both take, running the chosen action, and the messages and tables Kafka's
two group tools print the same way (deletion reports, group-state notices, errors
naming a group, per-item status tables, the reset plan).

`kind` is how a tool names its groups in messages: "share group" or "consumer
group" (Kafka's wording: "Share group 'g' has no active members.", "Deletion of
requested consumer groups ('g') was successful.").
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

from shoal.cli.java_order import hash_map_order, partition_order
from shoal.cli.kafka_options import dest, present, run_tool
from shoal.cli.tables import print_table
from shoal.client import Client, KafkaError
from shoal.client.errors import ErrorCode
from shoal.client.metadata import TopicPartition
from shoal.client.settings import API_TIMEOUT_MS_DEFAULT

Action = Callable[[Client, argparse.Namespace, IO[str]], int]
REBALANCING_STATES = ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")


def add_group_arguments(
    parser: Any, *, kind: str, action_help: Mapping[str, str], all_topics_help: str
) -> None:
    """The actions (`action_help`: {"--list": help, ...}) and the options both tools
    take; each tool then adds its own (reset scenarios, --type, --export)."""
    for action, text in action_help.items():
        parser.add_argument(action, action="store_true", help=text)
    parser.add_argument("--group", action="append", metavar="GROUP", help=f"{kind} (repeatable)")
    parser.add_argument("--all-groups", action="store_true", help=f"apply to all {kind}s")
    parser.add_argument(
        "--topic", action="append", metavar="TOPIC[:P,P...]", help="topic (repeatable)"
    )
    parser.add_argument("--all-topics", action="store_true", help=all_topics_help)
    parser.add_argument("--members", action="store_true", help="describe the members")
    parser.add_argument("--offsets", action="store_true", help="describe offsets (default)")
    parser.add_argument(
        "--state",
        nargs="?",
        const="",
        default=None,
        metavar="STATE[,STATE...]",
        help="with --describe: the group state; with --list: show or filter by state",
    )
    parser.add_argument("--verbose", action="store_true", help="more columns with --describe")
    parser.add_argument("--dry-run", action="store_true", help="plan a reset only (default)")
    parser.add_argument("--execute", action="store_true", help="apply the reset")
    parser.add_argument("--to-earliest", action="store_true", help="reset to the log start")
    parser.add_argument("--to-latest", action="store_true", help="reset to the log end")
    parser.add_argument(
        "--to-datetime",
        metavar="YYYY-MM-DDTHH:mm:SS.sss",
        help="reset to the first record at or after",
    )
    parser.add_argument("--to-offset", type=int, metavar="N", help="reset to this offset")
    parser.add_argument(
        "--timeout",
        type=int,
        default=API_TIMEOUT_MS_DEFAULT,
        metavar="MS",
        help=f"timeout of each admin call (default {API_TIMEOUT_MS_DEFAULT})",
    )


def run_group_command(
    args: argparse.Namespace,
    *,
    out: IO[str] | None,
    validate: Callable[[argparse.Namespace], None],
    actions: Mapping[str, Action],
) -> int:
    """Validate, connect, and run the one action given ({"list": ..., ...})."""

    def act(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
        (chosen,) = (a for a in actions if present(args, dest(a)))
        return actions[chosen](client, args, out)

    return run_tool(
        args.parser,
        args,
        validate=validate,
        api_timeout_ms=lambda a: int(a.timeout),
        action=act,
        out=out,
    )


def group_ids(args: argparse.Namespace, listed: Callable[[], Sequence[str]]) -> list[str]:
    """The groups named by --group (first-seen order, once each) or --all-groups."""
    if args.all_groups:
        return list(listed())
    return list(dict.fromkeys(args.group))


def report_group_state(kind: str, group_id: str, state: str) -> bool:
    """Kafka's maybePrintEmptyGroupState: an error for a dead (unknown) group, a
    notice for an empty one, a warning for a rebalancing one; True if dead."""
    title = kind.capitalize()
    if state == "Dead":
        print(f"Error: {title} '{group_id}' does not exist.", file=sys.stderr)
        return True
    if state == "Empty":
        print(f"\n{title} '{group_id}' has no active members.", file=sys.stderr)
    elif state in REBALANCING_STATES:
        print(f"\nWarning: {title} '{group_id}' is rebalancing.", file=sys.stderr)
    return False


def group_error(kind: str, group_id: str, exc: KafkaError) -> str:
    """A group-level error of an offsets call, worded as Kafka's tools word it."""
    title = kind.capitalize()
    if exc.code == ErrorCode.group_id_not_found:
        return f"{title} '{group_id}' does not exist."
    if exc.code == ErrorCode.non_empty_group:
        return f"{title} '{group_id}' is not empty."
    if exc.code == ErrorCode.group_subscribed_to_topic:
        return f"{title} '{group_id}' is subscribed to the topic. (GROUP_SUBSCRIBED_TO_TOPIC)"
    return str(exc)


def print_deletion(out: IO[str], kind: str, deleted: list[str], failed: Mapping[str, str]) -> int:
    """Kafka's report of a --delete: success on stdout, each failure on stderr; the
    exit status."""
    quoted = ", ".join(f"'{g}'" for g in deleted)
    if not failed:
        print(f"Deletion of requested {kind}s ({quoted}) was successful.", file=out)
        return 0
    print(f"Error: Deletion of some {kind}s failed:", file=sys.stderr)
    for group_id, reason in failed.items():
        print(f"* Group '{group_id}' could not be deleted due to: {reason}", file=sys.stderr)
    if deleted:
        print(f"\nThese {kind}s were deleted successfully: {quoted}", file=out)
    return 1


def print_statuses(
    out: IO[str],
    headers: Sequence[str],
    results: Sequence[tuple[Sequence[str], str | None]],
    widths: Sequence[int],
    *,
    pad_last: bool = False,
) -> bool:
    """A --delete-offsets table: each item's cells, then "Successful" or "Error: "
    and its error's text (None: it succeeded); whether every item succeeded."""
    rows = [
        (*cells, "Successful" if error is None else f"Error: {error}") for cells, error in results
    ]
    print_table(out, headers, rows, widths, pad_last=pad_last)
    return all(error is None for _, error in results)


def plan_rows(
    plans: Mapping[str, Mapping[TopicPartition, int]],
) -> list[tuple[str, str, int, int]]:
    """A reset plan's (group, topic, partition, new offset) rows in the order Kafka's
    tools print them: its HashMaps' of groups and of each group's TopicPartitions
    (java_order.py)."""
    return [
        (group_id, topic, partition, plans[group_id][(topic, partition)])
        for group_id in hash_map_order(plans)
        for topic, partition in partition_order(plans[group_id])
    ]


def print_reset_plan(out: IO[str], rows: Sequence[tuple[str, str, int, int]]) -> None:
    """The GROUP TOPIC PARTITION NEW-OFFSET table of --reset-offsets (rows from
    `plan_rows`)."""
    cells = [(g, t, str(p), str(o)) for g, t, p, o in rows]
    print_table(out, ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"), cells, (15, 15, 10))
