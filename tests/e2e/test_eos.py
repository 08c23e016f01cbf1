"""Exactly-once consume-transform-produce under SIGKILL: a worker process
(tests/support/eos_child.py: read_committed Consumer in a group, transactional
Producer, `send_offsets_to_transaction`, a commit per small batch) is killed at seeded
random points 20 times and restarted; once a last run has committed the group's offsets
up to the end of the input, each input record is in the output topic exactly once as
read with read_committed. Kills land before, inside and between transactions: the
restarted worker's init_transactions aborts the open one, and the group's committed
offsets (written by the same transactions) say where to resume. Every fifth round the
broker is SIGKILLed and restarted too, under the running worker, which carries on."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaException, TopicPartition

from tests.support.broker import Brokers, wait_until
from tests.support.clients import (
    consumer,
    create_topic,
    flush_all,
    producer,
)
from tests.support.topics import topic_name

RECORDS = 600
PARTITIONS = 2
KILLS = 20
SEED = 20261125
_REPO = Path(__file__).resolve().parents[2]


class _Worker:
    """One run of the eos child; its stdout lines are collected by a thread."""

    def __init__(self, args: list[str]) -> None:
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.eos_child", *args],
            cwd=_REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=os.environ.copy(),
        )
        self._pump = threading.Thread(target=self._read, daemon=True)
        self._pump.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            self.lines.append(raw.decode(errors="replace").rstrip())

    def ready(self) -> bool:
        return "ready" in self.lines or self.process.poll() is not None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        self._pump.join(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()


def _committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The group's stable committed offsets. read_uncommitted: librdkafka otherwise asks
    with require_stable, which waits out the transaction a killed worker left open."""
    c = consumer(bootstrap, group_id=group, isolation_level="read_uncommitted")
    try:
        parts = c.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)
        return {tp.partition: tp.offset for tp in parts}
    finally:
        c.close()


@pytest.mark.slow  # ~50 s: 21 worker runs, 4 broker restarts
def test_consume_transform_produce_survives_20_sigkills(brokers: Brokers) -> None:
    broker = brokers.start("group.initial.rebalance.delay.ms=0")
    bootstrap = broker.bootstrap
    source, sink = topic_name("eos-in"), topic_name("eos-out")
    create_topic(bootstrap, source, partitions=PARTITIONS)
    create_topic(bootstrap, sink, partitions=PARTITIONS)
    p = producer(bootstrap, enable_idempotence=True)
    for i in range(RECORDS):
        p.produce(source, value=b"in-%d" % i, partition=i % PARTITIONS)
    flush_all(p)
    args = [
        "--bootstrap",
        bootstrap,
        "--group",
        topic_name("eos-group"),
        "--input",
        source,
        "--output",
        sink,
        "--transactional-id",
        topic_name("eos-tx"),
        "--batch",
        "3",
        "--pause-ms",
        "50",
    ]
    group = args[3]
    rng = random.Random(SEED)
    outputs: list[str] = []
    for n in range(KILLS):
        worker = _Worker(args)
        try:
            assert wait_until(worker.ready, timeout_s=60), "worker never initialised"
            time.sleep(rng.uniform(0.0, 2.0))
            if n % 5 == 4:  # the broker is SIGKILLed too, under the running worker
                broker.restart()
                time.sleep(rng.uniform(0.5, 2.0))
        finally:
            worker.kill()
            outputs.extend(worker.lines)
    progress = _committed(bootstrap, group, source)
    assert sum(max(o, 0) for o in progress.values()) < RECORDS, "no kill landed mid-run"

    finished = dict.fromkeys(range(PARTITIONS), RECORDS // PARTITIONS)
    last = _Worker(args)
    try:
        done = wait_until(
            lambda: _committed(bootstrap, group, source) == finished,
            timeout_s=90,
            interval_s=0.5,
        )
        assert done, f"last run stalled at {_committed(bootstrap, group, source)}: {last.lines}"
    finally:
        last.kill()
    assert not [line for line in outputs + last.lines if line.startswith("error")]

    values = sorted(_read_all(bootstrap, sink, isolation_level="read_committed"))
    assert values == sorted(b"out-in-%d" % i for i in range(RECORDS))
    # Some kills landed inside a transaction: the log also holds what those wrote,
    # aborted by the next worker's init_transactions.
    assert len(_read_all(bootstrap, sink, isolation_level="read_uncommitted")) > RECORDS


def _read_all(
    bootstrap: str, topic: str, *, isolation_level: str, want: int = RECORDS
) -> list[bytes]:
    """Every value from the start until `want` came (bounded) and one more second, so
    that duplicates would show; read_partitions cannot be used: a read_committed
    reader never sees the final commit marker's offset."""
    c = consumer(bootstrap, isolation_level=isolation_level, auto_offset_reset="earliest")
    values: list[bytes] = []
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        deadline = time.monotonic() + 60
        settle_until: float | None = None
        while time.monotonic() < (settle_until or deadline):
            for message in c.consume(num_messages=1000, timeout=0.2):
                assert message.error() is None, message.error()
                values.append(message.value() or b"")
            if settle_until is None and len(values) >= want:
                settle_until = time.monotonic() + 1
    finally:
        c.close()
    return values


def test_zombie_worker_is_fenced(brokers: Brokers) -> None:
    """A worker that lost its place (a new one with the same transactional.id ran
    init_transactions) can neither commit nor write: its open transaction was aborted,
    and its later Produce with the old epoch is refused, not appended."""
    broker = brokers.start()
    bootstrap = broker.bootstrap
    topic, tid = topic_name("eos-zombie"), topic_name("eos-zombie-tx")
    create_topic(bootstrap, topic, partitions=PARTITIONS)
    zombie = producer(bootstrap, transactional_id=tid)
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(topic, value=b"zombie-open", partition=0)
    flush_all(zombie)  # in the log, its transaction open
    fresh = producer(bootstrap, transactional_id=tid)
    fresh.init_transactions(30)  # fences the zombie, aborts its open transaction
    fresh.begin_transaction()
    fresh.produce(topic, value=b"fresh", partition=0)
    fresh.commit_transaction(30)

    zombie.produce(topic, value=b"zombie-late", partition=0)
    with pytest.raises(KafkaException):
        zombie.commit_transaction(30)

    assert _read_all(bootstrap, topic, isolation_level="read_committed", want=1) == [b"fresh"]
    every = _read_all(bootstrap, topic, isolation_level="read_uncommitted", want=2)
    assert sorted(every) == [b"fresh", b"zombie-open"]
