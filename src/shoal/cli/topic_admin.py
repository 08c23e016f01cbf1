"""Topic admin calls for the `shoal` tools, as typed results, over `shoal.client.Client`.

Requests are built by `shoal.client.requests` at the version the client picks from
each broker's ApiVersions. Metadata, DescribeConfigs and the topic changes
(CreateTopics, DeleteTopics, CreatePartitions) go to any broker; ListOffsets goes to
each partition's leader, read from metadata (`Client.to_leaders`), so the tools work
against a many-broker cluster as against one Shoal node. Errors come back as
`KafkaError`s, raised for a call as a whole or returned per topic where Kafka's tools
report per topic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from shoal.client import Client, KafkaError, TopicView, check, offsets, requests
from shoal.client.errors import ErrorCode
from shoal.client.metadata import PartitionView, TopicPartition

DEFAULT_CONFIG_SOURCE = 5
"""DescribeConfigs `config_source` of a value at its default (DEFAULT_CONFIG)."""


@dataclass(frozen=True, slots=True)
class ConfigValue:
    name: str
    value: str | None
    is_default: bool


def describe_topics(
    client: Client, names: Sequence[str] | None
) -> tuple[dict[str, TopicView], dict[str, KafkaError]]:
    """Topics by name (None: every topic, internal ones included), and the error of
    each named topic that could not be described."""
    view = client.metadata(None if names is None else list(names))
    found: dict[str, TopicView] = {}
    failed: dict[str, KafkaError] = {}
    for name, topic in view.topics.items():
        if topic.error_code != ErrorCode.none:
            failed[name] = KafkaError(topic.error_code, None, context=f"topic '{name}'")
        else:
            found[name] = topic
    return found, failed


def describe_topic_partitions(
    client: Client, names: Sequence[str], *, partition_limit: int
) -> dict[str, TopicView]:
    """The named topics with their partitions' eligible leader replicas, from
    DescribeTopicPartitions (API 75) when the broker serves it, page after page of at
    most `partition_limit` partitions (as Java's Admin.describeTopics does), else from
    Metadata (no ELR). A topic that cannot be described fails the call."""
    if not names:
        return {}
    if not client.supports(requests.API_DESCRIBE_TOPIC_PARTITIONS):
        found, failed = describe_topics(client, names)
        for error in failed.values():
            raise error
        return found
    partitions: dict[str, dict[int, PartitionView]] = {}
    heads: dict[str, Any] = {}
    cursor: tuple[str, int] | None = None
    while True:
        response = client.call(
            requests.describe_topic_partitions(
                names, partition_limit=partition_limit, cursor=cursor
            )
        )
        for topic in response.topics:
            name = str(topic.name)
            check(topic.error_code, None, context=f"topic '{name}'")
            heads[name] = topic
            into = partitions.setdefault(name, {})
            for p in topic.partitions:
                into[int(p.partition_index)] = _partition_view(p)
        if response.next_cursor is None:
            break
        cursor = (str(response.next_cursor.topic_name), int(response.next_cursor.partition_index))
    return {
        name: TopicView(
            name=name,
            topic_id=heads[name].topic_id,
            internal=bool(heads[name].is_internal),
            error_code=ErrorCode.none,
            partitions=partitions[name],
        )
        for name in heads
    }


def _partition_view(p: Any) -> PartitionView:
    def nodes(ids: Any) -> tuple[int, ...] | None:
        return None if ids is None else tuple(int(i) for i in ids)

    return PartitionView(
        partition=int(p.partition_index),
        leader=int(p.leader_id),
        leader_epoch=int(p.leader_epoch),
        replicas=tuple(int(r) for r in p.replica_nodes),
        isr=tuple(int(r) for r in p.isr_nodes),
        error_code=int(p.error_code),
        elr=nodes(p.eligible_leader_replicas),
        last_known_elr=nodes(p.last_known_elr),
    )


def topic_configs(client: Client, names: Sequence[str]) -> dict[str, list[ConfigValue]]:
    """Every config of each topic, with whether it is the default (DEFAULT_CONFIG)."""
    if not names:
        return {}
    response = client.call(requests.describe_configs(requests.TOPIC_RESOURCE, names))
    out: dict[str, list[ConfigValue]] = {}
    for result in response.results:
        check(
            result.error_code, result.error_message, context=f"configs of '{result.resource_name}'"
        )
        out[result.resource_name] = [
            ConfigValue(c.name, c.value, int(c.config_source) == DEFAULT_CONFIG_SOURCE)
            for c in result.configs
        ]
    return out


def create_topic(
    client: Client,
    name: str,
    *,
    partitions: int,
    replication_factor: int,
    configs: Mapping[str, str],
    timeout_ms: int,
) -> None:
    """CreateTopics of one topic; -1 partitions or replication factor = broker default."""
    response = client.call(
        requests.create_topic(
            name,
            partitions=partitions,
            replication_factor=replication_factor,
            configs=configs,
            timeout_ms=timeout_ms,
        )
    )
    (result,) = response.topics
    check(result.error_code, getattr(result, "error_message", None))


def delete_topics(
    client: Client, names: Sequence[str], *, timeout_ms: int
) -> dict[str, KafkaError | None]:
    response = client.call(requests.delete_topics(names, timeout_ms=timeout_ms))
    return {str(r.name): _error_or_none(r) for r in response.responses}


def create_partitions(
    client: Client, counts: Mapping[str, int], *, timeout_ms: int
) -> dict[str, KafkaError | None]:
    """Grow each topic to its new partition count."""
    response = client.call(requests.create_partitions(counts, timeout_ms=timeout_ms))
    return {str(r.name): _error_or_none(r) for r in response.results}


def _error_or_none(result: Any) -> KafkaError | None:
    if result.error_code == ErrorCode.none:
        return None
    return KafkaError(result.error_code, getattr(result, "error_message", None))


def list_offsets(
    client: Client, partitions: Iterable[TopicPartition], timestamp: int
) -> dict[TopicPartition, int]:
    """The offset of each partition for `timestamp` (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP,
    else the first offset whose timestamp is at least it; -1 when there is none), asked
    of each partition's leader (`client.offsets`)."""
    return offsets.list_offsets(client, dict.fromkeys(sorted(set(partitions)), timestamp))
