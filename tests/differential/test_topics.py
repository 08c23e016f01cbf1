"""Topic lifecycle against Kafka 4.2: Metadata auto-creation, deletion and re-creation.

Each scenario runs the same requests (raw wire requests with kio objects, or
confluent-kafka) against Kafka and Shoal and compares what a client sees: error
codes and partition counts. Both brokers run with their defaults
(`auto.create.topics.enable=true`, `num.partitions=1`).
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
from kio.schema.errors import ErrorCode
from kio.schema.list_partition_reassignments.v0.request import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsTopics,
)
from kio.schema.metadata.v1.request import MetadataRequest as MetadataRequestV1
from kio.schema.metadata.v1.request import MetadataRequestTopic as MetadataRequestTopicV1
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i16, i32, i32Timedelta

from shoal.client import requests
from shoal.protocol.schema import request_schema
from tests.differential.conftest import Pair, unique
from tests.support import kafka_reference
from tests.support.batches import values_batch
from tests.support.broker import wait_until
from tests.support.wire import call, open_connection, send

TIMEOUT = i32Timedelta.parse(datetime.timedelta(seconds=30))


def metadata(name: str, *, allow: bool) -> MetadataRequest:
    return MetadataRequest(
        topics=(MetadataRequestTopic(topic_id=None, name=TopicName(name)),),
        allow_auto_topic_creation=allow,
        include_topic_authorized_operations=False,
    )


def create(name: str, partitions: int) -> CreateTopicsRequest:
    return CreateTopicsRequest(
        topics=(
            CreatableTopic(
                name=TopicName(name),
                num_partitions=i32(partitions),
                replication_factor=i16(-1),
                assignments=(),
                configs=(),
            ),
        ),
        timeout=TIMEOUT,
        validate_only=False,
    )


def delete(name: str) -> DeleteTopicsRequest:
    return DeleteTopicsRequest(
        topics=(DeleteTopicState(name=TopicName(name), topic_id=uuid.UUID(int=0)),),
        timeout=TIMEOUT,
    )


def described(response: Any) -> tuple[str, int]:
    """(error name, partition count) of a Metadata response's one topic."""
    (topic,) = response.topics
    return ErrorCode(topic.error_code).name, len(topic.partitions)


def partitions_once_known(bootstrap: str, name: str) -> tuple[str, int]:
    """The topic's description once Metadata (no auto-creation) knows it, or the last
    answer after 10 s (Kafka's controller makes an auto-created topic a moment later)."""
    answers: list[tuple[str, int]] = []

    def known() -> bool:
        answers.append(described(call(bootstrap, metadata(name, allow=False))[0]))
        return answers[-1][0] == "none"

    wait_until(known, timeout_s=10, interval_s=0.1)
    return answers[-1]


def created_error(response: Any) -> str:
    (topic,) = response.topics
    return ErrorCode(topic.error_code).name


# ---- Metadata auto-creation ----------------------------------------------------------


def auto_create(bootstrap: str, *, allow: bool) -> tuple[tuple[str, int], tuple[str, int]]:
    name = unique("auto")
    (first,) = call(bootstrap, metadata(name, allow=allow))
    return described(first), partitions_once_known(bootstrap, name)


def test_auto_creation_answers_unknown_then_the_topic_has_num_partitions(pair: Pair) -> None:
    kafka, shoal = pair.run(auto_create, allow=True)
    # Kafka's default num.partitions is 1, and so is Shoal's.
    assert kafka == shoal == (("unknown_topic_or_partition", 0), ("none", 1))


def test_no_auto_creation_when_the_request_forbids_it(pair: Pair) -> None:
    kafka, shoal = pair.run(auto_create, allow=False)
    assert kafka == shoal == (("unknown_topic_or_partition", 0), ("unknown_topic_or_partition", 0))


def auto_create_v1(bootstrap: str) -> tuple[tuple[str, int], tuple[str, int]]:
    """Metadata v1-v3 have no allow flag: an unknown topic is always created."""
    name = unique("auto-v1")
    request = MetadataRequestV1(topics=(MetadataRequestTopicV1(name=TopicName(name)),))
    (first,) = call(bootstrap, request)
    return described(first), partitions_once_known(bootstrap, name)


