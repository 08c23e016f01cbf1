"""`shoal consumer-groups`: list, describe, reset and delete consumer groups.

Mirrors Kafka's kafka-consumer-groups.sh (options, messages, columns):

  --list [--state [S,...]] [--type [T,...]]     GROUP [TYPE] [STATE]
  --describe (--group G ... | --all-groups)
      [--offsets]  GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG
                   CONSUMER-ID HOST CLIENT-ID (the default)
      --members    GROUP CONSUMER-ID [GROUP-INSTANCE-ID] HOST CLIENT-ID #PARTITIONS
                   [CURRENT-EPOCH CURRENT-ASSIGNMENT TARGET-EPOCH TARGET-ASSIGNMENT]
      --state      GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE
                   [GROUP-EPOCH TARGET-ASSIGNMENT-EPOCH] #MEMBERS
      (--verbose adds the last bracketed columns; GROUP-INSTANCE-ID shows when a
      member has one; epochs are "-" for a classic group)
  --reset-offsets (--group G ... | --all-groups) (--topic T[:P,P...] ... | --all-topics)
      (--to-earliest | --to-latest | --to-current | --to-datetime YYYY-MM-DDTHH:mm:SS.sss |
       --by-duration PnDTnHnMnS | --to-offset N | --shift-by N | --from-file CSV)
      [--dry-run | --execute] [--export]        GROUP TOPIC PARTITION NEW-OFFSET
  --delete (--group G ... | --all-groups)
  --delete-offsets --group G --topic T[:P,P...] ...   TOPIC PARTITION STATUS

A reset plans the new committed offsets (ListOffsets; --to-offset, --shift-by and
--from-file are clamped to the log's range) and commits them only with --execute;
it is refused while the group has members. --all-topics covers every partition the
group has committed offsets for. --to-current keeps each committed offset and sets
a partition without one to the log end (Kafka's resetToCurrent).

--export prints the plan as CSV instead of the table, as Kafka does: `topic,
partition,offset` lines when one --group is named, `group,topic,partition,offset`
lines otherwise, then an empty line. --from-file reads either form back (a file of
the first form resets the one --group named; with the second, a group the file does
not name gets "No reset plan" and is left alone).

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
    committed_offsets,
    delete_offsets,
    describe_consumer_group,
    list_consumer_groups,
)
from shoal.cli.consumer_groups_options import validate
from shoal.cli.group_tool import (
    add_group_arguments,
    group_error,
    group_ids,
    plan_rows,
    print_deletion,
    print_reset_plan,
    print_statuses,
    report_group_state,
    run_group_command,
)
from shoal.cli.java_order import hash_map_order
from shoal.cli.kafka_exceptions import exception_text
from shoal.cli.kafka_exceptions import message as kafka_message
from shoal.cli.kafka_options import ToolFailed, add_tool_parser
from shoal.cli.offset_reset import clamped, expand_partitions, new_offsets
from shoal.cli.share_group_admin import delete_group
from shoal.cli.tables import (
    MISSING,
    NAME_WIDTH_MIN,
    assignment_text,
    cell,
    format_table,
    print_table,
)
from shoal.cli.topic_admin import describe_topics, list_offsets
from shoal.client import Client, KafkaError
from shoal.client.errors import ErrorCode
from shoal.client.group_offsets import commit_offsets
from shoal.client.metadata import TopicPartition
from shoal.client.requests import LATEST_TIMESTAMP
from shoal.clock import SystemClock

PROG = "shoal consumer-groups"
KIND = "consumer group"
LIST_GROUP_GAP = 10
"""`--list --state/--type` pads the group column this much past its longest name."""
LIST_STATE_WIDTH = 20
"""`--list`'s TYPE and STATE column width (Kafka's)."""
_INACTIVE = ("Empty", "Dead")
_GROUP_LEVEL_ERRORS = frozenset(
    {
        ErrorCode.invalid_group_id,
        ErrorCode.group_id_not_found,
        ErrorCode.group_authorization_failed,
        ErrorCode.non_empty_group,
    }
)
_PARTITION_LEVEL_ERRORS = frozenset(
    {
        ErrorCode.group_subscribed_to_topic,
        ErrorCode.topic_authorization_failed,
        ErrorCode.unknown_topic_or_partition,
    }
)
"""The errors of a --delete-offsets call Kafka's tool words as the group's, or as
"some partition-level error"."""


def add_parser(commands: Any) -> None:
    parser = add_tool_parser(
        commands,
        "consumer-groups",
        help_text="list, describe, reset and delete consumer groups (kafka-consumer-groups.sh)",
        description=__doc__,
    )
    add_group_arguments(
        parser,
        kind=KIND,
        action_help={
            "--list": "list all consumer groups",
            "--describe": "describe consumer groups, members and offset lag",
            "--delete": "delete consumer groups",
            "--reset-offsets": "reset the committed offsets of a consumer group",
            "--delete-offsets": "delete the committed offsets of a consumer group",
        },
        all_topics_help="reset every committed topic",
    )
    parser.add_argument(
        "--type",
        nargs="?",
        const="",
        default=None,
        metavar="TYPE[,TYPE...]",
        help="with --list: show or filter by group type (classic, consumer)",
    )
    parser.add_argument(
        "--by-duration", metavar="PnDTnHnMnS", help="reset to the first record this long ago"
    )
    parser.add_argument("--shift-by", type=int, metavar="N", help="move the committed offset by N")
    parser.add_argument(
        "--to-current", action="store_true", help="reset to the committed offset (else log end)"
    )
    parser.add_argument("--from-file", metavar="CSV", help="a plan as --export writes it")
    parser.add_argument("--export", action="store_true", help="print the reset plan as CSV")
    parser.set_defaults(run=run, parser=parser)


def run(args: argparse.Namespace, *, out: IO[str] | None = None) -> int:
    return run_group_command(
        args,
        out=out,
        validate=validate,
        actions={
            "list": _list,
            "describe": _describe,
            "delete": _delete,
            "reset-offsets": _reset,
            "delete-offsets": _delete_offsets,
        },
    )


def _list(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    listed = {
        g.group_id: g for g in list_consumer_groups(client, args.type_filter, args.state_filter)
    }
    # in the order of Kafka's Admin client's HashMap of the listings (java_order.py)
    groups = [listed[group_id] for group_id in hash_map_order(listed)]
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
    # Kafka's printGroupInfo: the names' column 10 wider than the longest (at least
    # NAME_WIDTH_MIN), then TYPE and STATE 20 wide, the last one padded too
    group_width = max([NAME_WIDTH_MIN, *(len(g.group_id) for g in groups)]) + LIST_GROUP_GAP
    widths = (group_width, LIST_STATE_WIDTH, LIST_STATE_WIDTH)
    for line in format_table(headers, rows, min_widths=widths, pad_last=True):
        print(line, file=out)
    return 0


def _all_group_ids(client: Client) -> list[str]:
    return [g.group_id for g in list_consumer_groups(client)]


def _describe(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    status = 0
    for group_id in group_ids(args, lambda: _all_group_ids(client)):
        description = describe_consumer_group(client, group_id)
        if report_group_state(KIND, group_id, description.state):
            status = 1
            continue
        if args.members:
            _print_members(description, args.verbose, out)
        elif args.state is not None:
            _print_state(description, args.verbose, out)
        else:
            _print_offsets(client, description, out)
    return status


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
                cell(current),
                cell(end),
                cell(lag),
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
    """Kafka 4.2's members table: GROUP-INSTANCE-ID only when a member has one; with
    --verbose each member's epoch and assignment and the group's target (epochs
    MISSING for a classic group, whose members have none). An Empty group prints
    the header alone."""
    members = sorted(description.members, key=lambda m: m.member_id)
    with_instance = any(m.group_instance_id for m in members)
    headers = ["GROUP", "CONSUMER-ID"] + (["GROUP-INSTANCE-ID"] if with_instance else [])
    headers += ["HOST", "CLIENT-ID", "#PARTITIONS"]
    widths = [NAME_WIDTH_MIN] * len(headers)
    if verbose:
        headers += ["CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]
        widths += [15, 20, 15, 20]
    rows = []
    for m in members:
        row = [description.group_id, m.member_id]
        if with_instance:
            row.append(m.group_instance_id or MISSING)
        row += [m.host, m.client_id, str(m.partition_count)]
        if verbose:
            target = None if m.target is None else description.assignment_epoch
            row += [
                cell(m.member_epoch),
                assignment_text(m.assignment) or MISSING,
                cell(target),
                assignment_text(m.target or {}) or MISSING,
            ]
        rows.append(row)
    # Kafka pads every column, the last too, and ends the short form with a blank
    print_table(out, headers, rows, widths, pad_last=True, end="" if verbose else " ")


def _print_state(description: ConsumerGroupDescription, verbose: bool, out: IO[str]) -> None:
    """Kafka 4.2's state table; --verbose adds the group and target-assignment
    epochs (MISSING for a classic group)."""
    node = description.coordinator
    headers = ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE"]
    row = [
        description.group_id,
        f"{node.host}:{node.port}  ({node.node_id})",
        description.assignment_strategy or MISSING,
        description.state,
    ]
    widths = [NAME_WIDTH_MIN, 25, 20, 20]
    if verbose:
        headers += ["GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH"]
        row += [cell(description.group_epoch), cell(description.assignment_epoch)]
        widths += [15, 25]
    print_table(out, [*headers, "#MEMBERS"], [[*row, str(len(description.members))]], widths)


def _delete(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    deleted: list[str] = []
    failed: dict[str, str] = {}
    for group_id in group_ids(args, lambda: _all_group_ids(client)):
        error = delete_group(client, group_id)
        if error is None:
            deleted.append(group_id)
        elif error.code == ErrorCode.group_id_not_found:
            failed[group_id] = f"Group '{group_id}' does not exist. (GROUP_ID_NOT_FOUND)"
        elif error.code == ErrorCode.non_empty_group:
            failed[group_id] = f"Group '{group_id}' is not empty. (NON_EMPTY_GROUP)"
        else:
            failed[group_id] = str(error)
    return print_deletion(out, KIND, deleted, failed)


def _delete_offsets(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    """Kafka 4.2's deleteOffsets: a topic given with partitions is asked as given, one
    without them is described first (an unknown one gets a row of its own, "-" for the
    partition, and is not asked). The verdict line comes from the call's error (the
    group's, else a partition's), then every row, sorted as Kafka sorts them (by topic
    and partition written together). Kafka exits 0 even when it reports errors; Shoal
    exits 1 when any row or the call failed, so that scripts can tell."""
    group_id = args.group[0]
    rows: dict[TopicPartition, KafkaError | None] = {}
    whole = [t for t, partitions in args.delete_scope.items() if partitions is None]
    found, unknown = describe_topics(client, whole) if whole else ({}, {})
    asked: list[TopicPartition] = []
    for topic, partitions in args.delete_scope.items():
        if topic in unknown:
            rows[(topic, -1)] = unknown[topic]
        else:
            every = sorted(found[topic].partitions) if partitions is None else partitions
            asked += [(topic, p) for p in every]
    call_error: KafkaError | None = None
    if asked:
        try:
            results = delete_offsets(client, group_id, asked)
        except KafkaError as exc:
            results, call_error = dict.fromkeys(asked, exc), exc
        missing = KafkaError(ErrorCode.unknown_server_error, "the broker sent no result")
        rows.update({tp: results.get(tp, missing) for tp in asked})
        failed = [rows[tp] for tp in sorted(asked) if rows[tp] is not None]
        call_error = call_error or (failed[0] if failed else None)
    print(_delete_offsets_verdict(group_id, call_error), file=out)
    ordered = sorted(rows.items(), key=lambda item: f"{item[0][0]}{item[0][1]}")
    table = [
        ((t, MISSING if p < 0 else str(p)), None if e is None else exception_text(e))
        for (t, p), e in ordered
    ]
    topic_width = max([NAME_WIDTH_MIN, *(len(t) for t, _ in rows)])
    every_ok = print_statuses(
        out, ("TOPIC", "PARTITION", "STATUS"), table, (topic_width, 10, 15), pad_last=True
    )
    return 0 if every_ok and call_error is None else 1


def _delete_offsets_verdict(group_id: str, error: KafkaError | None) -> str:
    """The line Kafka's tool prints before the table, picked by the call's error."""
    if error is None:
        return f"Request succeeded for deleting offsets from group {group_id}."
    if error.code in _GROUP_LEVEL_ERRORS:
        return f"\nError: {kafka_message(error)}"
    if error.code in _PARTITION_LEVEL_ERRORS:
        return "\nError: Encountered some partition-level error, see the follow-up details."
    return f"\nError: Encountered some unknown error: {error.name}"


def _reset(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    """Plan (and with --execute commit) each group's reset; a group with members is
    refused with Kafka's message and the others go on (exit 1 if any was refused)."""
    plans: dict[str, dict[TopicPartition, int]] = {}
    refused = False
    for group_id in group_ids(args, lambda: _all_group_ids(client)):
        state = describe_consumer_group(client, group_id).state
        if state not in _INACTIVE:
            print(
                f"Error: Assignments can only be reset if the group '{group_id}' is inactive, "
                f"but the current state is {state}.",
                file=sys.stderr,
            )
            refused = True
            continue
        offsets = _plan(client, args, group_id)
        if args.execute and offsets:
            try:
                commit_offsets(client, group_id, offsets)
            except KafkaError as exc:
                raise ToolFailed(group_error(KIND, group_id, exc)) from None
        plans[group_id] = offsets
    if args.export:
        print(_csv(plans, with_group=args.all_groups or len(set(args.group)) != 1), file=out)
    elif plans or not refused:
        print_reset_plan(out, plan_rows(plans))
    return 1 if refused else 0


