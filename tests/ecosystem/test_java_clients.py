"""Kafka 4.2's Java clients (kafka-clients 4.2.2, unmodified) against a real `shoal serve`.

Four small programs in tests/ecosystem/java/ (one per client family, subcommands for
the scenarios, each printing JSON lines through Emit.java) run in one JVM for the
module (kafka_reference.JavaSession, compiled once per source hash). Each test checks
what the client saw and then the broker's state through other clients
(confluent-kafka, Shoal's wire client). Every scenario here gave the same results on
the reference broker (Kafka 4.2.2) when this module was written, but for the share
partitions' start offsets noted in `test_admin_client`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer, TopicPartition

from shoal.client import requests
from tests.ecosystem.conftest import on_kafka, settled_start_offset
from tests.support import kafka_reference
from tests.support.broker import BrokerProcess, running
from tests.support.clients import consumer, create_topic
from tests.support.kafka_reference import JavaSession
from tests.support.share_consumers import (
    produce_values,
    records_of,
    share_consumer,
    share_group,
)
from tests.support.topics import topic_name
from tests.support.wire import call1

PROGRAMS = sorted((Path(__file__).parent / "java").glob("*.java"))
WAIT_S = 60.0
Broker = BrokerProcess | kafka_reference.KafkaBroker


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """Shoal (or, with SHOAL_ECOSYSTEM_ON_KAFKA, the reference broker)."""
    folder = tmp_path_factory.mktemp("java-clients")
    if on_kafka():
        with kafka_reference.running(folder / "data") as kafka:
            yield kafka
        return
    yield from running(folder / "data")


@pytest.fixture(scope="module")
def jvm(java_session_factory: Any) -> JavaSession:
    return java_session_factory(*PROGRAMS)


def run(jvm: JavaSession, main_class: str, *args: str) -> list[dict[str, Any]]:
    """The program's JSON lines (it must exit 0)."""
    done = jvm.run(main_class, *args, timeout_s=180)
    assert done.returncode == 0, f"{main_class} {args}:\n{done.stdout}\n{done.stderr[-8000:]}"
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def steps(lines: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in line.items() if k != "step"} for line in lines if line["step"] == name
    ]


def _share_offsets(bootstrap: str, group: str, topic: str) -> list[tuple[int, int, int]]:
    """DescribeShareGroupOffsets: (partition, start offset, lag) of `topic`."""
    (described,) = call1(bootstrap, requests.describe_share_group_offsets(group)).groups
    return sorted(
        (int(p.partition_index), int(p.start_offset), int(p.lag))
        for t in described.topics
        if t.topic_name == topic
        for p in t.partitions
    )


def _read_committed(bootstrap: str, topic: str) -> list[bytes | None]:
    """Partition 0 of `topic` read_committed from the start to its end."""
    reader = consumer(bootstrap, isolation_level="read_committed", enable_partition_eof=True)
    values: list[bytes | None] = []
    try:
        reader.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + WAIT_S
        while True:
            assert time.monotonic() < deadline, values
            message = reader.poll(0.5)
            if message is None:
                continue
            error = message.error()
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                return values
            assert error is None, error
            values.append(message.value())
    finally:
        reader.close()


def test_share_consumer_explicit_acknowledgement(broker: Broker, jvm: JavaSession) -> None:
    topic, group = topic_name("java-share"), topic_name("java-share-group")
    create_topic(broker.bootstrap, topic)
    produce_values(broker.bootstrap, topic, [b"v%d" % i for i in range(6)], partition=0)
    share_group(broker.bootstrap, group)
    lines = run(jvm, "ShareClients", "explicit", broker.bootstrap, topic, group)
    delivered = steps(lines, "delivered")
    assert [(d["value"], d["offset"], d["deliveryCount"], d["ack"]) for d in delivered] == [
        ("v0", 0, 1, "accept"),
        ("v1", 1, 1, "accept"),
        ("v2", 2, 1, "release"),
        ("v3", 3, 1, "reject"),
        ("v4", 4, 1, "release"),
        ("v5", 5, 1, "accept"),
        # the released records come back, counted twice
        ("v2", 2, 2, "accept"),
        ("v4", 4, 2, "accept"),
    ]  # fmt: skip
    assert steps(lines, "committed") == [{"partition": 0, "error": None}] * 2
    assert steps(lines, "rest") == [{"count": 0}]
    # every record settled (v3 archived): the start offset is past them all
    ((partition, start, lag),) = _share_offsets(broker.bootstrap, group, topic)
    assert (partition, lag) == (0, 0) and settled_start_offset(start, 6), start
    # and a new member of the group gets nothing more
    late = share_consumer(broker.bootstrap, group, [topic])
    try:
        assert [records_of(late.poll(0.5)) for _ in range(4)] == [[]] * 4
    finally:
        late.close()