def test_metadata_before_v4_always_auto_creates(pair: Pair) -> None:
    kafka, shoal = pair.run(auto_create_v1)
    assert kafka == shoal == (("unknown_topic_or_partition", 0), ("none", 1))


# ---- deletion and re-creation ------------------------------------------------------


def recreate_after_metadata(bootstrap: str, *, allow: bool) -> tuple[Any, ...]:
    """Create with 2 partitions, delete, Metadata (allow or not), create with 1."""
    name = unique("recreate")
    made, deleted, asked, remade = call(
        bootstrap, create(name, 2), delete(name), metadata(name, allow=allow), create(name, 1)
    )
    return (
        created_error(made),
        ErrorCode(deleted.responses[0].error_code).name,
        described(asked),
        created_error(remade),
        partitions_once_known(bootstrap, name),
    )


def test_deleted_topic_recreated_after_a_consumers_metadata(pair: Pair) -> None:
    # librdkafka's consumers ask with allow_auto_topic_creation=false.
    kafka, shoal = pair.run(recreate_after_metadata, allow=False)
    expected = ("none", "none", ("unknown_topic_or_partition", 0), "none", ("none", 1))
    assert kafka == shoal == expected


def test_deleted_topic_auto_created_by_a_producers_metadata_first(pair: Pair) -> None:
    # A producer's Metadata (allow=true) after the deletion makes the topic again with
    # num.partitions in Kafka too; the explicit creation then finds it.
    kafka, shoal = pair.run(recreate_after_metadata, allow=True)
    expected = (
        "none",
        "none",
        ("unknown_topic_or_partition", 0),
        "topic_already_exists",
        ("none", 1),
    )
    assert kafka == shoal == expected


def consumer_across_recreation(bootstrap: str) -> tuple[Any, ...]:
    """A subscribed librdkafka consumer polls while its topic is deleted and made again
    with 1 partition by the admin client."""
    name = unique("consumed")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 3)])[name].result(30)
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique("g"),
            "topic.metadata.refresh.interval.ms": 200,
        }
    )
    try:
        consumer.subscribe([name])
        consumer.poll(2.0)
        admin.delete_topics([name])[name].result(30)
        consumer.poll(1.0)  # the consumer refreshes its metadata meanwhile
        try:
            admin.create_topics([NewTopic(name, 1)])[name].result(30)
            outcome = "created"
        except KafkaException as exc:
            outcome = exc.args[0].name()
        consumer.poll(0.5)
    finally:
        consumer.close()
    return outcome, partitions_once_known(bootstrap, name)


def test_subscribed_consumer_does_not_bring_a_deleted_topic_back(pair: Pair) -> None:
    kafka, shoal = pair.run(consumer_across_recreation)
    assert kafka == shoal == ("created", ("none", 1))


# ---- an explicit creation racing an auto-creation ----------------------------------


def creation_races_auto_creation(bootstrap: str, name: str) -> tuple[str, str, tuple[str, int]]:
    """CreateTopics (2 partitions) and an auto-creating Metadata sent at once, each on
    its own connection: exactly one makes the topic."""

    async def race() -> tuple[Any, Any]:
        first, second = await open_connection(bootstrap), await open_connection(bootstrap)
        try:
            await send(first, metadata(unique("warm"), allow=False))  # handshakes done
            await send(second, metadata(unique("warm"), allow=False))
            asked, made = await asyncio.gather(
                send(first, metadata(name, allow=True)), send(second, create(name, 2))
            )
            return asked, made
        finally:
            await first.close()
            await second.close()

    asked, made = asyncio.run(race())
    return described(asked)[0], created_error(made), partitions_once_known(bootstrap, name)


def test_creation_racing_auto_creation_one_wins(pair: Pair) -> None:
    for _ in range(3):
        name = unique("race")
        kafka, shoal = pair.run(creation_races_auto_creation, name)
        for asked, made, (error, partitions) in (kafka, shoal):
            assert asked == "unknown_topic_or_partition"
            assert error == "none"
            # The winner decides the count: CreateTopics' 2, or num.partitions' 1.
            expected = {"none": 2, "topic_already_exists": 1}
            assert made in expected and partitions == expected[made], (asked, made, partitions)
        # Shoal's log names the auto-creation only when it made the topic.
        time.sleep(0.2)
        auto_logged = f"auto-created topic {name} " in pair.shoal.log_text()
        assert auto_logged == (shoal[1] == "topic_already_exists"), shoal


