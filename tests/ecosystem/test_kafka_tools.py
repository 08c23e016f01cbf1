"""Kafka 4.2's own command-line tools, unmodified, against a real `shoal serve`.

Every tool runs in one JVM for the module (`JavaSession`: the tools' main classes one
after another, Kafka's Exit intercepted as its own tool tests do); each test checks
what the tool printed and then the broker's real state through other clients
(confluent-kafka's admin, producers and consumers, Shoal's wire client), so a tool that
printed success over an unchanged broker fails.

The broker: a PLAINTEXT listener (User:ANONYMOUS, a super user) for the tools and the
checks, and a SASL_PLAINTEXT listener (PLAIN user alice from its JAAS config, SCRAM
users made by kafka-configs) where the StandardAuthorizer's ACLs apply.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import (
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, ResourceType

from shoal.client import requests
from shoal.client.quota_requests import describe_client_quotas
from tests.ecosystem.conftest import on_kafka, settled_start_offset
from tests.support import kafka_reference
from tests.support.broker import running, wait_until
from tests.support.clients import consumer, create_topic
from tests.support.kafka_reference import JavaSession
from tests.support.share_consumers import (
    produce_values,
    records_of,
    share_consumer,
    share_group,
)
from tests.support.topics import topic_name
from tests.support.wire import call1, log_end_offset

WAIT_S = 60.0
ALICE = "alice-tools-secret-4b1c"
JAAS = f'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="{ALICE}";'


@dataclass(frozen=True)
class Rig:
    bootstrap: str
    """The PLAINTEXT listener (User:ANONYMOUS, a super user)."""
    sasl_bootstrap: str
    broker_log: Callable[[], str]
    jvm: JavaSession
    admin_client: AdminClient

    def tool(self, name: str, *args: str, ok: bool = True, timeout_s: float = 120.0) -> str:
        """Run Kafka's tool `name` against the PLAINTEXT listener; its stdout (and, with
        `ok`, a check that it exited 0)."""
        done = self.jvm.tool(name, "--bootstrap-server", self.bootstrap, *args, timeout_s=timeout_s)
        if ok:
            assert done.returncode == 0, f"{name} {args}: {done.stdout}\n{done.stderr}"
        return done.stdout

    def admin(self) -> AdminClient:
        """One AdminClient for the module (a dropped one fails its futures)."""
        return self.admin_client


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory, java_session_factory: Any) -> Iterator[Rig]:
    jvm = java_session_factory()
    folder = tmp_path_factory.mktemp("tools")
    if on_kafka():
        sasl = kafka_reference.SaslListener(plain_users={"alice": ALICE}, authorizer=True)
        with kafka_reference.running(folder / "data", sasl=sasl) as kafka:
            admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
            yield Rig(kafka.bootstrap, kafka.sasl_bootstrap, kafka.log_text, jvm, admin)
        return
    overrides = (
        "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}",
        "connection.failed.authentication.delay.ms=50",
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users=User:ANONYMOUS",
    )
    for broker in running(folder / "data", *overrides):
        port = broker.listener_ports()["SASL_PLAINTEXT"]
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        yield Rig(broker.bootstrap, f"127.0.0.1:{port}", broker.log_text, jvm, admin)


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


_FORMAT_DEFAULT = "min.insync.replicas=1"
"""A cluster-wide default `kafka-storage format` writes on the reference broker (none
on Shoal): left out of what the tests compare."""


def _own_lines(text: str) -> list[str]:
    """`_lines` without the reference's format-time default."""
    return [line for line in _lines(text) if f" {_FORMAT_DEFAULT} " not in line]


def _table(text: str) -> list[list[str]]:
    """The rows (header first) of the table a group tool printed, split on blanks."""
    return [line.split() for line in _lines(text)]


_OWN_SOURCES = {
    ResourceType.TOPIC: {ConfigSource.DYNAMIC_TOPIC_CONFIG},
    ResourceType.GROUP: {ConfigSource.GROUP_CONFIG},
    ResourceType.BROKER: {
        ConfigSource.DYNAMIC_BROKER_CONFIG,
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    },
}


def _configs(rig: Rig, kind: ResourceType, name: str) -> dict[str, tuple[str | None, str]]:
    """describe_configs of one resource: name -> (value, source name) for the ones set
    dynamically on it (for a topic, not those it inherits from the brokers)."""
    (future,) = rig.admin().describe_configs([ConfigResource(kind, name)]).values()
    entries = future.result(timeout=WAIT_S)
    return {
        k: (e.value, ConfigSource(e.source).name)
        for k, e in entries.items()
        if ConfigSource(e.source) in _OWN_SOURCES[kind]
    }


def _committed(bootstrap: str, group: str, topic: str, partitions: int) -> list[int]:
    reader = consumer(bootstrap, group_id=group)
    try:
        got = reader.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
    finally:
        reader.close()
    return [tp.offset for tp in got]


