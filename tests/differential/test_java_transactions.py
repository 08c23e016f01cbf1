"""A real Java transactional producer (kafka-clients 4.2.2, the reference's own) against
Kafka 4.2 and Shoal: what it sees and what a read_committed consumer and the group's
committed offsets show afterwards, and which transaction protocol it chose.

The producer (tests/differential/java/JavaTransactions.java, compiled with `javac` per
module) runs transactions that commit and abort over two topics (three partitions),
sends offsets to a group inside them (sendOffsetsToTransaction), aborts an empty
transaction, commits offsets only, and is then fenced as a zombie by a second instance
with the same transactional.id, which commits and aborts in its turn, has a batch
refused by the broker (too large for its topic) mid-transaction, aborts and goes on.

The client picks its protocol from the finalized `transaction.version` in ApiVersions
(Kafka's TransactionManager.maybeUpdateTransactionV2Enabled): at 2 (KIP-890 part 2) it
sends no AddPartitionsToTxn nor AddOffsetsToTxn (Produce v12+ and TxnOffsetCommit v5 add
the partitions) and ends with EndTxn v5, which bumps the epoch; at 1 it adds partitions
explicitly and ends with EndTxn v4. The requests it sent are read from its
NetworkClient debug log ("apiKey=..., apiVersion=...").
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from shoal.client import requests
from tests.differential.conftest import Pair, unique
from tests.support import kafka_reference
from tests.support.clients import consumer
from tests.support.topics import create_led_topic
from tests.support.wire import call1, log_end_offset

PROGRAM = Path(__file__).parent / "java" / "JavaTransactions.java"
MAIN_CLASS = "JavaTransactions"
RUN_TIMEOUT_S = 180.0
READ_TIMEOUT_S = 60.0
SMALL_RECORDS = 2_000
"""topicC's max.message.bytes: the program's 4000-byte record is refused by the broker."""
_LOG4J2 = """\
Configuration:
  Appenders:
    Console:
      name: STDERR
      target: SYSTEM_ERR
      PatternLayout:
        pattern: "%p %m (%c)%n"
  Loggers:
    Root:
      level: WARN
      AppenderRef:
        - ref: STDERR
    Logger:
      - name: org.apache.kafka.clients.NetworkClient
        level: DEBUG
        additivity: false
        AppenderRef:
          - ref: STDERR
"""
_REQUEST = re.compile(
    r"Sending (\w+) request with header RequestHeader\(apiKey=\w+, apiVersion=(\d+)"
)
_TXN_APIS = frozenset(
    {"PRODUCE", "ADD_PARTITIONS_TO_TXN", "ADD_OFFSETS_TO_TXN", "TXN_OFFSET_COMMIT", "END_TXN"}
)


@dataclass(frozen=True)
class Program:
    classes: Path
    log_config: Path


@pytest.fixture(scope="module")
def program(
    tmp_path_factory: pytest.TempPathFactory, kafka: kafka_reference.KafkaBroker
) -> Program:
    """JavaTransactions compiled against the reference's kafka-clients (once per source,
    `compile_java`; `kafka` first: it skips the module when there is no reference)."""
    classes = kafka_reference.compile_java(PROGRAM)
    log_config = tmp_path_factory.mktemp("java-transactions") / "log4j2.yaml"
    log_config.write_text(_LOG4J2)
    return Program(classes, log_config)


@dataclass(frozen=True)
class Observed:
    steps: list[str]
    """The program's STEP lines: each step's outcome, exceptions by class name."""
    requests: dict[str, list[int]]
    """Transactional APIs the producers sent -> the versions they sent them at."""
    committed: dict[str, list[str]]
    """"topic-partition" -> the values a read_committed consumer reads, in order (topics
    named A and B)."""
    offsets: dict[str, int]
    """"topic-partition" -> the group's committed offset (topics named A and B)."""
    ends: dict[str, int]
    """"topic-partition" -> the log end offset (records and transaction markers)."""
    transaction: tuple[int, str, int, int]
    """DescribeTransactions of the transactional id after the run: (error, state,
    epoch, timeout ms)."""
    producers: dict[str, list[tuple[str, int, int, int]]]
    """"topic-partition" -> DescribeProducers' active producers: (which of the run's
    producer ids, epoch, last sequence, current transaction start offset)."""


