"""`shoal share-groups`: list, describe, reset and delete share groups.

Mirrors Kafka's kafka-share-groups.sh (options, messages, columns):

  --list [--state [S,...]]                      GROUP STATE (states: Empty, Stable, Dead)
  --describe (--group G ... | --all-groups)
      [--offsets]  GROUP TOPIC PARTITION [LEADER-EPOCH] START-OFFSET LAG (the default)
      --members    GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS [MEMBER-EPOCH] ASSIGNMENT
      --state      GROUP COORDINATOR (ID) STATE [GROUP-EPOCH ASSIGNMENT-EPOCH] #MEMBERS
      (--verbose adds the bracketed columns)
  --reset-offsets --group G [--topic T[:P,P...] ... | --all-topics]
      (--to-earliest | --to-latest | --to-datetime YYYY-MM-DDTHH:mm:SS.sss | --to-offset N)
      [--dry-run | --execute]                   GROUP TOPIC PARTITION NEW-OFFSET
  --delete (--group G ... | --all-groups)
  --delete-offsets --group G --topic T ...      TOPIC STATUS

A reset plans the new start offsets with ListOffsets (--to-offset is clamped to the
log's range, --to-datetime falls back to the log end where no record is that new)
and applies them only with --execute; the group must be empty or unknown. Without
--topic it covers every partition the group has state for. --to-datetime takes an
optional zone (Z, +hh:mm, +hhmm, +hh); without one it is UTC, as in Kafka.

--timeout bounds each admin call in ms (default 30000); --command-config names a
file of admin-client properties. Exit status: 0 done, 1 failed (message on stderr),
2 bad command line.
"""

from __future__ import annotations

import argparse
import sys
from typing import IO, Any

from shoal.cli.kafka_options import ToolFailed, add_tool_parser, run_tool
from shoal.cli.offset_reset import expand_partitions, new_offsets
from shoal.cli.share_group_admin import (
    GroupDescription,
    PartitionOffset,
    alter_offsets,
    delete_group,
    delete_offsets,
    describe_group,
    describe_offsets,
    list_share_groups,
)
from shoal.cli.share_groups_options import validate
from shoal.cli.tables import MISSING, NAME_WIDTH_MIN, assignment_text, format_table, print_table
from shoal.client import Client, KafkaError
from shoal.client.errors import ErrorCode
from shoal.client.metadata import TopicPartition
from shoal.client.settings import API_TIMEOUT_MS_DEFAULT

PROG = "shoal share-groups"


def add_parser(commands: Any) -> None:
    parser = add_tool_parser(
        commands,
        "share-groups",
        help_text="list, describe, reset and delete share groups (kafka-share-groups.sh)",
        description=__doc__,
    )
    for action, text in (
        ("--list", "list all share groups"),
        ("--describe", "describe share groups, members and offset information"),
        ("--delete", "delete share groups"),
        ("--reset-offsets", "reset the start offsets of one share group"),
        ("--delete-offsets", "delete the offset information of one share group"),
    ):
        parser.add_argument(action, action="store_true", help=text)
    parser.add_argument(
        "--group", action="append", metavar="GROUP", help="share group (repeatable)"
    )
    parser.add_argument("--all-groups", action="store_true", help="apply to all share groups")
    parser.add_argument(
        "--topic", action="append", metavar="TOPIC[:P,P...]", help="topic (repeatable)"
    )
    parser.add_argument("--all-topics", action="store_true", help="reset every topic with state")
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


# ---- the actions


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
    groups = list_share_groups(client, args.state_filter)
    rows = [(g.group_id, g.state) for g in groups]
    for line in format_table(("GROUP", "STATE"), rows, min_widths=(NAME_WIDTH_MIN,)):
        print(line, file=out)
    return 0


def _describe(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    if args.all_groups:
        group_ids = [g.group_id for g in list_share_groups(client)]
    else:
        group_ids = sorted(set(args.group))
    status = 0
    for group_id in group_ids:
        try:
            description = describe_group(client, group_id)
        except KafkaError as exc:
            if exc.code != ErrorCode.group_id_not_found:
                raise
            print(f"Error: Share group '{group_id}' does not exist.", file=sys.stderr)
            status = 1
            continue
        if args.members:
            ok = _print_members(description, args.verbose, out)
        elif args.state is not None:
            ok = _print_state(description, args.verbose, out)
        else:
            ok = _print_offsets(description, describe_offsets(client, group_id), args.verbose, out)
        status = status if ok else 1
    return status


def _empty_or_dead(description: GroupDescription) -> bool:
    """Kafka's maybePrintEmptyGroupState: a notice for an empty group, an error for a
    dead one; True if the group is dead."""
    if description.state == "Dead":
        print(f"Error: Share group '{description.group_id}' does not exist.", file=sys.stderr)
        return True
    if description.state == "Empty":
        print(f"\nShare group '{description.group_id}' has no active members.", file=sys.stderr)
    return False


def _print_offsets(
    description: GroupDescription, offsets: list[PartitionOffset], verbose: bool, out: IO[str]
) -> bool:
    group_id = description.group_id
    if not offsets:
        print(f"\nShare group '{group_id}' has no offset information.", file=out)
        return True
    if verbose:
        headers = ["GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG"]
        widths = [NAME_WIDTH_MIN, NAME_WIDTH_MIN, 10, 13, 13]
    else:
        headers = ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"]
        widths = [NAME_WIDTH_MIN, NAME_WIDTH_MIN, 10, 13]
    rows = []
    for o in offsets:
        row = [group_id, o.topic, str(o.partition)]
        if verbose:
            row.append(_cell(o.leader_epoch))
        row += [_cell(o.start_offset), _cell(o.lag)]
        rows.append(row)
    print_table(out, headers, rows, widths)
    return True


def _cell(value: int | None) -> str:
    return MISSING if value is None else str(value)


def _print_members(description: GroupDescription, verbose: bool, out: IO[str]) -> bool:
    if _empty_or_dead(description):
        return False
    if not description.members:
        return True
    if verbose:
        headers = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "MEMBER-EPOCH"]
        widths = [NAME_WIDTH_MIN] * 4 + [12, 13]
    else:
        headers = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
        widths = [NAME_WIDTH_MIN] * 4 + [12]
    headers.append("ASSIGNMENT")
    rows = []
    for m in sorted(description.members, key=lambda m: m.member_id):
        row = [description.group_id, m.member_id, m.host, m.client_id, str(m.partition_count)]
        if verbose:
            row.append(str(m.member_epoch))
        row.append(assignment_text(m.assignment))
        rows.append(row)
    print_table(out, headers, rows, widths)
    return True


