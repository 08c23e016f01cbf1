"""MirrorMaker 2 copying from Shoal to Kafka: the way off one machine.

MM2 runs in dedicated mode (org.apache.kafka.connect.mirror.MirrorMaker, resolved from
tests/ecosystem/mm2/pom.xml) with the flow shoal->kafka, the default replication policy
(a topic `t` on Shoal becomes `shoal.t` on Kafka), topic config sync and consumer group
offset sync on, from a real `shoal serve` to the reference Kafka 4.2 broker.

MM2 keeps some of its own topics on Shoal: the offset syncs (`mm2-offset-syncs.kafka
.internal`), the `heartbeats` its kafka->shoal heartbeat connector writes (copied back
to Kafka as `shoal.heartbeats`) and the Connect worker topics of that flow
(`mm2-{configs,offsets,status}.kafka.internal`, compacted). The checkpoints go to Kafka
(`shoal.checkpoints.internal`).

What is checked:
- every record (partition, key, value, headers, timestamp) arrives, in order;
- topic configs are synced at creation and afterwards (retention.ms, cleanup.policy);
- a consumer group's committed offsets (at the end of the topic) are translated exactly,
  and a consumer on Kafka with that group reads just what came after;
- through a SIGKILL of the Shoal broker mid-copy and its restart, MM2 carries on and
  Kafka ends with every record of Shoal's log, in order: at least once, i.e. Kafka's
  copy of each partition, with repeats of a record already copied removed, equals
  Shoal's partition.

A topic that may serve as a share group's dead-letter queue on Shoal has
`errors.deadletterqueue.group.enable=true` (KIP-1191, from a later Kafka), a config
Kafka 4.2 rejects: MM2 could neither create its copy nor sync its configs. The MM2
config adds that name to `config.properties.exclude` (docs/reference/ecosystem.md), and
`dlq.orders` checks it (without the exclusion MM2 cannot create its copy: the one
Kafka auto-creates on the first write never gets the source's retention.ms).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
)

from tests.support import kafka_reference
from tests.support.broker import BrokerProcess, Brokers, running, wait_until
from tests.support.clients import (
    Consumed,
    create_topic,
    flush_all,
    make_records,
    producer,
    read_partitions,
)

POM = Path(__file__).resolve().parent / "mm2" / "pom.xml"


def mm2_jars() -> Path:
    """MirrorMaker 2's jars, resolved from `POM` into ~/.cache/shoal/mm2-<version> once."""
    return kafka_reference.install_pom(
        POM,
        kafka_reference.cache_root() / f"mm2-{kafka_reference.KAFKA_VERSION}",
        what="MirrorMaker 2",
    )


MM2_MAIN = "org.apache.kafka.connect.mirror.MirrorMaker"
GROUP = "billing"

# Kafka's default exclusions (DefaultConfigPropertyFilter) plus the KIP-1191 topic
# config that Shoal lists and Kafka 4.2 does not know: regexes, their backslashes
# doubled for the .properties file.
CONFIG_EXCLUDE = (
    r"follower\\.replication\\.throttled\\.replicas, leader\\.replication\\.throttled\\.replicas, "
    r"message\\.timestamp\\.difference\\.max\\.ms, message\\.timestamp\\.type, "
    r"unclean\\.leader\\.election\\.enable, min\\.insync\\.replicas, "
    r"errors\\.deadletterqueue\\.group\\.enable"
)


