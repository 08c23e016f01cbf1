"""`shoal share-groups` option checks, worded as kafka-share-groups.sh words them,
and the parsing of --state, --topic and --to-datetime. No broker involved."""

from __future__ import annotations

import argparse
import datetime

import pytest

from shoal import limits
from shoal.cli.group_options import parse_datetime_ms, parse_list, parse_topic_specs
from shoal.cli.kafka_options import UsageError
from shoal.cli.main import build_parser, main
from shoal.cli.share_groups_options import SHARE_GROUP_STATES, validate
from shoal.cli.tables import assignment_text

B = ("--bootstrap-server", "127.0.0.1:9092")


def parsed(*argv: str) -> argparse.Namespace:
    args = build_parser().parse_args(["share-groups", *argv])
    validate(args)
    return args


def refused(*argv: str) -> str:
    with pytest.raises(UsageError) as caught:
        parsed(*argv)
    return str(caught.value)


def test_bootstrap_server_is_required_and_checked() -> None:
    assert refused("--list") == 'Missing required argument "[bootstrap-server]"'
    assert "expected HOST:PORT" in refused("--bootstrap-server", "nohost", "--list")


def test_exactly_one_action() -> None:
    message = (
        "Command must include exactly one action: "
        "--list, --describe, --delete, --reset-offsets, --delete-offsets, --browse, "
        "--pause, --resume."
    )
    assert refused(*B) == message
    assert refused(*B, "--list", "--describe", "--group", "g") == message


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ("--describe",),
            "Option [describe] takes one of these options: [group], [all-groups]",
        ),
        (
            ("--describe", "--group", "g", "--members", "--state"),
            "Option [describe] takes at most one of these options: [members], [offsets], [state]",
        ),
        (
            ("--describe", "--group", "g", "--state", "Stable"),
            "Option [describe] does not take a value for [state]",
        ),
        (
            ("--describe", "--group", "g", "--all-groups"),
            'Option "[group]" can\'t be used with option "[all-groups]"',
        ),
        (
            ("--describe", "--group", "g", "--topic", "t"),
            'Option "[topic]" can\'t be used with option "[describe]"',
        ),
        (("--list", "--group", "g"), 'Option "[group]" can\'t be used with option "[list]"'),
        (("--list", "--members"), "Option [members] can only be used with [describe]"),
        (("--list", "--verbose"), "Option [verbose] can only be used with [describe]"),
        (
            ("--delete", "--group", "g", "--state"),
            "Option [state] can only be used with [describe] or [list]",
        ),
        (("--delete",), "Option [delete] takes the options [group] or [all-groups]"),
        (
            ("--delete", "--group", "g", "--topic", "t"),
            "Option [delete] does not take the option: [topic]",
        ),
        (
            ("--delete-offsets", "--group", "g"),
            "Option [delete-offsets] takes the following options: [group], [topic]",
        ),
        (
            ("--describe", "--group", "g", "--execute"),
            "Option [execute] can only be used with [reset-offsets]",
        ),
    ],
)
def test_kafka_messages_for_bad_combinations(argv: tuple[str, ...], message: str) -> None:
    assert refused(*B, *argv) == message


def test_reset_offsets_checks() -> None:
    reset = (*B, "--reset-offsets")
    assert refused(*reset, "--to-earliest") == "Option [reset-offsets] takes the option: [group]"
    assert refused(*reset, "--group", "g") == (
        "Option [reset-offsets] requires one of the following scenarios: "
        "[to-datetime], [to-earliest], [to-latest], [to-offset]"
    )
    assert refused(*reset, "--group", "g", "--to-earliest", "--dry-run", "--execute") == (
        "Option [reset-offsets] only accepts one of [execute] and [dry-run]"
    )
    assert refused(*reset, "--group", "g", "--to-earliest", "--to-latest") == (
        'Option "[to-earliest]" can\'t be used with option "[to-latest]"'
    )
    assert refused(*reset, "--group", "g", "--to-latest", "--topic", "t", "--all-topics") == (
        'Option "[all-topics]" can\'t be used with option "[topic]"'
    )
    assert "one share group at a time" in refused(
        *reset, "--group", "g", "--group", "h", "--to-latest"
    )
    assert "Error parsing timestamp '2024-13-01T00:00:00.000'" in refused(
        *reset, "--group", "g", "--to-datetime", "2024-13-01T00:00:00.000"
    )


def test_a_reset_is_a_dry_run_unless_execute() -> None:
    args = parsed(*B, "--reset-offsets", "--group", "g", "--to-offset", "-3")
    assert (args.execute, args.to_offset, args.reset_scope) == (False, -3, None)
    args = parsed(*B, "--reset-offsets", "--group", "g", "--topic", "t:1,0", "--to-latest")
    assert args.reset_scope == {"t": (0, 1)}


def test_timeout_must_be_positive() -> None:
    assert refused(*B, "--list", "--timeout", "0") == (
        "Option [timeout] must be a positive number of milliseconds"
    )


