"""The table of every config key, built from the declaration modules (broker_keys,
topic_keys, group_keys, client_metrics_keys): by (scope, name), and by name per scope.
Each key's type, default and bounds are stated once, in its declaration."""

from __future__ import annotations

from shoal.config import broker_keys, client_metrics_keys, group_keys, topic_keys
from shoal.config.definition import ConfigDef, Scope

_DEFS: list[ConfigDef] = [
    *broker_keys.DEFINITIONS,
    *topic_keys.DEFINITIONS,
    *group_keys.DEFINITIONS,
    *client_metrics_keys.DEFINITIONS,
]

DEFINITIONS: dict[tuple[Scope, str], ConfigDef] = {(d.scope, d.name): d for d in _DEFS}
BROKER_KEYS: dict[str, ConfigDef] = {d.name: d for d in broker_keys.DEFINITIONS}
TOPIC_KEYS: dict[str, ConfigDef] = {d.name: d for d in topic_keys.DEFINITIONS}
GROUP_KEYS: dict[str, ConfigDef] = {d.name: d for d in group_keys.DEFINITIONS}
CLIENT_METRICS_KEYS: dict[str, ConfigDef] = {d.name: d for d in client_metrics_keys.DEFINITIONS}

ORDERED_TRIPLES: list[tuple[str, str, str]] = [
    (r.low.name, BROKER_KEYS[r.key.definition.synonym or ""].name, r.high.name)
    for r in group_keys.SHARE_RANGES
]
"""(min key, default key, max key) of the share group keys' broker settings: checked
at start-up, as Kafka does."""
