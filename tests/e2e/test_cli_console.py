"""`shoal console-producer` and `shoal console-consumer` as subprocesses against a real
`shoal serve` (the differential module compares them with Kafka's own tools)."""

from __future__ import annotations

import subprocess
import sys

from confluent_kafka import Producer

from tests.support.broker import BrokerProcess
from tests.support.cli import ENV
from tests.support.topics import create_topic, topic_name


def tool(name: str, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "shoal.cli.main", name, *args],
        input=stdin,
        capture_output=True,
        env=ENV,
        timeout=120,
        check=False,
    )


def produce(broker: BrokerProcess, topic: str, lines: bytes, *extra: str) -> None:
    done = tool(
        "console-producer",
        "--bootstrap-server",
        broker.bootstrap,
        "--topic",
        topic,
        *extra,
        stdin=lines,
    )
    assert done.returncode == 0, done.stderr


def consume(broker: BrokerProcess, topic: str, *extra: str) -> subprocess.CompletedProcess[bytes]:
    done = tool(
        "console-consumer",
        "--bootstrap-server",
        broker.bootstrap,
        "--topic",
        topic,
        "--timeout-ms",
        "20000",
        *extra,
    )
    assert done.returncode == 0, done.stderr
    return done


def test_keys_headers_and_nulls_round_trip(broker: BrokerProcess) -> None:
    topic = topic_name("console-rt")
    create_topic(broker.bootstrap, topic, partitions=1)
    lines = "a:1,b:2|k1|v1\nNONE|NONE|NONE\nc:|k3|välue\n".encode()
    reader = ("parse.key=true", "parse.headers=true", "key.separator=|")
    reader += ("headers.delimiter=|", "null.marker=NONE")
    produce(broker, topic, lines, *(a for p in reader for a in ("--reader-property", p)))
    done = consume(
        broker,
        topic,
        "--from-beginning",
        "--max-messages",
        "3",
        "--formatter-property",
        "print.key=true",
        "--formatter-property",
        "print.headers=true",
        "--formatter-property",
        "print.offset=true",
    )
    assert (
        done.stdout
        == (
            "Offset:0\ta:1,b:2\tk1\tv1\nOffset:1\tNO_HEADERS\tnull\tnull\nOffset:2\tc:\tk3\tvälue\n"
        ).encode()
    )
    assert done.stderr.strip().endswith(b"Processed a total of 3 messages")


def test_a_group_resumes_where_it_committed(broker: BrokerProcess) -> None:
    topic, group = topic_name("console-group"), topic_name("console-group-g")
    create_topic(broker.bootstrap, topic, partitions=1)
    produce(broker, topic, b"one\ntwo\n", "--sync")
    first = consume(broker, topic, "--group", group, "--from-beginning", "--max-messages", "2")
    assert first.stdout == b"one\ntwo\n"
    produce(broker, topic, b"three\n")
    again = consume(broker, topic, "--group", group, "--from-beginning", "--max-messages", "1")
    assert again.stdout == b"three\n"  # the group's committed offset, not the beginning


def test_isolation_level_hides_an_open_transaction(broker: BrokerProcess) -> None:
    topic = topic_name("console-txn")
    create_topic(broker.bootstrap, topic, partitions=1)
    produce(broker, topic, b"plain\n")
    transactional = Producer(
        {"bootstrap.servers": broker.bootstrap, "transactional.id": topic_name("console-tx")}
    )
    transactional.init_transactions(30)
    transactional.begin_transaction()
    transactional.produce(topic, b"pending")
    transactional.flush(30)
    uncommitted = consume(broker, topic, "--from-beginning", "--max-messages", "2")
    assert uncommitted.stdout == b"plain\npending\n"  # Kafka's default: read_uncommitted
    committed = consume(
        broker,
        topic,
        "--partition",
        "0",
        "--offset",
        "earliest",
        "--isolation-level",
        "read_committed",
        "--timeout-ms",
        "8000",
    )
    assert committed.stdout == b"plain\n"
    assert b"TimeoutException" in committed.stderr
    transactional.abort_transaction(30)


def test_bad_command_lines_and_version(broker: BrokerProcess) -> None:
    base = ("--bootstrap-server", broker.bootstrap)
    done = tool("console-consumer", *base, "--topic", "t", "--offset", "3")
    assert done.returncode == 2
    assert b"The partition is required when offset is specified." in done.stderr
    done = tool("console-consumer", *base, "--topic", "t", "--partition", "0", "--offset", "-4")
    assert done.returncode == 2 and b"The provided offset value '-4' is incorrect" in done.stderr
    done = tool("console-producer", *base, "--topic", "t", "--compression-codec", "brotli")
    assert done.returncode == 2
    for name in ("console-producer", "console-consumer", "configs", "topics"):
        version = tool(name, "--version")
        assert version.returncode == 0
        assert version.stdout.startswith(b"shoal 0.") and b"Kafka 4.2" in version.stdout
