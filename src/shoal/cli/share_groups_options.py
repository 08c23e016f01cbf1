"""The command line of `shoal share-groups`: Kafka's ShareGroupCommandOptions checks,
worded as kafka-share-groups.sh words them. What it shares with `shoal
consumer-groups` (most checks, --state, --topic and --to-datetime parsing) is
`group_options`'.

`validate(args)` raises `UsageError` for a bad command line and stores what it parsed
on `args`: `state_filter` (--list), `reset_scope` ({topic: partitions or None for all},
or None for every partition with state) and `reset_timestamp_ms` (--reset-offsets).

Kafka 4.2's kafka-share-groups.sh has neither --export nor --to-current (nor
--shift-by, --by-duration, --from-file); neither has this tool.
"""

from __future__ import annotations

import argparse

from shoal.cli.group_options import (
    ACTIONS,
    check_action,
    check_execute_mode,
    check_scenarios,
    one_group,
    parse_list,
    validate_delete,
    validate_delete_offsets,
    validate_describe,
)
from shoal.cli.kafka_options import UsageError, check_bootstrap, dest, opt, present

NOUN = "share group"
SHARE_GROUP_STATES = ("Empty", "Stable", "Dead")
RESET_SCENARIOS = ("to-datetime", "to-earliest", "to-latest", "to-offset")


def validate(args: argparse.Namespace) -> None:
    """Kafka's ShareGroupCommandOptions.checkArgs, plus parsing of --state, --topic
    and --to-datetime (results stored on `args`); --pause / --resume (Shoal's own)."""
    if pause_action(args) is not None:
        _validate_pause(args)
        return
    action = check_action(args, reset_only=RESET_SCENARIOS)
    {
        "list": _validate_list,
        "describe": validate_describe,
        "delete": validate_delete,
        "reset-offsets": _validate_reset,
        "delete-offsets": _validate_delete_offsets,
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


PAUSE_ACTIONS = ("pause", "resume")
"""Shoal's own actions (paused delivery, issue 16); not in kafka-share-groups.sh."""


def pause_action(args: argparse.Namespace) -> str | None:
    """ "pause" or "resume" when either option was given, else None."""
    chosen = [a for a in PAUSE_ACTIONS if present(args, dest(a))]
    return chosen[0] if chosen else None


def _validate_pause(args: argparse.Namespace) -> None:
    """--pause or --resume, with --group G (repeatable) and nothing but --timeout."""
    check_bootstrap(args)
    action = pause_action(args)
    assert action is not None
    others = [
        a
        for a in (*PAUSE_ACTIONS, *ACTIONS, "all-groups", "topic", "members", "offsets", "state")
        if a != action and present(args, dest(a))
    ]
    if others:
        raise UsageError(f"Option {opt(action)} can't be used with option {opt(others[0])}")
    if not args.group:
        raise UsageError(f"Option {opt(action)} takes the option: {opt('group')}")
    if args.timeout <= 0:
        raise UsageError(f"Option {opt('timeout')} must be a positive number of milliseconds")