def test_kafka_topics_create_alter_describe_list_delete(rig: Rig) -> None:
    topic = topic_name("tools-topics")
    assert _lines(
        rig.tool(
            "kafka-topics",
            "--create",
            "--topic",
            topic,
            "--partitions",
            "2",
            "--config",
            "cleanup.policy=compact",
            "--config",
            "min.compaction.lag.ms=1000",
        )
    ) == [f"Created topic {topic}."]
    metadata = rig.admin().list_topics(topic, timeout=WAIT_S)
    assert len(metadata.topics[topic].partitions) == 2
    assert _configs(rig, ResourceType.TOPIC, topic) == {
        "cleanup.policy": ("compact", "DYNAMIC_TOPIC_CONFIG"),
        "min.compaction.lag.ms": ("1000", "DYNAMIC_TOPIC_CONFIG"),
    }

    assert rig.tool("kafka-topics", "--alter", "--topic", topic, "--partitions", "3") == ""
    assert wait_until(
        lambda: len(rig.admin().list_topics(topic, timeout=WAIT_S).topics[topic].partitions) == 3,
        timeout_s=WAIT_S,
    )
    again = rig.jvm.tool(
        "kafka-topics", "--bootstrap-server", rig.bootstrap, "--alter", "--topic", topic,
        "--partitions", "2",
    )  # fmt: skip
    assert again.returncode == 1
    assert again.stdout == (
        "Error while executing topic command : "
        f"The topic {topic} currently has 3 partition(s); 2 would not be an increase.\n"
    ), again

    described = _lines(rig.tool("kafka-topics", "--describe", "--topic", topic))
    head = described[0].replace(f"Configs: {_FORMAT_DEFAULT},", "Configs: ").split("\t")
    assert head[0] == f"Topic: {topic}"
    assert head[2:] == [
        "PartitionCount: 3",
        "ReplicationFactor: 1",
        "Configs: cleanup.policy=compact,min.compaction.lag.ms=1000",
    ]
    assert [line.split("\t")[1:6] for line in described[1:]] == [
        [f"Topic: {topic}", f"Partition: {p}", "Leader: 1", "Replicas: 1", "Isr: 1"]
        for p in range(3)
    ]
    assert topic in _lines(rig.tool("kafka-topics", "--list"))
    assert "__consumer_offsets" not in _lines(
        rig.tool("kafka-topics", "--list", "--exclude-internal")
    )

    assert rig.tool("kafka-topics", "--delete", "--topic", topic) == ""
    assert wait_until(
        lambda: topic not in rig.admin().list_topics(timeout=WAIT_S).topics, timeout_s=WAIT_S
    )
    assert topic not in _lines(rig.tool("kafka-topics", "--list"))


