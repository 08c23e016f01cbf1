"""The command line of `shoal consumer-groups`: Kafka's ConsumerGroupCommandOptions
checks, worded as kafka-consumer-groups.sh words them. What it shares with `shoal
share-groups` (most checks, --state, --topic and --to-datetime parsing) is
`group_options`'.

`validate(args)` raises `UsageError` for a bad command line and stores what it parsed
on `args`: `state_filter`, `type_filter` (--list), `reset_scope` ({topic: partitions
or None for all}, or None for every partition with a commit), `reset_timestamp_ms`
(--to-datetime), `reset_duration_ms` (--by-duration) and `reset_file` (--from-file,
see `read_reset_file`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from shoal.cli.group_options import (
    check_action,
    check_execute_mode,
    check_scenarios,
    parse_list,
    parse_topic_specs,
    validate_delete,
    validate_delete_offsets,
    validate_describe,
)
from shoal.cli.kafka_options import COMMAND_CONFIG_BYTES_MAX, UsageError, opt
from shoal.client.metadata import TopicPartition
from shoal.iso_duration import parse_iso_duration_ms

NOUN = "group"
CONSUMER_GROUP_STATES = (
    "PreparingRebalance",
    "CompletingRebalance",
    "Stable",
    "Dead",
    "Empty",
    "Assigning",
    "Reconciling",
)
GROUP_TYPES = ("classic", "consumer")
RESET_SCENARIOS = (
    "to-datetime",
    "by-duration",
    "to-earliest",
    "to-latest",
    "shift-by",
    "from-file",
    "to-current",
    "to-offset",
)
ResetPlan = dict[str | None, dict[TopicPartition, int]]
"""A --from-file plan: offsets by group, under None for lines without a group."""


def validate(args: argparse.Namespace) -> None:
    """Kafka's ConsumerGroupCommandOptions.checkArgs, plus parsing (stored on `args`)."""
    action = check_action(args, reset_only=(*RESET_SCENARIOS, "export"), list_only=("type",))
    {
        "list": _validate_list,
        "describe": validate_describe,
        "delete": validate_delete,
        "reset-offsets": _validate_reset,
        "delete-offsets": _validate_delete_offsets,
    }[action](args)


def _validate_list(args: argparse.Namespace) -> None:
    args.state_filter = parse_list(args.state, CONSUMER_GROUP_STATES, "state") if args.state else ()
    args.type_filter = parse_list(args.type, GROUP_TYPES, "type") if args.type else ()


def _validate_delete_offsets(args: argparse.Namespace) -> None:
    validate_delete_offsets(args, noun=NOUN)
    args.delete_scope = parse_topic_specs(args.topic)


def _validate_reset(args: argparse.Namespace) -> None:
    check_execute_mode(args)
    if not args.group and not args.all_groups:
        raise UsageError(
            f"Option {opt('reset-offsets')} takes one of these options: "
            f"{opt('group')}, {opt('all-groups')}"
        )
    check_scenarios(args, RESET_SCENARIOS)
    if not args.topic and not args.all_topics and not args.from_file:
        raise UsageError(
            f"Option {opt('reset-offsets')} takes the option {opt('topic')} or "
            f"{opt('all-topics')} unless {opt('from-file')} is given"
        )
    args.reset_duration_ms = None
    if args.by_duration is not None:
        try:
            args.reset_duration_ms = parse_iso_duration_ms(args.by_duration)
        except ValueError as exc:
            raise UsageError(f"Error parsing duration '{args.by_duration}': {exc}") from None
    args.reset_file = read_reset_file(args.from_file) if args.from_file is not None else None
    if args.reset_file is not None and None in args.reset_file and len(set(args.group or ())) != 1:
        raise UsageError(
            f"--from-file {args.from_file} has no group column: it resets one {opt('group')}; "
            "a plan for several groups has group,topic,partition,offset lines"
        )


def read_reset_file(path: str) -> ResetPlan:
    """A --from-file CSV as `--export` writes it (Kafka's format): `topic,partition,
    offset` lines for one group, or `group,topic,partition,offset` lines for several;
    one file uses one form."""
    try:
        file = Path(path)
        if file.stat().st_size > COMMAND_CONFIG_BYTES_MAX:
            raise UsageError(f"--from-file {path} is larger than {COMMAND_CONFIG_BYTES_MAX} bytes")
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read --from-file {path}: {exc}") from None
    out: ResetPlan = {}
    width = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        cells = [c.strip() for c in line.split(",")]
        width = width or len(cells)
        shape_ok = len(cells) == width and width in (3, 4)
        group = cells.pop(0) if width == 4 else None
        if not shape_ok or not cells[0] or not cells[1].isdigit() or group == "":
            raise UsageError(
                f"Invalid line {number} in {path}: '{line}' (expected "
                + ("group,topic,partition,offset)" if width == 4 else "topic,partition,offset)")
            )
        try:
            offset = int(cells[2])
        except ValueError:
            raise UsageError(f"Invalid offset '{cells[2]}' on line {number} in {path}") from None
        out.setdefault(group, {})[(cells[0], int(cells[1]))] = offset
    return out
