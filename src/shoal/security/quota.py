"""Client quotas: entities, Kafka's precedence order, and the windowed rate that says
how long a client is throttled. Sans-I/O: every method takes `now_ms` from the caller
(the broker passes its injected clock's monotonic time).

Entities. A quota belongs to a user, a client-id, or a user and a client-id, where
either name may be the default (`None` on the wire, `<default>` in the CLI). The quota
a request is held to is the first entity set in Kafka's order (KIP-55):

  1. user=U, client-id=C      5. user=<default>, client-id=<default>
  2. user=U, client-id=<def>  6. user=<default>
  3. user=U                   7. client-id=C
  4. user=<def>, client-id=C  8. client-id=<default>

Who shares a rate: the matched entity names which names count. A `user=U` quota is
shared by every client-id of U; a `client-id=<default>` quota gives each client-id
its own rate of that value. So the sensor key is (user if the entity has a user,
client-id if it has a client-id), with the request's own names filled in.

Ip entities (KIP-612) stand apart: `ip=A` or the ip default, only for
`connection_creation_rate`, looked up by `resolve_ip` (the address's own entity, else the
default); each address has its own rate.

Rate (Kafka's `Rate` over a `SampledStat`): `window_num` samples of `window_ms` each;
a value is added to the current sample, which is replaced by a fresh one once it is
`window_ms` old; samples older than the whole window count for nothing. The rate is
the samples' sum over the elapsed window, which is never taken shorter than
`window_num - 1` whole samples (so a first burst is not read as an infinite rate).

Throttle time (Kafka's `QuotaUtils.throttleTime`): after recording, a rate above the
quota gives `(rate - quota) / quota * window` milliseconds: the time at which, with
nothing more sent, the rate falls back to the quota. It is bounded by the whole window
(`window_num * window_ms`).

Invariants: a sensor's samples never exceed `window_num`; the sensors per manager are
bounded by `limits.QUOTA_SENSORS_MAX` (idle ones are dropped first).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from shoal import limits

USER: Final = "user"
CLIENT_ID: Final = "client-id"
IP: Final = "ip"
ENTITY_TYPES: Final = (USER, CLIENT_ID, IP)
"""The entity types served; `ip` stands alone (never with user or client-id)."""
PRODUCER_BYTE_RATE: Final = "producer_byte_rate"
CONSUMER_BYTE_RATE: Final = "consumer_byte_rate"
REQUEST_PERCENTAGE: Final = "request_percentage"
CONNECTION_CREATION_RATE: Final = "connection_creation_rate"
CLIENT_KEYS: Final = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE)
"""The keys of user and client-id entities (Kafka's `controller_mutation_rate` is not served)."""
IP_KEYS: Final = (CONNECTION_CREATION_RATE,)
"""The keys of ip entities (KIP-612)."""
QUOTA_KEYS: Final = CLIENT_KEYS + IP_KEYS
WHOLE_KEYS: Final = (PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, CONNECTION_CREATION_RATE)
"""Keys whose values are whole numbers (Kafka's LONG/INT); request_percentage is a DOUBLE."""
NANOS_TO_PERCENT_SECONDS: Final = 100.0 / 1e9
"""Request time is recorded as percent-seconds (Kafka's `nanosToPercentage`): 1 s of
handler time in a 1 s window is a rate of 100 (one whole thread; in Shoal, the loop)."""

Entity = tuple[tuple[str, str | None], ...]
"""An entity: (type, name or None for the default) pairs sorted by type, e.g.
(("client-id", None), ("user", "alice"))."""
SensorKey = tuple[str, str]
"""(user or "", client-id or ""): the names whose requests share one rate."""


def entity(*, user: str | bool | None = False, client_id: str | bool | None = False) -> Entity:
    """An entity from keyword names: False = absent, None = the default, str = named."""
    parts: list[tuple[str, str | None]] = []
    if client_id is not False:
        parts.append((CLIENT_ID, client_id if isinstance(client_id, str) else None))
    if user is not False:
        parts.append((USER, user if isinstance(user, str) else None))
    return tuple(parts)


def _precedence(user: str, client_id: str) -> list[Entity]:
    """The entities to look for, in Kafka's order, for a request of `user`, `client_id`."""
    return [
        entity(user=user, client_id=client_id),
        entity(user=user, client_id=None),
        entity(user=user),
        entity(user=None, client_id=client_id),
        entity(user=None, client_id=None),
        entity(user=None),
        entity(client_id=client_id),
        entity(client_id=None),
    ]


def resolve_ip(quotas: Mapping[Entity, Mapping[str, float]], ip: str) -> Quota | None:
    """The connection-rate quota of connections from `ip`: its own entity, else the
    ip default (KIP-612); each ip has its own rate either way."""
    for candidate in (((IP, ip),), ((IP, None),)):
        values = quotas.get(candidate)
        if values is not None and CONNECTION_CREATION_RATE in values:
            return Quota(bound=values[CONNECTION_CREATION_RATE], sensor=(ip, ""), entity=candidate)
    return None


@dataclass(frozen=True, slots=True)
class Quota:
    """The quota a request is held to and the sensor whose rate it is compared with."""

    bound: float
    sensor: SensorKey
    entity: Entity


def resolve(
    quotas: Mapping[Entity, Mapping[str, float]], *, key: str, user: str, client_id: str
) -> Quota | None:
    """The quota `key` for a request of `user` / `client_id`, or None when no entity
    in the precedence order sets it (the client is not throttled)."""
    for candidate in _precedence(user, client_id):
        values = quotas.get(candidate)
        if values is None or key not in values:
            continue
        types = {kind for kind, _name in candidate}
        sensor = (user if USER in types else "", client_id if CLIENT_ID in types else "")
        return Quota(bound=values[key], sensor=sensor, entity=candidate)
    return None


@dataclass(slots=True)
class _Sample:
    start_ms: int
    value: float = 0.0


@dataclass(slots=True)
class WindowedRate:
    """A rate over `window_num` samples of `window_ms` (the module docstring)."""

    window_num: int
    window_ms: int
    samples: list[_Sample] = field(default_factory=list)

    def record(self, value: float, *, now_ms: int) -> None:
        self._purge(now_ms)
        if not self.samples or now_ms - self.samples[-1].start_ms >= self.window_ms:
            self.samples.append(_Sample(start_ms=now_ms))
            if len(self.samples) > self.window_num:
                del self.samples[0]
        self.samples[-1].value += value
        assert len(self.samples) <= self.window_num

    def _purge(self, now_ms: int) -> None:
        """Forget samples started a whole window ago or earlier (Kafka's expiry age)."""
        expire_ms = self.window_num * self.window_ms
        while self.samples and now_ms - self.samples[0].start_ms >= expire_ms:
            del self.samples[0]

    def window_size_ms(self, *, now_ms: int) -> int:
        """The elapsed window the rate divides by: never under `window_num - 1` samples."""
        self._purge(now_ms)
        elapsed_ms = now_ms - self.samples[0].start_ms if self.samples else 0
        full_windows = elapsed_ms // self.window_ms
        if full_windows < self.window_num - 1:
            elapsed_ms += (self.window_num - 1 - full_windows) * self.window_ms
        return max(elapsed_ms, 1)

    def rate_per_s(self, *, now_ms: int) -> float:
        self._purge(now_ms)
        total = sum(sample.value for sample in self.samples)
        return total * 1000.0 / self.window_size_ms(now_ms=now_ms)

    def idle(self, *, now_ms: int) -> bool:
        self._purge(now_ms)
        return not self.samples


class QuotaManager:
    """The rates of one quota key (bytes in or bytes out), one sensor per sharing set."""

    def __init__(
        self,
        *,
        key: str,
        window_num: int,
        window_ms: int,
        sensors_max: int = limits.QUOTA_SENSORS_MAX,
    ) -> None:
        assert key in QUOTA_KEYS, key
        assert window_num >= 1 and window_ms >= 1
        self.key = key
        self.window_num = window_num
        self.window_ms = window_ms
        self.sensors_max = sensors_max
        self._sensors: dict[SensorKey, WindowedRate] = {}

    def configure_window(self, *, window_num: int, window_ms: int) -> None:
        """A new window shape (a reconfigure): the rates start again."""
        if (window_num, window_ms) != (self.window_num, self.window_ms):
            self.window_num, self.window_ms = window_num, window_ms
            self._sensors.clear()

    @property
    def sensors(self) -> int:
        return len(self._sensors)

    def record_and_throttle_ms(self, quota: Quota | None, value: float, *, now_ms: int) -> int:
        """Record `value` bytes against `quota`'s sensor; the throttle time in ms (0
        when the rate stays within the quota, or there is no quota)."""
        if quota is None:
            return 0
        rate = self._sensors.get(quota.sensor)
        if rate is None:
            self._make_room(now_ms)
            rate = self._sensors[quota.sensor] = WindowedRate(self.window_num, self.window_ms)
        rate.record(value, now_ms=now_ms)
        return self._throttle_ms(rate, quota.bound, now_ms)

    def unrecord(self, quota: Quota | None, value: float, *, now_ms: int) -> None:
        """Take back `value` (a throttled fetch answered empty, as Kafka does)."""
        if quota is not None and (rate := self._sensors.get(quota.sensor)) is not None:
            rate.record(-value, now_ms=now_ms)

    def throttle_ms(self, quota: Quota | None, *, now_ms: int) -> int:
        """The throttle time now, recording nothing."""
        if quota is None or (rate := self._sensors.get(quota.sensor)) is None:
            return 0
        return self._throttle_ms(rate, quota.bound, now_ms)

    def _throttle_ms(self, rate: WindowedRate, bound: float, now_ms: int) -> int:
        value = rate.rate_per_s(now_ms=now_ms)
        if value <= bound:
            return 0
        window_ms = rate.window_size_ms(now_ms=now_ms)
        throttle_ms = round((value - bound) / bound * window_ms)
        return min(throttle_ms, self.window_num * self.window_ms)

    def _make_room(self, now_ms: int) -> None:
        if len(self._sensors) < self.sensors_max:
            return
        for key in [k for k, r in self._sensors.items() if r.idle(now_ms=now_ms)]:
            del self._sensors[key]
        while len(self._sensors) >= self.sensors_max:
            del self._sensors[next(iter(self._sensors))]

    def forget(self, sensors: Iterable[SensorKey]) -> None:
        for key in sensors:
            self._sensors.pop(key, None)
