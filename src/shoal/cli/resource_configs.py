"""`shoal configs` on config resources, as Kafka 4.2's kafka-configs.sh handles them:
topics, brokers (an id, or `--entity-default` for the cluster's defaults),
broker-loggers, groups and client-metrics.

Describe prints, per entity, a heading and one line per config:

  Dynamic configs for topic T are:
    retention.ms=86400000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=86400000}

Without `--all` only the values set on the entity itself are shown (the dynamic
source of its type: DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, ...; a broker
logger shows every logger); with it every config ("All configs for ..."). The
cluster's broker defaults read "Default configs for brokers in the cluster are:".
Configs are sorted by name; each lists its synonyms in the broker's order; a
sensitive value prints as null. Without a name every entity of the type is
described: topics in the order Kafka's tool lists them (its Admin client's HashMap:
java_order.py), brokers by id then the defaults, groups (every group, and every
group with a config of its own) and client metrics resources.

A named entity that does not exist gets Kafka's line ("The topic 'T' doesn't exist
and doesn't have dynamic config.") and exit status 1 (Kafka's is 0; with `--all`
Kafka asks anyway, and so does Shoal).

Alter is IncrementalAlterConfigs, SET for each added config and DELETE for each
deleted one; a deleted config the entity does not set is refused first ("Invalid
config(s): k"), as Kafka's tool does; a broker logger takes only loggers it has.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO, Any

from shoal.cli.configs_options import (
    BROKER_LOGGERS,
    BROKERS,
    CLIENT_METRICS,
    DEFAULT_NAME,
    GROUPS,
    TOPICS,
    ConfigArgError,
)
from shoal.cli.java_order import hash_map_order
from shoal.cli.share_group_admin import list_groups
from shoal.cli.topic_admin import describe_topics
from shoal.client import Client, check, requests
from shoal.client.requests import ConfigChange

CONFIG_SOURCES = {
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "DYNAMIC_CLIENT_METRICS_CONFIG",
    8: "DYNAMIC_GROUP_CONFIG",
}
"""The names the Admin client gives those sources (ConfigEntry.ConfigSource), which
Kafka's tool prints."""
DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 1, 2, 3
DYNAMIC_CLIENT_METRICS_CONFIG, DYNAMIC_GROUP_CONFIG = 7, 8
RESOURCE_TYPES = {
    TOPICS: requests.TOPIC_RESOURCE,
    BROKERS: requests.BROKER_RESOURCE,
    BROKER_LOGGERS: requests.BROKER_LOGGER_RESOURCE,
    CLIENT_METRICS: requests.CLIENT_METRICS_RESOURCE,
    GROUPS: requests.GROUP_RESOURCE,
}
"""kafka-configs' entity types that are config resources, and their resource types."""


def singular(entity_type: str) -> str:
    """ "topics" -> "topic", as Kafka's messages name one entity (dropRight(1))."""
    return entity_type[:-1]


def describe(
    client: Client, entity_type: str, name: str | None, *, describe_all: bool, out: IO[str]
) -> int:
    """Print the configs of `name` (None: of every entity of the type)."""
    if name is None:
        names = _every(client, entity_type)
    else:
        if not describe_all and name != DEFAULT_NAME and not _exists(client, entity_type, name):
            # Kafka's words, on stdout; Kafka exits 0, Shoal 1 (scripts can tell)
            print(
                f"The {singular(entity_type)} '{name}' doesn't exist and doesn't have "
                "dynamic config.",
                file=out,
            )
            return 1
        names = [name]
    for each in names:
        if each == DEFAULT_NAME:
            print(f"Default configs for {entity_type} in the cluster are:", file=out)
        else:
            kind = "All" if describe_all else "Dynamic"
            print(f"{kind} configs for {singular(entity_type)} {each} are:", file=out)
        out.flush()  # Kafka's tool prints the heading before it learns of an error
        for config in entries(client, entity_type, each, describe_all=describe_all):
            synonyms = ", ".join(f"{_source_name(s)}:{s.name}={_value(s)}" for s in config.synonyms)
            sensitive = "true" if config.is_sensitive else "false"
            print(
                f"  {config.name}={_value(config)} sensitive={sensitive} synonyms={{{synonyms}}}",
                file=out,
            )
    return 0