# ---- partition reassignments, leader elections, log directories -------------------
#
# A single node: Kafka's controller and Shoal both have one broker (id 1), so every
# partition's only possible replica list is [1], and its leader is always preferred.


def records() -> bytes:
    """3 records stamped now: older ones would go at Kafka's first retention check
    (30 s after it starts), being past `retention.ms`."""
    return values_batch(3, base_timestamp=int(time.time() * 1000))


def api_topic(bootstrap: str) -> str:
    """A topic of 2 partitions, 3 records (one batch) in partition 0."""
    name = unique("admin")
    (made,) = call(bootstrap, create(name, 2))
    assert created_error(made) == "none"
    answers: list[int] = []

    def produced() -> bool:  # Kafka's partitions lead a moment after the creation
        (response,) = call(bootstrap, requests.produce({(name, 0): records()}))
        answers.append(int(response.responses[0].partition_responses[0].error_code))
        return answers[-1] == ErrorCode.none

    assert wait_until(produced, timeout_s=10, interval_s=0.1), answers

    def second_leads() -> bool:  # ... and partition 1 (its log made) a moment later still
        (response,) = call(bootstrap, requests.list_offsets({(name, 1): -1}))
        answers.append(int(response.topics[0].partitions[0].error_code))
        return answers[-1] == ErrorCode.none

    assert wait_until(second_leads, timeout_s=10, interval_s=0.1), answers
    return name


def renamed(rows: list[tuple[Any, ...]], **names: str) -> list[tuple[Any, ...]]:
    """`rows` with each name in every string replaced by its key (T for the topic...)."""

    def plain(value: Any) -> Any:
        if isinstance(value, str):
            for short, name in names.items():
                value = value.replace(name, short)
        return value

    return [tuple(plain(v) for v in row) for row in rows]


def errors(response: Any, topics: str, partitions: str, index: str) -> list[tuple[Any, ...]]:
    """(topic, partition, error name, message) of every partition result, sorted (Kafka's
    controller answers topics in its own hash order)."""
    rows = []
    for topic in getattr(response, topics):
        name = getattr(topic, "name", None) or getattr(topic, "topic", None)
        name = name or topic.topic_name
        for partition in getattr(topic, partitions):
            rows.append(
                (
                    name,
                    int(getattr(partition, index)),
                    ErrorCode(partition.error_code).name,
                    getattr(partition, "error_message", None),
                )
            )
    return sorted(rows)


def reassign(bootstrap: str, version: int) -> dict[str, Any]:
    name = api_topic(bootstrap)
    unknown = unique("nope")
    cases: dict[str, list[tuple[str, int, list[int] | None]]] = {
        "same node": [(name, 0, [1]), (name, 1, [1])],
        "unknown broker": [(name, 0, [7])],
        "two replicas": [(name, 0, [1, 7])],
        "repeated broker": [(name, 0, [1, 1])],
        "empty list": [(name, 0, [])],
        "unknown topic": [(unknown, 0, [1])],
        "unknown partition": [(name, 5, [1])],
        "cancel": [(name, 1, None)],
        "cancel unknown topic": [(unknown, 0, None)],
        "repeated partition": [(name, 0, [1]), (name, 0, [1])],
    }
    seen: dict[str, Any] = {}
    for case, targets in cases.items():
        request = alter_reassignments(targets, version)
        (response,) = call(bootstrap, request)
        rows = errors(response, "responses", "partitions", "partition_index")
        seen[case] = (ErrorCode(response.error_code).name, renamed(rows, T=name, U=unknown))
    (listed,) = call(bootstrap, ListPartitionReassignmentsRequest(topics=None))
    seen["list all"] = (ErrorCode(listed.error_code).name, listed.topics)
    (listed,) = call(
        bootstrap,
        ListPartitionReassignmentsRequest(
            topics=(
                ListPartitionReassignmentsTopics(name=TopicName(name), partition_indexes=(i32(0),)),
                ListPartitionReassignmentsTopics(
                    name=TopicName(unknown), partition_indexes=(i32(0),)
                ),
            )
        ),
    )
    seen["list some"] = (ErrorCode(listed.error_code).name, listed.topics)
    return seen


