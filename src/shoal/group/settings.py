"""The group coordinator's settings: broker defaults plus per-group overrides.

Broker keys (`group.share.*`, `group.consumer.*`) give the defaults and bounds; a
group's own `share.session.timeout.ms` and `share.heartbeat.interval.ms` (share groups)
or `consumer.session.timeout.ms` and `consumer.heartbeat.interval.ms` (consumer
groups) (resource type GROUP, stored by the config layer and handed in as a lookup)
override them. An override is
clamped into the broker's current min/max, so a later change of the broker bounds
applies to values set earlier (docs/reference/configs.md, "Group configs").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from shoal.config import BrokerConfig, broker_keys

GroupConfigLookup = Callable[[str], Mapping[str, object]]
"""Group id -> that group's set config keys (absent or None = use the broker value)."""

GroupConfigSource = GroupConfigLookup | Mapping[str, Mapping[str, object]] | None

SESSION_TIMEOUT_KEY = "share.session.timeout.ms"
HEARTBEAT_INTERVAL_KEY = "share.heartbeat.interval.ms"
CONSUMER_SESSION_TIMEOUT_KEY = "consumer.session.timeout.ms"
CONSUMER_HEARTBEAT_INTERVAL_KEY = "consumer.heartbeat.interval.ms"


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupSettings:
    """Broker-level share-group settings the coordinator uses (docs/reference/configs.md,
    "Group configs")."""

    session_timeout_ms: int = 45_000
    min_session_timeout_ms: int = 45_000
    max_session_timeout_ms: int = 60_000
    heartbeat_interval_ms: int = 5_000
    min_heartbeat_interval_ms: int = 5_000
    max_heartbeat_interval_ms: int = 15_000
    max_size: int = 200
    initialize_retry_interval_ms: int = 30_000

    def __post_init__(self) -> None:
        assert self.min_session_timeout_ms <= self.session_timeout_ms, self
        assert self.session_timeout_ms <= self.max_session_timeout_ms, self
        assert self.min_heartbeat_interval_ms <= self.heartbeat_interval_ms, self
        assert self.heartbeat_interval_ms <= self.max_heartbeat_interval_ms, self
        assert self.max_size >= 1 and self.initialize_retry_interval_ms >= 1, self

    @classmethod
    def from_broker_config(cls, config: BrokerConfig) -> ShareGroupSettings:
        return cls(
            session_timeout_ms=config.get(broker_keys.GROUP_SHARE_SESSION_TIMEOUT_MS),
            min_session_timeout_ms=config.get(broker_keys.GROUP_SHARE_MIN_SESSION_TIMEOUT_MS),
            max_session_timeout_ms=config.get(broker_keys.GROUP_SHARE_MAX_SESSION_TIMEOUT_MS),
            heartbeat_interval_ms=config.get(broker_keys.GROUP_SHARE_HEARTBEAT_INTERVAL_MS),
            min_heartbeat_interval_ms=config.get(broker_keys.GROUP_SHARE_MIN_HEARTBEAT_INTERVAL_MS),
            max_heartbeat_interval_ms=config.get(broker_keys.GROUP_SHARE_MAX_HEARTBEAT_INTERVAL_MS),
            max_size=config.get(broker_keys.GROUP_SHARE_MAX_SIZE),
            initialize_retry_interval_ms=config.get(
                broker_keys.GROUP_SHARE_INITIALIZE_RETRY_INTERVAL_MS
            ),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupSettings:
    """Broker-level settings of KIP-848 consumer groups (`group.consumer.*`)."""

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    min_session_timeout_ms: int = 1
    max_session_timeout_ms: int = 2_147_483_647
    min_heartbeat_interval_ms: int = 1
    max_heartbeat_interval_ms: int = 2_147_483_647
    """Bounds of a group's own consumer.session.timeout.ms and
    consumer.heartbeat.interval.ms (`group.consumer.min/max.*`); the broker-wide values
    above are not held to them (Kafka's are, at start-up)."""
    max_size: int = 2_147_483_647
    assignors: tuple[str, ...] = ("uniform", "range")
    """The server assignors offered; the first is the default."""
    migration_policy: str = "bidirectional"
    """`group.consumer.migration.policy` (lower case): which online conversions
    between classic and consumer groups are allowed (group/consumer/migration.py)."""
    regex_refresh_interval_ms: int = 600_000
    """`group.consumer.regex.refresh.interval.ms` (Kafka's default; not yet a broker
    config key here): how often a group's regex subscriptions are re-resolved at the
    latest (group/consumer/regex_refresh.py)."""

    @property
    def upgrade_enabled(self) -> bool:
        return self.migration_policy in ("upgrade", "bidirectional")

    @property
    def downgrade_enabled(self) -> bool:
        return self.migration_policy in ("downgrade", "bidirectional")

    def __post_init__(self) -> None:
        assert self.heartbeat_interval_ms >= 1 and self.session_timeout_ms >= 1, self
        assert self.max_size >= 1 and self.assignors, self

    @classmethod
    def from_broker_config(cls, config: BrokerConfig) -> ConsumerGroupSettings:
        return cls(
            session_timeout_ms=config.get(broker_keys.GROUP_CONSUMER_SESSION_TIMEOUT_MS),
            heartbeat_interval_ms=config.get(broker_keys.GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS),
            min_session_timeout_ms=config.get(broker_keys.GROUP_CONSUMER_MIN_SESSION_TIMEOUT_MS),
            max_session_timeout_ms=config.get(broker_keys.GROUP_CONSUMER_MAX_SESSION_TIMEOUT_MS),
            min_heartbeat_interval_ms=config.get(
                broker_keys.GROUP_CONSUMER_MIN_HEARTBEAT_INTERVAL_MS
            ),
            max_heartbeat_interval_ms=config.get(
                broker_keys.GROUP_CONSUMER_MAX_HEARTBEAT_INTERVAL_MS
            ),
            max_size=config.get(broker_keys.GROUP_CONSUMER_MAX_SIZE),
            assignors=tuple(config.get(broker_keys.GROUP_CONSUMER_ASSIGNORS)),
            migration_policy=(
                config.get(broker_keys.GROUP_CONSUMER_MIGRATION_POLICY) or ""
            ).lower(),
        )


class GroupSettings:
    """Effective per-group values: the group's override, clamped, else the default."""

    __slots__ = ("_broker", "_lookup")

    def __init__(self, *, broker: ShareGroupSettings, group_configs: GroupConfigSource) -> None:
        self._broker = broker
        self._lookup = _as_lookup(group_configs)

    @property
    def broker(self) -> ShareGroupSettings:
        return self._broker

    def session_timeout_ms(self, group_id: str) -> int:
        b = self._broker
        return self._value(
            group_id,
            SESSION_TIMEOUT_KEY,
            b.session_timeout_ms,
            b.min_session_timeout_ms,
            b.max_session_timeout_ms,
        )

    def heartbeat_interval_ms(self, group_id: str) -> int:
        b = self._broker
        return self._value(
            group_id,
            HEARTBEAT_INTERVAL_KEY,
            b.heartbeat_interval_ms,
            b.min_heartbeat_interval_ms,
            b.max_heartbeat_interval_ms,
        )

    def consumer_session_timeout_ms(self, group_id: str, consumer: ConsumerGroupSettings) -> int:
        """A consumer group's member session timeout: its consumer.session.timeout.ms,
        clamped into the broker bounds, else the broker's."""
        c = consumer
        return self._value(
            group_id,
            CONSUMER_SESSION_TIMEOUT_KEY,
            c.session_timeout_ms,
            c.min_session_timeout_ms,
            c.max_session_timeout_ms,
        )

    def consumer_heartbeat_interval_ms(self, group_id: str, consumer: ConsumerGroupSettings) -> int:
        """A consumer group's heartbeat interval: its consumer.heartbeat.interval.ms,
        clamped into the broker bounds, else the broker's."""
        c = consumer
        return self._value(
            group_id,
            CONSUMER_HEARTBEAT_INTERVAL_KEY,
            c.heartbeat_interval_ms,
            c.min_heartbeat_interval_ms,
            c.max_heartbeat_interval_ms,
        )

    def _value(self, group_id: str, key: str, default: int, low: int, high: int) -> int:
        raw = self._lookup(group_id).get(key)
        if raw is None:
            return default
        assert isinstance(raw, int | str) and not isinstance(raw, bool), (key, raw)
        return min(max(int(raw), low), high)


def _as_lookup(source: GroupConfigSource) -> GroupConfigLookup:
    if source is None:
        return lambda _group_id: {}
    if isinstance(source, Mapping):
        table = source
        return lambda group_id: table.get(group_id, {})
    return source
