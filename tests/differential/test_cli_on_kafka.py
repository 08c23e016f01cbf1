"""Shoal's CLI (`shoal topics`, `shoal configs`, `shoal consumer-groups`, `shoal
share-groups`) pointed at Apache Kafka 4.2 prints what Kafka's own tools print against
the same broker.

Both tools run against the one reference broker, on the same topics and groups (or,
for changes, each on a group of its own with the same offsets), so their outputs
compare as text (stdout, and the exit status; stderr carries the JVM's and log4j's
lines for Kafka's tools, so only its messages are compared where a test says so).
One deliberate difference: where Kafka's tool prints an error and exits 0, Shoal's
prints the same and exits 1 (`_EXIT_ON_ERROR`).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as Tp

from tests.differential.conftest import unique
from tests.support import kafka_reference
from tests.support.cli import shoal
from tests.support.clients import create_topic
from tests.support.share_consumers import (
    produce_values,
    records_of,
    share_consumer,
    share_group,
    wait_for_members,
)

_JVM_NOISE = ("WARNING: Using incubator modules",)
_COORDINATOR_NOT_READY = (
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
)


@dataclass(frozen=True)
class Names:
    bootstrap: str
    """The broker both tools run against: Kafka's or Shoal's."""
    topic: str
    consumer_group: str
    share_group: str

    def fill(self, args: tuple[str, ...]) -> list[str]:
        return [
            a.format(topic=self.topic, cg=self.consumer_group, sg=self.share_group) for a in args
        ]


@dataclass(frozen=True)
class Outcome:
    status: int
    stdout: str
    messages: tuple[str, ...]
    """stderr lines but the JVM's notes."""


def _shoal(bootstrap: str, *args: str) -> Outcome:
    done = shoal(args[0], "--bootstrap-server", bootstrap, *args[1:])
    return Outcome(done.returncode, done.stdout, _messages(done.stderr))


def _kafka(bootstrap: str, *args: str) -> Outcome:
    done = kafka_reference.run_tool(f"kafka-{args[0]}", "--bootstrap-server", bootstrap, *args[1:])
    return Outcome(done.returncode, done.stdout, _messages(done.stderr))


def _messages(stderr: str) -> tuple[str, ...]:
    return tuple(
        line for line in stderr.splitlines() if line.strip() and not line.startswith(_JVM_NOISE)
    )


@pytest.fixture(
    scope="module",
    # Both tools against Shoal is the slow half (`scripts/test -m slow`): Kafka's tools
    # on Shoal are compared with Kafka's own answers in tests/ecosystem/test_kafka_tools.py
    # and the other differential modules; Shoal's CLI on Kafka is what only this module
    # checks, so it stays in the default run.
    params=["kafka", pytest.param("shoal", marks=pytest.mark.slow)],
)
def names(request: pytest.FixtureRequest) -> Names:
    """On the broker of the param (both tools run against each): a three-partition
    topic; a consumer group with committed offsets on two of its partitions and no
    member; a share group that acknowledged every record."""
    b = request.getfixturevalue(request.param).bootstrap
    made = Names(b, unique("cli-kafka"), unique("cli-kafka-cg"), unique("cli-kafka-sg"))
    create_topic(b, made.topic, partitions=3, config={"retention.ms": "86400000"})
    for p in range(3):
        produce_values(b, made.topic, [b"v%d" % i for i in range(10 + p)], partition=p)
    _commit(b, made.consumer_group, [Tp(made.topic, 0, 4), Tp(made.topic, 1, 11)])
    share_group(b, made.share_group)
    consumer = share_consumer(b, made.share_group, [made.topic])
    try:
        got, deadline = 0, time.monotonic() + 60
        while got < 33:
            assert time.monotonic() < deadline, f"{got} of 33 records delivered"
            got += len(records_of(consumer.poll(0.5)))
        consumer.commit_sync(30)
    finally:
        consumer.close()
    return made


