"""The group configuration a share-partition works under, as a value.

`SharePartitionConfig` holds the effective values of the group's share configs
(docs/reference/configs.md, "Group configs"), each already falling back to its broker
default and clamped into
the broker's bounds (`resolve`; the keys, their defaults and bounds are declared once,
in config.py: each group key's `synonym` and `bounds`). The shell resolves it from the
broker config and the group's overrides and hands it to each operation of the
share-partition manager, which sets it on the share-partitions the operation touches,
so a group config change takes effect where the spec says: lock duration for locks
armed afterwards, delivery limit at the next transition, in-flight limit at the next
acquisition, isolation level at the next fetch, RENEW permission at the next
acknowledgement; the Shoal extensions (redelivery backoff, paused delivery) at the next
release or expiry and the next acquisition; `share.auto.offset.reset` at the next
load.

`resolve_reset_offset` turns `share.auto.offset.reset` into the start offset of a
share-partition whose persisted start offset is -1 (docs/design/share-partition.md §10.2).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from shoal.clock import Clock
from shoal.config import BROKER_KEYS, GROUP_KEYS, BrokerConfig
from shoal.config.group_keys import SHARE_RANGES
from shoal.iso_duration import parse_iso_duration_ms

_SHARE_RANGES = {bounds.key.name: bounds for bounds in SHARE_RANGES}
"""Each share group key's broker range (config/group_keys.py), by name."""

AUTO_OFFSET_RESET_KEY = "share.auto.offset.reset"


_AUTO_OFFSET_RESET_DEFAULT: str = GROUP_KEYS[AUTO_OFFSET_RESET_KEY].default


def _broker_default(group_key: str) -> int:
    """The default of the broker key `group_key` falls back to (its `synonym`)."""
    synonym = GROUP_KEYS[group_key].synonym
    assert synonym is not None, group_key
    default: int = BROKER_KEYS[synonym].default
    return default


class IsolationLevel(enum.Enum):
    READ_UNCOMMITTED = "read_uncommitted"
    READ_COMMITTED = "read_committed"


_RENEW_DEFAULT: bool = GROUP_KEYS["share.renew.acknowledge.enable"].default
_ISOLATION_DEFAULT = IsolationLevel(GROUP_KEYS["share.isolation.level"].default)


