"""Config resources as the admin APIs show and change them.

Shared by DescribeConfigs, the alter APIs (server/handlers/common/config_changes.py) and
CreateTopics (v5+ returns the new topic's configs). A `ConfigEntry` is one key of one resource: its
value, where the value comes from (Kafka's ConfigSource) and its synonyms, highest
precedence first, as Kafka 4.2 shows them:

    topic key   topic override (1) > its broker key: per-broker dynamic (2) >
                cluster-wide dynamic (3) > static (4) > built-in default (5)
    broker key  per-broker dynamic (2) > cluster-wide dynamic (3) > static (4) > default (5)
    group key   group override (8), else default (5), whatever broker layer the
                default value comes from; one synonym: the key itself

Only a key's own spelling is a synonym (log.retention.hours gives log.retention.ms its
value but is not listed as its synonym, and such a value shows as DEFAULT_CONFIG). The
source of an entry is that of its first synonym, DEFAULT_CONFIG when it has none.
Values are the strings `config.render` gives; PASSWORD keys and custom (unknown) broker
keys are sensitive.

`apply_ops` applies IncrementalAlterConfigs' four operations to one resource's own
settings (strings by key); the caller validates the result as a whole.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from shoal.config import (
    BROKER_KEYS,
    CLIENT_METRICS_KEYS,
    GROUP_KEYS,
    TOPIC_KEYS,
    ConfigDef,
    ConfigType,
    Scope,
    effective_topic_config,
    render,
)
from shoal.group.configs import SHOAL_GROUP_EXTENSIONS, effective_group_config
from shoal.protocol.errors import ErrorCode
from shoal.server.metadata.dynamic_config import (
    DYNAMIC_BROKER_KEYS,
    DynamicBrokerConfig,
    DynamicLayer,
    custom_keys,
)
from shoal.server.metadata.logger_configs import DOC as LOGGER_DOC
from shoal.server.metadata.logger_configs import logger_levels
from shoal.server.refused import Refused


class ResourceType(enum.IntEnum):
    """Kafka's ConfigResource.Type ids."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


class ConfigSource(enum.IntEnum):
    TOPIC = 1
    DYNAMIC_BROKER = 2
    DYNAMIC_DEFAULT_BROKER = 3
    STATIC_BROKER = 4
    DEFAULT = 5
    DYNAMIC_BROKER_LOGGER = 6
    CLIENT_METRICS = 7
    GROUP = 8


class AlterOp(enum.IntEnum):
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


_LOGGER = ConfigSource.DYNAMIC_BROKER_LOGGER

UNSET_BY_DEFAULT = frozenset({"log.retention.ms", "log.roll.ms"})
"""Broker keys Kafka leaves null unless set: their hours key gives the value (Shoal
resolves them for use; DescribeConfigs shows them null, with no DEFAULT synonym)."""
LISTED_ONLY_WHEN_SET = frozenset(
    {
        "follower.replication.throttled.rate",
        "leader.replication.throttled.rate",
        "replica.alter.log.dirs.io.max.bytes.per.second",
    }
)
"""Broker keys Kafka 4.2 knows only as dynamic ones (its replication quotas, outside
KafkaConfig): DescribeConfigs lists them only once set, with no DEFAULT synonym."""


@dataclass(frozen=True, slots=True)
class Synonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    definition: ConfigDef
    value: str | None
    source: ConfigSource
    read_only: bool
    synonyms: tuple[Synonym, ...]

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def config_type(self) -> ConfigType:
        return self.definition.type

    @property
    def sensitive(self) -> bool:
        """Kafka withholds the value (and its synonyms' values) of a PASSWORD key and of
        a custom broker key it knows nothing about (which might hold a secret)."""
        return self.config_type is ConfigType.PASSWORD or (
            self.config_type is ConfigType.UNKNOWN and self.source is not _LOGGER
        )


Layers = list[tuple[ConfigSource, Mapping[str, str | None]]]


def broker_layers(dynamic: DynamicBrokerConfig) -> Layers:
    """Every source of broker values, highest precedence first."""
    static = dynamic.static
    return [
        (ConfigSource.DYNAMIC_BROKER, dynamic.broker),
        (ConfigSource.DYNAMIC_DEFAULT_BROKER, dynamic.cluster_default),
        (
            ConfigSource.STATIC_BROKER,
            # per-listener keys (listener.name.*: JAAS configs hold secrets) are not shown
            {
                k: render(BROKER_KEYS[k], static.values[k])
                for k in static.explicit
                if k in BROKER_KEYS
            },
        ),
        (
            ConfigSource.DEFAULT,
            {
                k: render(d, d.default)
                for k, d in BROKER_KEYS.items()
                if d.default is not None
                and k not in UNSET_BY_DEFAULT
                and k not in LISTED_ONLY_WHEN_SET
            },
        ),
    ]


