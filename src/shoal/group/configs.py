"""Group configs (resource type GROUP = 32): each group's overrides of the group keys
(share, consumer and streams keys; docs/configs.md).

Owns (configs.md §3):

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

Checks, in Kafka's order (`GroupConfig.validate`, `GroupConfigManager.validate`):
names; each value's type and fixed bounds through `ConfigDef.parse` (lock >= 1000,
delivery limit >= 2, record locks >= 100, assignment interval >= 0, booleans, the
isolation level's choices, `share.auto.offset.reset` = latest | earliest |
by_duration:<non-negative ISO-8601>); then the broker ranges in Kafka's words
(`<key> must be in the range <min> to <max> inclusive.`); then session timeout >
heartbeat interval, each side taking the broker value when the group does not set it;
then (Shoal extension) redelivery backoff <= its maximum, likewise. The consumer and
streams keys are checked against their broker bounds in Kafka 4.2's words
(`KAFKA_42_BOUNDS`).

Pure: no I/O. Persisting the values and telling the group coordinator and the
share-partitions about a change belong to the server layer (server/group_configs.py).

Invariant: every value a `GroupConfigs` holds passed its key's `ConfigDef.parse`; the
broker ranges held when it was set and are enforced afterwards by clamping.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from shoal.config import GROUP_KEYS, BrokerConfig, ConfigError, render
from shoal.protocol.errors import ErrorCode

SESSION_TIMEOUT_KEY = "share.session.timeout.ms"
HEARTBEAT_INTERVAL_KEY = "share.heartbeat.interval.ms"
BACKOFF_KEY = "shoal.share.redelivery.backoff.ms"
BACKOFF_MAX_KEY = "shoal.share.redelivery.backoff.max.ms"

BROKER_BOUNDS: dict[str, tuple[str, str]] = {
    SESSION_TIMEOUT_KEY: (
        "group.share.min.session.timeout.ms",
        "group.share.max.session.timeout.ms",
    ),
    HEARTBEAT_INTERVAL_KEY: (
        "group.share.min.heartbeat.interval.ms",
        "group.share.max.heartbeat.interval.ms",
    ),
    "share.record.lock.duration.ms": (
        "group.share.min.record.lock.duration.ms",
        "group.share.max.record.lock.duration.ms",
    ),
    "share.delivery.count.limit": (
        "group.share.min.delivery.count.limit",
        "group.share.max.delivery.count.limit",
    ),
    "share.partition.max.record.locks": (
        "group.share.min.partition.max.record.locks",
        "group.share.max.partition.max.record.locks",
    ),
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
    against the key's definition but not the broker's ranges; raises GroupConfigError."""
    definition = GROUP_KEYS.get(key)
    if definition is None:
        raise GroupConfigError(key, f"Unknown group config name: {key}")
    try:
        return definition.parse(raw)
    except ConfigError as exc:
        raise GroupConfigError(key, str(exc)) from exc


def validate_overrides(proposed: Mapping[str, object], broker: BrokerConfig) -> dict[str, Any]:
    """Check a group's full proposed set of overrides against the key definitions and
    the current broker bounds; the typed values, or GroupConfigError naming the key."""
    for key in proposed:
        if key not in GROUP_KEYS:
            raise GroupConfigError(key, f"Unknown group config name: {key}")
    typed = {key: parse_override(key, raw) for key, raw in proposed.items()}
    for key, (low_key, high_key) in KAFKA_42_BOUNDS.items():
        if key in typed and low_key is not None and typed[key] < broker[low_key]:
            raise GroupConfigError(key, f"{key} must be greater than or equal to {low_key}")
        if key in typed and typed[key] > broker[high_key]:
            raise GroupConfigError(key, f"{key} must be less than or equal to {high_key}")
    for key, (low_key, high_key) in BROKER_BOUNDS.items():
        if key not in typed:
            continue
        low, high = broker[low_key], broker[high_key]
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
    if SESSION_TIMEOUT_KEY in typed or HEARTBEAT_INTERVAL_KEY in typed:
        session_timeout_ms = typed.get(
            SESSION_TIMEOUT_KEY, fallback_value(SESSION_TIMEOUT_KEY, broker)
        )
        heartbeat_interval_ms = typed.get(
            HEARTBEAT_INTERVAL_KEY, fallback_value(HEARTBEAT_INTERVAL_KEY, broker)
        )
        if session_timeout_ms <= heartbeat_interval_ms:
            raise GroupConfigError(
                SESSION_TIMEOUT_KEY,
                f"{SESSION_TIMEOUT_KEY} must be greater than {HEARTBEAT_INTERVAL_KEY} "
                f"({session_timeout_ms} <= {heartbeat_interval_ms})",
            )
    return typed


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
