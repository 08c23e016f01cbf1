"""`shoal consumer-groups` as a subprocess against a real broker, with confluent-kafka
`Consumer`s (classic protocol) as the group's members: list (states, types), describe
(offsets with lag and the owning member, members, state) while a consumer is active,
reset refused while it is, reset dry-run then execute (each scenario, --export read
back with --from-file) on the empty group and a consumer resuming at the reset
offset, delete-offsets, delete, and the exits on errors.

Tables are read by column (tests/support/cli.py). Values that settle asynchronously
(a consumer joining or leaving) are polled with a generous bound.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from tests.support.broker import BrokerProcess, running
from tests.support.cli import rows, shoal
from tests.support.clients import create_topic, flush_all, producer
from tests.support.consumer_groups import group_consumer as consumer_of
from tests.support.topics import topic_name

T = TypeVar("T")
SETTLE_S = 60.0
CLIENT_ID = "cg-cli-test"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(
        tmp_path_factory.mktemp("cli-consumer-groups") / "data",
        "group.initial.rebalance.delay.ms=200",
    )


def cg(broker: BrokerProcess, *args: str) -> tuple[int, str, str]:
    done = shoal("consumer-groups", "--bootstrap-server", broker.bootstrap, *args)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def eventually(run: Callable[[], T], ok: Callable[[T], bool], *, timeout_s: float = SETTLE_S) -> T:
    deadline = time.monotonic() + timeout_s
    while True:
        result = run()
        if ok(result) or time.monotonic() > deadline:
            return result
        time.sleep(0.3)


def group_consumer(bootstrap: str, group: str) -> Consumer:
    return consumer_of(bootstrap, group, protocol="classic", **{"client.id": CLIENT_ID})


def produce(bootstrap: str, topic: str, counts: dict[int, int]) -> None:
    p = producer(bootstrap)
    for partition, count in counts.items():
        for i in range(count):
            p.produce(topic, value=f"{partition}-{i}".encode(), partition=partition)
    flush_all(p)


def consume(c: Consumer, count: int) -> list[tuple[int, int]]:
    """(partition, offset) of `count` records, polled within the bound."""
    got: list[tuple[int, int]] = []
    deadline = time.monotonic() + SETTLE_S
    while len(got) < count and time.monotonic() < deadline:
        message = c.poll(0.2)
        if message is None:
            continue
        error = message.error()
        if error is not None:
            assert error.code() == KafkaError._PARTITION_EOF, error
            continue
        got.append((int(message.partition() or 0), int(message.offset() or 0)))
    assert len(got) == count, got
    return got


def by_partition(table: list[dict[str, str]]) -> dict[str, dict[str, str]]:
    return {row["PARTITION"]: row for row in table}


def describe(broker: BrokerProcess, group: str, *extra: str) -> list[dict[str, str]]:
    code, out, err = cg(broker, "--describe", "--group", group, *extra)
    assert code == 0, err
    return rows(out)


def state_of(broker: BrokerProcess, group: str) -> str:
    table = describe(broker, group, "--state")
    return table[0]["STATE"] if table else "?"


def test_active_group_listed_and_described_then_reset_refused(broker: BrokerProcess) -> None:
    topic, group = topic_name("cg-active"), topic_name("cg-g")
    create_topic(broker.bootstrap, topic, partitions=2)
    produce(broker.bootstrap, topic, {0: 5, 1: 5})
    c = group_consumer(broker.bootstrap, group)
    try:
        c.subscribe([topic])
        consume(c, 10)
        c.commit(asynchronous=False)
        produce(broker.bootstrap, topic, {0: 3})

        code, out, _ = cg(broker, "--list")
        assert code == 0 and group in out.split()
        code, out, _ = cg(broker, "--list", "--state", "stable", "--type")
        listed = {r["GROUP"]: r for r in rows(out)}
        assert listed[group]["STATE"] == "Stable" and listed[group]["TYPE"] == "Classic"
        code, out, _ = cg(broker, "--list", "--state", "Empty")
        assert code == 0 and group not in out.split()

        offsets = by_partition(describe(broker, group))
        assert {
            p: (r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"]) for p, r in offsets.items()
        } == {
            "0": ("5", "8", "3"),
            "1": ("5", "5", "0"),
        }
        for row in offsets.values():
            assert row["GROUP"] == group and row["TOPIC"] == topic
            assert row["CONSUMER-ID"].startswith(CLIENT_ID) and row["CLIENT-ID"] == CLIENT_ID
            assert row["HOST"] != "-"

        (member,) = describe(broker, group, "--members", "--verbose")
        assert member["#PARTITIONS"] == "2" and member["CURRENT-ASSIGNMENT"] == f"{topic}:0,1"
        assert member["CLIENT-ID"] == CLIENT_ID
        (state,) = describe(broker, group, "--state")
        assert (state["STATE"], state["#MEMBERS"], state["ASSIGNMENT-STRATEGY"]) == (
            "Stable",
            "1",
            "range",
        )

        code, out, err = cg(
            broker, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest"
        )
        assert code == 1 and out == ""
        assert err.strip() == (
            f"Error: Assignments can only be reset if the group '{group}' is inactive, "
            "but the current state is Stable."
        )
        # with --all-groups the active group is refused, any others are planned
        code, out, err = cg(
            broker, "--reset-offsets", "--all-groups", "--all-topics", "--to-earliest"
        )
        assert code == 1 and group not in {r["GROUP"] for r in rows(out)}
        assert f"if the group '{group}' is inactive, but the current state is Stable." in err
        code, out, err = cg(broker, "--describe", "--all-groups")
        assert code == 0, err
        assert {r["PARTITION"] for r in rows(out) if r["GROUP"] == group} == {"0", "1"}
        code, _, err = cg(broker, "--delete", "--group", group)
        assert code == 1 and "NON_EMPTY_GROUP" in err
    finally:
        c.close()


def test_reset_on_empty_group_then_consumer_resumes_there(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    topic, group = topic_name("cg-reset"), topic_name("cg-g")
    create_topic(broker.bootstrap, topic, partitions=2)
    produce(broker.bootstrap, topic, {0: 6, 1: 4})
    c = group_consumer(broker.bootstrap, group)
    c.subscribe([topic])
    consume(c, 10)
    c.commit(asynchronous=False)
    c.close()
    assert eventually(lambda: state_of(broker, group), lambda s: s == "Empty") == "Empty"

    code, out, err = cg(broker, "--describe", "--group", group)
    assert code == 0 and f"Consumer group '{group}' has no active members." in err
    offsets = by_partition(rows(out))
    assert offsets["0"]["CURRENT-OFFSET"] == "6" and offsets["0"]["CONSUMER-ID"] == "-"

    def reset(*args: str) -> dict[str, str]:
        code, out, err = cg(broker, "--reset-offsets", "--group", group, *args)
        assert code == 0, err
        return {r["PARTITION"]: r["NEW-OFFSET"] for r in rows(out) if r["TOPIC"] == topic}

    # dry run (the default) plans without committing
    assert reset("--topic", topic, "--to-earliest") == {"0": "0", "1": "0"}
    assert by_partition(describe(broker, group))["0"]["CURRENT-OFFSET"] == "6"
    assert reset("--all-topics", "--to-offset", "3", "--dry-run") == {"0": "3", "1": "3"}
    assert reset("--topic", f"{topic}:1", "--shift-by", "-3") == {"1": "1"}
    assert reset("--topic", f"{topic}:0", "--shift-by", "100") == {"0": "6"}
    assert reset("--topic", topic, "--by-duration", "PT1H") == {"0": "0", "1": "0"}
    assert reset("--topic", topic, "--to-datetime", "2999-01-01T00:00:00.000") == {
        "0": "6",
        "1": "4",
    }
    plan = tmp_path / "offsets.csv"
    plan.write_text(f"{topic},0,1\n{topic},1,2\n")
    assert reset("--from-file", str(plan)) == {"0": "1", "1": "2"}
    # --to-current: the committed offset, or the log end where there is none
    assert reset("--all-topics", "--to-current") == {"0": "6", "1": "4"}
    uncommitted = topic_name("cg-reset-new")
    create_topic(broker.bootstrap, uncommitted, partitions=1)
    produce(broker.bootstrap, uncommitted, {0: 3})
    code, out, err = cg(
        broker, "--reset-offsets", "--group", group, "--topic", uncommitted, "--to-current"
    )
    assert code == 0, err
    assert [(r["TOPIC"], r["NEW-OFFSET"]) for r in rows(out)] == [(uncommitted, "3")]

    # --export prints Kafka's CSV, which --from-file reads back
    code, out, err = cg(
        broker, "--reset-offsets", "--group", group, "--all-topics", "--to-offset", "3", "--export"
    )
    assert code == 0, err
    # (lines in the order of Kafka's HashMap of partitions: the differential test checks it)
    assert out.endswith("\n\n") and sorted(out.split()) == [f"{topic},0,3", f"{topic},1,3"]
    plan.write_text(out)
    assert reset("--from-file", str(plan)) == {"0": "3", "1": "3"}
    other = topic_name("cg-none")
    code, out, err = cg(
        broker,
        "--reset-offsets",
        *("--group", group, "--group", other),
        "--all-topics",
        *("--shift-by", "-1", "--export"),
    )
    assert code == 0, err
    assert out.endswith("\n\n")
    assert sorted(out.split()) == [f"{group},{topic},0,5", f"{group},{topic},1,3"]
    plan.write_text(out)
    assert reset("--from-file", str(plan)) == {"0": "5", "1": "3"}
    code, out, err = cg(broker, "--reset-offsets", "--group", other, "--from-file", str(plan))
    assert code == 0 and f"No reset plan for group {other} found" in err

    # execute, then a consumer of the group resumes at the reset offsets
    assert reset("--topic", f"{topic}:0", "--to-offset", "2", "--execute") == {"0": "2"}
    assert reset("--topic", f"{topic}:1", "--to-latest", "--execute") == {"1": "4"}
    offsets = by_partition(describe(broker, group))
    assert {p: (r["CURRENT-OFFSET"], r["LAG"]) for p, r in offsets.items()} == {
        "0": ("2", "4"),
        "1": ("4", "0"),
    }
    resumed = group_consumer(broker.bootstrap, group)
    try:
        resumed.subscribe([topic])
        got = consume(resumed, 4)
        assert sorted(got) == [(0, 2), (0, 3), (0, 4), (0, 5)]
    finally:
        resumed.close()


def test_delete_offsets_and_delete(broker: BrokerProcess) -> None:
    topic, group = topic_name("cg-del"), topic_name("cg-g")
    create_topic(broker.bootstrap, topic, partitions=2)
    produce(broker.bootstrap, topic, {0: 2, 1: 2})
    c = group_consumer(broker.bootstrap, group)
    c.subscribe([topic])
    consume(c, 4)
    c.commit(offsets=[TopicPartition(topic, 0, 2), TopicPartition(topic, 1, 2)], asynchronous=False)
    c.close()
    assert eventually(lambda: state_of(broker, group), lambda s: s == "Empty") == "Empty"

    code, out, err = cg(broker, "--delete-offsets", "--group", group, "--topic", f"{topic}:1")
    assert code == 0, err
    assert out.startswith(f"Request succeeded for deleting offsets from group {group}.\n\n")
    assert rows(out) == [{"TOPIC": topic, "PARTITION": "1", "STATUS": "Successful"}]
    assert set(by_partition(describe(broker, group))) == {"0"}

    code, out, err = cg(broker, "--delete", "--group", group)
    assert code == 0, err
    assert out.strip() == f"Deletion of requested consumer groups ('{group}') was successful."
    code, out, _ = cg(broker, "--list")
    assert group not in out.split()
    code, out, err = cg(broker, "--describe", "--group", group)
    assert code == 1 and err.strip() == f"Error: Consumer group '{group}' does not exist."
    code, _, err = cg(broker, "--delete", "--group", group)
    assert code == 1
    assert f"* Group '{group}' could not be deleted due to: " in err


def test_bad_command_lines_exit_2(broker: BrokerProcess) -> None:
    code, out, err = cg(broker, "--list", "--describe")
    assert code == 2 and out == ""
    assert "Command must include exactly one action" in err and "usage:" in err
    code, _, err = cg(broker, "--reset-offsets", "--group", "g", "--topic", "t")
    assert code == 2 and "requires one of the following scenarios" in err


def test_command_config_and_timeout(broker: BrokerProcess, tmp_path: Path) -> None:
    config = tmp_path / "admin.properties"
    config.write_text("client.id=cg-admin\nrequest.timeout.ms=5000\nfoo.bar=1\n")
    code, _, err = cg(broker, "--list", "--command-config", str(config), "--timeout", "20000")
    assert code == 0
    assert "WARN The configuration 'foo.bar' was supplied but isn't a known config." in err
    started = time.monotonic()
    done = shoal(
        "consumer-groups", "--bootstrap-server", "127.0.0.1:1", "--list", "--timeout", "1500"
    )
    assert (done.returncode, done.stdout) == (1, "")
    assert "Error: cannot reach the broker at 127.0.0.1:1 within 1500 ms" in done.stderr
    assert time.monotonic() - started < 30


def test_empty_consumer_protocol_group_is_described(broker: BrokerProcess) -> None:
    """A KIP-848 group is described through ConsumerGroupDescribe (DescribeGroups knows
    only classic groups), Empty with its offsets as Kafka's tool prints it."""
    topic, group = topic_name("cg-848"), topic_name("cg-848-g")
    create_topic(broker.bootstrap, topic, partitions=2)
    produce(broker.bootstrap, topic, {0: 2, 1: 3})
    c = consumer_of(broker.bootstrap, group, protocol="consumer")
    try:
        c.subscribe([topic])
        consume(c, 5)
        (state,) = describe(broker, group, "--state", "--verbose")
        assert (state["STATE"], state["ASSIGNMENT-STRATEGY"], state["#MEMBERS"]) == (
            "Stable",
            "uniform",
            "1",
        )
        assert state["GROUP-EPOCH"] == state["TARGET-ASSIGNMENT-EPOCH"] != "-"
        (member,) = describe(broker, group, "--members", "--verbose")
        assert member["CURRENT-ASSIGNMENT"] == member["TARGET-ASSIGNMENT"] == f"{topic}:0,1"
        c.commit(asynchronous=False)
    finally:
        c.close()
    code, out, err = cg(broker, "--describe", "--group", group)
    assert code == 0 and err.strip() == f"Consumer group '{group}' has no active members."
    assert {(r["PARTITION"], r["CURRENT-OFFSET"], r["CONSUMER-ID"]) for r in rows(out)} == {
        ("0", "2", "-"),
        ("1", "3", "-"),
    }
