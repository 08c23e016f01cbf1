"""`shoal share-groups`: list, describe, reset and delete share groups.

Mirrors Kafka's kafka-share-groups.sh (options, messages, columns):

  --list                                        the names, one a line
  --list --state [S,...]                        GROUP STATE (states: Empty, Stable, Dead)
  --describe (--group G ... | --all-groups)
      [--offsets]  GROUP TOPIC PARTITION [LEADER-EPOCH] START-OFFSET LAG (the default)
      --members    GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS [MEMBER-EPOCH] ASSIGNMENT
      --state      GROUP COORDINATOR (ID) STATE [GROUP-EPOCH ASSIGNMENT-EPOCH] #MEMBERS
      the offsets view of a group with a dead-letter queue topic (KIP-1191) ends with
      a line naming it and the DLQ records written for the group (Shoal addition)
      (--verbose adds the bracketed columns)
  --reset-offsets --group G [--topic T[:P,P...] ... | --all-topics]
      (--to-earliest | --to-latest | --to-datetime YYYY-MM-DDTHH:mm:SS.sss | --to-offset N)
      [--dry-run | --execute]                   GROUP TOPIC PARTITION NEW-OFFSET
  --delete (--group G ... | --all-groups)
  --delete-offsets --group G --topic T ...      TOPIC STATUS
  --browse --group G --topic T [--partition P] [--max N]   (Shoal's own: no Kafka tool has it)
      TOPIC PARTITION FIRST-OFFSET LAST-OFFSET STATE DELIVERY-COUNT HOLDER LOCK-EXPIRES-MS
      REDELIVERY-IN-MS KEY-BLOCKED DELIVER-AT: the in-flight records with their state,
      lock holder and what holds them back, read without acquiring anything
      (cli/share_group_browse.py)
  --pause --group G ... / --resume --group G ...   (Shoal's own: stop and restart
      delivery; the group config shoal.share.delivery.paused; --describe notes it)

--describe also notes Shoal's key-ordered delivery (shoal.share.delivery.order=key)
and scheduled delivery (shoal.share.delivery.delay.max.ms > 0) when the group has them
on, and its offsets view then adds, per share-partition, the keys blocked, the records
they hold back and the records waiting for their time (cli/share_group_holds.py).

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
import logging
import sys
from typing import IO, Any

from shoal import limits
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
from shoal.cli.kafka_exceptions import message as kafka_message
from shoal.cli.kafka_options import ToolFailed, add_tool_parser
from shoal.cli.offset_reset import expand_partitions, new_offsets
from shoal.cli.share_group_admin import (
    GroupDescription,
    PartitionOffset,
    alter_offsets,
    delete_group,
    delete_offsets,
    delivery_settings,
    describe_group,
    describe_offsets,
    list_share_groups,
    set_paused,
)
from shoal.cli.share_group_browse import run_browse
from shoal.cli.share_group_dlq import dlq_summary
from shoal.cli.share_group_holds import extensions_on, notes, print_holds
from shoal.cli.share_groups_options import validate
from shoal.cli.tables import NAME_WIDTH_MIN, assignment_text, cell, format_table, print_table
from shoal.client import Client, KafkaError
from shoal.client.errors import ErrorCode
from shoal.client.metadata import TopicPartition
from shoal.progress import Progress

PROG = "shoal share-groups"


KIND = "share group"
RESET_PARTITIONS_PER_REQUEST = 50
"""`--reset-offsets --execute` alters this many partitions per request and reports
progress (stderr) when there is more than one request to send."""
log = logging.getLogger(__name__)


def add_parser(commands: Any) -> None:
    parser = add_tool_parser(
        commands,
        "share-groups",
        help_text="list, describe, reset and delete share groups (kafka-share-groups.sh)",
        description=__doc__,
    )
    add_group_arguments(
        parser,
        kind=KIND,
        action_help={
            "--list": "list all share groups",
            "--describe": "describe share groups, members and offset information",
            "--delete": "delete share groups",
            "--reset-offsets": "reset the start offsets of one share group",
            "--delete-offsets": "delete the offset information of one share group",
            "--browse": "show the in-flight records of one share group's topic, their "
            "state, delivery count and lock holder, without acquiring them",
            "--pause": "stop delivering records to the share groups' members (Shoal's own)",
            "--resume": "deliver records again after --pause",
        },
        all_topics_help="reset every topic with state",
    )
    parser.add_argument(
        "--partition", type=int, metavar="P", help="with --browse: only this partition"
    )
    parser.add_argument(
        "--max",
        type=int,
        metavar="N",
        help="with --browse: at most N in-flight entries per partition "
        f"(default {limits.SHARE_BROWSE_ENTRIES_DEFAULT})",
    )
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
            "browse": run_browse,
            "pause": _pause_or_resume,
            "resume": _pause_or_resume,
        },
    )


# ---- the actions


def _list(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    """The names alone, or with --state a GROUP STATE table, in the order of Kafka's
    Admin client's HashMap of the listings (java_order.py), as Kafka's tool prints them."""
    listed = {g.group_id: g for g in list_share_groups(client, args.state_filter)}
    groups = [listed[group_id] for group_id in hash_map_order(listed)]
    if args.state is None:
        for g in groups:
            print(g.group_id, file=out)
        return 0
    rows = [(g.group_id, g.state) for g in groups]
    for line in format_table(("GROUP", "STATE"), rows, min_widths=(NAME_WIDTH_MIN,)):
        print(line, file=out)
    return 0


def _describe(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    listed = lambda: [g.group_id for g in list_share_groups(client)]  # noqa: E731
    status = 0
    for group_id in sorted(group_ids(args, listed)):
        try:
            description = describe_group(client, group_id)
        except KafkaError as exc:
            if exc.code != ErrorCode.group_id_not_found:
                raise
            report_group_state(KIND, group_id, "Dead")
            status = 1
            continue
        offsets = None
        if args.members:
            ok = _print_members(description, args.verbose, out)
        elif args.state is not None:
            ok = _print_state(description, args.verbose, out)
        else:
            offsets = describe_offsets(client, group_id)
            ok = _print_offsets(description, offsets, args.verbose, out)
            _print_dlq(client, group_id, out)
        settings = delivery_settings(client, group_id)
        if settings is not None and settings.paused:
            print(f"\nShare group '{group_id}' is paused: no records are delivered.", file=out)
        if settings is not None and extensions_on(settings):
            for line in notes(group_id, settings):
                print(f"\n{line}", file=out)
            if offsets:
                print_holds(client, group_id, offsets, out)
        status = status if ok else 1
    return status


def _pause_or_resume(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    """Set (--pause) or delete (--resume) the group config `shoal.share.delivery.paused`
    of each group; members stay, acquisitions stop or restart at once."""
    paused = bool(args.pause)
    for group_id in dict.fromkeys(args.group):
        try:
            set_paused(client, group_id, paused)
        except KafkaError as exc:
            raise ToolFailed(group_error(KIND, group_id, exc)) from None
        word = "paused: its members get no records until --resume" if paused else "resumed"
        print(f"Share group '{group_id}' {word}.", file=out)
    return 0


def _empty_or_dead(description: GroupDescription) -> bool:
    return report_group_state(KIND, description.group_id, description.state)


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
            row.append(cell(o.leader_epoch))
        row += [cell(o.start_offset), cell(o.lag)]
        rows.append(row)
    print_table(out, headers, rows, widths)
    return True


def _print_dlq(client: Client, group_id: str, out: IO[str]) -> None:
    try:
        summary = dlq_summary(client, group_id)
    except KafkaError as exc:  # e.g. no DESCRIBE_CONFIGS on the group: offsets still shown
        log.info("dead-letter queue of share group '%s' not shown: %s", group_id, exc)
        return
    if summary is None:
        return
    if summary.records is None:
        print(
            f"\nShare group '{group_id}' dead-letter queue topic: {summary.topic} (does not exist)",
            file=out,
        )
    else:
        print(
            f"\nShare group '{group_id}' dead-letter queue topic: {summary.topic}, "
            f"{summary.records} DLQ records from this group",
            file=out,
        )


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
    return print_deletion(out, KIND, deleted, failed)


def _delete_offsets(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    """Kafka 4.2's share-group deleteOffsets: a group-level error is printed first
    ("Error: " and its message) and given to every topic; each row's error is its
    message alone. Kafka exits 0 even when it reports errors; Shoal exits 1 when
    any topic or the call failed, so that scripts can tell."""
    group_id = args.group[0]
    topics = list(dict.fromkeys(args.topic))
    call_error: KafkaError | None = None
    try:
        results: dict[str, KafkaError | None] = dict(delete_offsets(client, group_id, topics))
    except KafkaError as exc:
        call_error, results = exc, dict.fromkeys(topics, exc)
        print(f"\nError: {kafka_message(exc)}", file=out)
    missing = KafkaError(ErrorCode.unknown_server_error, "the broker sent no result for this topic")
    table = [
        ((topic,), None if error is None else kafka_message(error))
        for topic, error in ((t, results.get(t, missing)) for t in sorted(topics))
    ]
    every_ok = print_statuses(out, ("TOPIC", "STATUS"), table, (NAME_WIDTH_MIN,))
    return 0 if every_ok and call_error is None else 1


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
        _alter_in_chunks(client, group_id, offsets)
    print_reset_plan(out, plan_rows({group_id: offsets}))
    return 0


def _alter_in_chunks(client: Client, group_id: str, offsets: dict[TopicPartition, int]) -> None:
    """AlterShareGroupOffsets in requests of `RESET_PARTITIONS_PER_REQUEST`, with
    progress on stderr when there is more than one."""
    ordered = sorted(offsets)
    progress = Progress(
        "reset",
        "partitions",
        len(ordered),
        logger=log,
        stream=sys.stderr,
        quiet_below=RESET_PARTITIONS_PER_REQUEST + 1,
    )
    for start in range(0, len(ordered), RESET_PARTITIONS_PER_REQUEST):
        chunk = ordered[start : start + RESET_PARTITIONS_PER_REQUEST]
        try:
            alter_offsets(client, group_id, {tp: offsets[tp] for tp in chunk})
        except KafkaError as exc:
            progress.finish()
            raise ToolFailed(group_error(KIND, group_id, exc)) from None
        progress.advance(len(chunk))
    progress.finish()


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
