"""The partition-admin APIs on one node, at each version: AlterPartitionReassignments
(45), ListPartitionReassignments (46), ElectLeaders (43), DescribeLogDirs (35) and
AlterReplicaLogDirs (34). The answers are the ones Kafka 4.2 gives on a single node
(tests/differential/test_topics.py compares them with the reference broker)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32

from shoal.protocol.schema import request_schema
from tests.support.batches import values_batch
from tests.support.broker import BrokerProcess
from tests.support.topics import create_topic, produce, topic_name
from tests.support.wire import call1


@pytest.fixture(scope="module")
def topic(broker: BrokerProcess) -> str:
    """Two partitions, three records in partition 0."""
    name = topic_name("padmin")
    create_topic(broker.bootstrap, name, partitions=2)
    produce(broker.bootstrap, name, records())
    return name


def records() -> bytes:
    """3 records stamped now (older ones would be past `retention.ms`)."""
    return values_batch(3, base_timestamp=int(time.time() * 1000))


def partitions_of(request: dict[str, list[int]], schema: Any, type_name: str, **names: str) -> Any:
    topic_field, partitions_field = names["topic"], names["partitions"]
    return tuple(
        schema.make(
            type_name,
            **{topic_field: TopicName(t), partitions_field: tuple(i32(p) for p in parts)},
        )
        for t, parts in request.items()
    )


@pytest.mark.parametrize("version", [0, 1])
def test_reassignment_to_this_node_completes_and_others_are_refused(
    broker: BrokerProcess, topic: str, version: int
) -> None:
    schema = request_schema(45, version)

    def reassign(target: str, index: int, replicas: list[int] | None) -> tuple[ErrorCode, Any]:
        partition = schema.make(
            "ReassignablePartition",
            partition_index=i32(index),
            replicas=None if replicas is None else tuple(BrokerId(b) for b in replicas),
        )
        request = schema.make(
            "AlterPartitionReassignmentsRequest",
            topics=(
                schema.make("ReassignableTopic", name=TopicName(target), partitions=(partition,)),
            ),
        )
        response = call1(broker.bootstrap, request)
        assert response.error_code == ErrorCode.none
        (result,) = response.responses[0].partitions
        return ErrorCode(result.error_code), result.error_message

    node = 1
    assert reassign(topic, 1, [node]) == (ErrorCode.none, None)
    assert reassign(topic, 0, [7]) == (
        ErrorCode.invalid_replica_assignment,
        "The manual partition assignment includes broker 7, but no such broker is registered.",
    )
    assert reassign(topic, 0, [])[0] == ErrorCode.invalid_replica_assignment
    assert reassign(topic, 0, [node, node])[0] == ErrorCode.invalid_replica_assignment
    assert reassign(topic, 2, [node]) == (
        ErrorCode.unknown_topic_or_partition,
        f"Unable to find partition {topic}:2.",
    )
    assert reassign("absent", 0, [node]) == (
        ErrorCode.unknown_topic_or_partition,
        "Unable to find a topic named absent.",
    )
    assert reassign(topic, 0, None) == (ErrorCode.no_reassignment_in_progress, None)


def test_no_reassignment_is_ever_listed(broker: BrokerProcess, topic: str) -> None:
    schema = request_schema(46, 0)
    for topics in (None, {topic: [0, 1], "absent": [0]}):
        request = schema.make(
            "ListPartitionReassignmentsRequest",
            topics=None
            if topics is None
            else partitions_of(
                topics,
                schema,
                "ListPartitionReassignmentsTopics",
                topic="name",
                partitions="partition_indexes",
            ),
        )
        response = call1(broker.bootstrap, request)
        assert (response.error_code, response.topics) == (ErrorCode.none, ())


@pytest.mark.parametrize("version", [0, 1, 2])
def test_elections_are_never_needed(broker: BrokerProcess, topic: str, version: int) -> None:
    schema = request_schema(43, version)

    def elect(election_type: int, topics: dict[str, list[int]] | None) -> Any:
        return call1(
            broker.bootstrap,
            schema.make(
                "ElectLeadersRequest",
                election_type=i8(election_type),
                topic_partitions=None
                if topics is None
                else partitions_of(
                    topics, schema, "TopicPartitions", topic="topic", partitions="partitions"
                ),
            ),
        )

    response = elect(0, {topic: [0, 5], "absent": [0]})
    results = {
        (r.topic, p.partition_id): (ErrorCode(p.error_code), p.error_message)
        for r in response.replica_election_results
        for p in r.partition_result
    }
    assert results == {
        (topic, 0): (
            ErrorCode.election_not_needed,
            "Leader election not needed for topic partition.",
        ),
        (topic, 5): (ErrorCode.unknown_topic_or_partition, f"No such partition as {topic}-5"),
        ("absent", 0): (ErrorCode.unknown_topic_or_partition, "No such topic as absent"),
    }
    if version == 0:
        return
    (unclean,) = elect(1, {topic: [1]}).replica_election_results
    assert unclean.partition_result[0].error_code == ErrorCode.election_not_needed
    every = elect(0, None)
    assert topic in {r.topic for r in every.replica_election_results}
    assert all(not r.partition_result for r in every.replica_election_results)
    refused = elect(9, {topic: [0]})
    assert refused.error_code == ErrorCode.invalid_request
    (partition,) = refused.replica_election_results[0].partition_result
    assert (partition.error_code, partition.error_message) == (
        ErrorCode.invalid_request,
        "Unknown election type 9",
    )


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_log_dir_is_the_data_directory(broker: BrokerProcess, topic: str, version: int) -> None:
    schema = request_schema(35, version)

    def describe(topics: dict[str, list[int]] | None) -> Any:
        response = call1(
            broker.bootstrap,
            schema.make(
                "DescribeLogDirsRequest",
                topics=None
                if topics is None
                else partitions_of(
                    topics, schema, "DescribableLogDirTopic", topic="topic", partitions="partitions"
                ),
            ),
        )
        (result,) = response.results
        assert result.error_code == ErrorCode.none
        assert result.log_dir == str(broker.data_dir.absolute())
        if version >= 4:
            assert 0 < result.usable_bytes <= result.total_bytes
        return {
            t.name: [
                (p.partition_index, p.partition_size, p.offset_lag, p.is_future_key)
                for p in t.partitions
            ]
            for t in result.topics
        }

    batch = len(records())
    assert describe({topic: [0, 1, 7], "absent": [0]}) == {
        topic: [(0, batch, 0, False), (1, 0, 0, False)]
    }
    assert describe({}) == {}
    every = describe(None)
    assert every[topic] == [(0, batch, 0, False), (1, 0, 0, False)]
    assert "__consumer_offsets" in every


@pytest.mark.parametrize("version", [1, 2])
def test_replicas_move_only_to_where_they_are(
    broker: BrokerProcess, topic: str, version: int
) -> None:
    schema = request_schema(34, version)

    def alter(path: str, topics: dict[str, list[int]]) -> dict[tuple[str, int], ErrorCode]:
        log_dir = schema.make(
            "AlterReplicaLogDir",
            path=path,
            topics=partitions_of(
                topics, schema, "AlterReplicaLogDirTopic", topic="name", partitions="partitions"
            ),
        )
        response = call1(
            broker.bootstrap, schema.make("AlterReplicaLogDirsRequest", dirs=(log_dir,))
        )
        return {
            (r.topic_name, p.partition_index): ErrorCode(p.error_code)
            for r in response.results
            for p in r.partitions
        }

    here = str(broker.data_dir.absolute())
    assert alter(here, {topic: [0, 3], "absent": [0]}) == {
        (topic, 0): ErrorCode.none,
        (topic, 3): ErrorCode.unknown_topic_or_partition,
        ("absent", 0): ErrorCode.unknown_topic_or_partition,
    }
    assert alter("/elsewhere", {topic: [0], "absent": [0]}) == {
        (topic, 0): ErrorCode.log_dir_not_found,
        ("absent", 0): ErrorCode.log_dir_not_found,
    }
    # Kafka's future-replica directory `<topic>-<partition>.<32 hex>-future` must fit in
    # 255 characters: with partition 0 a name of 213 does, one of 214 does not.
    fits, too_long = "x" * 213, "x" * 214
    assert alter(here, {fits: [0], too_long: [0]}) == {
        (fits, 0): ErrorCode.unknown_topic_or_partition,
        (too_long, 0): ErrorCode.invalid_topic_exception,
    }