def mm2_properties(
    shoal: str,
    kafka: str,
    *,
    aliases: tuple[str, str] = ("shoal", "kafka"),
    topics: str = "orders, customers, events, dlq.orders",
    groups: str = GROUP,
    replication_factor: int = 1,
    extra: str = "",
) -> str:
    """The MM2 config of a flow from Shoal to Kafka, their cluster aliases `aliases`;
    `replication_factor` of every topic MM2 creates (-1: each cluster's default)."""
    rf = replication_factor
    source, target = aliases
    return f"""\
clusters = {source}, {target}
{source}.bootstrap.servers = {shoal}
{target}.bootstrap.servers = {kafka}
{source}->{target}.enabled = true
{source}->{target}.topics = {topics}
{source}->{target}.groups = {groups}
{extra}

replication.factor = {rf}
checkpoints.topic.replication.factor = {rf}
heartbeats.topic.replication.factor = {rf}
offset-syncs.topic.replication.factor = {rf}
offset.storage.replication.factor = {rf}
status.storage.replication.factor = {rf}
config.storage.replication.factor = {rf}

sync.topic.configs.enabled = true
sync.topic.configs.interval.seconds = 2
config.properties.exclude = {CONFIG_EXCLUDE}
sync.group.offsets.enabled = true
sync.group.offsets.interval.seconds = 1
emit.checkpoints.interval.seconds = 1
emit.heartbeats.interval.seconds = 1
refresh.topics.interval.seconds = 2
refresh.groups.interval.seconds = 2
offset.lag.max = 0
"""


class MirrorMaker:
    """MM2 in dedicated mode as a JVM subprocess, its log in `log_path`."""

    def __init__(self, properties: Path, log_path: Path) -> None:
        self.properties = properties
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> MirrorMaker:
        command = kafka_reference.java_command(
            MM2_MAIN,
            str(self.properties),
            heap="-Xmx512m",
            log_level="INFO",
            class_path=kafka_reference.classpath(mm2_jars()),
        )
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=log)
        return self

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        if self.alive:
            assert self.process is not None
            self.process.kill()
            self.process.wait(30)

    def log_tail(self, lines: int = 60) -> str:
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(line for line in text if " WARN " in line or " ERROR " in line)[
            -8000:
        ] or "\n".join(text[-lines:])


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kafka_reference.KafkaBroker]:
    try:
        kafka_reference.install()
        mm2_jars()
    except kafka_reference.ReferenceUnavailable as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no Kafka reference or MirrorMaker 2: {exc}")
    with kafka_reference.running(tmp_path_factory.mktemp("kafka") / "data") as broker:
        yield broker


@pytest.fixture(scope="module")
def shoal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(
        tmp_path_factory.mktemp("shoal") / "data", "group.initial.rebalance.delay.ms=0"
    )


def start_mirror(home: Path, properties: str) -> MirrorMaker:
    home.mkdir(parents=True, exist_ok=True)
    (home / "mm2.properties").write_text(properties)
    return MirrorMaker(home / "mm2.properties", home / "mm2.log").start()