def _broker_synonyms(key: str, layers: Layers) -> list[Synonym]:
    """The values of broker key `key`, layer by layer. As in Kafka 4.2, only the key's
    own spelling counts: log.retention.hours is no synonym of log.retention.ms (it gives
    that key's value, which then shows as a default)."""
    return [Synonym(key, values[key], source) for source, values in layers if key in values]


def topic_entries(overrides: Mapping[str, Any], dynamic: DynamicBrokerConfig) -> list[ConfigEntry]:
    """Every topic key of a topic with these (typed) overrides."""
    layers = broker_layers(dynamic)
    effective = effective_topic_config(dynamic.effective, overrides)
    entries = []
    for key, definition in TOPIC_KEYS.items():
        synonyms: list[Synonym] = []
        if key in overrides:
            synonyms.append(Synonym(key, render(definition, overrides[key]), ConfigSource.TOPIC))
        if definition.synonym is not None:
            synonyms += _broker_synonyms(definition.synonym, layers)
        entries.append(
            ConfigEntry(
                definition=definition,
                value=render(definition, effective[key]),
                source=synonyms[0].source if synonyms else ConfigSource.DEFAULT,
                read_only=False,
                synonyms=tuple(synonyms),
            )
        )
    return entries


def group_entries(overrides: Mapping[str, Any], dynamic: DynamicBrokerConfig) -> list[ConfigEntry]:
    """Every key of a group with these (typed) overrides, as Kafka shows a group: the
    effective value (an override clamped into the current broker bounds, else the
    broker value or the key's default), source GROUP_CONFIG when the group sets it,
    else DEFAULT_CONFIG, and the one synonym of that source. A Shoal extension key
    (`SHOAL_GROUP_EXTENSIONS`) is listed only when the group sets it, so that a fresh
    group lists Kafka 4.2's keys alone."""
    effective = effective_group_config(overrides, dynamic.effective)
    entries = []
    for key, definition in GROUP_KEYS.items():
        if key in SHOAL_GROUP_EXTENSIONS and key not in overrides:
            continue  # Kafka 4.2 has no such key: shown only once the group sets it
        value = render(definition, effective[key])
        if key in overrides:
            source = ConfigSource.GROUP
            synonym = Synonym(key, render(definition, overrides[key]), source)
        else:
            source = ConfigSource.DEFAULT
            synonym = Synonym(key, value, source)
        entries.append(
            ConfigEntry(
                definition=definition,
                value=value,
                source=source,
                read_only=False,
                synonyms=(synonym,),
            )
        )
    return entries


def broker_entries(dynamic: DynamicBrokerConfig, layer: DynamicLayer) -> list[ConfigEntry]:
    """The broker resource: every broker key for this node (`DynamicLayer.BROKER`), or,
    as Kafka shows the "" resource, only the cluster-wide dynamic settings. Custom keys
    (no broker key) set dynamically are listed as Kafka lists them: sensitive, of
    unknown type, read-only."""
    layers = broker_layers(dynamic)
    if layer is DynamicLayer.CLUSTER_DEFAULT:
        layers = [(s, v) for s, v in layers if s is ConfigSource.DYNAMIC_DEFAULT_BROKER]
        values: Mapping[str, str | None] = dynamic.cluster_default
    else:
        values = {k: render(d, dynamic.effective[k]) for k, d in BROKER_KEYS.items()}
        for key in UNSET_BY_DEFAULT:
            own = [s for s in _broker_synonyms(key, layers) if s.name == key]
            values[key] = own[0].value if own else None
        for key in custom_keys({**dynamic.cluster_default, **dynamic.broker}):
            values[key] = None
        for key in LISTED_ONLY_WHEN_SET:
            if not _broker_synonyms(key, layers):
                del values[key]
    entries = []
    for key, value in values.items():
        definition = BROKER_KEYS.get(key)
        if definition is None:
            definition = ConfigDef(key, ConfigType.UNKNOWN, None, Scope.BROKER, "", nullable=True)
        synonyms = _broker_synonyms(key, layers)
        entries.append(
            ConfigEntry(
                definition=definition,
                value=value,
                source=synonyms[0].source if synonyms else ConfigSource.DEFAULT,
                read_only=key not in DYNAMIC_BROKER_KEYS,
                synonyms=tuple(synonyms),
            )
        )
    return entries


def client_metrics_entries(settings: Mapping[str, str]) -> list[ConfigEntry]:
    """A client metrics resource (server/metadata/client_metrics_configs.py) as Kafka shows one:
    each key the resource sets with source CLIENT_METRICS_CONFIG and that synonym, the
    others at their defaults with no synonym."""
    entries = []
    for key, definition in CLIENT_METRICS_KEYS.items():
        synonyms: tuple[Synonym, ...]
        if key in settings:
            value: str | None = settings[key]
            source, synonyms = ConfigSource.CLIENT_METRICS, (Synonym(key, value, _METRICS),)
        else:
            value = render(definition, definition.default)
            source, synonyms = ConfigSource.DEFAULT, ()
        entries.append(ConfigEntry(definition, value, source, False, synonyms))
    return entries


_METRICS = ConfigSource.CLIENT_METRICS