def test_kafka_configs_topics_brokers_and_groups(rig: Rig) -> None:
    topic = topic_name("tools-configs")
    create_topic(rig.bootstrap, topic)
    done = rig.tool(
        "kafka-configs", "--alter", "--entity-type", "topics", "--entity-name", topic,
        "--add-config", "retention.ms=86400000,max.message.bytes=2000",
    )  # fmt: skip
    assert _lines(done) == [f"Completed updating config for topic {topic}."]
    assert _configs(rig, ResourceType.TOPIC, topic) == {
        "retention.ms": ("86400000", "DYNAMIC_TOPIC_CONFIG"),
        "max.message.bytes": ("2000", "DYNAMIC_TOPIC_CONFIG"),
    }
    described = _lines(rig.tool("kafka-configs", "--describe", "--topic", topic))
    assert described == [
        f"Dynamic configs for topic {topic} are:",
        "  max.message.bytes=2000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
        "max.message.bytes=2000, DEFAULT_CONFIG:message.max.bytes=1048588}",
        "  retention.ms=86400000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
        "retention.ms=86400000}",
    ]
    # the topic's new limit holds: a 4000-byte record is refused
    errors: list[KafkaError | None] = []
    producer = Producer({"bootstrap.servers": rig.bootstrap, "message.timeout.ms": 20_000})
    producer.produce(topic, b"x" * 4000, on_delivery=lambda err, _m: errors.append(err))
    producer.flush(WAIT_S)
    assert [e.code() if e else None for e in errors] == [KafkaError.MSG_SIZE_TOO_LARGE]
    rig.tool(
        "kafka-configs", "--alter", "--entity-type", "topics", "--entity-name", topic,
        "--delete-config", "max.message.bytes",
    )  # fmt: skip
    assert _configs(rig, ResourceType.TOPIC, topic) == {
        "retention.ms": ("86400000", "DYNAMIC_TOPIC_CONFIG")
    }
    # refused values: the broker's reasons in Kafka's words, the topic unchanged
    for value, reason in (
        ("retention.ms=abc", "Invalid value abc for configuration retention.ms: "
         "Not a number of type LONG"),
        ("min.cleanable.dirty.ratio=2", "Invalid value 2.0 for configuration "
         "min.cleanable.dirty.ratio: Value must be no more than 1"),
    ):  # fmt: skip
        refused = rig.jvm.tool(
            "kafka-configs", "--bootstrap-server", rig.bootstrap, "--alter",
            "--entity-type", "topics", "--entity-name", topic, "--add-config", value,
        )  # fmt: skip
        assert refused.returncode == 1
        assert (
            f"org.apache.kafka.common.errors.InvalidConfigurationException: {reason}"
            in refused.stderr
        ), refused.stderr
    assert _configs(rig, ResourceType.TOPIC, topic) == {
        "retention.ms": ("86400000", "DYNAMIC_TOPIC_CONFIG")
    }

    # one broker's dynamic config and the cluster-wide default
    rig.tool(
        "kafka-configs", "--alter", "--entity-type", "brokers", "--entity-name", "1",
        "--add-config", "log.cleaner.threads=2",
    )  # fmt: skip
    rig.tool(
        "kafka-configs", "--alter", "--entity-type", "brokers", "--entity-default",
        "--add-config", "log.retention.ms=3600000",
    )  # fmt: skip
    wanted = {
        "log.cleaner.threads": ("2", "DYNAMIC_BROKER_CONFIG"),
        "log.retention.ms": ("3600000", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
    }
    # (Kafka applies broker configs through its metadata log: a moment later)
    assert wait_until(
        lambda: _configs(rig, ResourceType.BROKER, "1").items() >= wanted.items(),
        timeout_s=WAIT_S,
    ), _configs(rig, ResourceType.BROKER, "1")
    assert _own_lines(
        rig.tool("kafka-configs", "--describe", "--entity-type", "brokers", "--entity-default")
    ) == [
        "Default configs for brokers in the cluster are:",
        "  log.retention.ms=3600000 sensitive=false "
        "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=3600000}",
    ]
    assert _lines(
        rig.tool("kafka-configs", "--describe", "--entity-type", "brokers", "--entity-name", "1")
    ) == [
        "Dynamic configs for broker 1 are:",
        "  log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:"
        "log.cleaner.threads=2, DEFAULT_CONFIG:log.cleaner.threads=1}",
    ]
    # a topic without its own retention.ms follows the new broker default
    other = topic_name("tools-configs-default")
    create_topic(rig.bootstrap, other)
    (future,) = rig.admin().describe_configs([ConfigResource(ResourceType.TOPIC, other)]).values()
    assert future.result(timeout=WAIT_S)["retention.ms"].value == "3600000"
    for entity in (("--entity-name", "1"), ("--entity-default",)):
        key = "log.cleaner.threads" if entity[0] == "--entity-name" else "log.retention.ms"
        rig.tool(
            "kafka-configs", "--alter", "--entity-type", "brokers", *entity,
            "--delete-config", key,
        )  # fmt: skip
    assert wait_until(
        lambda: not _configs(rig, ResourceType.BROKER, "1").keys() & wanted.keys(),
        timeout_s=WAIT_S,
    ), _configs(rig, ResourceType.BROKER, "1")

    # a share group's configs, and the group then reading from the earliest offset
    group = topic_name("tools-configs-sg")
    rig.tool(
        "kafka-configs", "--alter", "--entity-type", "groups", "--entity-name", group,
        "--add-config", "share.auto.offset.reset=earliest,share.record.lock.duration.ms=20000",
    )  # fmt: skip
    assert _lines(
        rig.tool("kafka-configs", "--describe", "--entity-type", "groups", "--entity-name", group)
    ) == [
        f"Dynamic configs for group {group} are:",
        "  share.auto.offset.reset=earliest sensitive=false "
        "synonyms={DYNAMIC_GROUP_CONFIG:share.auto.offset.reset=earliest}",
        "  share.record.lock.duration.ms=20000 sensitive=false "
        "synonyms={DYNAMIC_GROUP_CONFIG:share.record.lock.duration.ms=20000}",
    ]
    produce_values(rig.bootstrap, other, [b"early-0", b"early-1"])
    reader = share_consumer(rig.bootstrap, group, [other])
    try:
        got: list[bytes | None] = []
        deadline = time.monotonic() + WAIT_S
        while len(got) < 2 and time.monotonic() < deadline:
            got += [m.value() for m in records_of(reader.poll(0.5))]
    finally:
        reader.close()
    assert got == [b"early-0", b"early-1"]
    rig.tool(
        "kafka-configs", "--alter", "--entity-type", "groups", "--entity-name", group,
        "--delete-config", "share.record.lock.duration.ms",
    )  # fmt: skip
    assert _configs(rig, ResourceType.GROUP, group) == {
        "share.auto.offset.reset": ("earliest", "GROUP_CONFIG")
    }


def _sasl(mechanism: str, user: str, password: str) -> dict[str, Any]:
    return {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def _logs_in(rig: Rig, security: dict[str, Any]) -> bool:
    """Whether the user authenticates on the SASL listener: Metadata answered (True)
    or an authentication error reported (False), whichever comes first."""
    refused: list[KafkaError] = []

    def on_error(error: KafkaError) -> None:
        if error.code() == KafkaError._AUTHENTICATION:
            refused.append(error)

    admin = AdminClient({"bootstrap.servers": rig.sasl_bootstrap, "error_cb": on_error, **security})
    deadline = time.monotonic() + WAIT_S
    while not refused:
        assert time.monotonic() < deadline, "neither answered nor refused"
        admin.poll(0)  # serves error_cb
        if refused:
            break
        try:
            admin.list_topics(timeout=0.5)
        except KafkaException as exc:
            assert exc.args[0].code() in (KafkaError._TRANSPORT, KafkaError._TIMED_OUT), exc
            continue
        return True
    return False


def _login(rig: Rig, security: dict[str, Any], *, succeeds: bool) -> None:
    """The login ends as expected: at once on Shoal; Kafka applies a credential
    change through its metadata log, so a first attempt may still see the old one."""
    deadline = time.monotonic() + WAIT_S
    while _logs_in(rig, security) != succeeds:
        assert time.monotonic() < deadline, f"login never {'succeeded' if succeeds else 'failed'}"
        time.sleep(0.5)


def test_kafka_configs_scram_users_log_in(rig: Rig) -> None:
    password = "bob-scram-secret-91aa"
    done = rig.tool(
        "kafka-configs", "--alter", "--entity-type", "users", "--entity-name", "bob",
        "--add-config", f"SCRAM-SHA-256=[iterations=8192,password={password}]",
    )  # fmt: skip
    assert _lines(done) == ["Completed updating config for user bob."]
    # one mechanism per request: Kafka's controller refuses a user twice in one
    # AlterUserScramCredentials (DUPLICATE_RESOURCE), and so does Shoal
    rig.tool(
        "kafka-configs", "--alter", "--entity-type", "users", "--entity-name", "bob",
        "--add-config", f"SCRAM-SHA-512=[password={password}]",
    )  # fmt: skip
    assert password not in rig.broker_log()
    described = rig.tool(
        "kafka-configs", "--describe", "--entity-type", "users", "--entity-name", "bob"
    )
    (line,) = _lines(described)
    head, _, mechanisms = line.partition(" are ")
    assert head == "SCRAM credential configs for user-principal 'bob'"
    # in the order of Kafka's HashMap of mechanisms (enum keys: it varies by JVM run)
    assert sorted(mechanisms.split(", ")) == [
        "SCRAM-SHA-256=iterations=8192",
        "SCRAM-SHA-512=iterations=4096",
    ]
    _login(rig, _sasl("SCRAM-SHA-256", "bob", password), succeeds=True)
    _login(rig, _sasl("SCRAM-SHA-512", "bob", password), succeeds=True)
    _login(rig, _sasl("SCRAM-SHA-256", "bob", "wrong"), succeeds=False)

    rig.tool(
        "kafka-configs", "--alter", "--entity-type", "users", "--entity-name", "bob",
        "--delete-config", "SCRAM-SHA-256",
    )  # fmt: skip
    _login(rig, _sasl("SCRAM-SHA-256", "bob", password), succeeds=False)
    _login(rig, _sasl("SCRAM-SHA-512", "bob", password), succeeds=True)
    assert _lines(
        rig.tool("kafka-configs", "--describe", "--entity-type", "users", "--entity-name", "bob")
    ) == ["SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-512=iterations=4096"]


def _quotas(rig: Rig) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    response = call1(rig.bootstrap, describe_client_quotas([]))
    assert response.error_code == 0, response
    return {
        tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)): {
            v.key: v.value for v in entry.values
        }
        for entry in response.entries
    }