@pytest.fixture(scope="module")
def mirror(
    shoal: BrokerProcess,
    kafka: kafka_reference.KafkaBroker,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[MirrorMaker]:
    mm2 = start_mirror(
        tmp_path_factory.mktemp("mm2"), mm2_properties(shoal.bootstrap, kafka.bootstrap)
    )
    try:
        yield mm2
    finally:
        mm2.kill()


def topic_configs(bootstrap: str, topic: str) -> dict[str, str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource("topic", topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=30)
    return {name: entry.value for name, entry in entries.items()}


def high_watermarks(bootstrap: str, topic: str) -> dict[int, int] | None:
    """Each partition's log end, or None while the topic does not exist."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    found = admin.list_topics(topic, timeout=10).topics.get(topic)
    if found is None or found.error is not None or not found.partitions:
        return None
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    try:
        return {
            p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
            for p in found.partitions
        }
    finally:
        c.close()


def wait_for_copy(kafka: str, topic: str, want: dict[int, int], *, timeout_s: float) -> bool:
    def copied() -> bool:
        ends = high_watermarks(kafka, topic)
        return ends is not None and all(ends.get(p, 0) >= n for p, n in want.items())

    return wait_until(copied, timeout_s=timeout_s, interval_s=0.5)


def committed(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """The group's committed offsets (none while the group does not exist)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    future = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group]
    return {
        (tp.topic, tp.partition): tp.offset
        for tp in future.result(timeout=30).topic_partitions
        if tp.offset >= 0
    }


def contents(records: dict[int, list[Consumed]]) -> dict[int, list[tuple[object, ...]]]:
    """What MM2 must carry per partition: key, value, headers, timestamp and its type."""
    return {
        p: [(r.key, r.value, r.headers, r.timestamp_type, r.timestamp_ms) for r in rs]
        for p, rs in records.items()
    }


def test_records_configs_and_group_offsets_reach_kafka(
    shoal: BrokerProcess, kafka: kafka_reference.KafkaBroker, mirror: MirrorMaker
) -> None:
    create_topic(shoal.bootstrap, "orders", partitions=3, config={"retention.ms": "86400000"})
    create_topic(shoal.bootstrap, "customers", config={"cleanup.policy": "compact"})
    create_topic(
        shoal.bootstrap,
        "dlq.orders",
        config={"errors.deadletterqueue.group.enable": "true", "retention.ms": "7200000"},
    )
    p = producer(shoal.bootstrap, enable_idempotence=True)
    sent = make_records(300, seed=7)
    for i, r in enumerate(sent):
        p.produce(
            "orders", r.value, r.key, partition=i % 3, headers=r.headers, timestamp=r.timestamp_ms
        )
    for i in range(60):
        p.produce("customers", b"address-%d" % i, b"customer-%d" % (i % 12))
    for i in range(5):
        p.produce("dlq.orders", b"rejected-%d" % i)
    flush_all(p)
    ends = {0: 100, 1: 100, 2: 100}
    # The group has read everything so far (its offsets are each partition's end).
    c = Consumer({"bootstrap.servers": shoal.bootstrap, "group.id": GROUP})
    c.commit(offsets=[TopicPartition("orders", q, n) for q, n in ends.items()], asynchronous=False)
    c.close()

    assert wait_for_copy(kafka.bootstrap, "shoal.orders", ends, timeout_s=120), mirror.log_tail()
    assert wait_for_copy(kafka.bootstrap, "shoal.customers", {0: 60}, timeout_s=60), (
        mirror.log_tail()
    )
    assert wait_for_copy(kafka.bootstrap, "shoal.dlq.orders", {0: 5}, timeout_s=60), (
        mirror.log_tail()
    )
    source = read_partitions(shoal.bootstrap, "orders", ends)
    target = read_partitions(kafka.bootstrap, "shoal.orders", ends)
    assert contents(target) == contents(source)
    assert sum(len(rs) for rs in source.values()) == 300
    assert contents(read_partitions(kafka.bootstrap, "shoal.customers", {0: 60})) == contents(
        read_partitions(shoal.bootstrap, "customers", {0: 60})
    )

    # Topic configs: copied when MM2 created the topics, then kept in sync.
    assert topic_configs(kafka.bootstrap, "shoal.orders")["retention.ms"] == "86400000"
    assert topic_configs(kafka.bootstrap, "shoal.customers")["cleanup.policy"] == "compact"
    # (Kafka rejects the KIP-1191 config: without its exclusion MM2 cannot create the
    # copy, and the one Kafka creates on the first write never gets retention.ms.)
    assert topic_configs(kafka.bootstrap, "shoal.dlq.orders")["retention.ms"] == "7200000"
    admin = AdminClient({"bootstrap.servers": shoal.bootstrap})
    change = ConfigResource(
        "topic",
        "orders",
        incremental_configs=[
            ConfigEntry("retention.ms", "43200000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([change])[change].result(timeout=30)
    assert wait_until(
        lambda: topic_configs(kafka.bootstrap, "shoal.orders")["retention.ms"] == "43200000",
        timeout_s=60,
        interval_s=0.5,
    ), mirror.log_tail()

    # The group's offsets, translated through the offset syncs and checkpoints.
    want = {("shoal.orders", q): n for q, n in ends.items()}
    assert wait_until(
        lambda: committed(kafka.bootstrap, GROUP) == want, timeout_s=90, interval_s=0.5
    ), (committed(kafka.bootstrap, GROUP), mirror.log_tail())

    # More orders; a consumer of the group on Kafka reads exactly those.
    later = [b"later-%d" % i for i in range(30)]
    for i, value in enumerate(later):
        p.produce("orders", value, partition=i % 3)
    flush_all(p)
    more = {q: n + 10 for q, n in ends.items()}
    assert wait_for_copy(kafka.bootstrap, "shoal.orders", more, timeout_s=60), mirror.log_tail()
    resumed = Consumer(
        {
            "bootstrap.servers": kafka.bootstrap,
            "group.id": GROUP,
            "auto.offset.reset": "earliest",  # were the offsets not synced, all 330
            "enable.auto.commit": False,
        }
    )
    got: list[bytes] = []
    try:
        resumed.subscribe(["shoal.orders"])
        deadline = time.monotonic() + 60
        while len(got) < len(later) and time.monotonic() < deadline:
            for message in resumed.consume(100, 0.5):
                assert message.error() is None, message.error()
                got.append(message.value())
        for message in resumed.consume(100, 2.0):  # nothing more
            got.append(message.value())
    finally:
        resumed.close()
    assert sorted(got) == sorted(later)

    # MM2's own topics on Shoal work: offset syncs, heartbeats and the Connect worker
    # topics of the kafka->shoal flow, all compacted; the heartbeats written on Shoal
    # come back to Kafka as shoal.heartbeats; checkpoints on Kafka.
    for name in (
        "mm2-offset-syncs.kafka.internal",
        "heartbeats",
        "mm2-configs.kafka.internal",
        "mm2-status.kafka.internal",
    ):
        assert topic_configs(shoal.bootstrap, name)["cleanup.policy"] == "compact", name
        shoal_ends = high_watermarks(shoal.bootstrap, name)
        assert shoal_ends is not None and sum(shoal_ends.values()) > 0, name
    assert topic_configs(shoal.bootstrap, "mm2-offsets.kafka.internal")["cleanup.policy"] == (
        "compact"
    )
    for name in ("shoal.heartbeats", "shoal.checkpoints.internal"):
        kafka_ends = high_watermarks(kafka.bootstrap, name)
        assert kafka_ends is not None and sum(kafka_ends.values()) > 0, name
    assert mirror.alive


def test_copy_survives_a_shoal_crash(
    shoal: BrokerProcess, kafka: kafka_reference.KafkaBroker, mirror: MirrorMaker
) -> None:
    create_topic(shoal.bootstrap, "events", partitions=2)
    total = 6000
    acked: list[bytes] = []
    failed: list[str] = []

    def on_delivery(error: object, message: object) -> None:
        if error is not None:
            failed.append(str(error))
        else:
            acked.append(message.value())  # type: ignore[attr-defined]

    copying = threading.Event()

    def produce_steadily() -> None:
        p = producer(shoal.bootstrap, enable_idempotence=True, message_timeout_ms=120_000)
        for i in range(total):
            if i == 500:
                flush_all(p)
                copying.wait(120)  # until MM2 has started on the topic
            p.produce("events", b"event-%05d" % i, b"k%d" % (i % 40), on_delivery=on_delivery)
            if i % 100 == 99:
                p.poll(0)
                time.sleep(0.08)  # about 1,000 records a second
        p.flush(150)

    writer = threading.Thread(target=produce_steadily)
    writer.start()
    try:
        # MM2 copies while records keep coming; half-way the Shoal broker dies and
        # comes back (on the same port and data directory).
        assert wait_until(
            lambda: sum((high_watermarks(kafka.bootstrap, "shoal.events") or {}).values()) > 0,
            timeout_s=90,
            interval_s=0.2,
        ), mirror.log_tail()
        copying.set()
        assert wait_until(lambda: len(acked) >= total // 2, timeout_s=60, interval_s=0.05)
        shoal.kill()
        copied_at_crash = sum((high_watermarks(kafka.bootstrap, "shoal.events") or {}).values())
        shoal.start()
    finally:
        copying.set()
        writer.join(180)
    assert not failed, failed[:5]
    assert len(acked) == total
    assert copied_at_crash < total, "the crash was not mid-copy"

    source_ends = high_watermarks(shoal.bootstrap, "events")
    assert source_ends is not None
    source = read_partitions(shoal.bootstrap, "events", source_ends)
    assert sorted(r.value for rs in source.values() for r in rs if r.value) == sorted(acked)

    def deduplicated() -> dict[int, list[bytes | None]] | None:
        ends = high_watermarks(kafka.bootstrap, "shoal.events")
        if ends is None or sum(ends.values()) < total:
            return None
        out: dict[int, list[bytes | None]] = {}
        for q, rs in read_partitions(kafka.bootstrap, "shoal.events", ends).items():
            seen: set[bytes | None] = set()
            out[q] = []
            for r in rs:
                if r.value not in seen:
                    seen.add(r.value)
                    out[q].append(r.value)
        return out

    want = {q: [r.value for r in rs] for q, rs in source.items()}
    assert wait_until(lambda: deduplicated() == want, timeout_s=120, interval_s=1.0), (
        mirror.log_tail()
    )
    assert mirror.alive


def test_identity_replication_policy_keeps_names(
    brokers: Brokers, kafka: kafka_reference.KafkaBroker, tmp_path: Path
) -> None:
    """IdentityReplicationPolicy: `ledger` on Shoal is `ledger` on Kafka and the group's
    offsets are for `ledger`, so clients move by changing only their bootstrap servers.
    Its own Shoal broker and cluster aliases (edge, main), beside the module's MM2; every
    replication factor -1 (each cluster's default), as the documented config has it."""
    shoal = brokers.start("group.initial.rebalance.delay.ms=0")
    create_topic(shoal.bootstrap, "ledger", partitions=2, config={"retention.ms": "3600000"})
    p = producer(shoal.bootstrap, enable_idempotence=True)
    for i, r in enumerate(make_records(100, seed=11)):
        p.produce(
            "ledger", r.value, r.key, partition=i % 2, headers=r.headers, timestamp=r.timestamp_ms
        )
    flush_all(p)
    ends = {0: 50, 1: 50}
    c = Consumer({"bootstrap.servers": shoal.bootstrap, "group.id": "ledger-readers"})
    c.commit(offsets=[TopicPartition("ledger", q, n) for q, n in ends.items()], asynchronous=False)
    c.close()

    mm2 = start_mirror(
        tmp_path / "mm2",
        mm2_properties(
            shoal.bootstrap,
            kafka.bootstrap,
            aliases=("edge", "main"),
            topics="ledger",
            groups="ledger-readers",
            replication_factor=-1,  # as docs/reference/ecosystem.md shows it
            extra="replication.policy.class = "
            "org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n",
        ),
    )
    try:
        assert wait_for_copy(kafka.bootstrap, "ledger", ends, timeout_s=120), mm2.log_tail()
        assert contents(read_partitions(kafka.bootstrap, "ledger", ends)) == contents(
            read_partitions(shoal.bootstrap, "ledger", ends)
        )
        assert topic_configs(kafka.bootstrap, "ledger")["retention.ms"] == "3600000"
        want = {("ledger", q): n for q, n in ends.items()}
        assert wait_until(
            lambda: committed(kafka.bootstrap, "ledger-readers") == want,
            timeout_s=90,
            interval_s=0.5,
        ), (committed(kafka.bootstrap, "ledger-readers"), mm2.log_tail())
        assert mm2.alive
    finally:
        mm2.kill()