def test_two_share_consumers_share_a_partition(broker: Broker, jvm: JavaSession) -> None:
    topic, group = topic_name("java-shared"), topic_name("java-shared-group")
    create_topic(broker.bootstrap, topic)
    # one record per batch: a fetch of max.poll.records=5 acquires five
    produce_values(
        broker.bootstrap, topic, [b"w%d" % i for i in range(40)], partition=0, flush_every=1
    )
    share_group(broker.bootstrap, group)
    lines = run(jvm, "ShareClients", "shared", broker.bootstrap, topic, group, "40")
    members = {m["client"]: m["offsets"] for m in steps(lines, "member")}
    a, b = members["member-a"], members["member-b"]
    # both got records of the one partition, none twice, all of them between them
    assert a and b, members
    assert not set(a) & set(b), members
    assert sorted(a + b) == list(range(40))
    ((partition, start, lag),) = _share_offsets(broker.bootstrap, group, topic)
    assert (partition, lag) == (0, 0) and settled_start_offset(start, 40), start


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_consumer_group_rebalance_commit_and_restart(
    broker: Broker, jvm: JavaSession, protocol: str
) -> None:
    topic, group = topic_name(f"java-cg-{protocol}"), topic_name(f"java-cg-{protocol}-group")
    create_topic(broker.bootstrap, topic, partitions=4)
    for p in range(4):
        produce_values(broker.bootstrap, topic, [b"c%d" % i for i in range(10)], partition=p)
    lines = run(jvm, "Consumers", "group", protocol, broker.bootstrap, topic, group, "4")
    assert steps(lines, "first-alone") == [
        {"owned": [0, 1, 2, 3], "firstOffsets": {"0": 0, "1": 0, "2": 0, "3": 0}}
    ]
    (split,) = steps(lines, "split")
    # the second member took half: both own two partitions, together all four
    assert len(split["first"]) == 2 and len(split["second"]) == 2, split
    assert sorted(split["first"] + split["second"]) == [0, 1, 2, 3]
    assert steps(lines, "committed-seen") == [{"offsets": dict.fromkeys("0123", "5:from-java")}]
    assert steps(lines, "resumed") == [
        {"owned": [0, 1, 2, 3], "firstOffsets": {"0": 5, "1": 5, "2": 5, "3": 5}}
    ]
    # what the broker holds: the group's offsets and its type
    reader = consumer(broker.bootstrap, group_id=group)
    try:
        committed = reader.committed([TopicPartition(topic, p) for p in range(4)], timeout=30)
    finally:
        reader.close()
    assert [(tp.offset, tp.metadata) for tp in committed] == [(5, "from-java")] * 4
    listed = call1(broker.bootstrap, requests.list_groups())
    assert [(g.group_type, g.group_state) for g in listed.groups if g.group_id == group] == [
        (protocol, "Empty")
    ]


def test_transactional_producer(broker: Broker, jvm: JavaSession) -> None:
    source, sink = topic_name("java-txn-in"), topic_name("java-txn-out")
    tid, group = topic_name("java-txn-id"), topic_name("java-txn-group")
    create_topic(broker.bootstrap, source)
    create_topic(broker.bootstrap, sink)
    produce_values(broker.bootstrap, source, [b"x%d" % i for i in range(5)], partition=0)
    lines = run(jvm, "Transactions", "txn", broker.bootstrap, tid, source, sink, group)
    assert steps(lines, "read_committed") == [{"values": ["committed-1", "committed-2"]}]
    assert steps(lines, "read_uncommitted") == [
        {"values": ["committed-1", "committed-2", "aborted-1"]}
    ]
    assert steps(lines, "transformed") == [{"count": 5, "position": 5}]
    # a read_committed confluent consumer sees the committed records and the output
    # of the consume-transform-produce transaction; the group's offset came with it
    assert _read_committed(broker.bootstrap, sink) == [
        b"committed-1",
        b"committed-2",
        *(b"X%d" % i for i in range(5)),
    ]
    reader = consumer(broker.bootstrap, group_id=group)
    try:
        (offset,) = reader.committed([TopicPartition(source, 0)], timeout=30)
    finally:
        reader.close()
    assert offset.offset == 5
    (state,) = call1(broker.bootstrap, requests.describe_transactions([tid])).transaction_states
    assert (state.error_code, state.transaction_state) == (0, "CompleteCommit")