def alter_reassignments(targets: list[tuple[str, int, list[int] | None]], version: int) -> Any:
    schema = request_schema(45, version)
    by_topic: dict[str, list[Any]] = {}
    for topic, index, replicas in targets:
        by_topic.setdefault(topic, []).append(
            schema.make(
                "ReassignablePartition",
                partition_index=i32(index),
                replicas=None if replicas is None else tuple(BrokerId(b) for b in replicas),
            )
        )
    return schema.make(
        "AlterPartitionReassignmentsRequest",
        topics=tuple(
            schema.make("ReassignableTopic", name=TopicName(topic), partitions=tuple(parts))
            for topic, parts in by_topic.items()
        ),
    )


@pytest.mark.parametrize("version", [0, 1])
def test_partition_reassignments(pair: Pair, version: int) -> None:
    kafka, shoal = pair.run(reassign, version)
    assert kafka == shoal
    assert shoal["same node"] == ("none", [("T", 0, "none", None), ("T", 1, "none", None)])
    assert shoal["cancel"] == ("none", [("T", 1, "no_reassignment_in_progress", None)])
    assert shoal["list all"] == ("none", ())


def elect(bootstrap: str, version: int) -> dict[str, Any]:
    name = api_topic(bootstrap)
    unknown = unique("nope")
    schema = request_schema(43, version)

    def request(election_type: int, topics: dict[str, list[int]] | None) -> Any:
        return schema.make(
            "ElectLeadersRequest",
            election_type=i8(election_type),
            topic_partitions=None
            if topics is None
            else tuple(
                schema.make(
                    "TopicPartitions",
                    topic=TopicName(topic),
                    partitions=tuple(i32(p) for p in parts),
                )
                for topic, parts in topics.items()
            ),
        )

    cases: dict[str, Any] = {
        "preferred": request(0, {name: [0, 1, 9], unknown: [0]}),
        "unclean": request(1, {name: [0]}),
        "unknown type": request(5, {name: [0]}),
        "none": request(0, {}),
    }
    if version >= 1:
        cases["all"] = request(0, None)
    seen: dict[str, Any] = {}
    for case, elect_request in cases.items():
        (response,) = call(bootstrap, elect_request)
        top = ErrorCode(getattr(response, "error_code", 0)).name
        if case == "all":  # every topic listed; compare this test's one
            ours = [r for r in response.replica_election_results if r.topic == name]
            others_empty = all(not r.partition_result for r in response.replica_election_results)
            seen[case] = (top, len(ours), ours[0].partition_result, others_empty)
            continue
        rows = errors(response, "replica_election_results", "partition_result", "partition_id")
        seen[case] = (top, renamed(rows, T=name, U=unknown))
    return seen


@pytest.mark.parametrize("version", [0, 1, 2])
def test_leader_elections(pair: Pair, version: int) -> None:
    kafka, shoal = pair.run(elect, version)
    assert kafka == shoal
    assert shoal["unclean"][1] == [
        ("T", 0, "election_not_needed", "Leader election not needed for topic partition.")
    ]


def describe_log_dirs(bootstrap: str, version: int, data_dir: Path) -> dict[str, Any]:
    name = api_topic(bootstrap)
    unknown = unique("nope")
    schema = request_schema(35, version)

    def request(topics: dict[str, list[int]] | None) -> Any:
        return schema.make(
            "DescribeLogDirsRequest",
            topics=None
            if topics is None
            else tuple(
                schema.make(
                    "DescribableLogDirTopic",
                    topic=TopicName(topic),
                    partitions=tuple(i32(p) for p in parts),
                )
                for topic, parts in topics.items()
            ),
        )

    seen: dict[str, Any] = {}
    cases = {
        "all": request(None),
        "some": request({name: [0, 9], unknown: [0]}),
        "none": request({}),
        "an empty partition": request({name: [1]}),
    }
    for case, describe in cases.items():
        (response,) = call(bootstrap, describe)
        (result,) = response.results
        # Each broker answers its own data directory, by its absolute path.
        assert result.log_dir == str(data_dir.absolute())
        if version >= 4:
            assert 0 < result.usable_bytes <= result.total_bytes
        topics = {
            t.name.replace(name, "T"): sorted(
                (p.partition_index, p.partition_size, p.offset_lag, p.is_future_key)
                for p in t.partitions
            )
            for t in result.topics
            if case != "all" or t.name == name
        }
        seen[case] = (
            ErrorCode(getattr(response, "error_code", 0)).name,
            ErrorCode(result.error_code).name,
            topics,
        )
    return seen


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_describe_log_dirs(pair: Pair, version: int) -> None:
    kafka = describe_log_dirs(pair.kafka.bootstrap, version, pair.kafka.data_dir)
    shoal = describe_log_dirs(pair.shoal.bootstrap, version, pair.shoal.data_dir)
    assert kafka == shoal
    # The same batch takes the same bytes in both logs.
    assert shoal["some"] == ("none", "none", {"T": [(0, len(records()), 0, False)]})


