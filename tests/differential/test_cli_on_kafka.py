"""Shoal's CLI (`shoal topics`, `shoal consumer-groups`, `shoal share-groups`) pointed at
Apache Kafka 4.2 prints what Kafka's own tools print against the same broker.

Both tools run against the one reference broker, on the same topics and groups, so
their outputs compare as text (stdout, and the exit status; stderr carries the JVM's
and log4j's lines for Kafka's tools, so only its messages are compared where a test
says so). Where Shoal's tool prints something else the case is a strict xfail naming
the difference: it fails once someone makes the tools agree, so the mark goes then.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import Consumer
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
)

_JVM_NOISE = ("WARNING: Using incubator modules",)


@dataclass(frozen=True)
class Names:
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


@pytest.fixture(scope="module")
def names(kafka: kafka_reference.KafkaBroker) -> Names:
    """A three-partition topic; a consumer group with committed offsets on two of its
    partitions and no member; a share group that acknowledged every record."""
    b = kafka.bootstrap
    made = Names(unique("cli-kafka"), unique("cli-kafka-cg"), unique("cli-kafka-sg"))
    create_topic(b, made.topic, partitions=3, config={"retention.ms": "86400000"})
    for p in range(3):
        produce_values(b, made.topic, [b"v%d" % i for i in range(10 + p)], partition=p)
    committer = Consumer({"bootstrap.servers": b, "group.id": made.consumer_group})
    try:
        committer.commit(offsets=[Tp(made.topic, 0, 4), Tp(made.topic, 1, 11)], asynchronous=False)
    finally:
        committer.close()
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


def _differs(reason: str) -> Any:
    return pytest.mark.xfail(strict=True, reason=f"differs from Kafka's tool: {reason}")


READS = [
    pytest.param(("topics", "--list"), id="topics-list"),
    pytest.param(("topics", "--list", "--exclude-internal"), id="topics-list-exclude-internal"),
    pytest.param(("topics", "--describe", "--topic", "{topic}"), id="topics-describe"),
    pytest.param(
        ("topics", "--describe", "--partition-size-limit-per-response", "2"),
        id="topics-describe-all-paged",
    ),
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
def test_read_commands_print_what_kafkas_tools_print(
    kafka: kafka_reference.KafkaBroker, names: Names, args: tuple[str, ...]
) -> None:
    filled = names.fill(args)
    shoal_out = _shoal(kafka.bootstrap, *filled)
    kafka_out = _kafka(kafka.bootstrap, *filled)
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
def live_share_group(kafka: kafka_reference.KafkaBroker, names: Names) -> Iterator[str]:
    """A share group with one live member (a ShareConsumer that got records)."""
    group = unique("cli-kafka-live")
    share_group(kafka.bootstrap, group)
    consumer = share_consumer(kafka.bootstrap, group, [names.topic])
    try:
        deadline = time.monotonic() + 60
        while not records_of(consumer.poll(0.5)):
            assert time.monotonic() < deadline, "the share consumer got nothing"
        yield group
    finally:
        consumer.close()


@pytest.mark.parametrize("view", ["--members", "--state"])
def test_a_share_group_with_a_member_is_described_as_kafkas_tool_does(
    kafka: kafka_reference.KafkaBroker, live_share_group: str, view: str
) -> None:
    args = ("share-groups", "--describe", "--group", live_share_group, view, "--verbose")
    shoal_out, kafka_out = _shoal(kafka.bootstrap, *args), _kafka(kafka.bootstrap, *args)
    assert shoal_out.status == 0, shoal_out
    assert shoal_out.stdout == kafka_out.stdout
