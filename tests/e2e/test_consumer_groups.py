"""Consumer groups with real clients, for both group protocols: confluent-kafka
`Consumer` with `group.protocol=classic` (JoinGroup/SyncGroup, client-side assignors)
and `consumer` (KIP-848: ConsumerGroupHeartbeat, server-side assignment, incremental
reconciliation), and kafka-python `KafkaConsumer(group_id=...)` (classic).

The scenarios both protocols must pass are written once and parametrised: three
consumers share six partitions, each owned exactly once (classic: with each of
librdkafka's assignors); a fourth joins and one leaves while records flow, nothing
is missed and each settled step has one owner per partition; committed offsets
(generation or member epoch) survive SIGKILL and a restart, and the group resumes
exactly there. Classic only: a static member that restarts gets its partitions back
without a rebalance of the others; kafka-python consumers share and commit.
KIP-848 only (static members, regex subscriptions): test_consumer_protocol.py.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, TopicPartition

from tests.support.broker import BrokerProcess, Brokers, running, wait_until
from tests.support.clients import create_topic, flush_all, producer
from tests.support.consumer_groups import (
    FAST_GROUPS,
    PARTITIONS,
    PROTOCOLS,
    group_consumer,
    owners,
    poll_all,
    produce_spread,
    settled,
)
from tests.support.topics import topic_name

with warnings.catch_warnings():
    # kafka-python 3.0 reads its schemas with deprecated importlib.resources calls.
    warnings.filterwarnings("ignore", r"(read|open)_text is deprecated", DeprecationWarning)
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTopicPartition

PER_PARTITION = 10
SETTLE_S = 90.0
SHARING = [
    *(
        pytest.param("classic", a, id=f"classic-{a}")
        for a in ("range", "roundrobin", "cooperative-sticky")
    ),
    pytest.param("consumer", None, id="consumer"),
]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for the scenarios that do not restart it (each uses its own topic
    and group)."""
    yield from running(tmp_path_factory.mktemp("consumer-groups") / "data", *FAST_GROUPS)


@pytest.mark.parametrize(("protocol", "assignor"), SHARING)
def test_three_consumers_share_six_partitions(
    broker: BrokerProcess, protocol: str, assignor: str | None
) -> None:
    name = f"{protocol}-{assignor or 'server'}"
    topic = topic_name(f"share6-{name}")
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS)
    sent = produce_spread(broker.bootstrap, topic, per_partition=PER_PARTITION, tag="a")
    extra = {} if assignor is None else {"partition.assignment.strategy": assignor}
    consumers = [
        group_consumer(broker.bootstrap, f"g-{name}", protocol=protocol, **extra) for _ in range(3)
    ]
    try:
        for c in consumers:
            c.subscribe([topic])
        seen: dict[int, list[bytes]] = {}
        deadline = time.monotonic() + SETTLE_S
        while time.monotonic() < deadline:
            poll_all(consumers, seen)
            received = [v for values in seen.values() for v in values]
            if settled(consumers) and set(received) >= sent:
                break
        owned = owners(consumers)
        assert sorted(p for parts in owned for p in parts) == list(range(PARTITIONS)), owned
        assert all(len(parts) == 2 for parts in owned), owned
        received = [v for values in seen.values() for v in values]
        if protocol == "classic":
            # The three join within the first rebalance's delay: each record once.
            assert sorted(received) == sorted(sent)
        else:
            # Members join one heartbeat apart and, without commits, a partition
            # moving mid-read is read again by its new owner (at-least-once).
            assert set(received) == sent
    finally:
        for c in consumers:
            c.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_fourth_joins_and_one_leaves_under_load(broker: BrokerProcess, protocol: str) -> None:
    """Records keep flowing while the group grows to four and shrinks to three:
    nothing produced is missed, and each settled step has one owner per partition."""
    topic = topic_name(f"churn-{protocol}")
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
        c = group_consumer(
            broker.bootstrap,
            f"g-churn-{protocol}",
            protocol=protocol,
            **{"enable.auto.commit": True, "auto.commit.interval.ms": 100},
        )
        c.subscribe([topic])
        return c

    writer = threading.Thread(target=produce, daemon=True)
    writer.start()
    consumers = [member() for _ in range(3)]
    seen: dict[int, list[bytes]] = {}

    def settle(group: list[Consumer]) -> None:
        assert wait_until(lambda: poll_all(group, seen) or settled(group), timeout_s=SETTLE_S)
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

        assert wait_until(everything, timeout_s=SETTLE_S)
    finally:
        stop.set()
        for c in consumers:
            c.close()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_committed_offsets_survive_sigkill(brokers: Brokers, protocol: str) -> None:
    broker = brokers.start(*FAST_GROUPS)
    topic = topic_name(f"commit-{protocol}")
    group = f"g-commit-{protocol}"
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS)
    first = produce_spread(broker.bootstrap, topic, per_partition=PER_PARTITION, tag="first")
    c = group_consumer(broker.bootstrap, group, protocol=protocol)
    c.subscribe([topic])
    got: dict[int, list[bytes]] = {}
    assert wait_until(
        lambda: poll_all([c], got) or len(got.get(0, [])) >= len(first), timeout_s=SETTLE_S
    )
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
    again = group_consumer(broker.bootstrap, group, protocol=protocol)
    try:
        stored = again.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], 30)
        assert sorted((tp.partition, tp.offset) for tp in stored) == [
            (p, PER_PARTITION) for p in range(PARTITIONS)
        ]
        again.subscribe([topic])
        more: dict[int, list[bytes]] = {}
        assert wait_until(
            lambda: poll_all([again], more) or len(more.get(0, [])) >= len(second),
            timeout_s=SETTLE_S,
        )
        time.sleep(1)  # nothing older may follow
        poll_all([again], more)
        assert sorted(more[0]) == sorted(second)
    finally:
        again.close()