def _csv(plans: dict[str, dict[TopicPartition, int]], *, with_group: bool) -> str:
    """Kafka's exportOffsetsToCsv: a line a partition, each ending in a newline, in
    the order of the table (`plan_rows`)."""
    return "".join(
        (f"{g}," if with_group else "") + f"{t},{p},{o}\n" for g, t, p, o in plan_rows(plans)
    )


def _plan(client: Client, args: argparse.Namespace, group_id: str) -> dict[TopicPartition, int]:
    if args.reset_file is not None:
        return _plan_from_file(client, args, group_id)
    committed = committed_offsets(client, group_id)
    if args.reset_scope is None:
        partitions = sorted(committed)
    else:
        partitions = expand_partitions(client, args.reset_scope)
    if not partitions:
        return {}
    if args.to_current:
        uncommitted = [tp for tp in partitions if tp not in committed]
        ends = list_offsets(client, uncommitted, LATEST_TIMESTAMP) if uncommitted else {}
        return {tp: committed[tp] if tp in committed else ends[tp] for tp in partitions}
    if args.shift_by is not None:
        ends = list_offsets(client, partitions, LATEST_TIMESTAMP)
        return clamped(
            client, {tp: committed.get(tp, ends[tp]) + int(args.shift_by) for tp in partitions}
        )
    if args.reset_duration_ms is not None:
        args.reset_timestamp_ms = SystemClock().wall_ms() - int(args.reset_duration_ms)
    return new_offsets(client, args, partitions)


def _plan_from_file(
    client: Client, args: argparse.Namespace, group_id: str
) -> dict[TopicPartition, int]:
    """The group's lines of the --from-file plan (the group-less lines when the file
    has no group column), within --topic if given, clamped to the logs."""
    plan = args.reset_file.get(group_id, args.reset_file.get(None))
    if plan is None:
        print(f"Error: No reset plan for group {group_id} found", file=sys.stderr)
        return {}
    if args.reset_scope is not None:
        keep = set(expand_partitions(client, args.reset_scope))
        plan = {tp: o for tp, o in plan.items() if tp in keep}
    return clamped(client, plan) if plan else {}
