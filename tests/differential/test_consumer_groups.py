"""Consumer groups, classic and KIP-848, on Kafka 4.2 and on Shoal side by side.

Each scenario drives real clients (confluent-kafka with `group.protocol` classic or
consumer, kafka-python, Kafka's kafka-consumer-groups tool, Shoal's CLI, raw kio
requests) against both brokers and compares what a user observes: assignments by
shape (each partition owned once, partitions per member), group states, protocol
types and assignors, error codes, the tools' tables. Member ids, hosts, ports and
times are normalised away.

Both brokers run with `group.initial.rebalance.delay.ms=0` (the reference's setting,
tests/support/kafka_reference.py), so classic joins complete as soon as every member
is in.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest

from tests.differential.conftest import Pair, unique
from tests.support import kafka_reference
from tests.support.broker import BrokerProcess, running
from tests.support.cli import shoal as shoal_cli
from tests.support.cli import tables
from tests.support.clients import create_topic, flush_all, producer
from tests.support.consumer_groups import group_consumer

SETTLE_S = 60.0


@pytest.fixture(scope="module")
def shoal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(
        tmp_path_factory.mktemp("shoal") / "data", "group.initial.rebalance.delay.ms=0"
    )


# ---- helpers


def produce(bootstrap: str, topic: str, counts: dict[int, int]) -> None:
    p = producer(bootstrap)
    for partition, count in counts.items():
        for i in range(count):
            p.produce(topic, value=f"{partition}-{i}".encode(), partition=partition)
    flush_all(p)


def consume_and_commit(bootstrap: str, topic: str, group: str, protocol: str, count: int) -> None:
    """One member of `group` reads `count` records of `topic`, commits, and leaves."""
    c = group_consumer(bootstrap, group, protocol=protocol)
    try:
        c.subscribe([topic])
        got = 0
        deadline = time.monotonic() + SETTLE_S
        while got < count and time.monotonic() < deadline:
            message = c.poll(0.2)
            if message is not None and message.error() is None:
                got += 1
        assert got == count
        c.commit(asynchronous=False)
    finally:
        c.close()


def kafka_tool(bootstrap: str, *args: str) -> tuple[int, str, str]:
    done = kafka_reference.run_tool("kafka-consumer-groups", "--bootstrap-server", bootstrap, *args)
    return done.returncode, done.stdout, done.stderr


def shoal_tool(bootstrap: str, *args: str) -> tuple[int, str, str]:
    done = shoal_cli("consumer-groups", "--bootstrap-server", bootstrap, *args)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


_VOLATILE = {"CONSUMER-ID", "HOST", "COORDINATOR (ID)"}


def shape(output: tuple[int, str, str]) -> tuple[int, list[list[dict[str, str]]], list[str]]:
    """Exit status, the tables (volatile cells replaced by whether they are set) and
    the non-empty stderr lines (logging lines of the JVM dropped)."""
    code, out, err = output
    norm = [
        [
            {k: (v if k not in _VOLATILE else ("-" if v == "-" else "*")) for k, v in r.items()}
            for r in table
        ]
        for table in tables(out)
    ]
    notices = [
        line.strip()
        for line in err.splitlines()
        if line.strip() and not re.match(r"^\[?\d{4}-\d\d-\d\d|^SLF4J|^WARN|^log4j", line)
    ]
    return code, norm, notices


# ---- 1. describing an Empty consumer-protocol group with committed offsets


def test_cli_describes_empty_consumer_protocol_group_as_kafkas_tool(pair: Pair) -> None:
    topic, group = unique("cg-empty"), unique("cg-empty-g")

    def scenario(bootstrap: str) -> dict[str, object]:
        create_topic(bootstrap, topic, partitions=2)
        produce(bootstrap, topic, {0: 3, 1: 2})
        consume_and_commit(bootstrap, topic, group, "consumer", 5)
        views: dict[str, object] = {}
        for view in ((), ("--members",), ("--state",), ("--members", "--verbose")):
            args = ("--describe", "--group", group, *view)
            views[f"kafka{view}"] = shape(kafka_tool(bootstrap, *args))
            views[f"shoal{view}"] = shape(shoal_tool(bootstrap, *args))
        missing = ("--describe", "--group", f"{group}-none")
        code, out, _ = kafka_tool(bootstrap, *missing)
        views["missing"] = (code, out.strip())
        views["shoal missing"] = shape(shoal_tool(bootstrap, *missing))
        return views

    kafka, shoal = pair.run(scenario)
    # Shoal's CLI prints what Kafka's tool prints, against either broker ...
    for observed in (kafka, shoal):
        for key in list(observed):
            if key.startswith("kafka"):
                assert observed["shoal" + key[len("kafka") :]] == observed[key], key
    # ... and both brokers answer the tool alike.
    assert kafka == shoal
    # An unknown group: Kafka's tool reports the admin client's exception and exits 0;
    # Shoal's CLI says so in the tool's older words and exits 1 (on purpose).
    assert kafka["missing"] == (
        0,
        "Error: Executing consumer group command failed due to "
        "org.apache.kafka.common.errors.GroupIdNotFoundException: "
        f"Group {group}-none not found.",
    )
    assert kafka["shoal missing"] == (
        1,
        [],
        [f"Error: Consumer group '{group}-none' does not exist."],
    )
    code, offsets, notices = kafka["kafka()"]  # type: ignore[misc]
    assert code == 0 and notices == [f"Consumer group '{group}' has no active members."]
    assert [(r["PARTITION"], r["CURRENT-OFFSET"], r["LAG"]) for r in offsets[0]] == [
        ("0", "3", "0"),
        ("1", "2", "0"),
    ]
