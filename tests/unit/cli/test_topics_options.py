"""`shoal topics` option checks, worded as kafka-topics.sh words them, and the
parsing of --config and --topic patterns. No broker involved."""

from __future__ import annotations

import argparse
import uuid

import pytest

from shoal.cli.kafka_options import UsageError
from shoal.cli.main import build_parser, main
from shoal.cli.topics import (
    REPLICATION_FACTOR_MAX,
    parse_configs,
    topic_id_text,
    topic_pattern,
    validate,
)

B = ("--bootstrap-server", "127.0.0.1:9092")


def parsed(*argv: str) -> argparse.Namespace:
    args = build_parser().parse_args(["topics", *argv])
    validate(args)
    return args


def refused(*argv: str) -> str:
    with pytest.raises(UsageError) as caught:
        parsed(*argv)
    return str(caught.value)


def test_exactly_one_action_then_bootstrap() -> None:
    message = (
        "Command must include exactly one action: --list, --describe, --create, --alter or --delete"
    )
    assert refused(*B) == message
    assert refused(*B, "--list", "--delete", "--topic", "t") == message
    assert refused("--list") == "--bootstrap-server must be specified"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--create",), 'Missing required argument "[topic]"'),
        (("--delete",), 'Missing required argument "[topic]"'),
        (("--alter", "--topic", "t"), 'Missing required argument "[partitions]"'),
        (
            ("--alter", "--topic", "t", "--partitions", "3", "--config", "a=b"),
            'Option "[config]" can\'t be used with option "[alter]" (To alter topic '
            "configurations, use IncrementalAlterConfigs, e.g. Kafka's kafka-configs.sh.)",
        ),
        (
            ("--list", "--partitions", "3"),
            'Option "[partitions]" can\'t be used with option "[list]"',
        ),
        (
            ("--alter", "--topic", "t", "--partitions", "3", "--replication-factor", "1"),
            'Option "[replication-factor]" can\'t be used with option "[alter]"',
        ),
        (
            ("--create", "--topic", "t", "--if-exists"),
            'Option "[if-exists]" can\'t be used with option "[create]"',
        ),
        (
            ("--delete", "--topic", "t", "--if-not-exists"),
            'Option "[if-not-exists]" can\'t be used with option "[delete]"',
        ),
        (
            ("--delete", "--topic", "t", "--exclude-internal"),
            'Option "[exclude-internal]" can\'t be used with option "[delete]"',
        ),
        (("--describe", "--if-exists"), "--topic or --topic-id is required to describe a topic"),
        (
            ("--create", "--topic", "t", "--replication-factor", "0"),
            f"The replication factor must be between 1 and {REPLICATION_FACTOR_MAX} inclusive",
        ),
        (
            ("--create", "--topic", "t", "--replication-factor", str(REPLICATION_FACTOR_MAX + 1)),
            f"The replication factor must be between 1 and {REPLICATION_FACTOR_MAX} inclusive",
        ),
        (
            ("--create", "--topic", "t", "--partitions", "0"),
            "The partitions must be greater than 0",
        ),
        (
            ("--list", "--topic", "a[b"),
            "a[b is an invalid regex: unterminated character set at position 1",
        ),
    ],
)
def test_kafka_messages_for_bad_command_lines(argv: tuple[str, ...], message: str) -> None:
    assert refused(*B, *argv) == message


def test_a_good_create_command_line() -> None:
    args = parsed(*B, "--create", "--topic", "t", "--partitions", "3", "--config", "a = b")
    assert args.configs == {"a": "b"}
    assert parsed(*B, "--create", "--topic", "t", "--replication-factor", "1").partitions is None


def test_configs_need_exactly_one_equals_sign() -> None:
    assert parse_configs(["retention.ms=1000", " cleanup.policy = delete "]) == {
        "retention.ms": "1000",
        "cleanup.policy": "delete",
    }
    for bad in ("novalue", "a=b=c", "=b"):
        with pytest.raises(UsageError, match='must be in the format "key=val"'):
            parse_configs([bad])


def test_topic_patterns_match_whole_names_and_commas_are_alternatives() -> None:
    pattern = topic_pattern("'orders.*,audit'")
    assert [
        n for n in ("orders", "orders-eu", "audit", "audit2", "x-orders") if pattern.fullmatch(n)
    ] == [
        "orders",
        "orders-eu",
        "audit",
    ]


def test_topic_ids_print_as_kafka_uuids() -> None:
    topic_id = uuid.UUID("30b623b0-bf94-4156-8f9a-185e2195ed19")
    assert topic_id_text(topic_id) == "MLYjsL-UQVaPmhheIZXtGQ"


def test_no_arguments_at_all_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topics"]) == 2
    err = capsys.readouterr().err
    assert "Command must include exactly one action" in err
    assert "usage: shoal topics" in err
