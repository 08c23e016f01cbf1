"""Consumer groups with the KIP-848 protocol and a real client: confluent-kafka
`Consumer({"group.protocol": "consumer"})` (ConsumerGroupHeartbeat, server-side
assignment, incremental reconciliation).

Three consumers share six partitions, each owned exactly once; a fourth joins and
one leaves while records flow, nothing is missed and each settled step has one owner
per partition; committed offsets (member epoch as generation) survive SIGKILL and a
restart, and the group resumes exactly there; a static member (`group.instance.id`)
restarts into its partitions without a group epoch bump; a regex subscription picks up
a topic created later.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from tests.support.broker import Brokers, wait_until
from tests.support.clients import create_topic, flush_all, producer
from tests.support.consumer_groups import PARTITIONS, owners, poll_all, produce_spread, settled
from tests.support.topics import topic_name

PER_PARTITION = 10
FAST = "group.consumer.heartbeat.interval.ms=500"


def _consumer(bootstrap: str, group: str, **extra: Any) -> Consumer:
    settings: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": "consumer",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "fetch.wait.max.ms": 100,
        "reconnect.backoff.ms": 20,
        "reconnect.backoff.max.ms": 500,
    }
    settings.update(extra)
    return Consumer(settings)


def test_three_consumers_share_six_partitions(brokers: Brokers) -> None:
    broker = brokers.start(FAST)
    topic = topic_name("kip848-three")
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS)
    sent = produce_spread(broker.bootstrap, topic, per_partition=PER_PARTITION, tag="a")
    consumers = [_consumer(broker.bootstrap, "g848-three") for _ in range(3)]
    try:
        for c in consumers:
            c.subscribe([topic])
        seen: dict[int, list[bytes]] = {}
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            poll_all(consumers, seen)
            received = {v for values in seen.values() for v in values}
            if settled(consumers) and received >= sent:
                break
        owned = owners(consumers)
        assert sorted(p for parts in owned for p in parts) == list(range(PARTITIONS)), owned
        assert all(len(parts) == 2 for parts in owned), owned
        # Without commits a partition moving mid-read is read again by its new
        # owner (at-least-once); every record arrives.
        assert {v for values in seen.values() for v in values} == sent
    finally:
        for c in consumers:
            c.close()


def test_a_fourth_joins_and_one_leaves_under_load(brokers: Brokers) -> None:
    broker = brokers.start(FAST)
    topic = topic_name("kip848-churn")
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS)
    stop = threading.Event()
    sent: list[bytes] = []

    def produce() -> None:
        p = producer(broker.bootstrap)
        i = 0
        while not stop.is_set():
            value = f"churn-{i}".encode()
            p.produce(topic, value=value, partition=i % PARTITIONS)
            sent.append(value)
            i += 1
            p.poll(0)
            time.sleep(0.002)
        flush_all(p)

    def member() -> Consumer:
        c = _consumer(
            broker.bootstrap,
            "g848-churn",
            **{"enable.auto.commit": True, "auto.commit.interval.ms": 100},
        )
        c.subscribe([topic])
        return c

    writer = threading.Thread(target=produce, daemon=True)
    writer.start()
    consumers = [member() for _ in range(3)]
    seen: dict[int, list[bytes]] = {}

    def settle(group: list[Consumer]) -> None:
        assert wait_until(lambda: poll_all(group, seen) or settled(group), timeout_s=90)
        end = time.monotonic() + 2
        while time.monotonic() < end:
            poll_all(group, seen)
        assert settled(group), owners(group)

    try:
        settle(consumers)
        consumers.append(member())
        settle(consumers)
        consumers.pop(0).close()
        settle(consumers)
        stop.set()
        writer.join(timeout=60)

        def everything() -> bool:
            poll_all(consumers, seen)
            got = {v for values in seen.values() for v in values}
            return got >= set(sent)

        assert wait_until(everything, timeout_s=90)
    finally:
        stop.set()
        for c in consumers:
            c.close()


def test_committed_offsets_survive_sigkill(brokers: Brokers) -> None:
    broker = brokers.start(FAST)
    topic = topic_name("kip848-commit")
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS)
    first = produce_spread(broker.bootstrap, topic, per_partition=PER_PARTITION, tag="first")
    c = _consumer(broker.bootstrap, "g848-commit")
    c.subscribe([topic])
    got: dict[int, list[bytes]] = {}
    assert wait_until(lambda: poll_all([c], got) or len(got.get(0, [])) >= len(first), timeout_s=90)
    assert sorted(got[0]) == sorted(first)
    committed = c.commit(asynchronous=False)
    assert committed is not None
    assert sorted((tp.partition, tp.offset) for tp in committed) == [
        (p, PER_PARTITION) for p in range(PARTITIONS)
    ]
    c.close()
    broker.kill()
    broker.restart()
    second = produce_spread(broker.bootstrap, topic, per_partition=2, tag="second")
    again = _consumer(broker.bootstrap, "g848-commit")
    try:
        stored = again.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], 30)
        assert sorted((tp.partition, tp.offset) for tp in stored) == [
            (p, PER_PARTITION) for p in range(PARTITIONS)
        ]
        again.subscribe([topic])
        more: dict[int, list[bytes]] = {}
        assert wait_until(
            lambda: poll_all([again], more) or len(more.get(0, [])) >= len(second),
            timeout_s=90,
        )
        time.sleep(1)  # nothing older may follow
        poll_all([again], more)
        assert sorted(more[0]) == sorted(second)
    finally:
        again.close()


def test_static_member_restart_keeps_its_partitions(brokers: Brokers) -> None:
    broker = brokers.start(FAST)
    topic = topic_name("kip848-static")
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS)
    a = _consumer(broker.bootstrap, "g848-static", **{"group.instance.id": "a"})
    b = _consumer(broker.bootstrap, "g848-static", **{"group.instance.id": "b"})
    a.subscribe([topic])
    b.subscribe([topic])
    seen: dict[int, list[bytes]] = {}
    assert wait_until(lambda: poll_all([a, b], seen) or settled([a, b]), timeout_s=90)
    end = time.monotonic() + 3
    while time.monotonic() < end:
        poll_all([a, b], seen)
    before = owners([a, b])
    a.close()  # a static member leaves with epoch -2
    restarted = _consumer(broker.bootstrap, "g848-static", **{"group.instance.id": "a"})
    restarted.subscribe([topic])
    try:
        assert wait_until(
            lambda: poll_all([restarted, b], seen) or settled([restarted, b]), timeout_s=90
        )
        assert owners([restarted, b]) == before
    finally:
        restarted.close()
        b.close()


def test_regex_subscription_picks_up_a_new_topic(brokers: Brokers) -> None:
    broker = brokers.start(FAST)
    prefix = topic_name("kip848rx")
    first, second = f"{prefix}-one", f"{prefix}-two"
    create_topic(broker.bootstrap, first, partitions=2)
    c = _consumer(broker.bootstrap, "g848-regex", **{"topic.metadata.refresh.interval.ms": 500})
    c.subscribe([f"^{prefix}-.*"])

    def owned() -> set[tuple[str, int]]:
        c.poll(0.05)
        return {(tp.topic, tp.partition) for tp in c.assignment()}

    try:
        assert wait_until(lambda: owned() == {(first, 0), (first, 1)}, timeout_s=60)
        create_topic(broker.bootstrap, second, partitions=1)
        assert wait_until(lambda: owned() == {(first, 0), (first, 1), (second, 0)}, timeout_s=60)
    finally:
        c.close()
