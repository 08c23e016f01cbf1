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
from shoal.client.metadata import TopicPartition

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
