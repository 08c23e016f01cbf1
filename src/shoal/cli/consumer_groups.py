"""`shoal consumer-groups`: list, describe, reset and delete consumer groups.

Mirrors Kafka's kafka-consumer-groups.sh (options, messages, columns):

  --list [--state [S,...]] [--type [T,...]]     GROUP [TYPE] [STATE]
  --describe (--group G ... | --all-groups)
      [--offsets]  GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG
                   CONSUMER-ID HOST CLIENT-ID (the default)
      --members    GROUP CONSUMER-ID [GROUP-INSTANCE-ID] HOST CLIENT-ID #PARTITIONS [ASSIGNMENT]
      --state      GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS
      (--verbose adds the bracketed columns)
  --reset-offsets (--group G | --all-groups) (--topic T[:P,P...] ... | --all-topics)
      (--to-earliest | --to-latest | --to-datetime YYYY-MM-DDTHH:mm:SS.sss |
       --by-duration PnDTnHnMnS | --to-offset N | --shift-by N | --from-file CSV)
      [--dry-run | --execute]                   GROUP TOPIC PARTITION NEW-OFFSET
  --delete (--group G ... | --all-groups)
  --delete-offsets --group G --topic T[:P,P...] ...   TOPIC PARTITION STATUS

A reset plans the new committed offsets (ListOffsets; --to-offset, --shift-by and
--from-file are clamped to the log's range) and commits them only with --execute;
it is refused while the group has members. --all-topics covers every partition the
group has committed offsets for. --from-file reads `topic,partition,offset` lines.

--timeout bounds each admin call in ms (default 30000); --command-config names a
file of admin-client properties. Exit status: 0 done, 1 failed (message on stderr),
2 bad command line.
"""

from __future__ import annotations

import argparse
import sys
from typing import IO, Any

from shoal.cli.consumer_group_admin import (
    ConsumerGroupDescription,
    commit_offsets,
    committed_offsets,
    delete_offsets,
    describe_consumer_group,
    list_consumer_groups,
)
from shoal.cli.consumer_groups_options import validate
from shoal.cli.kafka_options import ToolFailed, add_tool_parser, run_tool
from shoal.cli.offset_reset import clamped, expand_partitions, new_offsets
from shoal.cli.share_group_admin import delete_group
from shoal.cli.tables import MISSING, NAME_WIDTH_MIN, assignment_text, format_table, print_table
from shoal.cli.topic_admin import list_offsets
from shoal.client import Client, KafkaError
from shoal.client.errors import ErrorCode
from shoal.client.metadata import TopicPartition
from shoal.client.requests import LATEST_TIMESTAMP
from shoal.client.settings import API_TIMEOUT_MS_DEFAULT
from shoal.clock import SystemClock

PROG = "shoal consumer-groups"
_INACTIVE = ("Empty", "Dead")
_REBALANCING = ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")