def _static_consumer(bootstrap: str, instance: str, events: list[str]) -> Consumer:
    return group_consumer(
        bootstrap,
        "g-static",
        protocol="classic",
        **{"group.instance.id": instance, "session.timeout.ms": 30_000},
    )


def _subscribe_tracking(c: Consumer, topic: str, events: list[str]) -> None:
    def on_assign(_c: Consumer, parts: list[TopicPartition]) -> None:
        events.append("assign")

    def on_revoke(_c: Consumer, parts: list[TopicPartition]) -> None:
        events.append("revoke")

    c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)


def test_static_member_restart_does_not_rebalance(broker: BrokerProcess) -> None:
    topic = topic_name("classic-static")
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS)
    events_a: list[str] = []
    events_b: list[str] = []
    a = _static_consumer(broker.bootstrap, "a", events_a)
    b = _static_consumer(broker.bootstrap, "b", events_b)
    _subscribe_tracking(a, topic, events_a)
    _subscribe_tracking(b, topic, events_b)
    seen: dict[int, list[bytes]] = {}
    assert wait_until(lambda: poll_all([a, b], seen) or settled([a, b]), timeout_s=60)
    # Let the group settle: no more assignment changes for a while.
    end = time.monotonic() + 3
    while time.monotonic() < end:
        poll_all([a, b], seen)
    before = owners([a, b])
    b_events = list(events_b)
    a.close()  # a static member leaves no LeaveGroup behind
    restarted = _static_consumer(broker.bootstrap, "a", events_a)
    events_restarted: list[str] = []
    _subscribe_tracking(restarted, topic, events_restarted)
    assert wait_until(
        lambda: poll_all([restarted, b], seen) or bool(restarted.assignment()), timeout_s=60
    )
    end = time.monotonic() + 3
    while time.monotonic() < end:
        poll_all([restarted, b], seen)
    try:
        assert owners([restarted, b]) == before
        assert events_b == b_events, "the other static member was rebalanced"
    finally:
        restarted.close()
        b.close()


def test_three_kafka_python_consumers_share_six_partitions(broker: BrokerProcess) -> None:
    """kafka-python's poll blocks in JoinGroup, so each consumer polls in its own thread."""
    topic = topic_name("classic-kp-three")
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS)
    sent = produce_spread(broker.bootstrap, topic, per_partition=PER_PARTITION, tag="kp3")
    stop = threading.Event()
    lock = threading.Lock()
    received: list[bytes] = []
    owned: dict[int, set[int]] = {}

    def run(index: int) -> None:
        c = KafkaConsumer(
            topic,
            bootstrap_servers=broker.bootstrap,
            group_id="g-kafka-python-three",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        try:
            while not stop.is_set():
                batch = c.poll(timeout_ms=100)
                with lock:
                    received.extend(r.value for records in batch.values() for r in records)
                    owned[index] = {tp.partition for tp in c.assignment()}
        finally:
            c.close()

    def settled() -> bool:
        with lock:
            every = [p for parts in owned.values() for p in parts]
            spread = len(owned) == 3 and all(owned.values())
            return (
                spread and sorted(every) == list(range(PARTITIONS)) and len(received) >= len(sent)
            )

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(3)]
    for t in threads:
        t.start()
    try:
        assert wait_until(settled, timeout_s=90), owned
        with lock:
            assert sorted(received) == sorted(sent)
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=60)


def test_kafka_python_consumer_group_commits(broker: BrokerProcess) -> None:
    topic = topic_name("classic-kafka-python")
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS)
    sent = produce_spread(broker.bootstrap, topic, per_partition=3, tag="kp")
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=broker.bootstrap,
        group_id="g-kafka-python",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=1_000,
    )
    try:
        received: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(received) < len(sent) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                received.extend(r.value for r in records)
        assert sorted(received) == sorted(sent)
        consumer.commit()
        for p in range(PARTITIONS):
            assert consumer.committed(KafkaTopicPartition(topic, p)) == 3
    finally:
        consumer.close()


def test_commit_after_a_fence_fails_with_fenced_instance_id(broker: BrokerProcess) -> None:
    """A static member replaced by a newer instance with the same group.instance.id is
    fenced: its next synchronous commit fails with FENCED_INSTANCE_ID (and librdkafka
    makes it the consumer's fatal error), while the new instance owns the partitions."""
    from confluent_kafka import KafkaError, KafkaException

    topic = topic_name("fenced")
    create_topic(broker.bootstrap, topic, partitions=2)
    produce_spread(broker.bootstrap, topic, per_partition=5, tag="f")
    group = topic_name("g-fenced")

    def static() -> Consumer:
        return group_consumer(
            broker.bootstrap,
            group,
            protocol="classic",
            **{"group.instance.id": "only", "session.timeout.ms": 30_000},
        )

    old = static()
    old.subscribe([topic])
    seen: dict[int, list[bytes]] = {}
    assert wait_until(lambda: poll_all([old], seen) or len(old.assignment()) == 2, timeout_s=60)
    new = static()
    new.subscribe([topic])
    try:
        assert wait_until(
            lambda: poll_all([new], seen) or len(new.assignment()) == 2, timeout_s=60
        ), "the new instance did not take over"
        codes: list[int] = []

        def commit_fails() -> bool:
            try:
                old.poll(0.1)
                old.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
            except KafkaException as exc:
                error = exc.args[0]
                codes.append(error.code())
                return bool(error.code() == KafkaError.FENCED_INSTANCE_ID)
            return False

        assert wait_until(commit_fails, timeout_s=60), f"commit errors seen: {codes}"
    finally:
        new.close()
        old.close()
