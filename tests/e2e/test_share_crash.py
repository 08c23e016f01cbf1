"""Share-group state survives broker crashes (docs/design/coordinators.md).

A producer streams sequence-numbered records into a 3-partition topic while three
confluent-kafka ShareConsumers (explicit mode) acknowledge them: most ACCEPT, some
REJECT, some RELEASE once then ACCEPT, and "poison" records RELEASE every time until
the delivery limit archives them. Meanwhile the broker is SIGKILLed at random moments
and restarted on the same data directory and port: 5 times in the default suite, 20
times in the test marked slow (the 100-kill mixed-load soak is
`python -m bench.crash_soak --kills 100`).

What must hold at the end:

- every record the producer was told is stored has been accepted or rejected (or,
  for poison records, released at the delivery limit) with the client told so, or
  its final acknowledgement was sent and its outcome never reported (the broker died
  before answering, so the ack may or may not have been applied); for those the
  broker must report nothing left to deliver: once consumption is drained, the lag of
  every partition (DescribeShareGroupOffsets) is 0, so an ack that was lost would have
  brought the record back and a stuck record would fail the test;
- no record whose ACCEPT or REJECT was confirmed to a client (commit_sync answered
  without error for its partition) is ever delivered again, crash or not;
- delivery counts carry across restarts: a poison record's counts never go down,
  reach the limit exactly, and it is never delivered after its release at the limit
  was confirmed.

An acquisition is not persisted (as in Kafka), so a record acquired but not yet
acknowledged when the broker dies comes back with the count it was delivered with;
the counts seen are therefore non-decreasing, not strictly increasing.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field

import pytest
from confluent_kafka import KafkaError, Message, ShareConsumer

from tests.support.broker import BrokerProcess, Brokers
from tests.support.clients import create_topic, producer
from tests.support.share_admin import describe_offsets
from tests.support.share_consumers import SHARE_TEST_BROKER_OVERRIDES, share_consumer, share_group
from tests.support.share_ledger import (
    DELIVERY_LIMIT,
    POISON,
    RELEASE_ONCE,
    ShareLedger,
    acknowledge_poll,
    fate,
)
from tests.support.topics import topic_name

PARTITIONS = 3
CONSUMERS = 3
KILLS = 5
"""SIGKILLs in the default suite; each restart is checked the same way, so more kills
add time, not kinds of check (the slow test and the bench soak run the long series)."""
KILLS_SLOW = 20
LOCK_MS = 5_000
PRODUCE_PER_S = 300
DRAIN_TIMEOUT_S = 180.0


@dataclass
class Ledger(ShareLedger):
    """What the clients were told, in the order they were told it (the share side in
    `ShareLedger`)."""

    produced: dict[int, tuple[int, int]] = field(default_factory=dict)
    """seq -> (partition, offset) the producer was told."""


class Producing(threading.Thread):
    def __init__(self, bootstrap: str, topic: str, ledger: Ledger) -> None:
        super().__init__(name="producer", daemon=True)
        self.topic = topic
        self.ledger = ledger
        self.stop = threading.Event()
        self.sent = 0
        self.errors: list[KafkaError] = []
        self.producer = producer(
            bootstrap,
            enable_idempotence=True,
            message_timeout_ms=300_000,
            reconnect_backoff_ms=20,
            reconnect_backoff_max_ms=500,
        )

    def _on_delivery(self, err: KafkaError | None, message: Message) -> None:
        seq = int(message.value() or b"-1")
        if err is not None:
            self.errors.append(err)
            return
        with self.ledger.lock:
            self.ledger.produced[seq] = (int(message.partition() or 0), int(message.offset() or 0))

    def run(self) -> None:
        interval = 1.0 / PRODUCE_PER_S
        next_at = time.monotonic()
        while not self.stop.is_set():
            value = str(self.sent).encode()
            self.producer.produce(self.topic, value=value, key=value, on_delivery=self._on_delivery)
            self.sent += 1
            self.producer.poll(0)
            next_at += interval
            pause = next_at - time.monotonic()
            if pause > 0:
                time.sleep(pause)
        remaining = self.producer.flush(300)
        assert remaining == 0, f"{remaining} records never confirmed"


class Killing(threading.Thread):
    def __init__(self, broker: BrokerProcess, rng: random.Random, kills: int) -> None:
        super().__init__(name="killer", daemon=True)
        self.broker = broker
        self.rng = rng
        self.target = kills
        self.kills = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for _ in range(self.target):
                time.sleep(self.rng.uniform(0.3, 2.5))
                self.broker.kill()
                self.kills += 1
                self.broker.start()
        except (AssertionError, OSError, RuntimeError) as exc:  # reported by the test
            self.error = exc


def consume_round(consumers: list[ShareConsumer], ledger: Ledger) -> None:
    """One poll per consumer: acknowledge everything received, then commit_sync and
    record what was confirmed."""
    for consumer in consumers:
        acknowledge_poll(consumer, ledger)


def drained(bootstrap: str, group: str, topic: str) -> tuple[bool, dict[int, int]]:
    """Whether the group has nothing left to deliver: every partition's lag is 0."""
    try:
        offsets = describe_offsets(bootstrap, group, {topic: list(range(PARTITIONS))})
    except (OSError, ConnectionError):
        return False, {}
    lags = {partition: lag for partition, (_, _, lag) in offsets.get(topic, {}).items()}
    return len(lags) == PARTITIONS and all(lag == 0 for lag in lags.values()), lags


