"""Dynamic broker configs: what IncrementalAlterConfigs and AlterConfigs change on a
running broker.

As in Kafka, two dynamic layers sit above the static configuration (properties file and
command-line overrides); the highest layer that sets a key wins:

    layer           resource name      DescribeConfigs source
    per-broker      this node's id     DYNAMIC_BROKER_CONFIG (2)
    cluster-wide    ""                 DYNAMIC_DEFAULT_BROKER_CONFIG (3)
    static          -                  STATIC_BROKER_CONFIG (4)
    built-in        -                  DEFAULT_CONFIG (5)

Only keys in `DYNAMIC_BROKER_KEYS` may be set at run time, besides custom keys that
are no broker key (kept, shown and never used, as Kafka keeps them). Layer values are
kept as the canonical strings `config.render` gives. Both layers are part of the
cluster metadata (server/metadata/metadata_log.py), as KRaft keeps them: ConfigRecords of
resource type BROKER, named "" (cluster-wide) or the node id; a change of both is one
durable write. They are applied again at start-up from the metadata image; an entry
that no longer validates (say the static bounds changed) is dropped with a warning
instead of stopping the broker, as Kafka skips invalid dynamic configs. (Older
versions kept each layer in a properties file, `DynamicLayer.value`; the start-up
migration moves them into the log: server/metadata/migration.py.)

Invariant: `effective` is `static` with both layers applied and fully validated.

`LiveBrokerConfig` is the running broker's one holder of the current layers (and of the
client metrics resources, cluster-wide dynamic configs as well): handlers
read `current` (the effective `BrokerConfig`) at each use; `reconfigure` writes new
layers to the metadata log, adopts them and then tells its listeners (the logs, the
group coordinator). It
is called in the broker's change lane (`DiskIO.changes`), one change at a time; a
reader meanwhile sees the config before the change.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from shoal.config import BROKER_KEYS, TOPIC_KEYS, BrokerConfig, ConfigError, render
from shoal.coordinator.result import CoordinatorResult
from shoal.metadata.image import MetadataImage
from shoal.metadata.records import BROKER_RESOURCE, MetadataRecord
from shoal.server.metadata.client_metrics_configs import ClientMetricsConfigStore
from shoal.server.metadata.metadata_log import MetadataLog

log = logging.getLogger(__name__)

_LOG_KEYS = {d.synonym for d in TOPIC_KEYS.values() if d.synonym is not None}
KAFKA_DYNAMIC_KEYS: frozenset[str] = frozenset(
    _LOG_KEYS
    | {"max.connections", "producer.id.expiration.ms"}
    | {key for key, d in BROKER_KEYS.items() if d.dynamic}
)
"""Broker keys Kafka 4.2 lets IncrementalAlterConfigs change that Shoal keeps dynamic
too: the log defaults behind topic configs (Kafka's DynamicLogConfig), max.connections,
producer.id.expiration.ms (the logs re-read it), and the Kafka keys Shoal only stores
(`ConfigDef.dynamic`, config/definition.py)."""
SHOAL_DYNAMIC_KEYS: frozenset[str] = frozenset(
    {"num.partitions", "auto.create.topics.enable"}
    | {key for key in BROKER_KEYS if key.startswith("group.share.")}
)
"""Broker keys Shoal, unlike Kafka 4.2, also changes at run time (topic auto-creation
and the share-group settings; docs/reference/configs.md)."""
DYNAMIC_BROKER_KEYS: frozenset[str] = KAFKA_DYNAMIC_KEYS | SHOAL_DYNAMIC_KEYS
"""Every broker key IncrementalAlterConfigs and AlterConfigs may change. Everything else
needs a restart (e.g. log.retention.check.interval.ms or log.retention.hours, which
are not dynamic in Kafka either) and is refused with INVALID_REQUEST, as Kafka does.
A key that is no broker key at all is kept as Kafka keeps it (`custom_keys`)."""


class DynamicLayer(enum.Enum):
    """The two dynamic layers; the value is the file older versions kept it in."""

    BROKER = "dynamic-broker.properties"
    """This node (resource name = node id)."""
    CLUSTER_DEFAULT = "dynamic-cluster-default.properties"
    """Every broker of the cluster (resource name "")."""

    def resource_name(self, node_id: int) -> str:
        """The BROKER config resource this layer is in the metadata log."""
        return str(node_id) if self is DynamicLayer.BROKER else ""


def check_dynamic_key(key: str) -> None:
    """Raise ConfigError unless `key` may be changed at run time: a broker key that is
    not dynamic (Kafka's "Cannot update these configs dynamically"). A key that is no
    broker key passes: Kafka stores such custom keys without checking them."""
    if key in BROKER_KEYS and key not in DYNAMIC_BROKER_KEYS:
        raise ConfigError(key, "cannot be updated dynamically; change it in the static config")


def canonical(key: str, raw: str) -> str:
    """The stored form of a dynamic value: parsed, checked against the key's bounds and
    rendered back (raises ConfigError); a custom (unknown) key's value as given."""
    definition = BROKER_KEYS.get(key)
    if definition is None:
        return raw
    rendered = render(definition, definition.parse(raw))
    if rendered is None:
        raise ConfigError(key, "a value is required")
    return rendered


def custom_keys(values: Mapping[str, str]) -> list[str]:
    """The keys of a layer that are no broker keys (kept and shown, never used)."""
    return sorted(key for key in values if key not in BROKER_KEYS)


@dataclass(frozen=True, slots=True)
class DynamicBrokerConfig:
    static: BrokerConfig
    broker: Mapping[str, str]
    cluster_default: Mapping[str, str]
    effective: BrokerConfig

    @classmethod
    def build(
        cls,
        static: BrokerConfig,
        *,
        broker: Mapping[str, str],
        cluster_default: Mapping[str, str],
    ) -> DynamicBrokerConfig:
        """Apply both layers onto `static`; raises ConfigError naming the offending key."""
        for key in (*broker, *cluster_default):
            check_dynamic_key(key)
        merged = {k: v for k, v in {**cluster_default, **broker}.items() if k in BROKER_KEYS}
        effective = static.with_overrides(merged) if merged else static
        return cls(static, dict(broker), dict(cluster_default), effective)

    @classmethod
    def load(cls, static: BrokerConfig, image: MetadataImage | None = None) -> DynamicBrokerConfig:
        """The static config with the layers of the metadata `image` applied (none
        without one)."""
        image = image or MetadataImage()
        layers = {
            layer: dict(image.config(BROKER_RESOURCE, layer.resource_name(static.node_id)))
            for layer in DynamicLayer
        }
        while True:
            try:
                loaded = cls.build(
                    static,
                    broker=layers[DynamicLayer.BROKER],
                    cluster_default=layers[DynamicLayer.CLUSTER_DEFAULT],
                )
            except ConfigError as exc:
                dropped = [values.pop(exc.key) for values in layers.values() if exc.key in values]
                log.warning("ignoring persisted dynamic broker config: %s", exc)
                if not dropped:  # the conflict is not one key's fault: drop everything
                    return cls.build(static, broker={}, cluster_default={})
                continue
            if loaded.broker or loaded.cluster_default:
                log.info(
                    "dynamic broker configs applied: per-broker %s, cluster-wide %s",
                    dict(loaded.broker),
                    dict(loaded.cluster_default),
                )
            return loaded

    def layer(self, layer: DynamicLayer) -> Mapping[str, str]:
        return self.broker if layer is DynamicLayer.BROKER else self.cluster_default

    def with_layer(self, layer: DynamicLayer, values: Mapping[str, str]) -> DynamicBrokerConfig:
        """A new validated config with one layer replaced (raises ConfigError)."""
        broker = values if layer is DynamicLayer.BROKER else self.broker
        cluster_default = values if layer is DynamicLayer.CLUSTER_DEFAULT else self.cluster_default
        return DynamicBrokerConfig.build(
            self.static, broker=broker, cluster_default=cluster_default
        )

    def written(self, metadata: MetadataLog) -> CoordinatorResult[MetadataRecord, None]:
        """The metadata write that makes both layers these (one batch)."""
        shard, node_id = metadata.shard, self.static.node_id
        records = tuple(
            record
            for layer in DynamicLayer
            for record in shard.set_configs(
                BROKER_RESOURCE, layer.resource_name(node_id), self.layer(layer)
            ).records
        )
        return CoordinatorResult(records, None)


ConfigListener = Callable[[BrokerConfig], None]


class LiveBrokerConfig:
    """The broker's current dynamic config; replaced only through `reconfigure`."""

    def __init__(self, dynamic: DynamicBrokerConfig, *, metadata: MetadataLog) -> None:
        self._dynamic = dynamic
        self._metadata = metadata
        self.client_metrics = ClientMetricsConfigStore(metadata)
        """The client metrics resources: cluster-wide dynamic configs too, as Kafka keeps
        them beside the broker's (server/metadata/client_metrics_configs.py)."""
        self.listeners: list[ConfigListener] = []
        """Called with the new effective config after each `reconfigure`."""

    @property
    def dynamic(self) -> DynamicBrokerConfig:
        return self._dynamic

    @property
    def current(self) -> BrokerConfig:
        """The effective config now (static plus the dynamic layers)."""
        return self._dynamic.effective

    async def reconfigure(self, dynamic: DynamicBrokerConfig) -> None:
        """Persist `dynamic` (raises OSError, changing nothing), then adopt it and
        tell the listeners."""
        await self._metadata.write(dynamic.written(self._metadata))
        self._dynamic = dynamic
        for listener in self.listeners:
            listener(dynamic.effective)
