"""`shoal topics --describe` of a compacted topic next to Kafka 4.2's kafka-topics: on
Kafka the two print the same text (the cleaner view asks Kafka for a key it does not
have, and adds nothing); on a Shoal broker with its HTTP listener, Shoal's tool adds
only its `Cleaner:` lines to what Kafka's tool prints (cli/cleaner_view.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.differential.conftest import unique
from tests.support import kafka_reference
from tests.support.broker import BrokerProcess, running
from tests.support.cli import shoal
from tests.support.clients import create_topic
from tests.support.compaction import produce_keyed

COMPACTED = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"}


@pytest.fixture(scope="module")
def shoal_with_listener(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data = Path(tmp_path_factory.mktemp("shoal-http")) / "data"
    port = kafka_reference.free_port()
    yield from running(data, f"metrics.listener=http://127.0.0.1:{port}")


def both_tools(bootstrap: str, topic: str) -> tuple[str, str]:
    """(kafka-topics' stdout, shoal topics' stdout) of --describe --topic."""
    args = ("--bootstrap-server", bootstrap, "--describe", "--topic", topic)
    theirs = kafka_reference.run_tool("kafka-topics", *args)
    ours = shoal("topics", *args)
    assert theirs.returncode == 0 == ours.returncode, (theirs.stderr, ours.stderr)
    return theirs.stdout, ours.stdout


def test_on_kafka_a_compacted_topic_is_described_as_kafka_does(
    kafka: kafka_reference.KafkaBroker,
) -> None:
    topic = unique("cli-compact")
    create_topic(kafka.bootstrap, topic, partitions=2, config=COMPACTED)
    produce_keyed(kafka.bootstrap, topic, [(b"k%d" % (i % 5), b"v%d" % i) for i in range(50)])
    theirs, ours = both_tools(kafka.bootstrap, topic)
    assert ours == theirs
    assert "cleanup.policy=compact" in ours


def test_on_shoal_only_the_cleaner_lines_are_added(
    kafka: kafka_reference.KafkaBroker, shoal_with_listener: BrokerProcess
) -> None:
    del kafka  # installs the reference (its tools run against Shoal here)
    bootstrap = shoal_with_listener.bootstrap
    topic, plain = unique("cli-compact"), unique("cli-plain")
    create_topic(bootstrap, topic, partitions=2, config=COMPACTED)
    create_topic(bootstrap, plain, config={"retention.ms": "86400000"})
    produce_keyed(bootstrap, topic, [(b"k%d" % (i % 5), b"v%d" % i) for i in range(50)])
    theirs, ours = both_tools(bootstrap, topic)
    added = [line for line in ours.splitlines() if line.startswith("\tCleaner: ")]
    assert [line.split("\t")[1] for line in added] == [
        "Cleaner: Partition: 0",
        "Cleaner: Partition: 1",
    ]
    kept = [line for line in ours.splitlines() if not line.startswith("\tCleaner: ")]
    assert kept == theirs.splitlines()
    theirs, ours = both_tools(bootstrap, plain)
    assert ours == theirs
