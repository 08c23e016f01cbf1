"""Typed configuration: every key Shoal understands, declared once, with its type,
default and bounds, and read through its typed key.

- definition.py: what a key is (`ConfigDef`, `Key[T]`, `Declarer`), how its values
  parse, and how they render as Kafka shows them.
- broker_keys.py, topic_keys.py, group_keys.py, client_metrics_keys.py: the keys of
  each scope, declared once each (`broker_keys.NUM_PARTITIONS` is a `Key[int]`);
  checks.py the checks they name.
- table.py: the table of every key (`DEFINITIONS`, `BROKER_KEYS`, ...), built from the
  declarations.
- broker.py: `BrokerConfig` (`config.get(broker_keys.NUM_PARTITIONS) -> int`).
- topic.py: a topic's overrides checked and resolved (`topic_value`).

Everything the package offered as one module is importable from `shoal.config` still.
"""

from shoal.config import broker_keys, client_metrics_keys, group_keys, topic_keys
from shoal.config.broker import (
    LISTENER_PREFIX,
    LISTENER_PREFIXABLE,
    LISTENER_SUFFIXES,
    BrokerConfig,
    ListenerEndpoint,
    parse_properties,
)
from shoal.config.checks import (
    CLIENT_METRICS_MATCH_KEYS,
    COMPRESSION_TYPES,
    MIGRATION_POLICIES,
    SECURITY_PROTOCOLS,
    http_listener_address,
)
from shoal.config.definition import (
    INT_MAX,
    LONG_MAX,
    ConfigDef,
    ConfigError,
    ConfigType,
    Key,
    NoEffect,
    Scope,
    java_double,
    render,
)
from shoal.config.group_keys import BrokerRange
from shoal.config.table import (
    BROKER_KEYS,
    CLIENT_METRICS_KEYS,
    DEFINITIONS,
    GROUP_KEYS,
    TOPIC_KEYS,
)
from shoal.config.topic import (
    config_float,
    config_int,
    config_list,
    config_str,
    effective_topic_config,
    topic_override,
    topic_value,
    validate_topic_configs,
)

__all__ = [
    "BROKER_KEYS",
    "CLIENT_METRICS_KEYS",
    "CLIENT_METRICS_MATCH_KEYS",
    "COMPRESSION_TYPES",
    "DEFINITIONS",
    "GROUP_KEYS",
    "INT_MAX",
    "LISTENER_PREFIX",
    "LISTENER_PREFIXABLE",
    "LISTENER_SUFFIXES",
    "LONG_MAX",
    "MIGRATION_POLICIES",
    "SECURITY_PROTOCOLS",
    "TOPIC_KEYS",
    "BrokerConfig",
    "BrokerRange",
    "ConfigDef",
    "ConfigError",
    "ConfigType",
    "Key",
    "ListenerEndpoint",
    "NoEffect",
    "Scope",
    "broker_keys",
    "client_metrics_keys",
    "config_float",
    "config_int",
    "config_list",
    "config_str",
    "effective_topic_config",
    "group_keys",
    "http_listener_address",
    "java_double",
    "parse_properties",
    "render",
    "topic_keys",
    "topic_override",
    "topic_value",
    "validate_topic_configs",
]