def add_parser(commands: Any) -> None:
    parser = add_tool_parser(
        commands,
        "consumer-groups",
        help_text="list, describe, reset and delete consumer groups (kafka-consumer-groups.sh)",
        description=__doc__,
    )
    for action, text in (
        ("--list", "list all consumer groups"),
        ("--describe", "describe consumer groups, members and offset lag"),
        ("--delete", "delete consumer groups"),
        ("--reset-offsets", "reset the committed offsets of a consumer group"),
        ("--delete-offsets", "delete the committed offsets of a consumer group"),
    ):
        parser.add_argument(action, action="store_true", help=text)
    parser.add_argument("--group", action="append", metavar="GROUP", help="group (repeatable)")
    parser.add_argument("--all-groups", action="store_true", help="apply to all consumer groups")
    parser.add_argument(
        "--topic", action="append", metavar="TOPIC[:P,P...]", help="topic (repeatable)"
    )
    parser.add_argument("--all-topics", action="store_true", help="reset every committed topic")
    parser.add_argument("--members", action="store_true", help="describe the members")
    parser.add_argument("--offsets", action="store_true", help="describe offsets and lag (default)")
    parser.add_argument(
        "--state",
        nargs="?",
        const="",
        default=None,
        metavar="STATE[,STATE...]",
        help="with --describe: the group state; with --list: show or filter by state",
    )
    parser.add_argument(
        "--type",
        nargs="?",
        const="",
        default=None,
        metavar="TYPE[,TYPE...]",
        help="with --list: show or filter by group type (classic, consumer)",
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
    parser.add_argument(
        "--by-duration", metavar="PnDTnHnMnS", help="reset to the first record this long ago"
    )
    parser.add_argument("--to-offset", type=int, metavar="N", help="reset to this offset")
    parser.add_argument("--shift-by", type=int, metavar="N", help="move the committed offset by N")
    parser.add_argument("--from-file", metavar="CSV", help="topic,partition,offset lines")
    parser.add_argument(
        "--timeout",
        type=int,
        default=API_TIMEOUT_MS_DEFAULT,
        metavar="MS",
        help=f"timeout of each admin call (default {API_TIMEOUT_MS_DEFAULT})",
    )
    parser.set_defaults(run=run, parser=parser)


def run(args: argparse.Namespace, *, out: IO[str] | None = None) -> int:
    return run_tool(
        args.parser,
        args,
        validate=validate,
        api_timeout_ms=lambda a: int(a.timeout),
        action=act,
        out=out,
    )


def act(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    if args.list:
        return _list(client, args, out)
    if args.describe:
        return _describe(client, args, out)
    if args.delete:
        return _delete(client, args, out)
    if args.reset_offsets:
        return _reset(client, args, out)
    return _delete_offsets(client, args, out)


def _list(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    groups = list_consumer_groups(client, args.type_filter, args.state_filter)
    show_type, show_state = args.type is not None, args.state is not None
    if not show_type and not show_state:
        for g in groups:
            print(g.group_id, file=out)
        return 0
    headers = ["GROUP"] + (["TYPE"] if show_type else []) + (["STATE"] if show_state else [])
    rows = [
        [g.group_id]
        + ([g.group_type.capitalize()] if show_type else [])
        + ([g.state] if show_state else [])
        for g in groups
    ]
    for line in format_table(headers, rows, min_widths=(NAME_WIDTH_MIN,)):
        print(line, file=out)
    return 0


def _group_ids(client: Client, args: argparse.Namespace) -> list[str]:
    if args.all_groups:
        return [g.group_id for g in list_consumer_groups(client)]
    return list(dict.fromkeys(args.group))


def _describe(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    status = 0
    for group_id in _group_ids(client, args):
        description = describe_consumer_group(client, group_id)
        if _dead(description):
            status = 1
            continue
        if args.members:
            _print_members(description, args.verbose, out)
        elif args.state is not None:
            _print_state(description, out)
        else:
            _print_offsets(client, description, out)
    return status


def _dead(description: ConsumerGroupDescription) -> bool:
    """Kafka's maybePrintEmptyGroupState: an error for a dead (unknown) group, a
    notice for an empty or rebalancing one; True if dead."""
    group_id = description.group_id
    if description.state == "Dead":
        print(f"Error: Consumer group '{group_id}' does not exist.", file=sys.stderr)
        return True
    if description.state == "Empty":
        print(f"\nConsumer group '{group_id}' has no active members.", file=sys.stderr)
    elif description.state in _REBALANCING:
        print(f"\nWarning: Consumer group '{group_id}' is rebalancing.", file=sys.stderr)
    return False


def _cell(value: int | None) -> str:
    return MISSING if value is None else str(value)


def _print_offsets(client: Client, description: ConsumerGroupDescription, out: IO[str]) -> None:
    group_id = description.group_id
    committed = committed_offsets(client, group_id)
    owner = {
        (topic, p): m
        for m in description.members
        for topic, partitions in m.assignment.items()
        for p in partitions
    }
    partitions = sorted(set(committed) | set(owner))
    if not partitions:
        return
    ends = list_offsets(client, partitions, LATEST_TIMESTAMP)
    rows = []
    for tp in partitions:
        current, end = committed.get(tp), ends.get(tp)
        lag = None if current is None or end is None else max(end - current, 0)
        member = owner.get(tp)
        rows.append(
            [
                group_id,
                tp[0],
                str(tp[1]),
                _cell(current),
                _cell(end),
                _cell(lag),
                member.member_id if member else MISSING,
                member.host if member else MISSING,
                member.client_id if member else MISSING,
            ]
        )
    headers = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"]
    headers += ["CONSUMER-ID", "HOST", "CLIENT-ID"]
    widths = [NAME_WIDTH_MIN, NAME_WIDTH_MIN, 10, 15, 15, 15, NAME_WIDTH_MIN, NAME_WIDTH_MIN]
    print_table(out, headers, rows, widths)


def _print_members(description: ConsumerGroupDescription, verbose: bool, out: IO[str]) -> None:
    if not description.members:
        return
    headers = ["GROUP", "CONSUMER-ID"] + (["GROUP-INSTANCE-ID"] if verbose else [])
    headers += ["HOST", "CLIENT-ID", "#PARTITIONS"] + (["ASSIGNMENT"] if verbose else [])
    rows = []
    for m in sorted(description.members, key=lambda m: m.member_id):
        row = [description.group_id, m.member_id]
        if verbose:
            row.append(m.group_instance_id or MISSING)
        row += [m.host, m.client_id, str(m.partition_count)]
        if verbose:
            row.append(assignment_text(m.assignment) or MISSING)
        rows.append(row)
    widths = [NAME_WIDTH_MIN] * (5 if verbose else 4) + [12]
    print_table(out, headers, rows, widths)


def _print_state(description: ConsumerGroupDescription, out: IO[str]) -> None:
    node = description.coordinator
    headers = ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
    row = [
        description.group_id,
        f"{node.host}:{node.port}  ({node.node_id})",
        description.assignment_strategy,
        description.state,
        str(len(description.members)),
    ]
    print_table(out, headers, [row], [NAME_WIDTH_MIN, 25, 20, 20])


def _delete(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    deleted: list[str] = []
    failed: dict[str, str] = {}
    for group_id in _group_ids(client, args):
        error = delete_group(client, group_id)
        if error is None:
            deleted.append(group_id)
        elif error.code == ErrorCode.group_id_not_found:
            failed[group_id] = f"Group '{group_id}' does not exist. (GROUP_ID_NOT_FOUND)"
        elif error.code == ErrorCode.non_empty_group:
            failed[group_id] = f"Group '{group_id}' is not empty. (NON_EMPTY_GROUP)"
        else:
            failed[group_id] = str(error)
    quoted = ", ".join(f"'{g}'" for g in deleted)
    if not failed:
        print(f"Deletion of requested consumer groups ({quoted}) was successful.", file=out)
        return 0
    print("Error: Deletion of some consumer groups failed:", file=sys.stderr)
    for group_id, reason in failed.items():
        print(f"* Group '{group_id}' could not be deleted due to: {reason}", file=sys.stderr)
    if deleted:
        print(f"\nThese consumer groups were deleted successfully: {quoted}", file=out)
    return 1


def _group_error(group_id: str, exc: KafkaError) -> str:
    if exc.code == ErrorCode.group_id_not_found:
        return f"Consumer group '{group_id}' does not exist."
    if exc.code == ErrorCode.non_empty_group:
        return f"Consumer group '{group_id}' is not empty."
    if exc.code == ErrorCode.group_subscribed_to_topic:
        return (
            f"Consumer group '{group_id}' is subscribed to the topic. (GROUP_SUBSCRIBED_TO_TOPIC)"
        )
    return str(exc)


def _delete_offsets(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    group_id = args.group[0]
    partitions = expand_partitions(client, args.delete_scope)
    try:
        results = delete_offsets(client, group_id, partitions)
    except KafkaError as exc:
        raise ToolFailed(_group_error(group_id, exc)) from None
    rows = []
    status = 0
    for tp in partitions:
        error = results.get(tp, KafkaError(-1, "the broker sent no result for this partition"))
        rows.append((tp[0], str(tp[1]), "Successful" if error is None else f"Error: {error}"))
        status = status if error is None else 1
    print_table(out, ("TOPIC", "PARTITION", "STATUS"), rows, (30, 15))
    return status


def _reset(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    """Plan (and with --execute commit) each group's reset; a group with members is
    refused with Kafka's message and the others go on (exit 1 if any was refused)."""
    rows: list[tuple[str, str, str, str]] = []
    refused = False
    for group_id in _group_ids(client, args):
        state = describe_consumer_group(client, group_id).state
        if state not in _INACTIVE:
            print(
                f"Error: Assignments can only be reset if the group '{group_id}' is inactive, "
                f"but the current state is {state}.",
                file=sys.stderr,
            )
            refused = True
            continue
        offsets = _plan(client, args, committed_offsets(client, group_id))
        if args.execute and offsets:
            try:
                commit_offsets(client, group_id, offsets)
            except KafkaError as exc:
                raise ToolFailed(_group_error(group_id, exc)) from None
        rows += [(group_id, t, str(p), str(offsets[(t, p)])) for t, p in sorted(offsets)]
    if rows or not refused:
        print_table(out, ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"), rows, (15, 15, 10))
    return 1 if refused else 0


def _plan(
    client: Client, args: argparse.Namespace, committed: dict[TopicPartition, int]
) -> dict[TopicPartition, int]:
    if args.reset_file is not None:
        file = args.reset_file
        if args.reset_scope is not None:
            keep = set(expand_partitions(client, args.reset_scope))
            file = {tp: o for tp, o in file.items() if tp in keep}
        return clamped(client, file) if file else {}
    if args.reset_scope is None:
        partitions = sorted(committed)
    else:
        partitions = expand_partitions(client, args.reset_scope)
    if not partitions:
        return {}
    if args.shift_by is not None:
        ends = list_offsets(client, partitions, LATEST_TIMESTAMP)
        return clamped(
            client, {tp: committed.get(tp, ends[tp]) + int(args.shift_by) for tp in partitions}
        )
    if args.reset_duration_ms is not None:
        args.reset_timestamp_ms = SystemClock().wall_ms() - int(args.reset_duration_ms)
    return new_offsets(client, args, partitions)