def logger_entries() -> list[ConfigEntry]:
    """The BROKER_LOGGER resource: every logger with its level (server/metadata/logger_configs.py),
    as Kafka shows its log4j loggers."""
    return [
        ConfigEntry(
            definition=ConfigDef(name, ConfigType.UNKNOWN, None, Scope.BROKER, LOGGER_DOC),
            value=level,
            source=ConfigSource.DYNAMIC_BROKER_LOGGER,
            read_only=False,
            synonyms=(),
        )
        for name, level in logger_levels()
    ]


def check_logger_node(resource_name: str, node_id: int, *, describe: bool = False) -> None:
    """A BROKER_LOGGER resource names this node; INVALID_REQUEST in Kafka's words
    otherwise (DescribeConfigs words it as for a broker)."""
    if describe:
        _node_named(resource_name, node_id, *_DESCRIBE_WORDS)
        return
    _node_named(
        resource_name,
        node_id,
        "Node id must be an integer, but it is: {name}",
        "Unexpected node id. Expected {node}, but received {name}",
    )


def broker_layer_for(resource_name: str, node_id: int, *, describe: bool = False) -> DynamicLayer:
    """Which layer a BROKER resource name addresses: "" the cluster-wide defaults, this
    node's id the node itself; anything else is INVALID_REQUEST, in the words Kafka
    uses for DescribeConfigs (`describe`) or for the alter APIs."""
    if resource_name == "":
        return DynamicLayer.CLUSTER_DEFAULT
    if describe:
        _node_named(
            resource_name,
            node_id,
            _DESCRIBE_WORDS[0],
            "Unexpected broker id, expected {node} or empty string, but received {name}",
        )
    else:
        _node_named(
            resource_name,
            node_id,
            "Node id must be an integer, but it is: {name}",
            "Unexpected broker id, expected {node}, but received {name}",
        )
    return DynamicLayer.BROKER


_DESCRIBE_WORDS = (
    "Broker id must be an integer, but it is: {name}",
    "Unexpected broker id, expected {node} but received {name}",
)


def _node_named(resource_name: str, node_id: int, not_a_number: str, other: str) -> None:
    try:
        named = int(resource_name)
    except ValueError:
        raise Refused(ErrorCode.invalid_request, not_a_number.format(name=resource_name)) from None
    if named != node_id:
        raise Refused(ErrorCode.invalid_request, other.format(node=node_id, name=resource_name))


def apply_ops(
    current: Mapping[str, str],
    ops: Sequence[tuple[str, int, str | None]],
    *,
    definitions: Mapping[str, ConfigDef],
    effective_value: Callable[[str], str | None],
    kind: str,
    allow_custom: bool = False,
) -> dict[str, str]:
    """`current` (a resource's own settings) after the (name, operation, value) ops.
    APPEND and SUBTRACT work on LIST keys and start from the key's effective value when
    the resource does not set it. A key with no definition is INVALID_CONFIG, unless
    `allow_custom` (the broker: Kafka keeps such keys) lets SET store it; DELETE of one
    is accepted (it leaves nothing to refuse).
    Raises Refused; validates no values."""
    repeated = sorted(name for name, count in Counter(n for n, _, _ in ops).items() if count > 1)
    if repeated:  # Kafka's ConfigAdminManager names none of them
        raise Refused(ErrorCode.invalid_request, "Error due to duplicate config keys")
    result = dict(current)
    for name, op, value in ops:
        definition = definitions.get(name)
        if definition is None and op == AlterOp.DELETE:
            result.pop(name, None)  # Kafka checks the names of the resulting set only
            continue
        if definition is None and not (allow_custom and op == AlterOp.SET):
            raise Refused(ErrorCode.invalid_config, f"Unknown {kind} config name: {name}")
        if op == AlterOp.DELETE:
            result.pop(name, None)
            continue
        if op not in (AlterOp.SET, AlterOp.APPEND, AlterOp.SUBTRACT):
            raise Refused(ErrorCode.invalid_request, f"{name}: unknown config operation {op}")
        if value is None:
            raise Refused(ErrorCode.invalid_request, f"Null value not supported for : {name}")
        if op == AlterOp.SET:
            result[name] = value
            continue
        if definition is None or definition.type is not ConfigType.LIST:
            # Kafka 4.2's two wordings: the broker's, and every other resource's
            verb = AlterOp(op).name
            message = (
                f"Config value {verb.lower()} is not allowed for config key: {name}"
                if kind == "broker"
                else f"Can't {verb} to key {name} because its type is not LIST."
            )
            raise Refused(ErrorCode.invalid_config, message)
        base = result[name] if name in result else effective_value(name)
        result[name] = ",".join(_list_op(_split(base), _split(value), AlterOp(op)))
    return result


def _split(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def _list_op(items: list[str], operand: list[str], op: AlterOp) -> list[str]:
    if op is AlterOp.APPEND:
        return items + [v for v in dict.fromkeys(operand) if v not in items]
    return [v for v in items if v not in operand]
