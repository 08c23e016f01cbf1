"""Online migration of a consumer group between the classic and the consumer
protocol with real clients (confluent-kafka), while records flow.

kafka-python (a classic-only client) also joins a consumer group: the coordinator
assigns it, it commits with its generation, and when the consumer-protocol member
leaves, the group is classic again and the kafka-python consumer takes everything.

Upgrade: three `group.protocol=classic` consumers share a topic; they are restarted
one by one with `group.protocol=consumer`. The first ConsumerGroupHeartbeat turns the
classic group into a consumer group whose classic members keep working (served by
the consumer group, told to rejoin when their assignment changes). Downgrade: the
reverse, until the last consumer-protocol member leaves and the group is classic
again. Each step settles with every partition owned exactly once, and no record is
missed (at-least-once: a partition that moves is re-read from the last commit).
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer

from tests.support.broker import BrokerProcess, Brokers, wait_until
from tests.support.clients import create_topic, flush_all, producer
from tests.support.consumer_groups import PARTITIONS, owners, poll_all, produce_spread, settled
from tests.support.consumer_wire import listed_groups
from tests.support.topics import topic_name

with warnings.catch_warnings():
    # kafka-python 3.0 reads its schemas with deprecated importlib.resources calls.
    warnings.filterwarnings("ignore", r"(read|open)_text is deprecated", DeprecationWarning)
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTopicPartition

BROKER = ("group.consumer.heartbeat.interval.ms=500", "group.initial.rebalance.delay.ms=200")
SETTLE_S = 60


def _consumer(bootstrap: str, group: str, protocol: str, strategy: str) -> Consumer:
    settings: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": protocol,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": True,
        "auto.commit.interval.ms": 100,
        "fetch.wait.max.ms": 100,
        "reconnect.backoff.ms": 20,
        "reconnect.backoff.max.ms": 500,
    }
    if protocol == "classic":
        settings.update(
            {
                "session.timeout.ms": 10_000,
                "heartbeat.interval.ms": 300,
                "partition.assignment.strategy": strategy,
            }
        )
    return Consumer(settings)


class Flow:
    """A producer thread writing to every partition, and the values consumers saw."""

    def __init__(self, broker: BrokerProcess, topic: str) -> None:
        self.broker, self.topic = broker, topic
        self.sent: list[bytes] = []
        self.seen: set[bytes] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, daemon=True)
        self._thread.start()

    def _produce(self) -> None:
        p = producer(self.broker.bootstrap)
        i = 0
        while not self._stop.is_set():
            value = f"{self.topic}-{i}".encode()
            p.produce(self.topic, value=value, partition=i % PARTITIONS)
            self.sent.append(value)
            i += 1
            p.poll(0)
            time.sleep(0.005)
        flush_all(p)

    def poll(self, consumers: list[Consumer]) -> None:
        got: dict[int, list[bytes]] = {}
        poll_all(consumers, got)
        for values in got.values():
            self.seen.update(values)

    def settle(self, consumers: list[Consumer]) -> None:
        """Every partition owned exactly once, for a moment, while polling."""
        assert wait_until(lambda: self.poll(consumers) or settled(consumers), timeout_s=SETTLE_S), (
            owners(consumers)
        )
        end = time.monotonic() + 1
        while time.monotonic() < end:
            self.poll(consumers)
        assert settled(consumers), owners(consumers)

    def finish(self, consumers: list[Consumer]) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

        def everything() -> bool:
            self.poll(consumers)
            return self.seen >= set(self.sent)

        assert wait_until(everything, timeout_s=SETTLE_S), len(set(self.sent) - self.seen)

    def stop(self) -> None:
        self._stop.set()


def _migrate(
    brokers: Brokers, name: str, before: str, after: str, strategy: str = "range,roundrobin"
) -> None:
    broker = brokers.start(*BROKER)
    topic = topic_name(name)
    group = topic_name(f"{name}-g")
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS)
    flow = Flow(broker, topic)

    def member(protocol: str) -> Consumer:
        c = _consumer(broker.bootstrap, group, protocol, strategy)
        c.subscribe([topic])
        return c

    consumers = [member(before) for _ in range(3)]
    group_type: Callable[[], str] = lambda: listed_groups(broker.bootstrap)[group][0]  # noqa: E731
    try:
        flow.settle(consumers)
        assert group_type() == before
        types = []
        for _ in range(3):
            consumers.pop(0).close()
            consumers.append(member(after))
            flow.settle(consumers)
            types.append(group_type())
        # Upgrade: the first consumer-protocol member converts the group. Downgrade:
        # it stays a consumer group until its last consumer-protocol member leaves.
        expected = [after] * 3 if after == "consumer" else [before, before, after]
        assert types == expected
        flow.finish(consumers)
    finally:
        flow.stop()
        for c in consumers:
            c.close()


def test_classic_consumers_restarted_with_the_consumer_protocol(brokers: Brokers) -> None:
    _migrate(brokers, "upgrade", "classic", "consumer")


def test_cooperative_classic_consumers_upgraded(brokers: Brokers) -> None:
    _migrate(brokers, "upgrade-coop", "classic", "consumer", "cooperative-sticky")


def test_consumer_protocol_members_restarted_as_classic(brokers: Brokers) -> None:
    _migrate(brokers, "downgrade", "consumer", "classic")


def test_kafka_python_in_a_consumer_group_then_alone_in_a_classic_one(brokers: Brokers) -> None:
    broker = brokers.start(*BROKER)
    topic = topic_name("kafka-python-mixed")
    group = topic_name("kafka-python-mixed-g")
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS)
    sent = produce_spread(broker.bootstrap, topic, per_partition=5, tag="kp")
    modern = _consumer(broker.bootstrap, group, "consumer", "")
    modern.subscribe([topic])
    classic = KafkaConsumer(
        topic,
        bootstrap_servers=broker.bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        heartbeat_interval_ms=300,
        session_timeout_ms=10_000,
    )
    seen: set[bytes] = set()

    def poll_classic() -> set[int]:
        for records in classic.poll(timeout_ms=100).values():
            seen.update(r.value for r in records)
        return {tp.partition for tp in classic.assignment()}

    def shared() -> bool:
        got: dict[int, list[bytes]] = {}
        poll_all([modern], got)
        for values in got.values():
            seen.update(values)
        mine = poll_classic()
        theirs = {tp.partition for tp in modern.assignment()}
        return (
            bool(mine)
            and bool(theirs)
            and sorted(mine | theirs) == list(range(PARTITIONS))
            and (not mine & theirs)
        )

    try:
        assert wait_until(shared, timeout_s=SETTLE_S), (classic.assignment(), modern.assignment())
        assert listed_groups(broker.bootstrap)[group][0] == "consumer"
        classic.commit()  # generation = its member epoch: accepted
        mine = poll_classic()
        assert all(classic.committed(KafkaTopicPartition(topic, p)) is not None for p in mine)
        modern.close()
        assert wait_until(lambda: poll_classic() == set(range(PARTITIONS)), timeout_s=SETTLE_S)
        assert listed_groups(broker.bootstrap)[group][0] == "classic"

        def everything() -> bool:
            poll_classic()
            return seen >= sent

        assert wait_until(everything, timeout_s=SETTLE_S), len(sent - seen)
    finally:
        classic.close()