READS = [
    pytest.param(("topics", "--list"), id="topics-list"),
    pytest.param(("topics", "--list", "--exclude-internal"), id="topics-list-exclude-internal"),
    pytest.param(("topics", "--describe", "--topic", "{topic}"), id="topics-describe"),
    pytest.param(
        ("topics", "--describe", "--partition-size-limit-per-response", "2"),
        id="topics-describe-all-paged",
    ),
    pytest.param(("configs", "--describe", "--topic", "{topic}"), id="configs-describe-topic"),
    pytest.param(
        ("configs", "--describe", "--entity-type", "topics", "--entity-name", "{topic}", "--all"),
        id="configs-describe-topic-all",
    ),
    pytest.param(
        ("configs", "--describe", "--entity-type", "topics"), id="configs-describe-topics"
    ),
    pytest.param(("configs", "--describe", "--entity-type", "brokers"), id="configs-brokers"),
    pytest.param(("configs", "--describe", "--group", "{cg}", "--all"), id="configs-group-all"),
    pytest.param(("consumer-groups", "--list"), id="consumer-groups-list"),
    pytest.param(("consumer-groups", "--list", "--state"), id="consumer-groups-list-state"),
    pytest.param(
        ("consumer-groups", "--list", "--state", "--type"), id="consumer-groups-list-state-type"
    ),
    pytest.param(
        ("consumer-groups", "--describe", "--group", "{cg}"), id="consumer-groups-describe"
    ),
    pytest.param(
        ("consumer-groups", "--describe", "--group", "{cg}", "--members"),
        id="consumer-groups-describe-members",
    ),
    pytest.param(
        ("consumer-groups", "--describe", "--group", "{cg}", "--state"),
        id="consumer-groups-describe-state",
    ),
    pytest.param(("share-groups", "--list"), id="share-groups-list"),
    pytest.param(("share-groups", "--list", "--state"), id="share-groups-list-state"),
    pytest.param(("share-groups", "--describe", "--group", "{sg}"), id="share-groups-describe"),
    pytest.param(
        ("share-groups", "--describe", "--group", "{sg}", "--members"),
        id="share-groups-describe-members",
    ),
    pytest.param(
        ("share-groups", "--describe", "--group", "{sg}", "--state"),
        id="share-groups-describe-state",
    ),
]


@pytest.mark.parametrize("args", READS)
def test_read_commands_print_what_kafkas_tools_print(names: Names, args: tuple[str, ...]) -> None:
    filled = names.fill(args)
    shoal_out = _shoal(names.bootstrap, *filled)
    kafka_out = _kafka(names.bootstrap, *filled)
    assert shoal_out.status == 0, shoal_out
    assert (shoal_out.status, shoal_out.stdout) == (kafka_out.status, kafka_out.stdout)


def test_topic_create_alter_and_delete_act_as_kafkas_tool(
    kafka: kafka_reference.KafkaBroker,
) -> None:
    """The same changes by each tool, on a topic of its own: the same messages, and
    Kafka's tool describes both topics alike (names and ids aside)."""
    b = kafka.bootstrap
    mine, theirs = unique("cli-kafka-shoal"), unique("cli-kafka-kafka")
    steps = [
        ("--create", "--topic", "{t}", "--partitions", "2", "--config", "cleanup.policy=compact"),
        ("--alter", "--topic", "{t}", "--partitions", "4"),
    ]
    for step in steps:
        by_shoal = _shoal(b, "topics", *(a.format(t=mine) for a in step))
        by_kafka = _kafka(b, "topics", *(a.format(t=theirs) for a in step))
        assert by_shoal.status == by_kafka.status == 0, (by_shoal, by_kafka)
        assert by_shoal.stdout.replace(mine, "T") == by_kafka.stdout.replace(theirs, "T")
    described = [
        _described(_kafka(b, "topics", "--describe", "--topic", name).stdout, name)
        for name in (mine, theirs)
    ]
    assert described[0] == described[1]
    assert "PartitionCount: 4" in described[0] and "cleanup.policy=compact" in described[0]
    for name in (mine, theirs):
        by = _shoal if name == mine else _kafka
        assert by(b, "topics", "--delete", "--topic", name).status == 0
    gone = _kafka(b, "topics", "--list").stdout.split()
    assert mine not in gone and theirs not in gone


def _described(text: str, name: str) -> str:
    lines = [line.replace(name, "T") for line in text.splitlines()]
    return "\n".join(
        "\t".join(f for f in line.split("\t") if not f.startswith("TopicId:")) for line in lines
    )


@pytest.fixture
def live_share_group(names: Names) -> Iterator[str]:
    """A share group with two live members (ShareConsumers), Stable with every
    partition of the topic assigned."""
    group = unique("cli-kafka-live")
    share_group(names.bootstrap, group)
    consumers = [share_consumer(names.bootstrap, group, [names.topic]) for _ in range(2)]
    try:
        wait_for_members(names.bootstrap, group, consumers, names.topic, partitions=3)
        yield group
    finally:
        for consumer in consumers:
            consumer.close()


