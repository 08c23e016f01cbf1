"""Group configs (resource type GROUP = 32): each group's overrides of the group keys
(share, consumer and streams keys; docs/reference/configs.md).

Owns (docs/reference/configs.md, "Group configs"):

- `GroupConfigs`, an immutable value: group id -> that group's typed overrides of
  `config.GROUP_KEYS` (only the keys the group sets; a group that sets none is absent).
  The group need not exist: values are kept by group id.
- `validate_overrides(proposed, broker)`: a group's proposed *full* set of overrides
  (what IncrementalAlterConfigs' operations leave, values as strings) checked against
  the key definitions and the *current* broker config's bounds. Returns the typed
  values or raises `GroupConfigError` (Kafka error INVALID_CONFIG, message naming the
  key); nothing is changed either way.
- `effective_group_config(overrides, broker)`: every share key's value for one group:
  its override clamped into the broker's current bounds (§3.3, Kafka 4.3's
  `GroupConfig.evaluate`), else the broker value the key falls back to
  (`ConfigDef.synonym`), else the key's default.

Checks, as Kafka 4.2's GroupConfigManager.validate and GroupConfig.validate make them
(the reference broker answers the same, tests/differential/test_group_configs.py):
names (a key neither Kafka 4.2's, `KAFKA_42_GROUP_KEYS`, nor a Shoal extension,
`SHOAL_GROUP_EXTENSIONS`, is `Unknown group config name: <key>`); each value through
its key's definition, a Kafka key in the words of Kafka's ConfigDef.parse; then, over
the group's whole set with the keys it does not set at Kafka's *fixed* ConfigDef
defaults (the broker's value only for the two consumer keys), every key's broker
range (`<key> must be greater than or equal to <min key>`), then each session timeout
> its heartbeat interval (`<session key> must be greater than <heartbeat key>`). So
`share.session.timeout.ms=2000` alone is refused even on a broker whose
`group.share.heartbeat.interval.ms` is 1000: the check assumes 5000. Then Shoal's
extensions: the later Kafka's share keys within their broker ranges, and redelivery
backoff <= its maximum. Every code is INVALID_CONFIG.

Pure: no I/O. Persisting the values and telling the group coordinator and the
share-partitions about a change belong to the server layer (server/metadata/group_config_store.py).

Invariant: every value a `GroupConfigs` holds passed its key's `ConfigDef.parse`; the
broker ranges held when it was set and are enforced afterwards by clamping.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from shoal.config import GROUP_KEYS, BrokerConfig, ConfigDef, ConfigError, ConfigType, render
from shoal.config.group_keys import SHARE_RANGES
from shoal.protocol.errors import ErrorCode

SESSION_TIMEOUT_KEY = "share.session.timeout.ms"
HEARTBEAT_INTERVAL_KEY = "share.heartbeat.interval.ms"
BACKOFF_KEY = "shoal.share.redelivery.backoff.ms"
BACKOFF_MAX_KEY = "shoal.share.redelivery.backoff.max.ms"

BROKER_BOUNDS: dict[str, tuple[str, str]] = {
    bounds.key.name: (bounds.low.name, bounds.high.name) for bounds in SHARE_RANGES
}
"""Group key -> the broker keys holding its (min, max): checked when set, clamped after."""

CONSUMER_SESSION_TIMEOUT_KEY = "consumer.session.timeout.ms"
CONSUMER_HEARTBEAT_INTERVAL_KEY = "consumer.heartbeat.interval.ms"
KAFKA_42_BOUNDS: dict[str, tuple[str | None, str]] = {
    CONSUMER_SESSION_TIMEOUT_KEY: (
        "group.consumer.min.session.timeout.ms",
        "group.consumer.max.session.timeout.ms",
    ),
    CONSUMER_HEARTBEAT_INTERVAL_KEY: (
        "group.consumer.min.heartbeat.interval.ms",
        "group.consumer.max.heartbeat.interval.ms",
    ),
    "streams.session.timeout.ms": (
        "group.streams.min.session.timeout.ms",
        "group.streams.max.session.timeout.ms",
    ),
    "streams.heartbeat.interval.ms": (
        "group.streams.min.heartbeat.interval.ms",
        "group.streams.max.heartbeat.interval.ms",
    ),
    "streams.num.standby.replicas": (None, "group.streams.max.standby.replicas"),
}
"""The consumer and streams keys' broker bounds, refused in Kafka 4.2's words (Kafka's
GroupConfig.validate: "<key> must be greater than or equal to <min key>", "... less
than or equal to <max key>"); checked when set, clamped after, as the share keys."""


KAFKA_42_GROUP_KEYS: dict[str, object] = {
    CONSUMER_SESSION_TIMEOUT_KEY: 45_000,
    CONSUMER_HEARTBEAT_INTERVAL_KEY: 5_000,
    SESSION_TIMEOUT_KEY: 45_000,
    HEARTBEAT_INTERVAL_KEY: 5_000,
    "share.record.lock.duration.ms": 30_000,
    "share.auto.offset.reset": "latest",
    "share.isolation.level": "read_uncommitted",
    "streams.session.timeout.ms": 45_000,
    "streams.heartbeat.interval.ms": 5_000,
    "streams.num.standby.replicas": 0,
    "streams.initial.rebalance.delay.ms": 3_000,
}
"""The group keys Kafka 4.2 knows (GroupConfig's ConfigDef, in its order), each with
the value its validation assumes for a group that does not set it: the ConfigDef's
fixed default, whatever the broker's `group.*` setting is, except the two consumer
keys, which take the broker's (`VALIDATION_BROKER_FALLBACK`)."""

VALIDATION_BROKER_FALLBACK = {
    CONSUMER_SESSION_TIMEOUT_KEY: "group.consumer.session.timeout.ms",
    CONSUMER_HEARTBEAT_INTERVAL_KEY: "group.consumer.heartbeat.interval.ms",
}
"""Kafka 4.2's GroupConfigManager.validate starts from these broker values (its
`extractConsumerGroupConfigMap`) before laying the group's set over them."""

_KAFKA_42_RANGES: tuple[tuple[str, str | None, str], ...] = (
    (CONSUMER_HEARTBEAT_INTERVAL_KEY, *KAFKA_42_BOUNDS[CONSUMER_HEARTBEAT_INTERVAL_KEY]),
    (CONSUMER_SESSION_TIMEOUT_KEY, *KAFKA_42_BOUNDS[CONSUMER_SESSION_TIMEOUT_KEY]),
    (HEARTBEAT_INTERVAL_KEY, *BROKER_BOUNDS[HEARTBEAT_INTERVAL_KEY]),
    (SESSION_TIMEOUT_KEY, *BROKER_BOUNDS[SESSION_TIMEOUT_KEY]),
    ("share.record.lock.duration.ms", *BROKER_BOUNDS["share.record.lock.duration.ms"]),
    ("streams.heartbeat.interval.ms", *KAFKA_42_BOUNDS["streams.heartbeat.interval.ms"]),
    ("streams.session.timeout.ms", *KAFKA_42_BOUNDS["streams.session.timeout.ms"]),
    ("streams.num.standby.replicas", *KAFKA_42_BOUNDS["streams.num.standby.replicas"]),
)
"""Kafka 4.2's broker-range checks of the group keys, in GroupConfig.validateValues'
order: (key, broker key of its minimum or None, broker key of its maximum)."""

_KAFKA_42_PAIRS = (
    (CONSUMER_SESSION_TIMEOUT_KEY, CONSUMER_HEARTBEAT_INTERVAL_KEY),
    (SESSION_TIMEOUT_KEY, HEARTBEAT_INTERVAL_KEY),
    ("streams.session.timeout.ms", "streams.heartbeat.interval.ms"),
)
"""(session timeout, heartbeat interval): the first must be greater, checked last."""

SHOAL_GROUP_EXTENSIONS: dict[str, str] = {
    "share.delivery.count.limit": "the group's delivery count limit (a later Kafka's key)",
    "share.partition.max.record.locks": "the group's in-flight window (a later Kafka's key)",
    "share.renew.acknowledge.enable": "whether members may RENEW (a later Kafka's key)",
    "errors.deadletterqueue.topic.name": "the group's dead-letter queue topic (KIP-1191)",
    "errors.deadletterqueue.copy.record.enable": "copy records onto the DLQ (KIP-1191)",
    BACKOFF_KEY: "redelivery backoff",
    "shoal.share.redelivery.backoff.multiplier": "redelivery backoff growth",
    BACKOFF_MAX_KEY: "longest redelivery backoff",
    "shoal.share.delivery.paused": "pause a group's deliveries (shoal share-groups --pause)",
    "shoal.share.delivery.order": "per-key ordered delivery (docs/design/key-order.md)",
    "shoal.share.delivery.delay.max.ms": (
        "longest scheduled delay (docs/design/scheduled-delivery.md)"
    ),
}
"""The group keys Shoal accepts beyond Kafka 4.2's (which refuses them as unknown):
each is read by the share-partitions (share/leader_settings.py);
docs/reference/configs.md lists them.
DescribeConfigs shows one only when the group sets it."""


class GroupConfigError(ValueError):
    """A proposed group config is refused: `code` is the Kafka error, `message`
    names the offending `key`."""

    code = ErrorCode.invalid_config

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key
        self.message = message


def parse_override(key: str, raw: object) -> Any:
    """The typed value of one override (a string from the wire or a file), checked
    against the key's definition but not the broker's ranges; raises GroupConfigError
    (for a Kafka key in the words of Kafka's ConfigDef.parse)."""
    definition = GROUP_KEYS.get(key)
    if definition is None:
        raise GroupConfigError(key, f"Unknown group config name: {key}")
    if key in KAFKA_42_GROUP_KEYS:
        _check_as_kafka(definition, raw)
    try:
        return definition.parse(raw)
    except ConfigError as exc:
        raise GroupConfigError(key, str(exc)) from exc


def _check_as_kafka(definition: ConfigDef, raw: object) -> None:
    """Refuse `raw` as Kafka's ConfigDef.parse does (`Invalid value <raw> for
    configuration <key>: <reason>`): INT keys take a trimmed 32-bit decimal at least
    the key's minimum; string keys their choices or check."""
    key = definition.name
    text = raw.strip() if isinstance(raw, str) else str(raw)

    def refuse(shown: object, reason: str) -> GroupConfigError:
        return GroupConfigError(key, f"Invalid value {shown} for configuration {key}: {reason}")

    if definition.type is ConfigType.INT:
        if not _JAVA_INT.fullmatch(text) or not -(2**31) <= int(text) < 2**31:
            raise refuse(raw, "Not a number of type INT")
        if definition.min is not None and int(text) < definition.min:
            raise refuse(int(text), f"Value must be at least {definition.min:g}")
    elif definition.choices is not None and text not in definition.choices:
        raise refuse(text, f"String must be one of: {', '.join(definition.choices)}")
    elif definition.check is not None and definition.check(text) is not None:
        raise refuse(
            text,
            f"Invalid value `{text}` for configuration {key}. The value must be either "
            "'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
        )


_JAVA_INT = re.compile(r"[+-]?[0-9]+")
"""What Java's Integer.parseInt takes (no underscores, unlike Python's int)."""


def validate_overrides(proposed: Mapping[str, object], broker: BrokerConfig) -> dict[str, Any]:
    """Check a group's full proposed set of overrides as Kafka 4.2's
    GroupConfigManager.validate does, then Shoal's extensions (module docstring);
    the typed values, or GroupConfigError naming the key."""
    for key in proposed:
        if key not in KAFKA_42_GROUP_KEYS and key not in SHOAL_GROUP_EXTENSIONS:
            raise GroupConfigError(key, f"Unknown group config name: {key}")
    ordered = [k for k in KAFKA_42_GROUP_KEYS if k in proposed]
    ordered += [k for k in proposed if k not in KAFKA_42_GROUP_KEYS]
    typed = {key: parse_override(key, proposed[key]) for key in ordered}
    assumed: dict[str, Any] = dict(KAFKA_42_GROUP_KEYS)
    assumed.update({k: broker[b] for k, b in VALIDATION_BROKER_FALLBACK.items()})
    assumed.update(typed)
    for key, low_key, high_key in _KAFKA_42_RANGES:
        if low_key is not None and assumed[key] < broker[low_key]:
            raise GroupConfigError(key, f"{key} must be greater than or equal to {low_key}")
        if assumed[key] > broker[high_key]:
            raise GroupConfigError(key, f"{key} must be less than or equal to {high_key}")
    for session_key, heartbeat_key in _KAFKA_42_PAIRS:
        if assumed[session_key] <= assumed[heartbeat_key]:
            raise GroupConfigError(
                session_key, f"{session_key} must be greater than {heartbeat_key}"
            )
    _validate_extensions(typed, broker)
    return {key: typed[key] for key in proposed}


def _validate_extensions(typed: Mapping[str, Any], broker: BrokerConfig) -> None:
    """Shoal's checks of its extension keys, after Kafka's: the broker ranges of the
    later Kafka's share keys, and redelivery backoff <= its maximum."""
    for key in SHOAL_GROUP_EXTENSIONS:
        if key not in typed or key not in BROKER_BOUNDS:
            continue
        low, high = broker[BROKER_BOUNDS[key][0]], broker[BROKER_BOUNDS[key][1]]
        if not low <= typed[key] <= high:
            raise GroupConfigError(key, f"{key} must be in the range {low} to {high} inclusive.")
    if BACKOFF_KEY in typed or BACKOFF_MAX_KEY in typed:
        backoff_ms = typed.get(BACKOFF_KEY, fallback_value(BACKOFF_KEY, broker))
        backoff_max_ms = typed.get(BACKOFF_MAX_KEY, fallback_value(BACKOFF_MAX_KEY, broker))
        if backoff_ms > backoff_max_ms:
            raise GroupConfigError(
                BACKOFF_MAX_KEY,
                f"{BACKOFF_MAX_KEY} must be at least {BACKOFF_KEY} "
                f"({backoff_max_ms} < {backoff_ms})",
            )


def fallback_value(key: str, broker: BrokerConfig) -> Any:
    """The value of `key` for a group that does not set it: the broker key it falls
    back to, else the key's own default."""
    definition = GROUP_KEYS[key]
    if definition.synonym is not None:
        value = broker.values.get(definition.synonym)
        if value is not None:
            return value
    return definition.default


def clamp(key: str, value: Any, broker: BrokerConfig) -> Any:
    """`value` of `key` moved into the broker's current bounds, if the key has any."""
    bounds = BROKER_BOUNDS.get(key) or KAFKA_42_BOUNDS.get(key)
    if bounds is None:
        return value
    low_key, high_key = bounds
    low = value if low_key is None else broker[low_key]
    return min(max(value, low), broker[high_key])


def effective_group_config(overrides: Mapping[str, Any], broker: BrokerConfig) -> dict[str, Any]:
    """Every share key's value for a group with these typed overrides (see the module
    docstring for the order of precedence)."""
    return {
        key: clamp(key, overrides[key], broker) if key in overrides else fallback_value(key, broker)
        for key in GROUP_KEYS
    }


def render_overrides(overrides: Mapping[str, Any]) -> dict[str, str]:
    """Overrides as the strings Kafka shows (DescribeConfigs, the store's file)."""
    rendered: dict[str, str] = {}
    for key, value in overrides.items():
        text = render(GROUP_KEYS[key], value)
        assert text is not None, (key, value)
        rendered[key] = text
    return rendered


_EMPTY: Mapping[str, Any] = MappingProxyType({})


class GroupConfigs:
    """Typed overrides by group id; immutable (changes return a new value)."""

    __slots__ = ("_groups",)

    def __init__(self, groups: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        table: dict[str, Mapping[str, Any]] = {}
        for group_id, overrides in (groups or {}).items():
            assert group_id, "a group id is never empty"
            unknown = set(overrides) - set(GROUP_KEYS)
            assert not unknown, f"not group config keys: {sorted(unknown)}"
            if overrides:
                table[group_id] = MappingProxyType(dict(overrides))
        self._groups: Mapping[str, Mapping[str, Any]] = MappingProxyType(table)

    def overrides(self, group_id: str) -> Mapping[str, Any]:
        """The keys `group_id` sets, typed (read-only; empty if it sets none). This is
        the lookup the group coordinator and the share-partitions take."""
        return self._groups.get(group_id, _EMPTY)

    def effective(self, group_id: str, broker: BrokerConfig) -> dict[str, Any]:
        """Every share key's value for `group_id` under the current broker config."""
        return effective_group_config(self.overrides(group_id), broker)

    def with_overrides(self, group_id: str, overrides: Mapping[str, Any]) -> GroupConfigs:
        """A new value in which `group_id` sets exactly `overrides` (validated by the
        caller with `validate_overrides`); empty forgets the group."""
        groups = dict(self._groups)
        groups[group_id] = overrides
        return GroupConfigs(groups)

    def group_ids(self) -> list[str]:
        """Groups that set at least one key, sorted."""
        return sorted(self._groups)

    def items(self) -> Iterator[tuple[str, Mapping[str, Any]]]:
        for group_id in self.group_ids():
            yield group_id, self._groups[group_id]

    def __len__(self) -> int:
        return len(self._groups)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GroupConfigs):
            return NotImplemented
        return dict(self._groups) == dict(other._groups)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"GroupConfigs({ {g: dict(o) for g, o in self.items()} })"