def alter_log_dirs(bootstrap: str, version: int, data_dir: Path) -> dict[str, Any]:
    name = api_topic(bootstrap)
    unknown = unique("nope")
    schema = request_schema(34, version)
    here = str(data_dir.absolute())

    def request(path: str, topics: dict[str, list[int]]) -> Any:
        return schema.make(
            "AlterReplicaLogDirsRequest",
            dirs=(
                schema.make(
                    "AlterReplicaLogDir",
                    path=path,
                    topics=tuple(
                        schema.make(
                            "AlterReplicaLogDirTopic",
                            name=TopicName(topic),
                            partitions=tuple(i32(p) for p in parts),
                        )
                        for topic, parts in topics.items()
                    ),
                ),
            ),
        )

    cases = {
        "unknown dir": request("/nowhere", {name: [0], unknown: [0]}),
        "its own dir": request(here, {name: [0, 1, 9], unknown: [0]}),
        "relative path": request(os.path.relpath(here), {name: [0]}),
    }
    seen: dict[str, Any] = {}
    for case, alter in cases.items():
        (response,) = call(bootstrap, alter)
        rows = [
            (r.topic_name, int(p.partition_index), ErrorCode(p.error_code).name)
            for r in response.results
            for p in r.partitions
        ]
        seen[case] = sorted(renamed(rows, T=name, U=unknown))
    return seen


@pytest.mark.parametrize("version", [1, 2])
def test_alter_replica_log_dirs(pair: Pair, version: int) -> None:
    kafka = alter_log_dirs(pair.kafka.bootstrap, version, pair.kafka.data_dir)
    shoal = alter_log_dirs(pair.shoal.bootstrap, version, pair.shoal.data_dir)
    assert kafka == shoal
    assert shoal["its own dir"] == [
        ("T", 0, "none"),
        ("T", 1, "none"),
        ("T", 9, "unknown_topic_or_partition"),
        ("U", 0, "unknown_topic_or_partition"),
    ]


# ---- Kafka's own tools -------------------------------------------------------------


def tool_outputs(bootstrap: str, data_dir: Path, tmp: Path) -> dict[str, tuple[int, str]]:
    """kafka-reassign-partitions, kafka-log-dirs and kafka-leader-election on a topic:
    (exit code, output with the topic's name and the data directory replaced)."""
    name = api_topic(bootstrap)
    moves = tmp / f"{name}-moves.json"
    moves.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": name, "partition": 0, "replicas": [1]},
                    {"topic": name, "partition": 1, "replicas": [1]},
                ],
            }
        )
    )
    elsewhere = tmp / f"{name}-elsewhere.json"
    elsewhere.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": name, "partition": 0, "replicas": [7]}]})
    )
    topics = tmp / f"{name}-topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": name}]}))
    reassign = ("kafka-reassign-partitions", "--bootstrap-server", bootstrap)
    runs = {
        "generate": (
            *reassign,
            "--generate",
            "--topics-to-move-json-file",
            str(topics),
            "--broker-list",
            "1",
        ),
        "execute": (*reassign, "--execute", "--reassignment-json-file", str(moves)),
        "verify": (*reassign, "--verify", "--reassignment-json-file", str(moves)),
        "list": (*reassign, "--list"),
        "cancel": (*reassign, "--cancel", "--reassignment-json-file", str(moves)),
        "execute elsewhere": (*reassign, "--execute", "--reassignment-json-file", str(elsewhere)),
        "log dirs": (
            "kafka-log-dirs",
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--topic-list",
            name,
        ),
        "elect preferred": (
            "kafka-leader-election",
            "--bootstrap-server",
            bootstrap,
            "--election-type",
            "preferred",
            "--topic",
            name,
            "--partition",
            "0",
        ),
        "elect all unclean": (
            "kafka-leader-election",
            "--bootstrap-server",
            bootstrap,
            "--election-type",
            "unclean",
            "--all-topic-partitions",
        ),
    }
    seen = {}
    for run, args in runs.items():
        done = kafka_reference.run_tool(*args)
        text = done.stdout.replace(name, "T").replace(str(data_dir.absolute()), "<data dir>")
        seen[run] = (done.returncode, text)
    return seen


