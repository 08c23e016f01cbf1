"""`shoal consumer-groups` option checks, worded as kafka-consumer-groups.sh words
them, the parsing of --state, --type, --by-duration and --from-file, and the reading
of a member's ConsumerProtocolAssignment. No broker involved."""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import pytest
from kio.schema.consumer_protocol_assignment.v0.data import (
    ConsumerProtocolAssignment,
    TopicPartition,
)
from kio.serial import entity_writer
from kio.static.primitive import i32

from shoal.cli.consumer_group_admin import assignment_of
from shoal.cli.consumer_groups_options import read_reset_file, validate
from shoal.cli.kafka_options import UsageError
from shoal.cli.main import build_parser, main

B = ("--bootstrap-server", "127.0.0.1:9092")


def parsed(*argv: str) -> argparse.Namespace:
    args = build_parser().parse_args(["consumer-groups", *argv])
    validate(args)
    return args


def refused(*argv: str) -> str:
    with pytest.raises(UsageError) as caught:
        parsed(*argv)
    return str(caught.value)


def test_bootstrap_server_is_required() -> None:
    assert refused("--list") == 'Missing required argument "[bootstrap-server]"'


def test_exactly_one_action() -> None:
    message = (
        "Command must include exactly one action: "
        "--list, --describe, --delete, --reset-offsets, --delete-offsets."
    )
    assert refused(*B) == message
    assert refused(*B, "--list", "--delete", "--group", "g") == message


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--describe",), "Option [describe] takes one of these options: [group], [all-groups]"),
        (
            ("--describe", "--group", "g", "--members", "--offsets"),
            "Option [describe] takes at most one of these options: [members], [offsets], [state]",
        ),
        (
            ("--describe", "--group", "g", "--state", "Stable"),
            "Option [describe] does not take a value for [state]",
        ),
        (("--list", "--members"), "Option [members] can only be used with [describe]"),
        (("--describe", "--group", "g", "--type"), "Option [type] can only be used with [list]"),
        (
            ("--delete", "--group", "g", "--state"),
            "Option [state] can only be used with [describe] or [list]",
        ),
        (
            ("--describe", "--group", "g", "--to-earliest"),
            "Option [to-earliest] can only be used with [reset-offsets]",
        ),
        (("--list", "--group", "g"), 'Option "[group]" can\'t be used with option "[list]"'),
        (
            ("--describe", "--group", "g", "--all-groups"),
            'Option "[group]" can\'t be used with option "[all-groups]"',
        ),
        (("--delete",), "Option [delete] takes the options [group] or [all-groups]"),
        (
            ("--delete-offsets", "--group", "g"),
            "Option [delete-offsets] takes the following options: [group], [topic]",
        ),
        (
            ("--delete-offsets", "--group", "g", "--group", "h", "--topic", "t"),
            "Option [delete-offsets] takes one group at a time, got ['g', 'h']",
        ),
        (
            ("--list", "--state", "Sleeping"),
            "Invalid state list 'Sleeping'. Valid states are: PreparingRebalance, "
            "CompletingRebalance, Stable, Dead, Empty, Assigning, Reconciling",
        ),
        (
            ("--list", "--type", "share"),
            "Invalid type list 'share'. Valid types are: classic, consumer",
        ),
        (
            ("--list", "--timeout", "0"),
            "Option [timeout] must be a positive number of milliseconds",
        ),
    ],
)
def test_kafka_messages_for_bad_combinations(argv: tuple[str, ...], message: str) -> None:
    assert refused(*B, *argv) == message


def test_reset_offsets_checks() -> None:
    reset = (*B, "--reset-offsets", "--group", "g")
    assert refused(*reset, "--topic", "t").startswith(
        "Option [reset-offsets] requires one of the following scenarios: [to-datetime], "
        "[by-duration], [to-earliest], [to-latest], [shift-by], [from-file], [to-current], "
        "[to-offset]"
    )
    assert (
        refused(*reset, "--topic", "t", "--to-current", "--to-latest")
        == 'Option "[to-latest]" can\'t be used with option "[to-current]"'
    )
    assert parsed(*reset, "--all-topics", "--to-current", "--export").export
    assert refused(*B, "--describe", "--group", "g", "--export") == (
        "Option [export] can only be used with [reset-offsets]"
    )
    assert (
        refused(*reset, "--topic", "t", "--to-earliest", "--shift-by", "2")
        == 'Option "[to-earliest]" can\'t be used with option "[shift-by]"'
    )
    assert (
        refused(*reset, "--topic", "t", "--to-latest", "--dry-run", "--execute")
        == "Option [reset-offsets] only accepts one of [execute] and [dry-run]"
    )
    assert (
        refused(*reset, "--topic", "t", "--all-topics", "--to-latest")
        == 'Option "[all-topics]" can\'t be used with option "[topic]"'
    )
    assert refused(*reset, "--to-latest").startswith(
        "Option [reset-offsets] takes the option [topic] or [all-topics]"
    )
    assert refused(*B, "--reset-offsets", "--to-latest", "--all-topics").startswith(
        "Option [reset-offsets] takes one of these options: [group], [all-groups]"
    )
    assert refused(*reset, "--topic", "t", "--by-duration", "1h").startswith(
        "Error parsing duration '1h'"
    )
    assert refused(*reset, "--topic", "t:x", "--to-latest").startswith("Invalid partition 'x'")


