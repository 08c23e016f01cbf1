"""Client quotas in the broker: the set kept in the metadata log, and the rate managers
Produce, Fetch and ShareFetch record into.

The quota set is part of the cluster metadata (server/metadata/metadata_log.py): `alter`
validates, then writes the changed entities as ClientQuotaRecords through the metadata
shard (`alter_quotas`); they are fsynced before they are replayed, and `quotas` (the
image's set, at most `limits.QUOTA_ENTITIES_MAX` entities) is taken again only after.
A failed write raises OSError and changes nothing. `alter` is called in the broker's
change lane (`DiskIO.changes`), one change at a time; the rate managers meanwhile
enforce the set before the change.

Recording (the core is security/quota.py): `produce_throttle_ms` records a Produce
request's record bytes against `producer_byte_rate`; `fetch_throttle_ms` records a
response's record bytes against `consumer_byte_rate`; `request_throttle_ms` records a
request's handler time against `request_percentage` (KIP-124); all return Kafka's
throttle time. `connection_throttle_ms` records a new connection against its ip's
`connection_creation_rate` (KIP-612) and takes it back when the connection is refused.
The window (`quota.window.num` x `quota.window.size.seconds`) is read from the
live config at each call; a change starts the rates again.
"""

from __future__ import annotations

import ipaddress
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from shoal import limits
from shoal.config import BrokerConfig, broker_keys
from shoal.metadata.shard import normalized_entity
from shoal.security.quota import (
    CLIENT_KEYS,
    CONNECTION_CREATION_RATE,
    CONSUMER_BYTE_RATE,
    ENTITY_TYPES,
    IP,
    IP_KEYS,
    NANOS_TO_PERCENT_SECONDS,
    PRODUCER_BYTE_RATE,
    QUOTA_KEYS,
    REQUEST_PERCENTAGE,
    WHOLE_KEYS,
    Entity,
    QuotaManager,
    resolve,
    resolve_ip,
)
from shoal.server.metadata.metadata_log import MetadataLog

log = logging.getLogger(__name__)
MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2
"""DescribeClientQuotas' match types."""

Quotas = Mapping[Entity, Mapping[str, float]]


@dataclass(frozen=True, slots=True)
class QuotaOp:
    key: str
    value: float
    remove: bool


@dataclass(frozen=True, slots=True)
class MatchComponent:
    entity_type: str
    match_type: int
    match: str | None


def entity_problem(entity: Entity) -> str | None:
    """Why Kafka would refuse `entity` (INVALID_REQUEST), or None."""
    if not entity:
        return "Invalid empty client quota entity"
    kinds = [kind for kind, _name in entity]
    if len(set(kinds)) != len(kinds):
        return f"Duplicate entity type in {entity}"
    for kind, name in entity:
        if kind not in ENTITY_TYPES:
            return f"Unsupported client quota entity type {kind!r} (user, client-id or ip)"
        if name is not None and not name:
            return f"Empty {kind} name: use the default (null) entity instead"
    if IP in kinds and len(kinds) > 1:
        return "Invalid quota entity: an ip entity cannot be combined with user or client-id"
    ip = dict(entity).get(IP)
    if ip is not None and not _is_ip(ip):
        return f"{ip} is not a valid IP"
    return None


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def key_problem(entity: Entity, key: str) -> str | None:
    """Why `key` may not be set on `entity` (ip entities take only connection_creation_rate,
    the others only the client keys), or None."""
    if key not in QUOTA_KEYS:
        return f"Invalid configuration key {key!r} (Shoal enforces {', '.join(QUOTA_KEYS)})"
    is_ip = any(kind == IP for kind, _name in entity)
    if is_ip and key not in IP_KEYS:
        return (
            f"Invalid configuration key {key!r} for an ip entity: only {CONNECTION_CREATION_RATE}"
        )
    if not is_ip and key not in CLIENT_KEYS:
        return f"Configuration key {key!r} can only be set on an ip entity"
    return None


def value_problem(key: str, value: float) -> str | None:
    if key not in QUOTA_KEYS:
        return f"Invalid configuration key {key!r} (Shoal enforces {', '.join(QUOTA_KEYS)})"
    if not math.isfinite(value) or (key in WHOLE_KEYS and value != int(value)):
        return f"Configuration {key} must be a whole number"
    if value <= 0:
        return f"Configuration {key} must be positive"
    return None