def _run_java(
    program: Program, bootstrap: str, *args: str
) -> tuple[list[str], dict[str, list[int]]]:
    command = [
        "java",
        "-Xmx256m",
        "-XX:TieredStopAtLevel=1",
        f"-Dlog4j2.configurationFile={program.log_config}",
        "-cp",
        os.pathsep.join((str(program.classes), kafka_reference.classpath())),
        MAIN_CLASS,
        bootstrap,
        *args,
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr[-20_000:]}"
    steps = [
        line.removeprefix("STEP ") for line in done.stdout.splitlines() if line.startswith("STEP ")
    ]
    sent: dict[str, set[int]] = {}
    for api, version in _REQUEST.findall(done.stderr):
        if api in _TXN_APIS:
            sent.setdefault(api, set()).add(int(version))
    return steps, {api: sorted(versions) for api, versions in sorted(sent.items())}


def _read_committed(bootstrap: str, partitions: list[tuple[str, int]]) -> dict[str, list[str]]:
    """Every record a read_committed consumer reads from the start to the end."""
    reader = consumer(bootstrap, isolation_level="read_committed", enable_partition_eof=True)
    seen: dict[str, list[str]] = {f"{t}-{p}": [] for t, p in partitions}
    at_end: set[str] = set()
    try:
        reader.assign([TopicPartition(t, p, 0) for t, p in partitions])
        deadline = time.monotonic() + READ_TIMEOUT_S
        while len(at_end) < len(partitions):
            assert time.monotonic() < deadline, f"read_committed stalled: {seen}, at end {at_end}"
            for message in reader.consume(num_messages=100, timeout=0.2):
                key = f"{message.topic()}-{message.partition()}"
                error = message.error()
                if error is not None and error.code() == KafkaError._PARTITION_EOF:
                    at_end.add(key)
                elif error is not None:
                    raise KafkaException(error)
                else:
                    at_end.discard(key)
                    value = message.value()
                    assert value is not None
                    seen[key].append(value.decode())
    finally:
        reader.close()
    return seen


def _group_offsets(bootstrap: str, group: str, partitions: list[tuple[str, int]]) -> dict[str, int]:
    reader = consumer(bootstrap, group_id=group)
    try:
        answers = reader.committed([TopicPartition(t, p) for t, p in partitions], timeout=30)
    finally:
        reader.close()
    return {f"{a.topic}-{a.partition}": a.offset for a in answers}


def _java_transactions(bootstrap: str, program: Program) -> Observed:
    topic_a, topic_b, topic_c = (unique(f"java-txn-{n}") for n in "abc")
    group, tid, eos_group = unique("java-txn-group"), unique("java-txn-id"), unique("java-eos")
    create_led_topic(bootstrap, topic_a, partitions=2)
    create_led_topic(bootstrap, topic_b, partitions=1)
    create_led_topic(bootstrap, topic_c, configs={"max.message.bytes": str(SMALL_RECORDS)})
    steps, sent = _run_java(program, bootstrap, tid, topic_a, topic_b, group, topic_c, eos_group)
    partitions = [(topic_a, 0), (topic_a, 1), (topic_b, 0), (topic_c, 0)]
    committed = _read_committed(bootstrap, partitions)
    offsets = _group_offsets(bootstrap, group, partitions[:2])
    eos_offsets = _group_offsets(bootstrap, eos_group, partitions[:2])
    offsets.update({f"eos {k}": v for k, v in eos_offsets.items()})
    names = {topic_a: "A", topic_b: "B", topic_c: "C"}
    ends = {f"{t}-{p}": log_end_offset(bootstrap, t, p) for t, p in partitions}
    producers = _producers(bootstrap, partitions)
    (described,) = call1(bootstrap, requests.describe_transactions([tid])).transaction_states
    return Observed(
        steps=steps,
        requests=sent,
        committed={_renamed(k, names): v for k, v in committed.items()},
        offsets={_renamed(k, names): v for k, v in offsets.items()},
        ends={_renamed(k, names): v for k, v in ends.items()},
        producers={_renamed(k, names): v for k, v in producers.items()},
        transaction=(
            int(described.error_code),
            described.transaction_state,
            int(described.producer_epoch),
            int(described.transaction_timeout.total_seconds() * 1000),
        ),
    )