def _print_state(description: GroupDescription, verbose: bool, out: IO[str]) -> bool:
    if _empty_or_dead(description):
        return False
    node = description.coordinator
    coordinator = f"{node.host}:{node.port}  ({node.node_id})"
    headers = ["GROUP", "COORDINATOR (ID)", "STATE"]
    row = [description.group_id, coordinator, description.state]
    widths = [NAME_WIDTH_MIN, 25, 15]
    if verbose:
        headers += ["GROUP-EPOCH", "ASSIGNMENT-EPOCH"]
        row += [str(description.group_epoch), str(description.assignment_epoch)]
        widths += [12, 17]
    headers.append("#MEMBERS")
    row.append(str(len(description.members)))
    print_table(out, headers, [row], widths)
    return True


def _delete(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    listed = {g.group_id: g for g in list_share_groups(client)}
    targets = list(dict.fromkeys(args.group)) if args.group else sorted(listed)
    deleted: list[str] = []
    failed: dict[str, str] = {}
    for group_id in targets:
        group = listed.get(group_id)
        if group is None:
            failed[group_id] = f"Group '{group_id}' does not exist or is not a share group."
        elif group.state == "Dead":
            failed[group_id] = f"Share group '{group_id}' group state is DEAD."
        elif group.state != "Empty":
            failed[group_id] = f"Share group '{group_id}' is not EMPTY. (NON_EMPTY_GROUP)"
        else:
            error = delete_group(client, group_id)
            if error is None:
                deleted.append(group_id)
            else:
                failed[group_id] = str(error)
    quoted = ", ".join(f"'{g}'" for g in deleted)
    if not failed:
        print(f"Deletion of requested share groups ({quoted}) was successful.", file=out)
        return 0
    print("Error: Deletion of some share groups failed:", file=sys.stderr)
    for group_id, reason in failed.items():
        print(f"* Group '{group_id}' could not be deleted due to: {reason}", file=sys.stderr)
    if deleted:
        print(f"\nThese share groups were deleted successfully: {quoted}", file=out)
    return 1


def _delete_offsets(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    group_id = args.group[0]
    topics = list(dict.fromkeys(args.topic))
    try:
        results = delete_offsets(client, group_id, topics)
    except KafkaError as exc:
        raise ToolFailed(_group_error(group_id, exc)) from None
    rows = []
    status = 0
    for topic in sorted(topics):
        error = results.get(topic, KafkaError(-1, "the broker sent no result for this topic"))
        rows.append((topic, "Successful" if error is None else f"Error: {error}"))
        status = status if error is None else 1
    print_table(out, ("TOPIC", "STATUS"), rows, (NAME_WIDTH_MIN,))
    return status


def _group_error(group_id: str, exc: KafkaError) -> str:
    if exc.code == ErrorCode.group_id_not_found:
        return f"Share group '{group_id}' does not exist."
    if exc.code == ErrorCode.non_empty_group:
        return f"Share group '{group_id}' is not empty."
    return str(exc)


def _reset(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    group_id = args.group[0]
    try:
        state: str | None = describe_group(client, group_id).state
    except KafkaError as exc:
        if exc.code != ErrorCode.group_id_not_found:
            raise
        state = None
    if state not in (None, "Empty", "Dead"):
        raise ToolFailed(f"Share group '{group_id}' is not empty.")
    partitions = _partitions_to_reset(client, args.reset_scope, group_id, known=state is not None)
    if not partitions:
        print(f"\nShare group '{group_id}' has no offset information.", file=out)
        return 0
    offsets = new_offsets(client, args, partitions)
    if args.execute:
        try:
            alter_offsets(client, group_id, offsets)
        except KafkaError as exc:
            raise ToolFailed(_group_error(group_id, exc)) from None
    rows = [(group_id, t, str(p), str(offsets[(t, p)])) for t, p in sorted(offsets)]
    print_table(out, ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"), rows, (15, 15, 10))
    return 0


def _partitions_to_reset(
    client: Client,
    scope: dict[str, tuple[int, ...] | None] | None,
    group_id: str,
    *,
    known: bool,
) -> list[TopicPartition]:
    """The named partitions, or every partition the group has state for; each must
    exist (Kafka's checkAllTopicPartitionsValid)."""
    if scope is not None:
        return expand_partitions(client, scope)
    if not known:
        raise ToolFailed(
            f"Share group '{group_id}' does not exist: name the partitions to reset with --topic"
        )
    wanted = sorted({(o.topic, o.partition) for o in describe_offsets(client, group_id)})
    return expand_partitions(client, {}, wanted)
