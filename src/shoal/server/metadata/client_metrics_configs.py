"""Client metrics resources (config resource type CLIENT_METRICS = 16, KIP-714): named
subscriptions of `interval.ms`, `metrics` and `match`, kept as Kafka keeps them.

Shoal serves no client telemetry (GetTelemetrySubscriptions / PushTelemetry), so a
subscription changes nothing (docs/reference/configs.md, NoEffect.TELEMETRY); it is stored,
described and listed (ListConfigResources) so that tools that manage them work. As in
Kafka, these are cluster-wide dynamic configs: `LiveBrokerConfig` holds the store.

- `validate(name, proposed)`: a resource's whole proposed settings (strings), checked
  in Kafka's words and codes: an empty name, an unknown key or an `interval.ms`
  outside 100 ms .. 1 hour INVALID_REQUEST; a value of the wrong type or a bad `match`
  pattern INVALID_CONFIG. Returns the canonical strings or raises Refused.
- `ClientMetricsConfigStore`: the current resources (name -> settings; a resource
  with no settings does not exist), kept in the metadata log (server/metadata/metadata_log.py)
  as ConfigRecords of resource type CLIENT_METRICS, written durably before a change is
  adopted. A stored resource that no longer validates is skipped with a warning.
  (Older versions kept `client-metrics-configs.json`; the start-up migration moves it
  into the log: server/metadata/migration.py.)
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from types import MappingProxyType

from shoal.config import CLIENT_METRICS_KEYS, ConfigError, render
from shoal.metadata.records import CLIENT_METRICS_RESOURCE
from shoal.protocol.errors import ErrorCode
from shoal.server.metadata.metadata_log import MetadataLog
from shoal.server.refused import Refused

log = logging.getLogger(__name__)
INTERVAL_MS_MIN, INTERVAL_MS_MAX = 100, 3_600_000
"""Kafka's bounds of a subscription's push interval."""


def validate(name: str, proposed: Mapping[str, str]) -> dict[str, str]:
    """The canonical settings of resource `name`, or Refused (see the module docstring)."""
    if not name:
        raise Refused(ErrorCode.invalid_request, "Subscription name can't be empty")
    settings: dict[str, str] = {}
    for key, raw in proposed.items():
        definition = CLIENT_METRICS_KEYS.get(key)
        if definition is None:
            raise Refused(ErrorCode.invalid_request, f"Unknown client metrics configuration: {key}")
        try:
            value = definition.parse(raw)
        except ConfigError as exc:
            raise Refused(ErrorCode.invalid_config, str(exc).removeprefix(f"{key}: ")) from exc
        if key == "interval.ms" and not INTERVAL_MS_MIN <= value <= INTERVAL_MS_MAX:
            raise Refused(
                ErrorCode.invalid_request,
                f"Invalid value {value} for interval.ms, interval must be between "
                f"{INTERVAL_MS_MIN} and {INTERVAL_MS_MAX} (1 hour)",
            )
        settings[key] = render(definition, value) or ""
    return settings


class ClientMetricsConfigStore:
    """The client metrics resources in the metadata log (see the module docstring)."""

    def __init__(self, metadata: MetadataLog) -> None:
        self._metadata = metadata
        image = metadata.image
        resources: dict[str, Mapping[str, str]] = {}
        for name in image.config_resources(CLIENT_METRICS_RESOURCE):
            try:
                settings = validate(name, image.config(CLIENT_METRICS_RESOURCE, name))
            except Refused as exc:
                log.warning("ignoring persisted client metrics resource %r: %s", name, exc.message)
                continue
            resources[name] = MappingProxyType(settings)
        self._resources: Mapping[str, Mapping[str, str]] = MappingProxyType(resources)

    def names(self) -> list[str]:
        """The resources that exist (set at least one key), sorted."""
        return sorted(self._resources)

    def settings(self, name: str) -> Mapping[str, str]:
        """What resource `name` sets (empty if it does not exist)."""
        return self._resources.get(name, MappingProxyType({}))

    async def alter(self, name: str, proposed: Mapping[str, str], *, validate_only: bool) -> None:
        """Make `proposed` the whole of resource `name`'s settings (empty removes it):
        validated, persisted, then adopted. Raises Refused or OSError."""
        settings = validate(name, proposed)
        if validate_only or settings == dict(self.settings(name)):
            return
        shard = self._metadata.shard
        await self._metadata.write(shard.set_configs(CLIENT_METRICS_RESOURCE, name, settings))
        resources = dict(self._resources)
        resources.pop(name, None)
        if settings:
            resources[name] = MappingProxyType(settings)
        self._resources = MappingProxyType(resources)
