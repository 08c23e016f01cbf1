"""Topic admin calls for the `shoal` tools, as typed results.

Metadata (3) v12 for topics and partitions, DescribeConfigs (32) v4 for topic
configs, ListOffsets (2) v7 for partition offsets, CreateTopics (19) v7, DeleteTopics
(20) v6 and CreatePartitions (37) v3. Requests go to any bootstrap broker: Shoal is a
single node that leads every partition. Errors come back as `KafkaError`s, raised
for a call as a whole or returned per topic where Kafka's tools report per topic.
"""

from __future__ import annotations

import datetime
import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kio.schema.create_partitions.v3.request import (
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from kio.schema.create_topics.v7.request import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
from kio.schema.describe_configs.v4.request import DescribeConfigsRequest, DescribeConfigsResource
from kio.schema.list_offsets.v7.request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64

from shoal.cli.admin_client import AdminClient, KafkaError, check
from shoal.protocol.errors import ErrorCode

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
_TOPIC_RESOURCE = i8(2)
_DEFAULT_CONFIG_SOURCE = 5
_CONSUMER_REPLICA = BrokerId(-1)
_READ_UNCOMMITTED = i8(0)

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID | None
    internal: bool
    partitions: tuple[PartitionInfo, ...]


@dataclass(frozen=True, slots=True)
class ConfigValue:
    name: str
    value: str | None
    is_default: bool


def describe_topics(
    client: AdminClient, names: Sequence[str] | None
) -> tuple[dict[str, TopicInfo], dict[str, KafkaError]]:
    """Topics by name (None: every topic, internal ones included), and the error of
    each named topic that could not be described."""
    topics = (
        None
        if names is None
        else tuple(MetadataRequestTopic(topic_id=None, name=TopicName(n)) for n in names)
    )
    response = client.send(
        MetadataRequest(
            topics=topics,
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
    )
    found: dict[str, TopicInfo] = {}
    failed: dict[str, KafkaError] = {}
    for topic in response.topics:
        name = str(topic.name)
        if topic.error_code != ErrorCode.none:
            failed[name] = KafkaError(topic.error_code, None, context=f"topic '{name}'")
            continue
        partitions = sorted(
            (
                PartitionInfo(
                    partition=int(p.partition_index),
                    leader=int(p.leader_id),
                    replicas=tuple(int(r) for r in p.replica_nodes),
                    isr=tuple(int(r) for r in p.isr_nodes),
                )
                for p in topic.partitions
            ),
            key=lambda p: p.partition,
        )
        found[name] = TopicInfo(name, topic.topic_id, bool(topic.is_internal), tuple(partitions))
    return found, failed


def topic_configs(client: AdminClient, names: Sequence[str]) -> dict[str, list[ConfigValue]]:
    """Every config of each topic, with whether it is the default (DEFAULT_CONFIG)."""
    if not names:
        return {}
    response = client.send(
        DescribeConfigsRequest(
            resources=tuple(
                DescribeConfigsResource(
                    resource_type=_TOPIC_RESOURCE, resource_name=name, configuration_keys=None
                )
                for name in names
            ),
            include_synonyms=False,
            include_documentation=False,
        )
    )
    out: dict[str, list[ConfigValue]] = {}
    for result in response.results:
        check(
            result.error_code, result.error_message, context=f"configs of '{result.resource_name}'"
        )
        out[result.resource_name] = [
            ConfigValue(c.name, c.value, int(c.config_source) == _DEFAULT_CONFIG_SOURCE)
            for c in result.configs
        ]
    return out


def create_topic(
    client: AdminClient,
    name: str,
    *,
    partitions: int,
    replication_factor: int,
    configs: Mapping[str, str],
    timeout_ms: int,
) -> None:
    """CreateTopics of one topic; -1 partitions or replication factor = broker default."""
    response = client.send(
        CreateTopicsRequest(
            topics=(
                CreatableTopic(
                    name=TopicName(name),
                    num_partitions=i32(partitions),
                    replication_factor=i16(replication_factor),
                    assignments=(),
                    configs=tuple(
                        CreatableTopicConfig(name=k, value=v) for k, v in configs.items()
                    ),
                ),
            ),
            timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=timeout_ms)),
            validate_only=False,
        )
    )
    (result,) = response.topics
    check(result.error_code, result.error_message)


def delete_topics(
    client: AdminClient, names: Sequence[str], *, timeout_ms: int
) -> dict[str, KafkaError | None]:
    response = client.send(
        DeleteTopicsRequest(
            topics=tuple(DeleteTopicState(name=TopicName(n), topic_id=None) for n in names),
            timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=timeout_ms)),
        )
    )
    return {
        str(r.name): None
        if r.error_code == ErrorCode.none
        else KafkaError(r.error_code, r.error_message)
        for r in response.responses
    }


def create_partitions(
    client: AdminClient, counts: Mapping[str, int], *, timeout_ms: int
) -> dict[str, KafkaError | None]:
    """Grow each topic to its new partition count."""
    response = client.send(
        CreatePartitionsRequest(
            topics=tuple(
                CreatePartitionsTopic(name=TopicName(n), count=i32(c), assignments=None)
                for n, c in counts.items()
            ),
            timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=timeout_ms)),
            validate_only=False,
        )
    )
    return {
        str(r.name): None
        if r.error_code == ErrorCode.none
        else KafkaError(r.error_code, r.error_message)
        for r in response.results
    }


def list_offsets(
    client: AdminClient, partitions: Iterable[TopicPartition], timestamp: int
) -> dict[TopicPartition, int]:
    """The offset of each partition for `timestamp` (-2 earliest, -1 latest, else the
    first offset whose timestamp is at least it; -1 when there is none)."""
    by_topic: dict[str, list[int]] = defaultdict(list)
    for topic, partition in partitions:
        by_topic[topic].append(partition)
    if not by_topic:
        return {}
    response = client.send(
        ListOffsetsRequest(
            replica_id=_CONSUMER_REPLICA,
            isolation_level=_READ_UNCOMMITTED,
            topics=tuple(
                ListOffsetsTopic(
                    name=TopicName(topic),
                    partitions=tuple(
                        ListOffsetsPartition(partition_index=i32(p), timestamp=i64(timestamp))
                        for p in sorted(set(indexes))
                    ),
                )
                for topic, indexes in by_topic.items()
            ),
        )
    )
    out: dict[TopicPartition, int] = {}
    for topic in response.topics:
        for p in topic.partitions:
            where = f"{topic.name}-{p.partition_index}"
            check(p.error_code, None, context=f"listing offsets of {where}")
            out[(str(topic.name), int(p.partition_index))] = int(p.offset)
    return out