def log_dirs_json(output: str) -> Any:
    """kafka-log-dirs' JSON line, its partitions sorted (Kafka's come in hash order)."""
    (line,) = [line for line in output.splitlines() if line.startswith("{")]
    described = json.loads(line)
    for broker in described["brokers"]:
        for log_dir in broker["logDirs"]:
            log_dir["partitions"].sort(key=lambda p: p["partition"])
    return described


def before_throttles(output: str) -> str:
    """What --verify and --cancel print before they clear replication throttles."""
    return output.split("Clearing broker-level throttles", maxsplit=1)[0]


def test_kafka_tools(pair: Pair, tmp_path: Path) -> None:
    kafka = tool_outputs(pair.kafka.bootstrap, pair.kafka.data_dir, tmp_path)
    shoal = tool_outputs(pair.shoal.bootstrap, pair.shoal.data_dir, tmp_path)
    for run in ("generate", "execute", "list", "execute elsewhere", "elect preferred"):
        assert kafka[run] == shoal[run], run
    assert "Successfully started partition reassignments for T-0,T-1" in shoal["execute"][1]
    assert "Valid replica already elected for partitions T-0" in shoal["elect preferred"][1]
    assert shoal["execute elsewhere"][0] == 1  # the tool checks the broker ids itself
    assert (kafka["log dirs"][0], log_dirs_json(kafka["log dirs"][1])) == (
        shoal["log dirs"][0],
        log_dirs_json(shoal["log dirs"][1]),
    )
    # Every partition of every topic: neither broker has an election to make.
    assert kafka["elect all unclean"] == shoal["elect all unclean"] == (0, "")
    for run in ("verify", "cancel"):
        assert before_throttles(kafka[run][1]) == before_throttles(shoal[run][1]), run
    assert "Reassignment of partition T-0 is completed." in shoal["verify"][1]
    assert "None of the specified partition reassignments are active." in shoal["cancel"][1]


def verify_exit_code(bootstrap: str, tmp: Path) -> int:
    name = api_topic(bootstrap)
    moves = tmp / f"{name}-verify.json"
    moves.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": name, "partition": 0, "replicas": [1]}]})
    )
    args = ("--bootstrap-server", bootstrap, "--verify", "--reassignment-json-file", str(moves))
    return kafka_reference.run_tool("kafka-reassign-partitions", *args).returncode


def test_reassign_verify_clears_throttles(pair: Pair, tmp_path: Path) -> None:
    """--verify deletes the broker keys leader/follower.replication.throttled.rate and
    replica.alter.log.dirs.io.max.bytes.per.second: Kafka keys without effect here."""
    kafka, shoal = pair.run(verify_exit_code, tmp_path)
    assert kafka == shoal == 0


# ---- the data directory's lock -----------------------------------------------------


def test_a_second_broker_on_a_data_directory_in_use_does_not_start(
    pair: Pair, tmp_path: Path
) -> None:
    """Kafka refuses (its LogManager locks `.lock`); so does Shoal
    (server/services/data_dir_lock.py). The second Kafka reaches the directory through a symlink, so
    that its config file does not overwrite the first one's."""
    alias = tmp_path / "alias"
    alias.symlink_to(pair.kafka.data_dir)
    second = kafka_reference.KafkaBroker(alias, log_path=tmp_path / "second-kafka.log")
    with pytest.raises(RuntimeError, match="did not start"):
        second.start()
    assert "Failed to acquire lock on file .lock" in second.log_text()
    assert pair.kafka.alive
    shoal = subprocess.run(
        [
            sys.executable,
            "-m",
            "shoal.cli.main",
            "serve",
            "--port",
            "0",
            "--data-dir",
            str(pair.shoal.data_dir),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert shoal.returncode != 0
    assert f"process {pair.shoal.pid} holds its lock" in shoal.stderr
    assert pair.shoal.alive
