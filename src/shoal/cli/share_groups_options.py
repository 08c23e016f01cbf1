"""The command line of `shoal share-groups`: Kafka's ShareGroupCommandOptions checks,
worded as kafka-share-groups.sh words them, and the parsing of --state, --topic and
--to-datetime.

`validate(args)` raises `UsageError` for a bad command line and stores what it parsed
on `args`: `state_filter` (--list), `reset_scope` ({topic: partitions or None for all},
or None for every partition with state) and `reset_timestamp_ms` (--reset-offsets).
"""

from __future__ import annotations

import argparse
import datetime
import re
from collections.abc import Sequence

from shoal.cli.kafka_options import UsageError, check_bootstrap, check_invalid, opt, present

ACTIONS = ("list", "describe", "delete", "reset-offsets", "delete-offsets")
SHARE_GROUP_STATES = ("Empty", "Stable", "Dead")
RESET_SCENARIOS = ("to-datetime", "to-earliest", "to-latest", "to-offset")
_RESET_ONLY = ("dry-run", "execute", "all-topics", *RESET_SCENARIOS)
_DESCRIBE_ONLY = ("members", "offsets", "verbose")
_DATETIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,3}))?"
    r"(Z|[+-]\d{2}(?::?\d{2})?)?"
)


def validate(args: argparse.Namespace) -> None:
    """Kafka's ShareGroupCommandOptions.checkArgs, plus parsing of --state, --topic
    and --to-datetime (results stored on `args`)."""
    check_bootstrap(args)
    chosen = [a for a in ACTIONS if present(args, _dest(a))]
    if len(chosen) != 1:
        raise UsageError(
            "Command must include exactly one action: "
            "--list, --describe, --delete, --reset-offsets, --delete-offsets."
        )
    action = chosen[0]
    _check_available(args, action)
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


def _dest(name: str) -> str:
    return name.replace("-", "_")


def _check_available(args: argparse.Namespace, action: str) -> None:
    for name in _DESCRIBE_ONLY:
        if present(args, _dest(name)) and action != "describe":
            raise UsageError(f"Option {opt(name)} can only be used with {opt('describe')}")
    if present(args, "state") and action not in ("describe", "list"):
        raise UsageError(
            f"Option {opt('state')} can only be used with {opt('describe')} or {opt('list')}"
        )
    for name in _RESET_ONLY:
        if present(args, _dest(name)) and action != "reset-offsets":
            raise UsageError(f"Option {opt(name)} can only be used with {opt('reset-offsets')}")


def _validate_list(args: argparse.Namespace) -> None:
    args.state_filter = parse_states(args.state) if args.state else ()


def parse_states(text: str) -> tuple[str, ...]:
    """A comma-separated state list, case-insensitive, as Kafka's names."""
    by_lower = {s.lower(): s for s in SHARE_GROUP_STATES}
    states = [by_lower.get(part.strip().lower()) for part in text.split(",")]
    if any(s is None for s in states):
        raise UsageError(
            f"Invalid state list '{text}'. Valid states are: {', '.join(SHARE_GROUP_STATES)}"
        )
    return tuple(dict.fromkeys(s for s in states if s is not None))


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


def _validate_reset(args: argparse.Namespace) -> None:
    if args.dry_run and args.execute:
        raise UsageError(
            f"Option {opt('reset-offsets')} only accepts one of "
            f"{opt('execute')} and {opt('dry-run')}"
        )
    if not args.group:
        raise UsageError(f"Option {opt('reset-offsets')} takes the option: {opt('group')}")
    _one_group(args, "reset-offsets")
    scenarios = [s for s in RESET_SCENARIOS if present(args, _dest(s))]
    if not scenarios:
        raise UsageError(
            f"Option {opt('reset-offsets')} requires one of the following scenarios: "
            + ", ".join(opt(s) for s in RESET_SCENARIOS)
        )
    for scenario in scenarios:
        check_invalid(args, scenario, [s for s in RESET_SCENARIOS if s != scenario])
    check_invalid(args, "all-topics", ["topic"])
    args.reset_scope = parse_topic_specs(args.topic) if args.topic else None
    args.reset_timestamp_ms = (
        parse_datetime_ms(args.to_datetime) if args.to_datetime is not None else None
    )


def _one_group(args: argparse.Namespace, action: str) -> None:
    if len(set(args.group)) > 1:
        raise UsageError(f"Option {opt(action)} takes one share group at a time, got {args.group}")


def parse_topic_specs(specs: Sequence[str]) -> dict[str, tuple[int, ...] | None]:
    """`--topic` values: `T` (every partition, None) or `T:0,1,2`."""
    out: dict[str, tuple[int, ...] | None] = {}
    for spec in specs:
        if ":" not in spec:
            if not spec:
                raise UsageError("Invalid topic arg '': expected a topic name")
            out[spec] = None
            continue
        parts = spec.split(":")
        if len(parts) != 2 or not parts[0]:
            raise UsageError(f"Invalid topic arg '{spec}', expected topic name and partitions")
        topic, listed = parts
        partitions = []
        for item in listed.split(","):
            if not item.strip().isdigit():
                raise UsageError(f"Invalid partition '{item}' specified in topic arg '{spec}'")
            partitions.append(int(item))
        previous = out.get(topic, ())
        if previous is None:
            continue  # the whole topic was asked for already
        out[topic] = tuple(sorted({*previous, *partitions}))
    return out


def parse_datetime_ms(text: str) -> int:
    """`YYYY-MM-DDTHH:mm:SS[.sss][zone]` as epoch milliseconds (UTC without a zone)."""
    match = _DATETIME.fullmatch(text)
    if match is None:
        raise UsageError(
            f"Error parsing timestamp '{text}': expected YYYY-MM-DDTHH:mm:SS.sss with an "
            "optional zone (Z, +hh:mm, +hhmm or +hh)"
        )
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    millis = int((match.group(7) or "0").ljust(3, "0"))
    try:
        moment = datetime.datetime(
            year, month, day, hour, minute, second, millis * 1000, tzinfo=_zone(match.group(8))
        )
    except ValueError as exc:
        raise UsageError(f"Error parsing timestamp '{text}': {exc}") from None
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    return (moment - epoch) // datetime.timedelta(milliseconds=1)


def _zone(text: str | None) -> datetime.tzinfo:
    if text is None or text == "Z":
        return datetime.UTC
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:] or "0")
    if hours > 18 or minutes > 59:
        raise UsageError(f"Error parsing timestamp: invalid zone offset '{text}'")
    return datetime.timezone(sign * datetime.timedelta(hours=hours, minutes=minutes))
