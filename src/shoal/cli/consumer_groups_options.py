"""The command line of `shoal consumer-groups`: Kafka's ConsumerGroupCommandOptions
checks, worded as kafka-consumer-groups.sh words them. The --topic, --to-datetime
and state parsing is share_groups_options' (one way to do each).

`validate(args)` raises `UsageError` for a bad command line and stores what it parsed
on `args`: `state_filter`, `type_filter` (--list), `reset_scope` ({topic: partitions
or None for all}, or None for every partition with a commit), `reset_timestamp_ms`
(--to-datetime), `reset_duration_ms` (--by-duration) and `reset_file` (--from-file:
{(topic, partition): offset}).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from shoal.cli.kafka_options import (
    COMMAND_CONFIG_BYTES_MAX,
    UsageError,
    check_bootstrap,
    check_invalid,
    opt,
    present,
)
from shoal.cli.share_groups_options import parse_datetime_ms, parse_topic_specs
from shoal.client.metadata import TopicPartition
from shoal.iso_duration import parse_iso_duration_ms

ACTIONS = ("list", "describe", "delete", "reset-offsets", "delete-offsets")
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
    "to-offset",
)
_RESET_ONLY = ("dry-run", "execute", "all-topics", *RESET_SCENARIOS)
_DESCRIBE_ONLY = ("members", "offsets", "verbose")


def _dest(name: str) -> str:
    return name.replace("-", "_")


def validate(args: argparse.Namespace) -> None:
    """Kafka's ConsumerGroupCommandOptions.checkArgs, plus parsing (stored on `args`)."""
    check_bootstrap(args)
    chosen = [a for a in ACTIONS if present(args, _dest(a))]
    if len(chosen) != 1:
        raise UsageError(
            "Command must include exactly one action: "
            "--list, --describe, --delete, --reset-offsets, --delete-offsets."
        )
    action = chosen[0]
    for name in _DESCRIBE_ONLY:
        if present(args, _dest(name)) and action != "describe":
            raise UsageError(f"Option {opt(name)} can only be used with {opt('describe')}")
    if present(args, "state") and action not in ("describe", "list"):
        raise UsageError(
            f"Option {opt('state')} can only be used with {opt('describe')} or {opt('list')}"
        )
    if present(args, "type") and action != "list":
        raise UsageError(f"Option {opt('type')} can only be used with {opt('list')}")
    for name in _RESET_ONLY:
        if present(args, _dest(name)) and action != "reset-offsets":
            raise UsageError(f"Option {opt(name)} can only be used with {opt('reset-offsets')}")
    if args.timeout <= 0:
        raise UsageError(f"Option {opt('timeout')} must be a positive number of milliseconds")
    check_invalid(args, "group", ["all-groups"])
    check_invalid(args, "group", ["list"])
    check_invalid(args, "topic", ["list", "describe"])
    {
        "list": _validate_list,
        "describe": _validate_describe,
        "delete": _validate_delete,
        "reset-offsets": _validate_reset,
        "delete-offsets": _validate_delete_offsets,
    }[action](args)


def parse_list(text: str, valid: tuple[str, ...], what: str) -> tuple[str, ...]:
    """A comma-separated list of Kafka names, case-insensitive."""
    by_lower = {v.lower(): v for v in valid}
    found = [by_lower.get(part.strip().lower()) for part in text.split(",")]
    if any(v is None for v in found):
        raise UsageError(f"Invalid {what} list '{text}'. Valid {what}s are: {', '.join(valid)}")
    return tuple(dict.fromkeys(v for v in found if v is not None))


def _validate_list(args: argparse.Namespace) -> None:
    args.state_filter = parse_list(args.state, CONSUMER_GROUP_STATES, "state") if args.state else ()
    args.type_filter = parse_list(args.type, GROUP_TYPES, "type") if args.type else ()


