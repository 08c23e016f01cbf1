"""A topic's configuration: its overrides checked (`validate_topic_configs`, for
CreateTopics and IncrementalAlterConfigs) and resolved over the broker's values
(`effective_topic_config`); a resolved value read through its typed key
(`topic_value(configs, topic_keys.RETENTION_MS) -> int`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from shoal.config.broker import BrokerConfig
from shoal.config.definition import LONG_MAX, ConfigError, ConfigType, Key, Scope
from shoal.config.table import BROKER_KEYS, TOPIC_KEYS

T = TypeVar("T")


def topic_value(values: Mapping[str, Any], key: Key[T]) -> T:
    """A topic (or broker) key's value in a resolved config mapping such as
    `effective_topic_config`'s, typed by its declaration; absent or None takes the
    key's default."""
    assert key.scope in (Scope.TOPIC, Scope.BROKER), key
    value = values.get(key.name)
    return key.default if value is None else cast("T", value)


def topic_override(overrides: Mapping[str, Any], key: Key[T]) -> T | None:
    """A topic key's value among a topic's own overrides (`TopicInfo.configs`), typed
    by its declaration; None when the topic does not set it."""
    assert key.scope is Scope.TOPIC, key
    return cast("T | None", overrides.get(key.name))


# By name, the key's declared type checked at the call: `topic_value` is the way; these
# remain for code that holds a name rather than a key.
def config_int(values: Mapping[str, Any], key: str) -> int:
    """An INT, SHORT or LONG topic (or broker) key's value in a resolved config mapping
    such as `effective_topic_config`'s; absent or None takes the key's default."""
    value = _mapping_value(values, key, (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG))
    assert isinstance(value, int) and not isinstance(value, bool), (key, value)
    return value


def config_float(values: Mapping[str, Any], key: str) -> float:
    """A DOUBLE topic (or broker) key's value in a resolved config mapping; absent or
    None takes the key's default."""
    value = _mapping_value(values, key, (ConfigType.DOUBLE,))
    assert isinstance(value, (int, float)) and not isinstance(value, bool), (key, value)
    return float(value)


def config_list(values: Mapping[str, Any], key: str) -> list[str]:
    """A LIST topic (or broker) key's value in a resolved config mapping; absent or
    None takes the key's default."""
    value = _mapping_value(values, key, (ConfigType.LIST,))
    assert isinstance(value, list), (key, value)
    return [str(item) for item in value]


def config_str(values: Mapping[str, Any], key: str) -> str:
    """A STRING topic (or broker) key's value in a resolved config mapping; absent or
    None takes the key's default."""
    value = _mapping_value(values, key, (ConfigType.STRING,))
    assert isinstance(value, str), (key, value)
    return value


def _mapping_value(values: Mapping[str, Any], key: str, types: tuple[ConfigType, ...]) -> Any:
    definition = TOPIC_KEYS.get(key) or BROKER_KEYS.get(key)
    if definition is None:
        raise KeyError(f"unknown topic or broker config key {key!r}")
    if definition.type not in types:
        raise TypeError(f"{key} is a {definition.type.name}, not {types[0].name}")
    value = values.get(key)
    return definition.default if value is None else value


def validate_topic_configs(configs: Mapping[str, str | None]) -> dict[str, Any]:
    """Check topic-level overrides; returns typed values or raises ConfigError."""
    typed: dict[str, Any] = {}
    for key, value in configs.items():
        definition = TOPIC_KEYS.get(key)
        if definition is None:
            raise ConfigError(
                key, "unknown topic config key", kafka_message=f"Unknown topic config name: {key}"
            )
        typed[key] = definition.parse(value)
    if typed.get("remote.storage.enable"):  # as a Kafka broker without tiered storage
        raise ConfigError(
            "remote.storage.enable",
            "Tiered Storage functionality is disabled in the broker. "
            "Topic cannot be configured with remote log storage.",
        )
    min_lag = typed.get("min.compaction.lag.ms", 0)
    max_lag = typed.get("max.compaction.lag.ms", LONG_MAX)
    if min_lag is not None and max_lag is not None and min_lag > max_lag:
        # Kafka's LogConfig.validateValues (on the overrides with the broker's
        # defaults; here on the overrides, the broker keys keep their defaults' order)
        raise ConfigError(
            "min.compaction.lag.ms",
            f"conflict topic config setting min.compaction.lag.ms ({min_lag}) > "
            f"max.compaction.lag.ms ({max_lag})",
        )
    return typed


def effective_topic_config(broker: BrokerConfig, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Every topic key's value for one topic: its override, else the broker value."""
    result: dict[str, Any] = {}
    for key, definition in TOPIC_KEYS.items():
        if key in overrides:
            result[key] = overrides[key]
        elif definition.synonym is not None and definition.synonym in broker.values:
            value = broker.values[definition.synonym]
            result[key] = definition.default if value is None else value
        else:
            result[key] = definition.default
    return result