def test_reset_parses_its_scenario() -> None:
    reset = (*B, "--reset-offsets", "--group", "g")
    args = parsed(*reset, "--topic", "t:1,0", "--topic", "u", "--by-duration", "P1DT1M")
    assert args.reset_scope == {"t": (0, 1), "u": None}
    assert args.reset_duration_ms == (24 * 60 + 1) * 60_000
    assert not args.execute
    args = parsed(*reset, "--all-topics", "--to-datetime", "2025-01-31T00:00:00.000Z")
    assert args.reset_scope is None and args.reset_timestamp_ms == 1_738_281_600_000
    assert parsed(*reset, "--all-topics", "--shift-by", "-3", "--execute").shift_by == -3


def test_list_filters_are_case_insensitive() -> None:
    args = parsed(*B, "--list", "--state", "stable,EMPTY", "--type", "Classic")
    assert args.state_filter == ("Stable", "Empty") and args.type_filter == ("classic",)
    args = parsed(*B, "--list", "--state")
    assert args.state_filter == () and args.state == ""


def test_from_file(tmp_path: Path) -> None:
    plan = tmp_path / "plan.csv"
    plan.write_text("t,0,5\n\nt,1,7\nu,0,3\n")
    one_group = {None: {("t", 0): 5, ("t", 1): 7, ("u", 0): 3}}
    assert read_reset_file(str(plan)) == one_group
    args = parsed(*B, "--reset-offsets", "--group", "g", "--from-file", str(plan))
    assert args.reset_file == one_group
    assert "has no group column" in refused(
        *B, "--reset-offsets", "--all-groups", "--from-file", str(plan)
    )
    plan.write_text("g,t,0,5\nh,t,0,6\n")
    assert read_reset_file(str(plan)) == {"g": {("t", 0): 5}, "h": {("t", 0): 6}}
    args = parsed(*B, "--reset-offsets", "--all-groups", "--from-file", str(plan))
    assert args.reset_file == {"g": {("t", 0): 5}, "h": {("t", 0): 6}}
    for bad, message in (
        ("t,zero,5\n", "Invalid line 1"),
        ("t,0,five\n", "Invalid offset 'five'"),
        ("g,t,0,5\nt,1,7\n", "Invalid line 2 .* \\(expected group,topic,partition,offset\\)"),
        ("t,1,7\ng,t,0,5\n", "Invalid line 2 .* \\(expected topic,partition,offset\\)"),
    ):
        plan.write_text(bad)
        with pytest.raises(UsageError, match=message):
            read_reset_file(str(plan))
    with pytest.raises(UsageError, match="cannot read --from-file"):
        read_reset_file(str(tmp_path / "missing.csv"))


def test_assignment_bytes_are_read_with_kio() -> None:
    assignment = ConsumerProtocolAssignment(
        assigned_partitions=(
            TopicPartition(topic="b", partitions=(i32(2), i32(0))),
            TopicPartition(topic="a", partitions=(i32(1),)),
        ),
        user_data=None,
    )
    data = b"\x00\x00" + bytes(_encode(assignment))
    assert assignment_of(data) == {"a": (1,), "b": (0, 2)}
    assert assignment_of(b"") == {}
    assert assignment_of(b"\x00\x00\xff") == {}


def _encode(entity: object) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def test_a_usage_error_exits_2_with_the_message_and_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["consumer-groups", *B]) == 2
    err = capsys.readouterr().err
    assert err.startswith("shoal consumer-groups: Command must include exactly one action")
    assert "usage: shoal consumer-groups" in err