def test_admin_client(broker: Broker, jvm: JavaSession) -> None:
    topic, share, tid = (
        topic_name("java-admin"),
        topic_name("java-admin-sg"),
        topic_name("java-tid"),
    )
    created = run(jvm, "Admins", "create", broker.bootstrap, topic)
    assert steps(created, "createTopics") == [{"ok": True}]
    (described,) = steps(created, "describeTopics")
    assert (described["partitions"], described["leaders"], described["internal"]) == (
        3, [1, 1, 1], False,
    )  # fmt: skip
    (cluster,) = steps(created, "describeCluster")
    assert cluster["controller"] == 1 and cluster["nodes"] == [broker.bootstrap]
    assert steps(created, "createTopics-again") == [{"error": "TopicExistsException"}]
    metadata = call1(broker.bootstrap, requests.metadata([topic]))
    (listed_topic,) = metadata.topics
    assert len(listed_topic.partitions) == 3
    assert str(metadata.cluster_id) == cluster["clusterId"]

    produce_values(broker.bootstrap, topic, [b"a%d" % i for i in range(6)], partition=0)
    share_group(broker.bootstrap, share)
    member = share_consumer(broker.bootstrap, share, [topic])
    got, deadline = 0, time.monotonic() + WAIT_S
    while got < 6:
        assert time.monotonic() < deadline
        got += len(records_of(member.poll(0.5)))
    transactional = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": tid})
    transactional.init_transactions(WAIT_S)
    transactional.begin_transaction()
    transactional.produce(topic, b"open", partition=0)
    transactional.flush(WAIT_S)

    busy = run(jvm, "Admins", "inspect", broker.bootstrap, topic, share, tid)
    assert steps(busy, "listOffsets") == [
        {"offsets": {"earliest": 0, "latest": 7, "maxTimestamp": 6}}
    ]
    assert steps(busy, "describeConfigs") == [
        {
            "cleanup.policy": "compact,delete",
            "cleanup.policy.source": "DYNAMIC_TOPIC_CONFIG",
            "retention.ms": "604800000",
            "retention.ms.source": "DEFAULT_CONFIG",
        }
    ]
    (groups,) = steps(busy, "listGroups")
    assert groups["groups"][share] == "Share/Stable"
    assert steps(busy, "describeShareGroups") == [
        {"state": "Stable", "members": 1, "coordinator": 1}
    ]
    assert steps(busy, "alterShareGroupOffsets") == [{"error": "GroupNotEmptyException"}]
    assert steps(busy, "deleteRecords") == [{"lowWatermark": 3, "earliest": 3}]
    (producers,) = steps(busy, "describeProducers")
    assert sorted(
        (p["epoch"], p["lastSequence"], p["txnStart"]) for p in producers["producers"]
    ) == [
        (0, 0, 6),  # the open transaction's first record
        (0, 5, -1),  # the idempotent producer of a0..a5
    ]
    (txn,) = steps(busy, "describeTransactions")
    assert (txn["state"], txn["partitions"], txn["coordinator"]) == ("Ongoing", [f"{topic}-0"], 1)
    assert txn["producerId"] in {p["producerId"] for p in producers["producers"]}
    transactional.commit_transaction(WAIT_S)

    member.close()
    empty = run(jvm, "Admins", "inspect", broker.bootstrap, topic, share, tid)
    assert steps(empty, "describeShareGroups") == [
        {"state": "Empty", "members": 0, "coordinator": 1}
    ]
    assert steps(empty, "alterShareGroupOffsets") == [{"error": None}]
    (offsets,) = steps(empty, "listShareGroupOffsets")
    # start offset 2 (then 3: the records before it were deleted), the lag to the
    # end; partitions 1 and 2 (no records) differ on purpose: Kafka lists no offset
    # for them until its next state write, Shoal the start offset its share-partition
    # wrote when the member's session closed (0)
    assert offsets["offsets"][f"{topic}-0"] == "2 lag 6"  # a2..a5, "open" and its marker
    assert _share_offsets(broker.bootstrap, share, topic)[0] == (0, 2, 6)
    (txn,) = steps(empty, "describeTransactions")
    assert txn["state"] == "CompleteCommit"


