"""Dead-letter queue copies survive SIGKILLs exactly once (issue 16, KIP-1191).

A ShareConsumer (explicit mode) REJECTs every record of a topic while the broker is
SIGKILLed at random moments and restarted on the same data directory and port. A
reject persists the record as ARCHIVING, then its copy is appended to the DLQ topic,
then ARCHIVED is persisted; a kill can land between any two. Records acquired but
not yet rejected come back after a restart (possibly reaching the delivery limit:
they then go to the DLQ for that reason instead).

At the end every source offset has exactly one DLQ record (headers
`__dlq.errors.offset`), none is missing, and the share group has nothing left to
deliver. The default run kills 3 times; the slow one 20 times (issue 16's figure).
"""

from __future__ import annotations

import random
import subprocess
import threading
import time
from collections import Counter

import pytest
from confluent_kafka import AcknowledgeType, KafkaException

from tests.support.broker import BrokerProcess, Brokers
from tests.support.clients import read_partitions, watermarks
from tests.support.share_consumers import (
    SHARE_TEST_BROKER_OVERRIDES,
    alter_group_configs,
    produce_values,
    share_consumer,
    share_group,
)
from tests.support.topics import create_topic, topic_name

DRAIN_TIMEOUT_S = 240.0


def run_dlq_crash_loop(brokers: Brokers, *, kills: int, records: int, seed: int) -> dict[str, int]:
    broker = brokers.start(*SHARE_TEST_BROKER_OVERRIDES)
    bootstrap = broker.bootstrap
    topic = topic_name("dlq-crash")
    dlq = "dlq." + topic_name("crash")
    create_topic(bootstrap, topic)
    create_topic(bootstrap, dlq, configs={"errors.deadletterqueue.group.enable": "true"})
    group = share_group(bootstrap, topic_name("dlq-crash"), lock_ms=2_000, delivery_limit=3)
    alter_group_configs(bootstrap, group, {"errors.deadletterqueue.topic.name": dlq})
    # Small batches: many rejects (and so DLQ writes) per second.
    produce_values(bootstrap, topic, (b"v%d" % i for i in range(records)), flush_every=5)
    killer = Killer(broker, kills=kills, seed=seed)
    consumer = share_consumer(bootstrap, group, [topic], explicit=True, max_poll_records=5)
    rejected = 0
    try:
        killer.start()
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        while True:
            if time.monotonic() > deadline:
                raise AssertionError(f"DLQ not complete: {dlq_end(bootstrap, dlq)}/{records}")
            try:
                batch = consumer.poll(0.2)
            except KafkaException:
                continue
            messages = [m for m in batch if m.error() is None]
            for message in messages:
                consumer.acknowledge(message, AcknowledgeType.REJECT)
            if messages:
                try:
                    consumer.commit_sync(10)
                except KafkaException:
                    pass  # the broker died: the records come back or were rejected
                rejected += len(messages)
            if not killer.is_alive() and not messages and dlq_end(bootstrap, dlq) >= records:
                break
    finally:
        killer.stop.set()
        killer.join(60)
        consumer.close()
    assert killer.error is None, killer.error
    assert killer.kills == kills
    end = dlq_end(bootstrap, dlq)
    (copied,) = read_partitions(bootstrap, dlq, {0: end}).values()
    offsets = Counter(int(dict(r.headers or [])["__dlq.errors.offset"]) for r in copied)
    duplicated = {o: n for o, n in offsets.items() if n > 1}
    missing = set(range(records)) - set(offsets)
    assert not duplicated, f"duplicated DLQ records: {duplicated}"
    assert not missing, f"lost DLQ records: {sorted(missing)}"
    assert end == records
    return {
        "kills": killer.kills,
        "records": records,
        "dlq_records": end,
        "rejects_sent": rejected,
        "dedupe_hits": broker.log_text().count("after a restart; not written again"),
    }


def dlq_end(bootstrap: str, dlq: str) -> int:
    try:
        return watermarks(bootstrap, dlq, 1)[0][1]
    except KafkaException:
        return -1


class Killer(threading.Thread):
    """SIGKILLs and restarts the broker `kills` times, 0.3-1.2 s after it is up."""

    def __init__(self, broker: BrokerProcess, *, kills: int, seed: int) -> None:
        super().__init__(name="killer", daemon=True)
        self.broker = broker
        self.wanted = kills
        self.kills = 0
        self.random = random.Random(seed)
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while self.kills < self.wanted and not self.stop.wait(self.random.uniform(0.3, 1.2)):
                self.broker.restart()
                self.kills += 1
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:  # reported by the test
            self.error = exc


def test_sigkills_during_dlq_writes_lose_and_duplicate_nothing(brokers: Brokers) -> None:
    figures = run_dlq_crash_loop(brokers, kills=3, records=40, seed=16)
    print("dlq crash loop:", figures)


@pytest.mark.slow
def test_twenty_sigkills_during_dlq_writes(brokers: Brokers) -> None:
    figures = run_dlq_crash_loop(brokers, kills=20, records=300, seed=1191)
    print("dlq crash loop:", figures)