class QuotaService:
    """The one owner of the quota set and the byte-rate managers."""

    def __init__(
        self,
        *,
        metadata: MetadataLog,
        config: Callable[[], BrokerConfig],
        entities_max: int = limits.QUOTA_ENTITIES_MAX,
    ) -> None:
        self.metadata = metadata
        self.config = config
        self.entities_max = entities_max
        self.quotas: Quotas = metadata.image.quotas
        """The metadata image's set (taken again after each change)."""
        num, window_ms = self._window()
        self.produce = QuotaManager(key=PRODUCER_BYTE_RATE, window_num=num, window_ms=window_ms)
        self.fetch = QuotaManager(key=CONSUMER_BYTE_RATE, window_num=num, window_ms=window_ms)
        self.requests = QuotaManager(key=REQUEST_PERCENTAGE, window_num=num, window_ms=window_ms)
        self.connections = QuotaManager(
            key=CONNECTION_CREATION_RATE, window_num=num, window_ms=window_ms
        )
        self.request_quotas = self.ip_quotas = False
        """Whether any entity sets request_percentage / connection_creation_rate (the
        shell skips the measuring and the lookups otherwise)."""
        self._adopt(self.quotas)
        self._throttled: set[tuple[str, str, str]] = set()
        """(kind, user, client-id) being throttled, for the start/stop log lines."""
        if self.quotas:
            log.info("client quotas: %d entities loaded from the metadata log", len(self.quotas))

    def _window(self) -> tuple[int, int]:
        config = self.config()
        return (
            config.get(broker_keys.QUOTA_WINDOW_NUM),
            config.get(broker_keys.QUOTA_WINDOW_SIZE_SECONDS) * 1000,
        )

    # ---- recording
    def mark_throttled(self, key: tuple[str, str, str], *, throttled: bool) -> bool:
        """Note that `key` is (or is no longer) throttled; True when that is a change.
        At most `limits.QUOTA_SENSORS_MAX` are remembered (then forgotten at once)."""
        if throttled == (key in self._throttled):
            return False
        if throttled:
            if len(self._throttled) >= limits.QUOTA_SENSORS_MAX:
                self._throttled.clear()
            self._throttled.add(key)
        else:
            self._throttled.discard(key)
        return True

    def produce_throttle_ms(self, *, user: str, client_id: str, size: int, now_ms: int) -> int:
        return self._record(self.produce, user=user, client_id=client_id, size=size, now_ms=now_ms)

    def fetch_throttle_ms(self, *, user: str, client_id: str, size: int, now_ms: int) -> int:
        return self._record(self.fetch, user=user, client_id=client_id, size=size, now_ms=now_ms)

    def request_throttle_ms(
        self, *, user: str, client_id: str, handler_ns: int, now_ms: int
    ) -> int:
        """Record `handler_ns` of handler time (as percent-seconds) against
        `request_percentage`; the throttle time."""
        if not self.request_quotas:
            return 0
        value = handler_ns * NANOS_TO_PERCENT_SECONDS
        num, window_ms = self._window()
        self.requests.configure_window(window_num=num, window_ms=window_ms)
        quota = resolve(self.quotas, key=REQUEST_PERCENTAGE, user=user, client_id=client_id)
        return self.requests.record_and_throttle_ms(quota, value, now_ms=now_ms)

    def connection_throttle_ms(self, *, ip: str, now_ms: int) -> tuple[int, float]:
        """Record a new connection from `ip`; (throttle time, quota). Over the quota
        (throttle > 0) the caller refuses the connection and it is taken back, so
        refused attempts do not count, as in Kafka (KIP-612)."""
        if not self.ip_quotas:
            return 0, 0.0
        num, window_ms = self._window()
        self.connections.configure_window(window_num=num, window_ms=window_ms)
        quota = resolve_ip(self.quotas, ip)
        if quota is None:
            return 0, 0.0
        throttle_ms = self.connections.record_and_throttle_ms(quota, 1, now_ms=now_ms)
        if throttle_ms > 0:
            self.connections.unrecord(quota, 1, now_ms=now_ms)
        return throttle_ms, quota.bound

    def fetch_bytes_max(self, *, user: str, client_id: str) -> int | None:
        """The most a fetch may return (Kafka's `getMaxValueInQuotaWindow`: the quota
        times the window less one sample), so a fetch never outgrows its own quota and
        is answered empty for ever; None without a consumer quota."""
        if not self.quotas:
            return None
        quota = resolve(self.quotas, key=CONSUMER_BYTE_RATE, user=user, client_id=client_id)
        if quota is None:
            return None
        num, window_ms = self._window()
        return max(1, int(quota.bound * max(num - 1, 1) * window_ms / 1000))

    def fetch_unrecord(self, *, user: str, client_id: str, size: int, now_ms: int) -> None:
        if self.quotas:
            quota = resolve(self.quotas, key=self.fetch.key, user=user, client_id=client_id)
            self.fetch.unrecord(quota, size, now_ms=now_ms)

    def _record(
        self, manager: QuotaManager, *, user: str, client_id: str, size: int, now_ms: int
    ) -> int:
        if not self.quotas:  # the common case: nothing to look up
            return 0
        num, window_ms = self._window()
        manager.configure_window(window_num=num, window_ms=window_ms)
        quota = resolve(self.quotas, key=manager.key, user=user, client_id=client_id)
        return manager.record_and_throttle_ms(quota, size, now_ms=now_ms)

    def _adopt(self, quotas: Quotas) -> None:
        self.request_quotas = any(REQUEST_PERCENTAGE in v for v in quotas.values())
        self.ip_quotas = any(CONNECTION_CREATION_RATE in v for v in quotas.values())

    # ---- DescribeClientQuotas / AlterClientQuotas
    def describe(
        self, components: Sequence[MatchComponent], *, strict: bool
    ) -> list[tuple[Entity, dict[str, float]]]:
        """The entities the filter matches (each component valid: `filter_problem`)."""
        found = []
        for entity, values in sorted(self.quotas.items(), key=lambda item: repr(item[0])):
            names = dict(entity)
            if strict and len(names) != len(components):
                continue
            if all(_matches(c, names) for c in components):
                found.append((entity, dict(values)))
        return found

    async def alter(
        self, entries: Sequence[tuple[Entity, Sequence[QuotaOp]]], *, validate_only: bool
    ) -> list[str | None]:
        """Apply each entry's ops (each entry alone: a refused one changes nothing);
        per entry None or the INVALID_REQUEST message. Raises OSError (nothing
        changed) when the new set cannot be written."""
        new: dict[Entity, dict[str, float]] = {e: dict(v) for e, v in self.quotas.items()}
        problems: list[str | None] = []
        for raw_entity, ops in entries:
            entity = normalized_entity(raw_entity)
            problem = entity_problem(entity) or _ops_problem(entity, ops)
            values = dict(new.get(entity, {}))
            for op in ops:
                if op.remove:
                    values.pop(op.key, None)
                else:
                    values[op.key] = op.value
            if problem is None and entity not in new and values and len(new) >= self.entities_max:
                problem = f"Too many quota entities: the broker keeps at most {self.entities_max}"
            problems.append(problem)
            if problem is not None:
                continue
            if values:
                new[entity] = values
            else:
                new.pop(entity, None)
        if not validate_only and new != self.quotas:
            changed = [e for e in set(new) | set(self.quotas) if new.get(e) != self.quotas.get(e)]
            shard = self.metadata.shard
            await self.metadata.write(shard.alter_quotas({e: new.get(e, {}) for e in changed}))
            self.quotas = self.metadata.image.quotas
            self._adopt(self.quotas)
            log.info("client quotas altered: %s", "; ".join(_describe(e, new) for e in changed))
        return problems