def test_admin_client_survey(broker: Broker, jvm: JavaSession) -> None:
    """The rest of Admin's calls, each answered as Kafka 4.2 answers them (the reference
    broker gave the same lines, but for the ones noted)."""
    topic, group, tid = topic_name("java-survey"), topic_name("java-survey-g"), topic_name("sv")
    create_topic(broker.bootstrap, topic, partitions=2)
    produce_values(broker.bootstrap, topic, [b"x%d" % i for i in range(5)], partition=0)
    reader = consumer(broker.bootstrap, group_id=group)
    try:
        reader.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=False)
    finally:
        reader.close()
    open_txn = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": tid})
    open_txn.init_transactions(WAIT_S)
    open_txn.begin_transaction()
    open_txn.produce(topic, b"t", partition=1)
    open_txn.flush(WAIT_S)

    lines = run(jvm, "Admins", "survey", broker.bootstrap, topic, group, tid)
    seen = {line["step"]: {k: v for k, v in line.items() if k != "step"} for line in lines}

    def result(step: str) -> Any:
        assert "result" in seen[step], (step, seen[step])
        return seen[step]["result"]

    def error(step: str) -> tuple[str, str]:
        assert "error" in seen[step], (step, seen[step])
        return seen[step]["error"], seen[step]["message"]

    # Kafka also finalizes kraft.version and streams.version (Shoal has neither: on
    # purpose, docs/design/differential.md)
    assert {"group.version", "metadata.version", "share.version", "transaction.version"} <= set(
        result("describeFeatures").strip("[]").split(", ")
    )
    assert result("describeReplicaLogDirs") == "[true]"
    assert result("listPartitionReassignments") == "{}"
    assert result("alterPartitionReassignments") == "ok"
    not_needed = "ElectionNotNeededException: Leader election not needed for topic partition."
    assert result("electLeaders") == not_needed
    assert result("electLeaders-unclean") == not_needed
    assert result("alterUserScramCredentials") == "ok"
    assert result("describeUserScramCredentials") == (
        "[ScramCredentialInfo{mechanism=SCRAM_SHA_256, iterations=4096}]"
    )
    assert error("describeUserScramCredentials-missing") == (
        "ResourceNotFoundException",
        "Attempt to describe a user credential that does not exist: nobody",
    )
    assert result("alterConsumerGroupOffsets") == "ok"
    assert result("listConsumerGroupOffsets") == (
        f"{{{topic}-0=OffsetAndMetadata{{offset=2, leaderEpoch=null, metadata='m'}}}}"
    )
    assert result("describeConsumerGroups") == "Empty Classic 0 "
    assert result("describeClassicGroups") == "Empty  0"  # only committed to: no protocol
    assert error("removeMembersFromConsumerGroup") == (
        "UnknownMemberIdException",
        "The coordinator is not aware of this member.",
    )
    assert result("deleteConsumerGroupOffsets") == "ok"
    assert result("listConsumerGroupOffsets-after") == "{}"
    assert result("alterConsumerGroupOffsets-again") == "ok"
    assert result("deleteConsumerGroups") == "ok"
    assert error("deleteConsumerGroups-missing") == (
        "GroupIdNotFoundException",
        "The group id does not exist.",
    )
    assert f"{tid}:Ongoing" in result("listTransactions")
    assert f"{tid}:Ongoing" in result("listTransactions-duration")
    assert result("fenceProducers") == "ok"
    assert result("describeTransactions-fenced") == "Empty epoch 2"
    assert result("forceTerminateTransaction") == "ok"
    assert result("describeTransactions-terminated") == "Empty epoch 3"
    assert f"TOPIC:{topic}" in result("listConfigResources")
    assert result("listClientMetricsResources") == "[]"
    assert result("createPartitions") == "ok"
    assert error("createPartitions-same") == (
        "InvalidPartitionsException",
        "Topic already has 4 partition(s).",
    )
    assert error("createDelegationToken")[1] == (
        "Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on "
        "delegation token authenticated channels."
    )
    assert result("updateFeatures-dry") == "ok"
    unknown = (
        "UnknownTopicOrPartitionException",
        "This server does not host this topic-partition.",
    )
    assert error("deleteTopics-missing") == unknown
    assert error("describeTopics-missing") == unknown
    assert error("deleteShareGroups-missing") == (
        "GroupIdNotFoundException",
        "The group id does not exist.",
    )
    assert error("describeShareGroups-missing") == (
        "GroupIdNotFoundException",
        "Group no-such-group not found.",
    )