def entries(
    client: Client, entity_type: str, name: str, *, describe_all: bool, synonyms: bool = True
) -> list[Any]:
    """The entity's config entries, sorted by name: all, or only those of its own
    dynamic source (a broker logger's: all)."""
    _check_broker_id(entity_type, name)
    response = client.call(
        requests.describe_configs(RESOURCE_TYPES[entity_type], [name], synonyms=synonyms)
    )
    result = response.results[0]
    check(
        result.error_code,
        result.error_message,
        context=f"configs of {singular(entity_type)} '{name}'",
    )
    own = _own_source(entity_type, name)
    return sorted(
        (c for c in result.configs if describe_all or own is None or _source(c) == own),
        key=lambda c: str(c.name),
    )


def alter(
    client: Client,
    entity_type: str,
    name: str,
    added: dict[str, str],
    deleted: Sequence[str],
) -> None:
    """Set `added` and delete `deleted` on the entity, in one IncrementalAlterConfigs."""
    present = {
        str(c.name) for c in entries(client, entity_type, name, describe_all=False, synonyms=False)
    }
    if entity_type == BROKER_LOGGERS:
        unknown = [k for k in deleted if k not in present] + [k for k in added if k not in present]
        if unknown:
            raise ConfigArgError(f"Invalid broker logger(s): {','.join(unknown)}")
    else:
        missing = [k for k in deleted if k not in present]
        if missing:
            raise ConfigArgError(f"Invalid config(s): {','.join(missing)}")
    changes = [ConfigChange(k, v) for k, v in added.items()] + [
        ConfigChange(k, "", requests.CONFIG_DELETE) for k in deleted
    ]
    response = client.call(
        requests.incremental_alter_configs({(RESOURCE_TYPES[entity_type], name): changes})
    )
    for result in response.responses:
        check(result.error_code, result.error_message, context=f"altering {entity_type}")


def _own_source(entity_type: str, name: str) -> int | None:
    if entity_type == TOPICS:
        return DYNAMIC_TOPIC_CONFIG
    if entity_type == BROKERS:
        return DYNAMIC_DEFAULT_BROKER_CONFIG if name == DEFAULT_NAME else DYNAMIC_BROKER_CONFIG
    if entity_type == GROUPS:
        return DYNAMIC_GROUP_CONFIG
    if entity_type == CLIENT_METRICS:
        return DYNAMIC_CLIENT_METRICS_CONFIG
    return None


def _check_broker_id(entity_type: str, name: str) -> None:
    if entity_type in (BROKERS, BROKER_LOGGERS) and name != DEFAULT_NAME:
        try:
            int(name)
        except ValueError:
            raise ConfigArgError(
                f"The entity name for {entity_type} must be a valid integer broker id, "
                f"found: {name}"
            ) from None


def _every(client: Client, entity_type: str) -> list[str]:
    if entity_type == TOPICS:
        found, _ = describe_topics(client, None)
        # Kafka's tool fills a HashMap in the Metadata answer's order, and keys that
        # share a bucket keep that order: so the answer's order, not a sorted one
        return hash_map_order(found)
    if entity_type in (BROKERS, BROKER_LOGGERS):
        return [str(node.node_id) for node in client.brokers()] + [DEFAULT_NAME]
    if entity_type == GROUPS:
        listed = [g.group_id for g in list_groups(client, ())]
        return list(dict.fromkeys([*listed, *_listed_resources(client, entity_type)]))
    return _listed_resources(client, entity_type)


def _exists(client: Client, entity_type: str, name: str) -> bool:
    if entity_type == TOPICS:
        found, _ = describe_topics(client, None)
        return name in found
    if entity_type in (BROKERS, BROKER_LOGGERS):
        return name in {str(node.node_id) for node in client.brokers()}
    if entity_type == GROUPS and name in {g.group_id for g in list_groups(client, ())}:
        return True
    return name in _listed_resources(client, entity_type)


def _listed_resources(client: Client, entity_type: str) -> list[str]:
    resource_type = RESOURCE_TYPES[entity_type]
    response = client.call(requests.list_config_resources([resource_type]))
    check(
        response.error_code,
        getattr(response, "error_message", None),
        context="listing config resources",
    )
    return [
        str(r.resource_name)
        for r in response.config_resources
        if int(r.resource_type) == resource_type
    ]


def _source(entry: object) -> int:
    return int(getattr(entry, "source", getattr(entry, "config_source", 0)))


def _source_name(entry: object) -> str:
    return CONFIG_SOURCES.get(_source(entry), "UNKNOWN")


def _value(entry: object) -> str:
    value = getattr(entry, "value", None)
    return "null" if value is None else str(value)
