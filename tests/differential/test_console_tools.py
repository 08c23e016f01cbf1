"""`shoal console-producer` / `shoal console-consumer` and Kafka 4.2's
kafka-console-producer.sh / kafka-console-consumer.sh, on Kafka's broker and on Shoal.

The same lines (keys, headers, a null marker, non-ASCII text) go into one topic
through Kafka's producer and into another through Shoal's; each consumer prints
both topics, and all four prints are the same bytes. Kafka's tools run with their
4.2 option names (`--reader-property`, `--formatter-property`).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.differential.conftest import unique
from tests.support import kafka_reference
from tests.support.cli import ENV
from tests.support.clients import create_topic

INPUT = "h1:v1,h2:v2\tk1\tval1\nNONE\tk2\tval2\nh3:x\tNONE\tNONE\nh4:\tk4\tvälue 4\nh5:e\tk5\t\n"
COUNT = 5
READER = (
    "--reader-property",
    "parse.key=true",
    "--reader-property",
    "parse.headers=true",
    "--reader-property",
    "null.marker=NONE",
)
FORMAT = (
    "--formatter-property",
    "print.key=true",
    "--formatter-property",
    "print.headers=true",
    "--formatter-property",
    "print.partition=true",
    "--formatter-property",
    "print.offset=true",
    "--formatter-property",
    "key.separator=|",
    "--formatter-property",
    "null.literal=<null>",
)
TIMEOUT_MS = "30000"


def shoal_tool(
    tool: str, *args: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "shoal.cli.main", tool, *args],
        input=stdin,
        capture_output=True,
        env=ENV,
        timeout=120,
        check=False,
    )


def kafka_tool(
    tool: str, *args: str, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        kafka_reference.java_command(kafka_reference.TOOLS[tool], *args),
        input=stdin,
        capture_output=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module", params=["kafka", "shoal"])
def bootstrap(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(request.param).bootstrap)


def _consume(by: str, bootstrap: str, topic: str, *extra: str) -> bytes:
    args = ("--bootstrap-server", bootstrap, "--topic", topic, "--timeout-ms", TIMEOUT_MS, *extra)
    if by == "shoal":
        done = shoal_tool("console-consumer", *args)
    else:
        done = kafka_tool("kafka-console-consumer", *args)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    assert b"Processed a total of" in done.stderr
    return done.stdout


def test_each_consumer_prints_what_the_other_prints_of_each_producers_records(
    bootstrap: str,
) -> None:
    by_kafka, by_shoal = unique("console-kafka"), unique("console-shoal")
    for topic in (by_kafka, by_shoal):
        create_topic(bootstrap, topic, partitions=1)
    produce = ("--bootstrap-server", bootstrap, *READER)
    sent = kafka_tool("kafka-console-producer", *produce, "--topic", by_kafka, stdin=INPUT.encode())
    assert sent.returncode == 0, sent.stderr.decode(errors="replace")[-2000:]
    sent = shoal_tool("console-producer", *produce, "--topic", by_shoal, stdin=INPUT.encode())
    assert sent.returncode == 0, sent.stderr.decode(errors="replace")
    read = ("--from-beginning", "--max-messages", str(COUNT), *FORMAT)
    prints = {
        (consumer, topic): _consume(consumer, bootstrap, topic, *read)
        for consumer in ("kafka", "shoal")
        for topic in (by_kafka, by_shoal)
    }
    reference = prints["kafka", by_kafka]
    assert reference.splitlines()[0] == b"Partition:0|Offset:0|h1:v1,h2:v2|k1|val1"
    assert reference.count(b"\n") == COUNT
    assert prints == dict.fromkeys(prints, reference)


def test_a_partition_from_an_offset_with_timestamps(bootstrap: str) -> None:
    """--partition and --offset: both consumers print the same records, timestamps
    too; with print.value=false the last field printed ends the line."""
    topic = unique("console-offset")
    create_topic(bootstrap, topic, partitions=1)
    lines = "".join(f"k{i}|line {i}\n" for i in range(6)).encode()
    sent = shoal_tool(
        "console-producer",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--reader-property",
        "parse.key=true",
        "--reader-property",
        "key.separator=|",
        stdin=lines,
    )
    assert sent.returncode == 0, sent.stderr
    read = ["--partition", "0", "--offset", "3", "--max-messages", "2"]
    for name, value in [
        ("print.timestamp", "true"),
        ("print.offset", "true"),
        ("print.key", "true"),
        ("print.value", "false"),
        ("line.separator", ";"),
    ]:
        read += ["--formatter-property", f"{name}={value}"]
    mine = _consume("shoal", bootstrap, topic, *read)
    theirs = _consume("kafka", bootstrap, topic, *read)
    assert mine == theirs
    assert mine.startswith(b"CreateTime:") and mine.endswith(b"\tOffset:4\tk4;")


def test_compressed_and_acknowledged_one_by_one(bootstrap: str) -> None:
    """Shoal's producer with --compression-codec, acks 1 and --sync; Kafka's consumer
    reads every record."""
    topic = unique("console-lz4")
    create_topic(bootstrap, topic, partitions=1)
    lines = "".join(f"record {i}\n" for i in range(20)).encode()
    sent = shoal_tool(
        "console-producer",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--compression-codec",
        "lz4",
        "--request-required-acks",
        "1",
        "--sync",
        stdin=lines,
    )
    assert sent.returncode == 0, sent.stderr
    got = _consume("kafka", bootstrap, topic, "--from-beginning", "--max-messages", "20")
    assert got == lines


def test_a_line_without_its_key_separator_stops_both_producers(bootstrap: str) -> None:
    topic = unique("console-bad")
    create_topic(bootstrap, topic, partitions=1)
    produce = ("--bootstrap-server", bootstrap, "--topic", topic)
    bad = b"k\tv\nnovalue\n"
    key = ("--reader-property", "parse.key=true")
    theirs = kafka_tool("kafka-console-producer", *produce, *key, stdin=bad)
    mine = shoal_tool("console-producer", *produce, *key, stdin=bad)
    message = b"No key separator found on line number 2: 'novalue'"
    assert message in theirs.stderr and message in mine.stderr
    assert mine.returncode == theirs.returncode == 1


def test_the_share_consumers_print_alike(bootstrap: str) -> None:
    """`shoal console-share-consumer` and kafka-console-share-consumer.sh, each in a
    share group of its own reading from the earliest record, print the same lines
    (one partition: offset order; every record's first delivery)."""
    topic = unique("console-share")
    create_topic(bootstrap, topic, partitions=1)
    lines = "".join(f"k{i}|v{i}\n" for i in range(4)).encode()
    reader = ("--reader-property", "parse.key=true", "--reader-property", "key.separator=|")
    sent = shoal_tool(
        "console-producer",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        *reader,
        stdin=lines,
    )
    assert sent.returncode == 0, sent.stderr
    fields = ("print.key", "print.offset", "print.partition", "print.delivery")
    read = [a for f in fields for a in ("--formatter-property", f"{f}=true")]
    prints = []
    for by in (shoal_tool, kafka_tool):
        group = unique("console-share-g")
        earliest = shoal_tool(
            "configs",
            "--bootstrap-server",
            bootstrap,
            "--alter",
            "--group",
            group,
            "--add-config",
            "share.auto.offset.reset=earliest",
        )
        assert earliest.returncode == 0, earliest.stderr
        name = "console-share-consumer" if by is shoal_tool else "kafka-console-share-consumer"
        done = by(
            name,
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
            "--group",
            group,
            "--max-messages",
            "4",
            "--timeout-ms",
            TIMEOUT_MS,
            *read,
        )
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
        prints.append(done.stdout)
    assert prints[0] == prints[1]
    assert prints[1].splitlines()[0] == b"Partition:0\tOffset:0\tDelivery:1\tk0\tv0"