def test_states_are_case_insensitive_and_checked() -> None:
    assert parse_list("stable, EMPTY", SHARE_GROUP_STATES, "state") == ("Stable", "Empty")
    with pytest.raises(UsageError) as caught:
        parse_list("Stable,Rebalancing", SHARE_GROUP_STATES, "state")
    assert str(caught.value) == (
        "Invalid state list 'Stable,Rebalancing'. Valid states are: Empty, Stable, Dead"
    )
    assert parsed(*B, "--list", "--state").state_filter == ()
    assert parsed(*B, "--list", "--state", "dead").state_filter == ("Dead",)


def test_topic_specs() -> None:
    assert parse_topic_specs(["a", "b:2,0", "b:1", "a:3"]) == {"a": None, "b": (0, 1, 2)}
    with pytest.raises(UsageError, match="Invalid partition 'x' specified in topic arg 'b:x'"):
        parse_topic_specs(["b:x"])
    with pytest.raises(UsageError, match="expected topic name and partitions"):
        parse_topic_specs(["a:1:2"])


def test_datetimes_without_a_zone_are_utc() -> None:
    epoch_ms = datetime.datetime(2024, 5, 6, 7, 8, 9, 123_000, tzinfo=datetime.UTC).timestamp()
    expected = round(epoch_ms * 1000)
    assert parse_datetime_ms("2024-05-06T07:08:09.123") == expected
    assert parse_datetime_ms("2024-05-06T07:08:09.123Z") == expected
    assert parse_datetime_ms("2024-05-06T09:08:09.123+02:00") == expected
    assert parse_datetime_ms("2024-05-06T09:08:09.123+0200") == expected
    assert parse_datetime_ms("2024-05-06T02:08:09.123-05") == expected
    assert parse_datetime_ms("2024-05-06T07:08:09") == expected - 123
    for bad in ("2024-05-06", "2024-05-06 07:08:09.123", "yesterday", "2024-02-30T00:00:00"):
        with pytest.raises(UsageError, match="Error parsing timestamp"):
            parse_datetime_ms(bad)


def test_assignment_text_sorts_topics_and_partitions() -> None:
    assert assignment_text({"b": (3, 1), "a": (0,), "c": ()}) == "a:0;b:1,3"


def test_a_usage_error_exits_2_with_the_message_and_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["share-groups", *B, "--describe"]) == 2
    err = capsys.readouterr().err
    assert "Option [describe] takes one of these options" in err
    assert "usage: shoal share-groups" in err


def test_browse_takes_one_group_one_topic_and_defaults_max() -> None:
    args = parsed(*B, "--browse", "--group", "g", "--topic", "t")
    assert (args.group, args.topic, args.partition) == (["g"], ["t"], None)
    assert args.max == limits.SHARE_BROWSE_ENTRIES_DEFAULT
    args = parsed(*B, "--browse", "--group", "g", "--topic", "t", "--partition", "2", "--max", "0")
    assert (args.partition, args.max) == (2, 0)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--browse", "--group", "g"), "Option [browse] takes the options: [group], [topic]"),
        (("--browse", "--topic", "t"), "Option [browse] takes the options: [group], [topic]"),
        (
            ("--browse", "--group", "g", "--group", "h", "--topic", "t"),
            "Option [browse] takes one share group at a time, got ['g', 'h']",
        ),
        (
            ("--browse", "--group", "g", "--topic", "t:0"),
            "Option [browse] takes one [topic] (a name; choose a partition with [partition])",
        ),
        (
            ("--browse", "--group", "g", "--topic", "t", "--max", "-1"),
            "Option [max] must be 0 or more",
        ),
        (
            ("--browse", "--group", "g", "--topic", "t", "--partition", "-1"),
            "Option [partition] must be a partition number (0 or more)",
        ),
        (
            ("--describe", "--group", "g", "--max", "5"),
            "Option [max] can only be used with [browse]",
        ),
        (("--list", "--partition", "0"), "Option [partition] can only be used with [browse]"),
    ],
)
def test_browse_refusals(argv: tuple[str, ...], message: str) -> None:
    assert refused(*B, *argv) == message


def test_pause_and_resume_take_groups_and_nothing_else() -> None:
    """Shoal's own actions (paused delivery): --group is required (repeatable); no
    other action, --topic or --all-groups goes with them."""
    assert parsed(*B, "--pause", "--group", "g", "--group", "h").group == ["g", "h"]
    assert parsed(*B, "--resume", "--group", "g").resume
    assert refused(*B, "--pause") == "Option [pause] takes the option: [group]"
    one_action = "Command must include exactly one action: "
    assert refused(*B, "--pause", "--resume", "--group", "g").startswith(one_action)
    assert refused(*B, "--resume", "--describe", "--group", "g").startswith(one_action)
    assert refused(*B, "--pause", "--all-groups") == (
        "Option [pause] can't be used with option [all-groups]"
    )
    assert refused(*B, "--pause", "--group", "g", "--topic", "t") == (
        "Option [pause] can't be used with option [topic]"
    )
    assert refused(*B, "--pause", "--group", "g", "--members") == (
        "Option [members] can only be used with [describe]"
    )
    assert refused("--pause", "--group", "g") == 'Missing required argument "[bootstrap-server]"'