def _validate_describe(args: argparse.Namespace) -> None:
    if not args.group and not args.all_groups:
        raise UsageError(
            f"Option {opt('describe')} takes one of these options: "
            f"{opt('group')}, {opt('all-groups')}"
        )
    exclusive = [n for n in ("members", "offsets", "state") if present(args, n)]
    if len(exclusive) > 1:
        raise UsageError(
            f"Option {opt('describe')} takes at most one of these options: "
            f"{opt('members')}, {opt('offsets')}, {opt('state')}"
        )
    if args.state:
        raise UsageError(f"Option {opt('describe')} does not take a value for {opt('state')}")


def _validate_delete(args: argparse.Namespace) -> None:
    if not args.group and not args.all_groups:
        raise UsageError(
            f"Option {opt('delete')} takes the options {opt('group')} or {opt('all-groups')}"
        )
    if args.topic:
        raise UsageError(f"Option {opt('delete')} does not take the option: {opt('topic')}")


def _validate_delete_offsets(args: argparse.Namespace) -> None:
    if not args.group or not args.topic:
        raise UsageError(
            f"Option {opt('delete-offsets')} takes the following options: "
            f"{opt('group')}, {opt('topic')}"
        )
    _one_group(args, "delete-offsets")
    args.delete_scope = parse_topic_specs(args.topic)


def _one_group(args: argparse.Namespace, action: str) -> None:
    if len(set(args.group)) > 1:
        raise UsageError(f"Option {opt(action)} takes one group at a time, got {args.group}")


def _validate_reset(args: argparse.Namespace) -> None:
    if args.dry_run and args.execute:
        raise UsageError(
            f"Option {opt('reset-offsets')} only accepts one of "
            f"{opt('execute')} and {opt('dry-run')}"
        )
    if not args.group and not args.all_groups:
        raise UsageError(
            f"Option {opt('reset-offsets')} takes one of these options: "
            f"{opt('group')}, {opt('all-groups')}"
        )
    scenarios = [s for s in RESET_SCENARIOS if present(args, _dest(s))]
    if not scenarios:
        raise UsageError(
            f"Option {opt('reset-offsets')} requires one of the following scenarios: "
            + ", ".join(opt(s) for s in RESET_SCENARIOS)
        )
    for scenario in scenarios:
        check_invalid(args, scenario, [s for s in RESET_SCENARIOS if s != scenario])
    check_invalid(args, "all-topics", ["topic"])
    if not args.topic and not args.all_topics and not args.from_file:
        raise UsageError(
            f"Option {opt('reset-offsets')} takes the option {opt('topic')} or "
            f"{opt('all-topics')} unless {opt('from-file')} is given"
        )
    args.reset_scope = parse_topic_specs(args.topic) if args.topic else None
    args.reset_timestamp_ms = (
        parse_datetime_ms(args.to_datetime) if args.to_datetime is not None else None
    )
    args.reset_duration_ms = None
    if args.by_duration is not None:
        try:
            args.reset_duration_ms = parse_iso_duration_ms(args.by_duration)
        except ValueError as exc:
            raise UsageError(f"Error parsing duration '{args.by_duration}': {exc}") from None
    args.reset_file = read_reset_file(args.from_file) if args.from_file is not None else None


def read_reset_file(path: str) -> dict[TopicPartition, int]:
    """A --from-file CSV: `topic,partition,offset` lines (Kafka's export format; a
    leading group column, as written with several groups, is accepted)."""
    try:
        file = Path(path)
        if file.stat().st_size > COMMAND_CONFIG_BYTES_MAX:
            raise UsageError(f"--from-file {path} is larger than {COMMAND_CONFIG_BYTES_MAX} bytes")
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read --from-file {path}: {exc}") from None
    out: dict[TopicPartition, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == 4:
            cells = cells[1:]
        if len(cells) != 3 or not cells[0] or not cells[1].isdigit():
            raise UsageError(
                f"Invalid line {number} in {path}: '{line}' (expected topic,partition,offset)"
            )
        try:
            offset = int(cells[2])
        except ValueError:
            raise UsageError(f"Invalid offset '{cells[2]}' on line {number} in {path}") from None
        out[(cells[0], int(cells[1]))] = offset
    return out