def _producers(
    bootstrap: str, partitions: list[tuple[str, int]]
) -> dict[str, list[tuple[str, int, int, int]]]:
    """The partitions' producer state (the log's view of the epochs the markers
    carried); producer ids named in the order they first appear."""
    response = call1(bootstrap, requests.describe_producers(partitions))
    names: dict[int, str] = {}
    seen: dict[str, list[tuple[str, int, int, int]]] = {}
    for topic in response.topics:
        for partition in topic.partitions:
            assert partition.error_code == 0, partition
            seen[f"{topic.name}-{partition.partition_index}"] = [
                (
                    names.setdefault(int(p.producer_id), f"producer {len(names)}"),
                    int(p.producer_epoch),
                    int(p.last_sequence),
                    int(p.current_txn_start_offset),
                )
                for p in sorted(partition.active_producers, key=lambda p: int(p.producer_id))
            ]
    return dict(sorted(seen.items()))


def _renamed(key: str, names: dict[str, str]) -> str:
    prefix, _, key = key.rpartition(" ")
    topic, partition = key.rsplit("-", 1)
    return f"{prefix} {names[topic]}-{partition}".lstrip()


def test_java_transactional_producer(pair: Pair, program: Program) -> None:
    kafka, shoal = pair.run(_java_transactions, program)

    # what the producer and its readers see: the same on both brokers
    assert kafka.steps == [
        "init ok",
        "t1 committed",
        "t2 aborted",
        "t3 committed",
        "t4 aborted",
        "t5 committed",
        "second-init ok",
        # the zombie's Produce (v13) and EndTxn (v5) at its old epoch
        "zombie-send InvalidProducerEpochException",
        "zombie-commit InvalidProducerEpochException",
        "t7 committed",
        "t8 aborted",
        "t9-large RecordTooLargeException",
        "t9-commit RecordTooLargeException",
        "t9 aborted",
        "t10 committed",
        "eos-read t1-a0,t1-a1,t3-a1,t7-a0",
        "eos committed",
    ], kafka.steps
    assert shoal.steps == kafka.steps
    assert kafka.committed == {
        "A-0": ["t1-a0", "t7-a0"],
        "A-1": ["t1-a1", "t3-a1"],
        "B-0": ["t1-b0", "t7-b0"],
        "C-0": ["t10-c0", "eos-t1-a0", "eos-t1-a1", "eos-t3-a1", "eos-t7-a0"],
    }
    assert shoal.committed == kafka.committed
    # the loop's offsets: its consumer's positions, past the transactions' markers
    assert kafka.offsets == {"A-0": 20, "A-1": 21, "eos A-0": 8, "eos A-1": 6}
    assert shoal.offsets == kafka.offsets
    # every record and marker in the same place: the same partitions were in each
    # transaction (the refused batch's partition still gets t9's abort marker)
    assert shoal.ends == kafka.ends
    assert kafka.ends["C-0"] == 9  # t9-c0 and t9's abort marker, t10 and eos with theirs
    # the producer state the markers left: each EndTxn v5's bumped epoch, no sequence
    assert shoal.producers == kafka.producers
    assert kafka.producers["C-0"] == [("producer 0", 11, -1, -1)]
    assert shoal.transaction == kafka.transaction
    assert kafka.transaction == (0, "CompleteCommit", 11, 60_000)

    # Kafka 4.2 finalizes transaction.version 2: the client uses KIP-890 part 2
    assert "ADD_PARTITIONS_TO_TXN" not in kafka.requests, kafka.requests
    assert "ADD_OFFSETS_TO_TXN" not in kafka.requests, kafka.requests
    assert kafka.requests["END_TXN"] == [5], kafka.requests
    assert kafka.requests["TXN_OFFSET_COMMIT"] == [5], kafka.requests
    assert min(kafka.requests["PRODUCE"]) >= 12, kafka.requests

    # Shoal finalizes it too (server/metadata/features.py): the same requests at the same versions
    assert shoal.requests == kafka.requests