@pytest.mark.timeout(600)
def test_share_state_survives_repeated_sigkills(brokers: Brokers) -> None:
    survive_sigkills(brokers, KILLS)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_share_state_survives_many_sigkills(brokers: Brokers) -> None:
    survive_sigkills(brokers, KILLS_SLOW)


def survive_sigkills(brokers: Brokers, kills: int) -> None:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    broker = brokers.start(*SHARE_TEST_BROKER_OVERRIDES)
    topic = topic_name("crash")
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS)
    group = share_group(
        broker.bootstrap,
        "crash-group",
        reset="earliest",
        lock_ms=LOCK_MS,
        delivery_limit=DELIVERY_LIMIT,
    )
    ledger = Ledger()
    consumers = [
        share_consumer(broker.bootstrap, group, [topic], explicit=True, max_poll_records=50)
        for _ in range(CONSUMERS)
    ]
    producing = Producing(broker.bootstrap, topic, ledger)
    killing = Killing(broker, rng, kills)
    try:
        producing.start()
        killing.start()
        while killing.is_alive():
            consume_round(consumers, ledger)
        assert killing.error is None, f"restart failed (seed {seed}): {killing.error!r}"
        producing.stop.set()
        producing.join(320)
        assert not producing.is_alive()
        assert not producing.errors, producing.errors[:5]
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        next_check = 0.0
        lags: dict[int, int] = {}
        while True:
            with ledger.lock:
                missing = set(ledger.produced) - ledger.done
                unreported = missing - ledger.unconfirmed
            if not unreported and time.monotonic() >= next_check:
                finished, lags = drained(broker.bootstrap, group, topic)
                if finished:
                    break
                next_check = time.monotonic() + 1.0
            assert time.monotonic() < deadline, (
                f"seed {seed}: {len(missing)} of {len(ledger.produced)} records never "
                f"finished ({len(unreported)} never acknowledged), e.g. "
                f"{sorted(missing)[:10]} (deliveries "
                f"{[ledger.deliveries.get(s) for s in sorted(missing)[:10]]}); lags {lags}"
            )
            consume_round(consumers, ledger)
    finally:
        producing.stop.set()
        for consumer in consumers:
            consumer.close()

    print(
        f"seed {seed}: {len(ledger.produced)} records, {killing.kills} kills, "
        f"{len(ledger.unconfirmed)} final acks whose outcome was never reported"
    )
    assert killing.kills >= kills
    assert len(ledger.produced) == producing.sent
    assert not ledger.violations, f"seed {seed}: {ledger.violations[:10]}"
    poison = [seq for seq in ledger.produced if fate(seq) == POISON]
    assert poison
    for seq in poison:
        counts = ledger.deliveries[seq]
        assert counts == sorted(counts), f"seed {seed}: counts of {seq} went down: {counts}"
        assert max(counts) == DELIVERY_LIMIT, f"seed {seed}: {seq} saw counts {counts}"
    released_once = [seq for seq in ledger.produced if fate(seq) == RELEASE_ONCE]
    assert all(max(ledger.deliveries[s]) >= 2 for s in released_once)
