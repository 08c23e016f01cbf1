"""`shoal topics --describe` shows a compacted topic's cleaner backlog and progress on
a Shoal broker whose HTTP listener it can find (cli/cleaner_view.py), and nothing
more anywhere else: for a topic that is not compacted, or without the listener, the
output is kafka-topics' (tests/differential/test_cli_cleaner_view.py compares it
with Kafka's own tool)."""

from __future__ import annotations

import re

from tests.support.broker import Brokers
from tests.support.cli import shoal
from tests.support.clients import create_topic
from tests.support.compaction import COMPACTED, latest, produce_keyed, seal, wait_compacted
from tests.support.kafka_reference import free_port
from tests.support.topics import topic_name

CLEANER_LINE = re.compile(
    r"^\tCleaner: Partition: (\d+)\tDirtyBytes: (\d+)\tCleanedBytes: (\d+)\tCleans: (\d+)$"
)


def describe(bootstrap: str, topic: str) -> list[str]:
    done = shoal("topics", "--bootstrap-server", bootstrap, "--describe", "--topic", topic)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout.splitlines()


def test_a_compacted_topic_shows_its_cleaner_figures(brokers: Brokers) -> None:
    broker = brokers.start(
        "log.cleaner.backoff.ms=100", f"metrics.listener=http://127.0.0.1:{free_port()}"
    )
    topic, plain = topic_name("cli-clean"), topic_name("cli-plain")
    create_topic(broker.bootstrap, topic, partitions=2, config=COMPACTED)
    create_topic(broker.bootstrap, plain)
    keys = [b"k-%d" % i for i in range(10)]
    written = produce_keyed(
        broker.bootstrap, topic, [(keys[i % 10], b"v%d" % i) for i in range(500)]
    )
    sealed_at = seal(broker.bootstrap, topic)
    wait_compacted(broker.bootstrap, topic, sealed_at, latest(written))
    lines = describe(broker.bootstrap, topic)
    figures = {}
    for line in lines:
        match = CLEANER_LINE.match(line)
        if match:
            partition, dirty, cleaned, cleans = map(int, match.groups())
            figures[partition] = (dirty, cleaned, cleans)
    assert sorted(figures) == [0, 1], lines
    _dirty, cleaned, cleans = figures[0]
    assert cleans >= 1 and cleaned > 500 * 10
    assert figures[1] == (0, 0, 0)  # nothing was written there
    # Kafka's lines come first, unchanged: the head, then one line per partition
    assert lines[0].startswith(f"Topic: {topic}\t")
    assert [line.split("\t")[2] for line in lines[1:3]] == ["Partition: 0", "Partition: 1"]
    assert not any(CLEANER_LINE.match(line) for line in describe(broker.bootstrap, plain))


def test_without_the_http_listener_nothing_is_added(brokers: Brokers) -> None:
    broker = brokers.start("log.cleaner.backoff.ms=100")
    topic = topic_name("cli-clean-off")
    create_topic(broker.bootstrap, topic, config=COMPACTED)
    produce_keyed(broker.bootstrap, topic, [(b"k", b"v%d" % i) for i in range(20)])
    lines = describe(broker.bootstrap, topic)
    assert len(lines) == 2 and not any("Cleaner" in line for line in lines), lines
