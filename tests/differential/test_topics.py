"""Topic lifecycle against Kafka 4.2: Metadata auto-creation, deletion and re-creation.

Each scenario runs the same requests (raw wire requests with kio objects, or
confluent-kafka) against Kafka and Shoal and compares what a client sees: error
codes and partition counts. Both brokers run with their defaults
(`auto.create.topics.enable=true`, `num.partitions=1`).
"""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from typing import Any

from confluent_kafka import Consumer, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.create_topics.v7.request import CreatableTopic, CreateTopicsRequest
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v1.request import MetadataRequest as MetadataRequestV1
from kio.schema.metadata.v1.request import MetadataRequestTopic as MetadataRequestTopicV1
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.types import TopicName
from kio.static.primitive import i16, i32, i32Timedelta

from tests.differential.conftest import Pair, unique
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