@pytest.mark.parametrize("view", ["--members", "--state"])
@pytest.mark.parametrize("verbose", [(), ("--verbose",)], ids=["short", "verbose"])
def test_a_share_group_with_members_is_described_as_kafkas_tool_does(
    names: Names, live_share_group: str, view: str, verbose: tuple[str, ...]
) -> None:
    args = ("share-groups", "--describe", "--group", live_share_group, view, *verbose)
    shoal_out, kafka_out = _shoal(names.bootstrap, *args), _kafka(names.bootstrap, *args)
    assert shoal_out.status == 0, shoal_out
    assert shoal_out.stdout == kafka_out.stdout
    assert len([line for line in kafka_out.stdout.splitlines() if live_share_group in line]) == (
        2 if view == "--members" else 1
    )


# ---- changes: each tool on a group of its own with the same offsets

_EXIT_ON_ERROR = "Kafka exits 0 after printing an error; Shoal exits 1 so that scripts can tell"


def _committed_group(bootstrap: str, topic: str) -> str:
    group = unique("cli-kafka-offsets")
    _commit(bootstrap, group, [Tp(topic, 0, 4), Tp(topic, 1, 11), Tp(topic, 2, 3)])
    return group


def _commit(bootstrap: str, group: str, offsets: list[Tp]) -> None:
    """Commit `offsets` for `group` from outside it, retrying while the coordinator
    is not ready (a broker just started answers NOT_COORDINATOR a while)."""
    deadline = time.monotonic() + 60
    while True:
        committer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
        try:
            committer.commit(offsets=offsets, asynchronous=False)
            return
        except KafkaException as exc:
            if time.monotonic() > deadline or exc.args[0].code() not in _COORDINATOR_NOT_READY:
                raise
            time.sleep(0.5)
        finally:
            committer.close()


def _each_on_its_own(
    bootstrap: str, make: Any, tool: str, args: tuple[str, ...]
) -> tuple[Outcome, Outcome]:
    """(Shoal's, Kafka's) outcome of `args` ("{g}" the group), each tool on a group
    `make()` made for it; the group's name reads G in the output."""
    mine, theirs = make(), make()
    by_shoal = _shoal(bootstrap, tool, *(a.format(g=mine) for a in args))
    by_kafka = _kafka(bootstrap, tool, *(a.format(g=theirs) for a in args))
    return (
        Outcome(by_shoal.status, by_shoal.stdout.replace(mine, "G"), by_shoal.messages),
        Outcome(by_kafka.status, by_kafka.stdout.replace(theirs, "G"), by_kafka.messages),
    )


@pytest.mark.parametrize(
    ("topics", "failed"),
    [
        pytest.param(("{topic}",), False, id="topic"),
        pytest.param(("{topic}:0,2",), False, id="partitions"),
        pytest.param(("{topic}:1", "cli-kafka-no-such-topic"), True, id="and-unknown-topic"),
        pytest.param(("{topic}:7",), True, id="unknown-partition"),
    ],
)
def test_consumer_group_delete_offsets_prints_what_kafkas_tool_prints(
    names: Names, topics: tuple[str, ...], failed: bool
) -> None:
    scope = [a for t in topics for a in ("--topic", t.format(topic=names.topic))]
    by_shoal, by_kafka = _each_on_its_own(
        names.bootstrap,
        lambda: _committed_group(names.bootstrap, names.topic),
        "consumer-groups",
        ("--delete-offsets", "--group", "{g}", *scope),
    )
    assert by_shoal.stdout == by_kafka.stdout
    assert by_kafka.status == 0
    assert by_shoal.status == (1 if failed else 0), _EXIT_ON_ERROR


def test_delete_offsets_of_an_unknown_group_prints_what_kafkas_tools_print(names: Names) -> None:
    group = unique("cli-kafka-nobody")
    for tool in ("consumer-groups", "share-groups"):
        args = (tool, "--delete-offsets", "--group", group, "--topic", names.topic)
        by_shoal, by_kafka = _shoal(names.bootstrap, *args), _kafka(names.bootstrap, *args)
        assert by_shoal.stdout == by_kafka.stdout
        assert "Error: " in by_kafka.stdout
        assert (by_shoal.status, by_kafka.status) == (1, 0), _EXIT_ON_ERROR


def _share_group_with_state(bootstrap: str, topic: str) -> str:
    """A share group that acknowledged a batch of the topic (so it has state)."""
    group = unique("cli-kafka-sg-state")
    share_group(bootstrap, group)
    consumer = share_consumer(bootstrap, group, [topic])
    try:
        deadline = time.monotonic() + 60
        while not records_of(consumer.poll(0.5)):
            assert time.monotonic() < deadline, "the share consumer got nothing"
        consumer.commit_sync(30)
    finally:
        consumer.close()
    return group