def _describe(entity: Entity, quotas: Quotas) -> str:
    names = ",".join(f"{kind}={'<default>' if name is None else name}" for kind, name in entity)
    return f"{names} -> {quotas.get(entity, 'removed')}"


def _ops_problem(entity: Entity, ops: Sequence[QuotaOp]) -> str | None:
    keys = [op.key for op in ops]
    if len(set(keys)) != len(keys):
        return "Duplicate quota key in one entity's ops"
    for op in ops:
        if (problem := key_problem(entity, op.key)) is not None:
            return problem
        if not op.remove and (problem := value_problem(op.key, op.value)) is not None:
            return problem
    return None


def filter_problem(components: Sequence[MatchComponent]) -> str | None:
    """Why Kafka would refuse a DescribeClientQuotas filter (INVALID_REQUEST), or None."""
    kinds = [c.entity_type for c in components]
    if len(set(kinds)) != len(kinds):
        return "Duplicate entity type in the filter"
    for c in components:
        if c.entity_type not in ENTITY_TYPES:
            return f"Unsupported client quota entity type {c.entity_type!r}"
        if c.match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY):
            return f"Unknown match type {c.match_type}"
        if c.match_type == MATCH_EXACT and c.match is None:
            return "An exact match needs a name"
    if IP in kinds and len(kinds) > 1:
        return "Invalid entity filter: ip cannot be combined with user or client-id"
    return None


def _matches(component: MatchComponent, names: Mapping[str, str | None]) -> bool:
    if component.entity_type not in names:
        return False
    name = names[component.entity_type]
    if component.match_type == MATCH_EXACT:
        return name == component.match
    if component.match_type == MATCH_DEFAULT:
        return name is None
    return True
