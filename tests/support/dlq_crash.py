"""The DLQ crash loop (dead-letter topics, KIP-1191), shared by tests/e2e/test_share_dlq_crash.py
(3 kills) and bench/dlq_crash.py (20 kills).

A ShareConsumer (explicit mode) REJECTs every record of a topic while the broker is
SIGKILLed and restarted on the same data directory and port. A reject persists the
record as ARCHIVING, then its copy is appended to the DLQ topic, then ARCHIVED is
persisted; a kill can land between any two. Records acquired but not yet rejected
come back after a restart (possibly reaching the delivery limit: they then go to the
DLQ for that reason instead). Records are produced in chunks whenever the consumer
runs dry before the kills are done, and every kill waits for fresh rejects since the
last restart, so kills land while rejects and DLQ copies flow. At the end every offset
of the source topic has exactly one DLQ record (header `__dlq.errors.offset`): none
lost, none duplicated.
"""

from __future__ import annotations

import random
import subprocess
import threading
import time
from collections import Counter

from confluent_kafka import AcknowledgeType, KafkaException

from tests.support.broker import BrokerProcess
from tests.support.clients import read_partitions, watermarks
from tests.support.share_consumers import (
    alter_group_configs,
    producer,
    share_consumer,
    share_group,
)
from tests.support.topics import create_topic, topic_name

DRAIN_TIMEOUT_S = 120.0
RESTART_ALLOWANCE_S = 30.0
"""Added to the drain timeout per kill (a restart under load takes several seconds,
and the consumer rejoins after it)."""


def run_dlq_crash_loop(
    broker: BrokerProcess, *, kills: int, chunk: int, seed: int
) -> dict[str, int]:
    """Reject everything on the started `broker` while killing it; `chunk` more
    records are produced whenever the consumer runs dry before the kills are done.
    Asserts nothing was lost or duplicated; returns the figures."""
    bootstrap = broker.bootstrap
    topic = topic_name("dlq-crash")
    dlq = "dlq." + topic_name("crash")
    create_topic(bootstrap, topic)
    create_topic(bootstrap, dlq, configs={"errors.deadletterqueue.group.enable": "true"})
    group = share_group(bootstrap, topic_name("dlq-crash"), lock_ms=2_000, delivery_limit=3)
    alter_group_configs(bootstrap, group, {"errors.deadletterqueue.topic.name": dlq})
    feed = Feed(bootstrap, topic, chunk)
    feed.more()
    killer = Killer(broker, kills=kills, seed=seed)
    timeout_s = DRAIN_TIMEOUT_S + RESTART_ALLOWANCE_S * kills
    consumer = share_consumer(bootstrap, group, [topic], explicit=True, max_poll_records=5)
    rejected = 0
    idle_since = time.monotonic()
    try:
        killer.start()
        deadline = time.monotonic() + timeout_s
        while True:
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"DLQ not complete after {timeout_s} s: {end_offset(bootstrap, dlq)} records, "
                    f"{killer.kills} kills"
                )
            try:
                batch = consumer.poll(0.2)
            except KafkaException:
                continue
            messages = [m for m in batch if m.error() is None]
            for message in messages:
                consumer.acknowledge(message, AcknowledgeType.REJECT)
            if messages:
                idle_since = time.monotonic()
                try:
                    consumer.commit_sync(10)
                except KafkaException:
                    pass  # the broker died: the records come back or were rejected
                rejected += len(messages)
                killer.progress.release()
                continue
            if killer.is_alive():
                if time.monotonic() - idle_since > 1.0:
                    feed.more()  # keep rejects (and DLQ writes) coming for the killer
                    idle_since = time.monotonic()
                continue
            stored = end_offset(bootstrap, topic)
            if stored >= 0 and end_offset(bootstrap, dlq) >= stored:
                break
    finally:
        killer.stop.set()
        killer.join(60)
        consumer.close()
    assert killer.error is None, killer.error
    assert killer.kills == kills
    stored = end_offset(bootstrap, topic)
    end = end_offset(bootstrap, dlq)
    (copied,) = read_partitions(bootstrap, dlq, {0: end}).values()
    offsets = Counter(int(dict(r.headers or [])["__dlq.errors.offset"]) for r in copied)
    duplicated = {o: n for o, n in offsets.items() if n > 1}
    missing = set(range(stored)) - set(offsets)
    assert not duplicated, f"duplicated DLQ records: {duplicated}"
    assert not missing, f"lost DLQ records: {sorted(missing)}"
    assert end == stored
    return {
        "kills": killer.kills,
        "records": stored,
        "dlq_records": end,
        "rejects_sent": rejected,
        "dedupe_hits": broker.log_text().count("after a restart; not written again"),
    }


class Feed:
    """Produces `chunk` records at a time (small batches); a produce cut short by a
    kill is fine: the source topic's end offset says what was stored."""

    def __init__(self, bootstrap: str, topic: str, chunk: int) -> None:
        # Not idempotent: a batch expired by a kill would leave a sequence gap the
        # producer never gets past; what was stored is read from the topic anyway.
        self.producer = producer(
            bootstrap, message_timeout_ms=10_000, linger_ms=0, enable_idempotence=False
        )
        self.topic = topic
        self.chunk = chunk
        self.sent = 0

    def more(self) -> None:
        for _ in range(self.chunk):
            self.producer.produce(self.topic, value=b"v%d" % self.sent)
            self.sent += 1
            if self.sent % 5 == 0:
                self.producer.flush(10)
        self.producer.flush(10)


def end_offset(bootstrap: str, topic: str) -> int:
    """The high watermark of `topic`-0, or -1 while the broker is unreachable."""
    try:
        return watermarks(bootstrap, topic, 1)[0][1]
    except KafkaException:
        return -1


class Killer(threading.Thread):
    """SIGKILLs and restarts the broker `kills` times, each time once the consumer has
    rejected records since the last restart (so the kill lands while rejects and
    DLQ copies are flowing), 0-0.4 s after that."""

    def __init__(self, broker: BrokerProcess, *, kills: int, seed: int) -> None:
        super().__init__(name="killer", daemon=True)
        self.broker = broker
        self.wanted = kills
        self.kills = 0
        self.random = random.Random(seed)
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.progress = threading.Semaphore(0)
        """Released by the consumer loop after each committed poll of rejects."""

    def run(self) -> None:
        try:
            while self.kills < self.wanted and not self.stop.is_set():
                while self.progress.acquire(blocking=False):
                    pass  # rejects from before the restart do not count
                if not self.progress.acquire(timeout=1.0):
                    continue
                if self.stop.wait(self.random.uniform(0.0, 0.4)):
                    break
                self.broker.restart()
                self.kills += 1
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:  # reported by the test
            self.error = exc