def test_kafka_configs_client_quotas(rig: Rig) -> None:
    user, client = topic_name("quota-user"), topic_name("quota-client")
    rig.tool(
        "kafka-configs", "--alter", "--entity-type", "users", "--entity-name", user,
        "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048",
    )  # fmt: skip
    rig.tool(
        "kafka-configs", "--alter", "--entity-type", "users", "--entity-name", user,
        "--entity-type", "clients", "--entity-name", client,
        "--add-config", "request_percentage=50",
    )  # fmt: skip
    rig.tool(
        "kafka-configs", "--alter", "--entity-type", "clients", "--entity-default",
        "--add-config", "producer_byte_rate=1000000",
    )  # fmt: skip
    quotas = _quotas(rig)
    assert quotas[(("user", user),)] == {"producer_byte_rate": 1024.0, "consumer_byte_rate": 2048.0}
    assert quotas[(("client-id", client), ("user", user))] == {"request_percentage": 50.0}
    assert quotas[(("client-id", None),)] == {"producer_byte_rate": 1_000_000.0}
    assert _lines(
        rig.tool("kafka-configs", "--describe", "--entity-type", "users", "--entity-name", user)
    ) == [
        f"Quota configs for user-principal '{user}' are "
        "consumer_byte_rate=2048.0, producer_byte_rate=1024.0"
    ]
    assert _lines(
        rig.tool(
            "kafka-configs", "--describe", "--entity-type", "users", "--entity-name", user,
            "--entity-type", "clients", "--entity-name", client,
        )
    ) == [
        f"Quota configs for user-principal '{user}', client-id '{client}' "
        "are request_percentage=50.0"
    ]  # fmt: skip
    assert _lines(
        rig.tool("kafka-configs", "--describe", "--entity-type", "clients", "--entity-default")
    ) == ["Quota configs for the default client-id are producer_byte_rate=1000000.0"]

    rig.tool(
        "kafka-configs", "--alter", "--entity-type", "users", "--entity-name", user,
        "--delete-config", "producer_byte_rate",
    )  # fmt: skip
    rig.tool(
        "kafka-configs", "--alter", "--entity-type", "clients", "--entity-default",
        "--delete-config", "producer_byte_rate",
    )  # fmt: skip
    quotas = _quotas(rig)
    assert quotas[(("user", user),)] == {"consumer_byte_rate": 2048.0}
    assert (("client-id", None),) not in quotas


