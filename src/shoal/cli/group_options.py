"""The command-line checks `shoal share-groups` and `shoal consumer-groups` share:
Kafka's ShareGroupCommandOptions and ConsumerGroupCommandOptions word them alike,
so each is written once here and each tool's options module adds what only it has.

Also the parsing both tools do: a comma-separated list of Kafka names (--state,
--type), `--topic T[:P,P...]` scopes and `--to-datetime` timestamps.
"""

from __future__ import annotations

import argparse
import datetime
import re
from collections.abc import Sequence

from shoal.cli.kafka_options import UsageError, check_bootstrap, check_invalid, dest, opt, present

ACTIONS = ("list", "describe", "delete", "reset-offsets", "delete-offsets")
DESCRIBE_ONLY = ("members", "offsets", "verbose")
RESET_MODES = ("dry-run", "execute", "all-topics")
"""Options only --reset-offsets takes, besides each tool's scenarios."""
_DATETIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,3}))?"
    r"(Z|[+-]\d{2}(?::?\d{2})?)?"
)


def check_action(
    args: argparse.Namespace,
    *,
    reset_only: Sequence[str],
    list_only: Sequence[str] = (),
    extra_actions: Sequence[str] = (),
) -> str:
    """The one action of the command line (one of ACTIONS, or of a tool's
    `extra_actions`), after the checks that do not depend on it: --bootstrap-server,
    options that belong to another action (describe-only, --state, `list_only`,
    `reset_only`), --timeout, and --group with --all-groups, --list; --topic with
    --list, --describe."""
    check_bootstrap(args)
    actions = (*ACTIONS, *extra_actions)
    chosen = [a for a in actions if present(args, dest(a))]
    if len(chosen) != 1:
        raise UsageError(
            "Command must include exactly one action: " + ", ".join(f"--{a}" for a in actions) + "."
        )
    action = chosen[0]
    for name in DESCRIBE_ONLY:
        if present(args, dest(name)) and action != "describe":
            raise UsageError(f"Option {opt(name)} can only be used with {opt('describe')}")
    if present(args, "state") and action not in ("describe", "list"):
        raise UsageError(
            f"Option {opt('state')} can only be used with {opt('describe')} or {opt('list')}"
        )
    for name in list_only:
        if present(args, dest(name)) and action != "list":
            raise UsageError(f"Option {opt(name)} can only be used with {opt('list')}")
    for name in (*RESET_MODES, *reset_only):
        if present(args, dest(name)) and action != "reset-offsets":
            raise UsageError(f"Option {opt(name)} can only be used with {opt('reset-offsets')}")
    if args.timeout <= 0:
        raise UsageError(f"Option {opt('timeout')} must be a positive number of milliseconds")
    check_invalid(args, "group", ["all-groups"])
    check_invalid(args, "group", ["list"])
    check_invalid(args, "topic", ["list", "describe"])
    return action


def validate_describe(args: argparse.Namespace) -> None:
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


def validate_delete(args: argparse.Namespace) -> None:
    if not args.group and not args.all_groups:
        raise UsageError(
            f"Option {opt('delete')} takes the options {opt('group')} or {opt('all-groups')}"
        )
    if args.topic:
        raise UsageError(f"Option {opt('delete')} does not take the option: {opt('topic')}")


def validate_delete_offsets(args: argparse.Namespace, *, noun: str) -> None:
    """--group (one `noun` only) and --topic are required."""
    if not args.group or not args.topic:
        raise UsageError(
            f"Option {opt('delete-offsets')} takes the following options: "
            f"{opt('group')}, {opt('topic')}"
        )
    one_group(args, "delete-offsets", noun=noun)


def one_group(args: argparse.Namespace, action: str, *, noun: str) -> None:
    if len(set(args.group)) > 1:
        raise UsageError(f"Option {opt(action)} takes one {noun} at a time, got {args.group}")


def check_execute_mode(args: argparse.Namespace) -> None:
    if args.dry_run and args.execute:
        raise UsageError(
            f"Option {opt('reset-offsets')} only accepts one of "
            f"{opt('execute')} and {opt('dry-run')}"
        )


def check_scenarios(args: argparse.Namespace, scenarios: Sequence[str]) -> None:
    """Exactly one reset scenario and not both --all-topics and --topic; stores
    `reset_scope` ({topic: partitions or None for all}, or None without --topic) and
    `reset_timestamp_ms` (--to-datetime, else None) on `args`."""
    chosen = [s for s in scenarios if present(args, dest(s))]
    if not chosen:
        raise UsageError(
            f"Option {opt('reset-offsets')} requires one of the following scenarios: "
            + ", ".join(opt(s) for s in scenarios)
        )
    for scenario in chosen:
        check_invalid(args, scenario, [s for s in scenarios if s != scenario])
    check_invalid(args, "all-topics", ["topic"])
    args.reset_scope = parse_topic_specs(args.topic) if args.topic else None
    args.reset_timestamp_ms = (
        parse_datetime_ms(args.to_datetime) if args.to_datetime is not None else None
    )


def parse_list(text: str, valid: Sequence[str], what: str) -> tuple[str, ...]:
    """A comma-separated list of Kafka names (states, types), case-insensitive,
    returned as Kafka spells them."""
    by_lower = {v.lower(): v for v in valid}
    found = [by_lower.get(part.strip().lower()) for part in text.split(",")]
    if any(v is None for v in found):
        raise UsageError(f"Invalid {what} list '{text}'. Valid {what}s are: {', '.join(valid)}")
    return tuple(dict.fromkeys(v for v in found if v is not None))


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