def test_share_group_delete_offsets_prints_what_kafkas_tool_prints(names: Names) -> None:
    """Deleting a topic's state and an unknown topic's, then the same topic's again
    (no state left)."""
    made: list[str] = []

    def make() -> str:
        made.append(_share_group_with_state(names.bootstrap, names.topic))
        return made[-1]

    by_shoal, by_kafka = _each_on_its_own(
        names.bootstrap,
        make,
        "share-groups",
        ("--delete-offsets", "--group", "{g}", "--topic", names.topic, "--topic", "cli-kafka-nope"),
    )
    assert by_shoal.stdout == by_kafka.stdout
    assert "Successful" in by_kafka.stdout and "Error: " in by_kafka.stdout
    assert (by_shoal.status, by_kafka.status) == (1, 0), _EXIT_ON_ERROR
    again = ("share-groups", "--delete-offsets", "--group", "{g}", "--topic", names.topic)
    mine, theirs = made
    by_shoal = _shoal(names.bootstrap, *(a.format(g=mine) for a in again))
    by_kafka = _kafka(names.bootstrap, *(a.format(g=theirs) for a in again))
    assert by_shoal.stdout == by_kafka.stdout
    assert "Error: There is no offset information to delete." in by_kafka.stdout


RESETS = [
    pytest.param(("--topic", "{topic}", "--to-earliest"), id="to-earliest"),
    pytest.param(("--all-topics", "--to-latest"), id="to-latest"),
    pytest.param(("--topic", "{topic}", "--to-datetime", "2020-01-01T00:00:00.000"), id="datetime"),
    pytest.param(("--topic", "{topic}:1", "--shift-by", "-2"), id="shift-by"),
    pytest.param(("--all-topics", "--to-offset", "5"), id="to-offset"),
    pytest.param(("--all-topics", "--to-current", "--export"), id="export"),
]


@pytest.mark.parametrize("scenario", RESETS)
def test_consumer_group_reset_offsets_prints_what_kafkas_tool_prints(
    names: Names, scenario: tuple[str, ...]
) -> None:
    """--dry-run on the module's group (both tools read the same offsets), then
    --execute each on a group of its own: the same plan, committed alike."""
    filled = [a.format(topic=names.topic) for a in scenario]
    dry = ("consumer-groups", "--reset-offsets", "--group", names.consumer_group, *filled)
    by_shoal = _shoal(names.bootstrap, *dry, "--dry-run")
    by_kafka = _kafka(names.bootstrap, *dry, "--dry-run")
    assert (by_shoal.status, by_shoal.stdout) == (by_kafka.status, by_kafka.stdout)
    assert by_kafka.stdout.strip()
    made: list[str] = []

    def make() -> str:
        made.append(_committed_group(names.bootstrap, names.topic))
        return made[-1]

    by_shoal, by_kafka = _each_on_its_own(
        names.bootstrap,
        make,
        "consumer-groups",
        ("--reset-offsets", "--group", "{g}", *filled, "--execute"),
    )
    assert (by_shoal.status, by_shoal.stdout) == (by_kafka.status, by_kafka.stdout)
    described = [
        _kafka(names.bootstrap, "consumer-groups", "--describe", "--group", g).stdout.replace(
            g, "G"
        )
        for g in made
    ]
    assert described[0] == described[1]


@pytest.mark.parametrize("scenario", RESETS[:3])
def test_share_group_reset_offsets_prints_what_kafkas_tool_prints(
    names: Names, scenario: tuple[str, ...]
) -> None:
    """--dry-run on the module's share group (Kafka 4.2's share tool has neither
    --shift-by, --to-offset nor --export)."""
    filled = [a.format(topic=names.topic) for a in scenario]
    args = ("share-groups", "--reset-offsets", "--group", names.share_group, *filled, "--dry-run")
    by_shoal, by_kafka = _shoal(names.bootstrap, *args), _kafka(names.bootstrap, *args)
    assert (by_shoal.status, by_shoal.stdout) == (by_kafka.status, by_kafka.stdout)
    assert names.share_group in by_kafka.stdout


def test_configs_of_an_unknown_topic_print_what_kafkas_tool_prints(names: Names) -> None:
    args = ("configs", "--describe", "--topic", unique("cli-kafka-none"))
    by_shoal, by_kafka = _shoal(names.bootstrap, *args), _kafka(names.bootstrap, *args)
    assert by_shoal.stdout == by_kafka.stdout
    assert "doesn't exist" in by_kafka.stdout
    assert (by_shoal.status, by_kafka.status) == (1, 0), _EXIT_ON_ERROR