def test_kafka_consumer_groups(rig: Rig) -> None:
    topic, group = topic_name("tools-cg"), topic_name("tools-cg-group")
    create_topic(rig.bootstrap, topic, partitions=2)
    for p in range(2):
        produce_values(rig.bootstrap, topic, [b"v%d" % i for i in range(10)], partition=p)
    member = consumer(
        rig.bootstrap, group_id=group, auto_offset_reset="earliest", client_id="cg-tool"
    )
    member.subscribe([topic])
    got, deadline = 0, time.monotonic() + WAIT_S
    while got < 20:
        assert time.monotonic() < deadline, f"{got} of 20 records"
        got += sum(1 for m in member.consume(20, 0.5) if m.error() is None)
    member.commit(
        offsets=[TopicPartition(topic, 0, 7), TopicPartition(topic, 1, 10)], asynchronous=False
    )
    try:
        assert group in _lines(rig.tool("kafka-consumer-groups", "--list"))
        rows = _table(rig.tool("kafka-consumer-groups", "--describe", "--group", group))
        assert rows[0] == [
            "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
            "CONSUMER-ID", "HOST", "CLIENT-ID",
        ]  # fmt: skip
        assert [r[:6] + r[7:] for r in rows[1:]] == [
            [group, topic, "0", "7", "10", "3", "/127.0.0.1", "cg-tool"],
            [group, topic, "1", "10", "10", "0", "/127.0.0.1", "cg-tool"],
        ]
        state = _table(rig.tool("kafka-consumer-groups", "--describe", "--group", group, "--state"))
        assert state[1][-3:] == ["range", "Stable", "1"]
        members = _table(
            rig.tool("kafka-consumer-groups", "--describe", "--group", group, "--members")
        )
        assert [r[2:] for r in members[1:]] == [["/127.0.0.1", "cg-tool", "2"]]
        # a reset needs an empty group
        busy = rig.jvm.tool(
            "kafka-consumer-groups", "--bootstrap-server", rig.bootstrap, "--reset-offsets",
            "--group", group, "--topic", topic, "--to-earliest", "--execute",
        )  # fmt: skip
        assert "Assignments can only be reset if the group" in busy.stdout + busy.stderr, busy
        assert _committed(rig.bootstrap, group, topic, 2) == [7, 10]
    finally:
        member.close()

    dry = _table(
        rig.tool(
            "kafka-consumer-groups", "--reset-offsets", "--group", group, "--topic", topic,
            "--to-earliest", "--dry-run",
        )
    )  # fmt: skip
    # rows in the order of Kafka's HashMap of partitions
    assert dry[0] == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    assert sorted(dry[1:]) == [[group, topic, "0", "0"], [group, topic, "1", "0"]]
    assert _committed(rig.bootstrap, group, topic, 2) == [7, 10]
    shifted = _table(
        rig.tool(
            "kafka-consumer-groups", "--reset-offsets", "--group", group, "--topic", f"{topic}:1",
            "--shift-by", "-4", "--execute",
        )
    )  # fmt: skip
    assert shifted[1:] == [[group, topic, "1", "6"]]
    assert _committed(rig.bootstrap, group, topic, 2) == [7, 6]
    # a restarted member resumes at the reset offsets
    resumed = consumer(rig.bootstrap, group_id=group)
    try:
        resumed.subscribe([topic])
        firsts: dict[int, int] = {}
        deadline = time.monotonic() + WAIT_S
        while len(firsts) < 2:
            assert time.monotonic() < deadline, firsts
            for m in resumed.consume(20, 0.5):
                if m.error() is None:
                    firsts.setdefault(m.partition(), m.offset())
    finally:
        resumed.close()
    assert firsts == {0: 7, 1: 6}

    deleted = rig.tool(
        "kafka-consumer-groups", "--delete-offsets", "--group", group, "--topic", f"{topic}:0"
    )
    assert _lines(deleted)[0] == f"Request succeeded for deleting offsets from group {group}."
    assert _table(deleted)[-1] == [topic, "0", "Successful"]
    assert _committed(rig.bootstrap, group, topic, 2)[0] == -1001  # OFFSET_INVALID

    assert _lines(rig.tool("kafka-consumer-groups", "--delete", "--group", group)) == [
        f"Deletion of requested consumer groups ('{group}') was successful."
    ]
    listed = rig.admin().list_consumer_groups().result(timeout=WAIT_S)
    assert group not in {g.group_id for g in listed.valid}
    assert _committed(rig.bootstrap, group, topic, 2) == [-1001, -1001]


