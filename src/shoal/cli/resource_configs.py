"""`shoal configs --describe --entity-type topics` (or `--topic T`): a topic's configs
as Kafka's kafka-configs.sh prints them.

  Dynamic configs for topic T are:
    retention.ms=86400000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=86400000}

Without `--all` only the values set on the topic (source DYNAMIC_TOPIC_CONFIG) are
shown; with it every config ("All configs for topic T are:"). Configs are sorted by
name; each lists its synonyms (DescribeConfigs with IncludeSynonyms) in the broker's
order; a sensitive value prints as null. Without a topic every topic is described, in
the order Kafka's tool lists them (its Admin client's HashMap of the topics:
java_order.py). An unknown topic gets Kafka's line ("The topic 'T' doesn't exist and
doesn't have dynamic config.") and exit status 1 (Kafka's is 0). Altering topic
configs is not offered here (kafka-configs.sh or any Admin client's
IncrementalAlterConfigs does it).
"""

from __future__ import annotations

from typing import IO

from shoal.cli.java_order import hash_map_order
from shoal.cli.topic_admin import describe_topics
from shoal.client import Client, check, requests
from shoal.client.errors import ErrorCode

CONFIG_SOURCES = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "CLIENT_METRICS_CONFIG",
    8: "GROUP_CONFIG",
}
"""DescribeConfigs ConfigSource values by Kafka's name (ConfigEntry.ConfigSource)."""
DYNAMIC_TOPIC_CONFIG = 1


def describe(client: Client, topic: str | None, *, describe_all: bool, out: IO[str]) -> int:
    """Print the configs of `topic` (None: of every topic)."""
    if topic is None:
        found, _ = describe_topics(client, None)
        # Kafka's tool fills a HashMap in the Metadata answer's order, and keys that
        # share a bucket keep that order: so the answer's order, not a sorted one
        topics = hash_map_order(found)
    else:
        topics = [topic]
    if not topics:
        return 0
    response = client.call(
        requests.describe_configs(requests.TOPIC_RESOURCE, topics, synonyms=True)
    )
    results = {str(r.resource_name): r for r in response.results}
    for name in topics:
        result = results[name]
        unknown = result.error_code == ErrorCode.unknown_topic_or_partition
        if unknown and not describe_all:
            # Kafka's words, on stdout; Kafka exits 0, Shoal 1 (scripts can tell)
            print(f"The topic '{name}' doesn't exist and doesn't have dynamic config.", file=out)
            return 1
        # with --all Kafka's tool prints the heading before it learns of an error
        print(f"{'All' if describe_all else 'Dynamic'} configs for topic {name} are:", file=out)
        check(result.error_code, result.error_message, context=f"configs of topic '{name}'")
        shown = sorted(
            (c for c in result.configs if describe_all or _source(c) == DYNAMIC_TOPIC_CONFIG),
            key=lambda c: str(c.name),
        )
        for config in shown:
            synonyms = ", ".join(
                f"{CONFIG_SOURCES.get(_source(s), 'UNKNOWN')}:{s.name}={_value(s)}"
                for s in config.synonyms
            )
            sensitive = "true" if config.is_sensitive else "false"
            print(
                f"  {config.name}={_value(config)} sensitive={sensitive} synonyms={{{synonyms}}}",
                file=out,
            )
    return 0


def _source(entry: object) -> int:
    return int(getattr(entry, "source", getattr(entry, "config_source", 0)))


def _value(entry: object) -> str:
    value = getattr(entry, "value", None)
    return "null" if value is None else str(value)