@dataclass(frozen=True, slots=True)
class SharePartitionConfig:
    """Effective share-group settings; the defaults are the keys' declared ones
    (config.py: the broker keys the group keys fall back to), Kafka 4.2's."""

    record_lock_duration_ms: int = _broker_default("share.record.lock.duration.ms")
    delivery_count_limit: int = _broker_default("share.delivery.count.limit")
    max_record_locks: int = _broker_default("share.partition.max.record.locks")
    renew_enabled: bool = _RENEW_DEFAULT
    isolation_level: IsolationLevel = _ISOLATION_DEFAULT
    redelivery_backoff_ms: int = GROUP_KEYS["shoal.share.redelivery.backoff.ms"].default
    """Shoal extension: 0 = redeliver at once (Kafka)."""
    redelivery_backoff_multiplier: float = GROUP_KEYS[
        "shoal.share.redelivery.backoff.multiplier"
    ].default
    redelivery_backoff_max_ms: int = GROUP_KEYS["shoal.share.redelivery.backoff.max.ms"].default
    delivery_paused: bool = GROUP_KEYS["shoal.share.delivery.paused"].default
    """Shoal extension: no acquisitions while true."""
    key_ordered: bool = GROUP_KEYS["shoal.share.delivery.order"].default == "key"
    """Shoal extension `shoal.share.delivery.order=key`: per-key ordered acquisition
    (share/key_order.py)."""
    delivery_delay_max_ms: int = GROUP_KEYS["shoal.share.delivery.delay.max.ms"].default
    """Shoal extension: the longest scheduled delay (header `shoal.deliver.at`); 0 =
    scheduled delivery off (share/schedule.py)."""
    dlq_topic: str = GROUP_KEYS["errors.deadletterqueue.topic.name"].default
    """KIP-1191 `errors.deadletterqueue.topic.name`; empty = no dead-letter queue."""
    dlq_copy_record: bool = GROUP_KEYS["errors.deadletterqueue.copy.record.enable"].default
    """KIP-1191 `errors.deadletterqueue.copy.record.enable`."""
    auto_offset_reset: str = GROUP_KEYS[AUTO_OFFSET_RESET_KEY].default
    """`share.auto.offset.reset`: where a share-partition with no persisted start
    offset starts (`resolve_reset_offset`)."""

    @property
    def dlq_enabled(self) -> bool:
        """Undeliverable records go ARCHIVING (and are copied) rather than ARCHIVED."""
        return bool(self.dlq_topic)

    def __post_init__(self) -> None:
        assert self.record_lock_duration_ms > 0
        assert self.delivery_count_limit >= 2
        assert self.max_record_locks > 0
        assert self.redelivery_backoff_ms >= 0 and self.redelivery_backoff_max_ms >= 0
        assert self.redelivery_backoff_multiplier >= 1.0
        assert self.delivery_delay_max_ms >= 0

    def redelivery_delay_ms(self, delivery_count: int) -> int:
        """How long a record delivered `delivery_count` times waits, after a RELEASE or
        a lock expiry, before it can be acquired again: backoff * multiplier^(count-1),
        at most the maximum; 0 when the backoff is off."""
        base = self.redelivery_backoff_ms
        if base <= 0:
            return 0
        cap = self.redelivery_backoff_max_ms
        delay = float(base)
        for _ in range(max(0, delivery_count - 1)):
            delay *= self.redelivery_backoff_multiplier
            if delay >= cap:
                return cap
        return min(cap, int(delay))

    @classmethod
    def resolve(cls, *, broker: BrokerConfig, group: Mapping[str, Any]) -> SharePartitionConfig:
        """Group overrides (None or absent = unset) over broker values, clamped into
        the broker's min/max (docs/reference/configs.md, "Group configs")."""

        def pick(group_key: str) -> int:
            bounds = _SHARE_RANGES[group_key]
            synonym = GROUP_KEYS[group_key].synonym
            assert synonym is not None
            value = group.get(group_key)
            value = broker.get_int(synonym) if value is None else int(value)
            return min(max(value, broker.get(bounds.low)), broker.get(bounds.high))

        renew = group.get("share.renew.acknowledge.enable")
        isolation = group.get("share.isolation.level")
        return cls(
            record_lock_duration_ms=pick("share.record.lock.duration.ms"),
            delivery_count_limit=pick("share.delivery.count.limit"),
            max_record_locks=pick("share.partition.max.record.locks"),
            renew_enabled=_RENEW_DEFAULT if renew is None else bool(renew),
            isolation_level=_ISOLATION_DEFAULT if not isolation else IsolationLevel(isolation),
            **_extensions(group),
            dlq_topic=str(group.get("errors.deadletterqueue.topic.name") or ""),
            dlq_copy_record=bool(group.get("errors.deadletterqueue.copy.record.enable")),
            auto_offset_reset=str(group.get(AUTO_OFFSET_RESET_KEY) or _AUTO_OFFSET_RESET_DEFAULT),
        )


def _extensions(group: Mapping[str, Any]) -> dict[str, Any]:
    """The Shoal extension keys a group sets (absent or None = the field default)."""
    fields = {
        "shoal.share.redelivery.backoff.ms": ("redelivery_backoff_ms", int),
        "shoal.share.redelivery.backoff.multiplier": ("redelivery_backoff_multiplier", float),
        "shoal.share.redelivery.backoff.max.ms": ("redelivery_backoff_max_ms", int),
        "shoal.share.delivery.paused": ("delivery_paused", bool),
        "shoal.share.delivery.delay.max.ms": ("delivery_delay_max_ms", int),
    }
    found: dict[str, Any] = {}
    for key, (name, kind) in fields.items():
        value = group.get(key)
        if value is not None:
            found[name] = kind(value)
    order = group.get("shoal.share.delivery.order")
    if order is not None:
        found["key_ordered"] = str(order) == "key"
    return found


BY_DURATION_PREFIX = "by_duration:"


def resolve_reset_offset(
    strategy: str,
    *,
    clock: Clock,
    log_start_offset: Callable[[], int],
    high_watermark: Callable[[], int],
    offset_for_timestamp: Callable[[int], int | None],
) -> int:
    """The start offset `share.auto.offset.reset` gives: `latest` = high watermark,
    `earliest` = log start offset, `by_duration:<ISO-8601>` = first offset whose
    timestamp is >= now - duration (wall clock), or the high watermark when every
    record is older. Only the callable the strategy needs is called."""
    if strategy == "latest":
        return high_watermark()
    if strategy == "earliest":
        return log_start_offset()
    if strategy.startswith(BY_DURATION_PREFIX):
        duration_ms = parse_iso_duration_ms(strategy.removeprefix(BY_DURATION_PREFIX))
        offset = offset_for_timestamp(clock.wall_ms() - duration_ms)
        return high_watermark() if offset is None else offset
    raise ValueError(f"share.auto.offset.reset {strategy!r} is not latest, earliest or by_duration")