@pytest.mark.xfail(
    not on_kafka(),
    strict=True,
    reason="Shoal forgets a group without members when its last offset is deleted; "
    "Kafka keeps it (Empty) until its next offsets cleanup",
)
def test_kafka_consumer_groups_delete_after_delete_offsets(rig: Rig) -> None:
    topic, group = topic_name("tools-cg-gone"), topic_name("tools-cg-gone-group")
    create_topic(rig.bootstrap, topic)
    committer = consumer(rig.bootstrap, group_id=group)
    try:
        committer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    finally:
        committer.close()
    rig.tool("kafka-consumer-groups", "--delete-offsets", "--group", group, "--topic", topic)
    assert _lines(rig.tool("kafka-consumer-groups", "--delete", "--group", group)) == [
        f"Deletion of requested consumer groups ('{group}') was successful."
    ]


def test_kafka_share_groups(rig: Rig) -> None:
    topic, group = topic_name("tools-sg"), topic_name("tools-sg-group")
    create_topic(rig.bootstrap, topic)
    produce_values(rig.bootstrap, topic, [b"s%d" % i for i in range(10)], partition=0)
    share_group(rig.bootstrap, group)
    member = share_consumer(rig.bootstrap, group, [topic], client_id="sg-tool")
    try:
        got, deadline = 0, time.monotonic() + WAIT_S
        while got < 10:
            assert time.monotonic() < deadline, f"{got} of 10 records"
            got += len(records_of(member.poll(0.5)))
        member.commit_sync(30)
        assert group in _lines(rig.tool("kafka-share-groups", "--list"))
        members = _table(
            rig.tool("kafka-share-groups", "--describe", "--group", group, "--members")
        )
        assert members[0] == [
            "GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT",
        ]  # fmt: skip
        assert [r[2:] for r in members[1:]] == [["/127.0.0.1", "sg-tool", "1", f"{topic}:0"]]
        state = _table(
            rig.tool("kafka-share-groups", "--describe", "--group", group, "--state", "--verbose")
        )
        assert state[0][-4:] == ["STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "#MEMBERS"]
        assert state[1][-4:] == ["Stable", "2", "2", "1"]
    finally:
        member.close()

    offsets = _table(rig.tool("kafka-share-groups", "--describe", "--group", group, "--offsets"))
    assert offsets[0] == ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"]
    assert offsets[1][:3] == [group, topic, "0"] and offsets[1][4] == "0", offsets
    assert settled_start_offset(offsets[1][3], 10), offsets
    dry = _table(
        rig.tool(
            "kafka-share-groups", "--reset-offsets", "--group", group, "--topic", topic,
            "--to-earliest", "--dry-run",
        )
    )  # fmt: skip
    assert dry[1:] == [[group, topic, "0", "0"]]
    reset = _table(
        rig.tool(
            "kafka-share-groups", "--reset-offsets", "--group", group, "--topic", topic,
            "--to-earliest", "--execute",
        )
    )  # fmt: skip
    assert reset[1:] == [[group, topic, "0", "0"]]
    assert _table(rig.tool("kafka-share-groups", "--describe", "--group", group))[1] == [
        group, topic, "0", "0", "10",
    ]  # fmt: skip
    # the group delivers every record again
    again = share_consumer(rig.bootstrap, group, [topic])
    try:
        values: list[bytes | None] = []
        deadline = time.monotonic() + WAIT_S
        while len(values) < 10:
            assert time.monotonic() < deadline, values
            values += [m.value() for m in records_of(again.poll(0.5))]
        again.commit_sync(30)
    finally:
        again.close()
    assert values == [b"s%d" % i for i in range(10)]

    deleted = _table(
        rig.tool("kafka-share-groups", "--delete-offsets", "--group", group, "--topic", topic)
    )
    assert deleted == [["TOPIC", "STATUS"], [topic, "Successful"]]
    assert _lines(rig.tool("kafka-share-groups", "--describe", "--group", group)) == [
        f"Share group '{group}' has no offset information."
    ]
    assert _lines(rig.tool("kafka-share-groups", "--delete", "--group", group)) == [
        f"Deletion of requested share groups ('{group}') was successful."
    ]
    assert group not in _lines(rig.tool("kafka-share-groups", "--list"))


def _alice_produces(rig: Rig, topic: str) -> int | None:
    """Alice (PLAIN, SASL listener) produces one record: None, or the error code."""
    errors: list[KafkaError | None] = []
    producer = Producer(
        {
            "bootstrap.servers": rig.sasl_bootstrap,
            "message.timeout.ms": 15_000,
            **_sasl("PLAIN", "alice", ALICE),
        }
    )
    producer.produce(topic, b"from-alice", on_delivery=lambda err, _m: errors.append(err))
    producer.flush(WAIT_S)
    assert len(errors) == 1
    return None if errors[0] is None else int(errors[0].code())


def test_kafka_acls_add_list_remove(rig: Rig) -> None:
    topic = topic_name("tools-acl")
    create_topic(rig.bootstrap, topic)
    assert _alice_produces(rig, topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    added = rig.tool(
        "kafka-acls", "--add", "--allow-principal", "User:alice", "--producer", "--topic", topic
    )
    assert f"ResourcePattern(resourceType=TOPIC, name={topic}, patternType=LITERAL)" in added
    listed = _lines(rig.tool("kafka-acls", "--list", "--topic", topic))
    assert listed[0] == (
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, "
        f"name={topic}, patternType=LITERAL)`:"
    )
    assert sorted(listed[1:]) == [
        f"\t(principal=User:alice, host=*, operation={op}, permissionType=ALLOW)"
        for op in ("CREATE", "DESCRIBE", "WRITE")
    ]
    assert _alice_produces(rig, topic) is None
    assert log_end_offset(rig.bootstrap, topic, 0) == 1

    rig.tool(
        "kafka-acls", "--remove", "--force", "--allow-principal", "User:alice",
        "--operation", "Write", "--topic", topic,
    )  # fmt: skip
    listed = _lines(rig.tool("kafka-acls", "--list", "--principal", "User:alice"))
    assert sorted(line for line in listed if line.startswith("\t")) == [
        f"\t(principal=User:alice, host=*, operation={op}, permissionType=ALLOW)"
        for op in ("CREATE", "DESCRIBE")
    ]
    assert _alice_produces(rig, topic) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert log_end_offset(rig.bootstrap, topic, 0) == 1


def test_kafka_acls_without_an_authorizer(
    rig: Rig, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Kafka's AclApis words DescribeAcls' SECURITY_DISABLED ("--list") apart from
    DeleteAcls' ("--remove")."""
    if on_kafka():
        context: Any = kafka_reference.running(tmp_path_factory.mktemp("plain") / "data")
    else:
        context = contextlib.contextmanager(running)(tmp_path_factory.mktemp("plain") / "data")
    with context as plain:
        listed = rig.jvm.tool("kafka-acls", "--bootstrap-server", plain.bootstrap, "--list")
        removed = rig.jvm.tool(
            "kafka-acls", "--bootstrap-server", plain.bootstrap, "--remove", "--force",
            "--allow-principal", "User:alice", "--operation", "Read", "--topic", "t",
        )  # fmt: skip
    assert listed.returncode == 1
    assert _lines(listed.stdout)[0] == (
        "Error while executing ACL command: org.apache.kafka.common.errors."
        "SecurityDisabledException: No Authorizer is configured on the broker"
    ), listed
    assert removed.returncode == 1
    assert _lines(removed.stdout)[0] == (
        "Error while executing ACL command: org.apache.kafka.common.errors."
        "SecurityDisabledException: No Authorizer is configured."
    ), removed


def test_kafka_transactions_list_describe_and_abort(rig: Rig) -> None:
    topic, tid = topic_name("tools-txn"), topic_name("tools-txn-id")
    create_topic(rig.bootstrap, topic)
    create_topic(rig.bootstrap, f"{topic}-done")
    produce_values(rig.bootstrap, topic, [b"before"], partition=0)
    producer = Producer(
        {"bootstrap.servers": rig.bootstrap, "transactional.id": tid, "linger.ms": 0}
    )
    producer.init_transactions(WAIT_S)
    producer.begin_transaction()
    producer.produce(topic, b"open", partition=0)
    producer.flush(WAIT_S)
    after = Producer({"bootstrap.servers": rig.bootstrap})
    after.produce(topic, b"after", partition=0)
    after.flush(WAIT_S)

    done_tid = topic_name("tools-txn-done")
    done = Producer({"bootstrap.servers": rig.bootstrap, "transactional.id": done_tid})
    done.init_transactions(WAIT_S)
    done.begin_transaction()
    done.produce(f"{topic}-done", b"done")
    done.commit_transaction(WAIT_S)

    listed = _table(rig.tool("kafka-transactions", "list"))
    assert listed[0] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    (row,) = [r for r in listed[1:] if r[0] == tid]
    assert row[1] == "1" and row[3] == "Ongoing"
    producer_id = row[2]
    # --duration-filter keeps transactions older than it in any state
    time.sleep(0.1)
    older = _table(rig.tool("kafka-transactions", "list", "--duration-filter", "50"))
    assert {(r[0], r[3]) for r in older[1:]} >= {(tid, "Ongoing"), (done_tid, "CompleteCommit")}
    newer = _table(rig.tool("kafka-transactions", "list", "--duration-filter", "3600000"))
    assert {r[0] for r in newer[1:]} & {tid, done_tid} == set()

    described = _table(rig.tool("kafka-transactions", "describe", "--transactional-id", tid))
    assert described[0][:4] == ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch"]
    assert described[1][:3] == ["1", tid, producer_id]
    assert described[1][described[0].index("TransactionState")] == "Ongoing"
    assert described[1][-1] == f"{topic}-0"  # TopicPartitions

    producers = _table(
        rig.tool("kafka-transactions", "describe-producers", "--topic", topic, "--partition", "0")
    )
    assert producers[0] == [
        "ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence",
        "LastTimestamp", "CurrentTransactionStartOffset",
    ]  # fmt: skip
    (open_row,) = [r for r in producers[1:] if r[0] == producer_id]
    assert open_row[-1] == "1"  # the transaction began at offset 1

    # an open transaction the coordinator knows is not hanging
    hanging = _table(rig.tool("kafka-transactions", "find-hanging", "--broker-id", "1"))
    assert hanging == [
        [
            "Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
            "StartOffset", "LastTimestamp", "Duration(min)",
        ]
    ]  # fmt: skip

    # a read_committed consumer stops at the open transaction until it is aborted
    reader = consumer(rig.bootstrap, isolation_level="read_committed")
    reader.assign([TopicPartition(topic, 0, 0)])
    try:
        seen: list[bytes | None] = []
        for _ in range(6):
            seen += [m.value() for m in reader.consume(10, 0.5) if m.error() is None]
        assert seen == [b"before"]
        aborted = rig.tool(
            "kafka-transactions", "abort", "--topic", topic, "--partition", "0",
            "--start-offset", "1",
        )  # fmt: skip
        assert aborted == ""
        deadline = time.monotonic() + WAIT_S
        while b"after" not in seen:
            assert time.monotonic() < deadline, seen
            seen += [m.value() for m in reader.consume(10, 0.5) if m.error() is None]
    finally:
        reader.close()
    assert seen == [b"before", b"after"]
    # the abort marker ended the producer's transaction on the partition
    producer_rows = _table(
        rig.tool("kafka-transactions", "describe-producers", "--topic", topic, "--partition", "0")
    )
    (closed,) = [r for r in producer_rows[1:] if r[0] == producer_id]
    assert closed[-1] == "None"


_PERF = re.compile(
    r"^(\d+) records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, "
    r"[\d.]+ ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\.$"
)


def test_perf_tools_and_console_share_consumer(rig: Rig) -> None:
    topic, group, perf_group = (
        topic_name("tools-perf"),
        topic_name("tools-console-sg"),
        topic_name("tools-perf-sg"),
    )
    create_topic(rig.bootstrap, topic)
    out = rig.tool(
        "kafka-producer-perf-test", "--topic", topic, "--num-records", "300",
        "--record-size", "100", "--throughput", "-1", "--command-property", "acks=all",
        "--command-property", f"bootstrap.servers={rig.bootstrap}",
    )  # fmt: skip
    summary = [m for m in (_PERF.match(line) for line in _lines(out)) if m]
    assert [m.group(1) for m in summary] == ["300"], out
    assert log_end_offset(rig.bootstrap, topic, 0) == 300

    share_group(rig.bootstrap, perf_group)
    perf = rig.tool(
        "kafka-share-consumer-perf-test", "--topic", topic, "--group", perf_group,
        "--num-records", "300", "--timeout", "30000",
    )  # fmt: skip
    header, values = _lines(perf)[-2:]
    assert header.split(", ") == [
        "start.time", "end.time", "data.consumed.in.MB", "MB.sec", "nMsg.sec",
        "data.consumed.in.nMsg", "fetch.time.ms",
    ]  # fmt: skip
    assert values.split(", ")[5] == "300", perf
    assert values.split(", ")[2] == "0.0286", perf  # 300 x 100 bytes

    # the console share consumer prints what a test produced, and acknowledges it
    produce_values(rig.bootstrap, topic, [b"console-%d" % i for i in range(3)], partition=0)
    share_group(rig.bootstrap, group)
    alter = call1(rig.bootstrap, requests.alter_share_group_offsets(group, {(topic, 0): 300}))
    assert alter.error_code == 0, alter
    printed = rig.tool(
        "kafka-console-share-consumer", "--topic", topic, "--group", group,
        "--max-messages", "3", "--timeout-ms", "30000",
        "--formatter-property", "print.offset=true", "--formatter-property", "print.delivery=true",
    )  # fmt: skip
    assert _lines(printed) == [f"Offset:{300 + i}\tDelivery:1\tconsole-{i}" for i in range(3)], (
        printed
    )
    row = _table(rig.tool("kafka-share-groups", "--describe", "--group", group))[1]
    assert row[:3] == [group, topic, "0"] and row[4] == "0", row
    assert settled_start_offset(row[3], 303), row
    # --reject archives what it reads: nothing comes back to the group
    produce_values(rig.bootstrap, topic, [b"rejected"], partition=0)
    rejected = rig.tool(
        "kafka-console-share-consumer", "--topic", topic, "--group", group, "--reject",
        "--max-messages", "1", "--timeout-ms", "30000",
    )  # fmt: skip
    assert _lines(rejected) == ["rejected"]
    row = _table(rig.tool("kafka-share-groups", "--describe", "--group", group))[1]
    assert row[:3] == [group, topic, "0"] and row[4] == "0", row
    assert settled_start_offset(row[3], 304), row
