"""`shoal acls` command lines: AclCommand's checks and expansions. No broker."""

from __future__ import annotations

import argparse

import pytest

from shoal.cli import main
from shoal.cli.acls_options import (
    Entry,
    ResourceFilter,
    check_args,
    filters_to_entries,
    parse_operation,
    resource_filters,
)
from shoal.cli.kafka_options import UsageError
from shoal.security.acl import AclOperation, PatternType, PermissionType, ResourceType

Op, RT, PT = AclOperation, ResourceType, PatternType
ALLOW, DENY = PermissionType.ALLOW, PermissionType.DENY


def parse(*argv: str) -> argparse.Namespace:
    return main.build_parser().parse_args(["acls", "--bootstrap-server", "h:1", *argv])


def topic(name: str, pattern: PatternType = PT.LITERAL) -> ResourceFilter:
    return ResourceFilter(RT.TOPIC, name, pattern)


def test_operation_names() -> None:
    assert parse_operation("Read") is Op.READ
    assert parse_operation("IdempotentWrite") is Op.IDEMPOTENT_WRITE
    assert parse_operation("DESCRIBE_CONFIGS") is Op.DESCRIBE_CONFIGS
    assert parse_operation("alter-configs") is Op.ALTER_CONFIGS
    for bad in ("Any", "Fly", "unknown"):
        with pytest.raises(UsageError):
            parse_operation(bad)


def test_plain_add_gives_each_resource_the_operations() -> None:
    args = parse(
        "--add", "--allow-principal", "User:a", "--allow-host", "1.1.1.1",
        "--deny-principal", "User:b", "--operation", "Read", "--operation", "Write",
        "--topic", "t", "--group", "g",
    )  # fmt: skip
    with pytest.raises(UsageError, match="GROUP only supports"):
        filters_to_entries(args)  # WRITE is not a group operation
    args = parse("--add", "--allow-principal", "User:a", "--topic", "t", "--cluster")
    check_args(args)
    assert filters_to_entries(args) == {
        topic("t"): {Entry("User:a", "*", Op.ALL, ALLOW)},
        ResourceFilter(RT.CLUSTER, "kafka-cluster", PT.LITERAL): {
            Entry("User:a", "*", Op.ALL, ALLOW)
        },
    }
    denied = parse("--add", "--deny-principal", "User:b", "--deny-host", "h", "--topic", "t")
    assert filters_to_entries(denied) == {topic("t"): {Entry("User:b", "h", Op.ALL, DENY)}}


def test_producer_and_consumer_expansions() -> None:
    args = parse(
        "--add", "--allow-principal", "User:p", "--producer", "--idempotent",
        "--topic", "t", "--transactional-id", "x",
    )  # fmt: skip
    check_args(args)
    got = filters_to_entries(args)
    assert {e.operation for e in got[topic("t")]} == {Op.WRITE, Op.DESCRIBE, Op.CREATE}
    tid = ResourceFilter(RT.TRANSACTIONAL_ID, "x", PT.LITERAL)
    assert {e.operation for e in got[tid]} == {Op.WRITE, Op.DESCRIBE}
    cluster = ResourceFilter(RT.CLUSTER, "kafka-cluster", PT.LITERAL)
    assert {e.operation for e in got[cluster]} == {Op.IDEMPOTENT_WRITE}
    both = parse(
        "--add", "--allow-principal", "User:c", "--consumer", "--producer",
        "--topic", "t", "--group", "g",
    )  # fmt: skip
    got = filters_to_entries(both)
    assert {e.operation for e in got[topic("t")]} == {Op.WRITE, Op.DESCRIBE, Op.CREATE, Op.READ}
    assert {e.operation for e in got[ResourceFilter(RT.GROUP, "g", PT.LITERAL)]} == {Op.READ}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--topic", "t"], "exactly one action"),
        (["--add", "--list", "--topic", "t"], "exactly one action"),
        (["--list", "--allow-principal", "User:a"], "can't be used with"),
        (["--add", "--producer", "--allow-principal", "User:a"], "With --producer"),
        (["--add", "--idempotent", "--topic", "t"], "--idempotent option is only"),
        (["--add", "--consumer", "--topic", "t", "--allow-principal", "User:a"], "--consumer"),
        (
            ["--add", "--consumer", "--topic", "t", "--group", "g", "--cluster"],
            "no --cluster or --transactional-id",
        ),
        (["--add", "--producer", "--topic", "t", "--operation", "Read"], "can't be used"),
        (["--add", "--topic", "t", "--resource-pattern-type", "ANY"], "not valid when adding"),
        (["--list", "--resource-pattern-type", "WHATEVER"], "resource-pattern-type"),
        (["--add", "--allow-principal", "alice", "--topic", "t"], "Type:name"),
        (["--add", "--allow-principal", "User:a", "--operation", "Fly", "--topic", "t"], "Fly"),
    ],
)
def test_kafka_option_checks(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        check_args(parse(*argv))


def test_list_and_remove_filters() -> None:
    assert resource_filters(parse("--list"), required=False) == []
    with pytest.raises(UsageError, match="at least one resource"):
        resource_filters(parse("--remove"), required=True)
    matching = parse("--list", "--topic", "pay", "--resource-pattern-type", "match")
    check_args(matching)
    assert resource_filters(matching, required=False) == [topic("pay", PT.MATCH)]
    remove_all = parse("--remove", "--topic", "t")
    assert filters_to_entries(remove_all) == {topic("t"): set()}
    assert str(topic("t")) == "ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)"
    assert topic("t", PT.ANY).filter_text().startswith("ResourcePatternFilter(")
