"""The command line of `shoal share-groups`: Kafka's ShareGroupCommandOptions checks,
worded as kafka-share-groups.sh words them. What it shares with `shoal
consumer-groups` (most checks, --state, --topic and --to-datetime parsing) is
`group_options`'.

`--browse` (Shoal's own action, no Kafka tool has it) takes exactly one --group and
one --topic (a plain name), and optionally --partition P and --max N (>= 0); those
two only with --browse.

`validate(args)` raises `UsageError` for a bad command line and stores what it parsed
on `args`: `state_filter` (--list), `reset_scope` ({topic: partitions or None for all},
or None for every partition with state) and `reset_timestamp_ms` (--reset-offsets).

Kafka 4.2's kafka-share-groups.sh has neither --export nor --to-current (nor
--shift-by, --by-duration, --from-file); neither has this tool.
"""

from __future__ import annotations

import argparse

from shoal import limits
from shoal.cli.group_options import (
    check_action,
    check_execute_mode,
    check_scenarios,
    one_group,
    parse_list,
    validate_delete,
    validate_delete_offsets,
    validate_describe,
)
from shoal.cli.kafka_options import UsageError, dest, opt, present

NOUN = "share group"
PAUSE_ACTIONS = ("pause", "resume")
"""Shoal's own actions (paused delivery); not in kafka-share-groups.sh."""
BROWSE_ONLY = ("partition", "max")
SHARE_GROUP_STATES = ("Empty", "Stable", "Dead")
RESET_SCENARIOS = ("to-datetime", "to-earliest", "to-latest", "to-offset")


def validate(args: argparse.Namespace) -> None:
    """Kafka's ShareGroupCommandOptions.checkArgs, plus parsing of --state, --topic
    and --to-datetime (results stored on `args`); Shoal's own --browse, --pause and
    --resume."""
    action = check_action(
        args, reset_only=RESET_SCENARIOS, extra_actions=("browse", *PAUSE_ACTIONS)
    )
    for name in BROWSE_ONLY:
        if present(args, dest(name)) and action != "browse":
            raise UsageError(f"Option {opt(name)} can only be used with {opt('browse')}")
    {
        "list": _validate_list,
        "describe": validate_describe,
        "delete": validate_delete,
        "reset-offsets": _validate_reset,
        "delete-offsets": _validate_delete_offsets,
        "browse": _validate_browse,
        "pause": _validate_pause,
        "resume": _validate_pause,
    }[action](args)


def _validate_list(args: argparse.Namespace) -> None:
    args.state_filter = parse_list(args.state, SHARE_GROUP_STATES, "state") if args.state else ()


def _validate_delete_offsets(args: argparse.Namespace) -> None:
    validate_delete_offsets(args, noun=NOUN)


def _validate_reset(args: argparse.Namespace) -> None:
    check_execute_mode(args)
    if not args.group:
        raise UsageError(f"Option {opt('reset-offsets')} takes the option: {opt('group')}")
    one_group(args, "reset-offsets", noun=NOUN)
    check_scenarios(args, RESET_SCENARIOS)


def _validate_browse(args: argparse.Namespace) -> None:
    if not args.group or not args.topic:
        raise UsageError(
            f"Option {opt('browse')} takes the options: {opt('group')}, {opt('topic')}"
        )
    one_group(args, "browse", noun=NOUN)
    if len(args.topic) != 1 or ":" in args.topic[0]:
        raise UsageError(
            f"Option {opt('browse')} takes one {opt('topic')} (a name; "
            f"choose a partition with {opt('partition')})"
        )
    if args.partition is not None and args.partition < 0:
        raise UsageError(f"Option {opt('partition')} must be a partition number (0 or more)")
    if args.max is None:
        args.max = limits.SHARE_BROWSE_ENTRIES_DEFAULT
    elif args.max < 0:
        raise UsageError(f"Option {opt('max')} must be 0 or more")


def _validate_pause(args: argparse.Namespace) -> None:
    """--pause or --resume: --group G (repeatable), no --topic or --all-groups."""
    action = "pause" if args.pause else "resume"
    for name in ("all-groups", "topic"):
        if present(args, dest(name)):
            raise UsageError(f"Option {opt(action)} can't be used with option {opt(name)}")
    if not args.group:
        raise UsageError(f"Option {opt(action)} takes the option: {opt('group')}")
