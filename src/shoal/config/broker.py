"""The broker's configuration: `BrokerConfig`, parsed from a `server.properties`-style
file plus overrides, every value checked against its key's definition (unknown keys
and out-of-range values are refused, naming the key), then the whole checked for
consistency (listeners, the share groups' ranges, heartbeat below session timeout).

Values are read through typed keys: `config.get(broker_keys.NUM_PARTITIONS) -> int`.
Per-listener values (`listener.name.<name>.<key>`) through `listener_value`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast, overload

from shoal.config import broker_keys as bk
from shoal.config.checks import http_listener_address
from shoal.config.definition import ConfigError, ConfigType, Key, Scope
from shoal.config.table import BROKER_KEYS, ORDERED_TRIPLES

T = TypeVar("T")

LISTENER_PREFIX = "listener.name."
"""Kafka's per-listener form of a key: `listener.name.<lower-case name>.<key>`."""
LISTENER_PREFIXABLE = (
    "ssl.",
    "sasl.",
    "connections.max.reauth.ms",
    "connection.failed.authentication.delay.ms",
)
"""Broker keys that may be set per listener."""
LISTENER_SUFFIXES = ("sasl.jaas.config",)
"""Kafka's per-listener keys that are not broker keys of their own:
`listener.name.<listener>.<mechanism>.sasl.jaas.config`."""


def parse_properties(text: str, *, source: str = "properties") -> dict[str, str]:
    """Parse `key=value` lines (Kafka's server.properties style: `#`/`!` comments,
    `=` or `:` separators, blank lines ignored)."""
    result: dict[str, str] = {}
    for number, raw_line in enumerate(text.splitlines(), start=1):
        line = raw_line.strip()
        if not line or line[0] in "#!":
            continue
        separators = [i for i in (line.find("="), line.find(":")) if i > 0]
        if not separators:
            raise ConfigError(line, f"{source} line {number} has no '=' separator")
        cut = min(separators)
        result[line[:cut].strip()] = line[cut + 1 :].strip()
    return result


@dataclass(slots=True)
class BrokerConfig:
    """Validated broker configuration. `values` holds every broker key's typed value;
    `explicit` the keys that were set (for DescribeConfigs' source)."""

    values: dict[str, Any]
    explicit: set[str] = field(default_factory=set)
    prefixed: dict[str, Any] = field(default_factory=dict)
    """Per-listener values (`listener.name.<name>.<key>`), typed; see `listener_value`."""

    @classmethod
    def load(
        cls,
        *,
        file: Path | None = None,
        overrides: Mapping[str, str] | Iterable[tuple[str, str]] = (),
    ) -> BrokerConfig:
        raw: dict[str, str] = {}
        if file is not None:
            raw.update(parse_properties(file.read_text(), source=str(file)))
        raw.update(dict(overrides))
        return cls.from_raw(raw)

    @classmethod
    def from_raw(cls, raw: Mapping[str, object]) -> BrokerConfig:
        values = {name: d.default for name, d in BROKER_KEYS.items()}
        prefixed: dict[str, Any] = {}
        for key, value in raw.items():
            if key.startswith(LISTENER_PREFIX):
                prefixed[key] = _parse_listener_key(key, value)
                continue
            definition = BROKER_KEYS.get(key)
            if definition is None:
                raise ConfigError(key, "unknown broker config key")
            values[key] = definition.parse(value)
        explicit = set(raw) - set(prefixed)
        _apply_kafka_synonyms(values, explicit)
        config = cls(values=values, explicit=explicit, prefixed=prefixed)
        config._check_consistency()
        return config

    def _check_consistency(self) -> None:
        for endpoint in self.listener_endpoints():  # ConfigError for an ill-formed set
            if endpoint.uses_tls and not (
                self.listener_value(endpoint.name, bk.SSL_KEYSTORE_LOCATION)
                or self.listener_value(endpoint.name, bk.SSL_KEYSTORE_CERTIFICATE_CHAIN)
            ):
                raise ConfigError(
                    bk.SSL_KEYSTORE_LOCATION.name,
                    f"listener {endpoint.name} is {endpoint.security_protocol} and needs "
                    "ssl.keystore.location or ssl.keystore.certificate.chain + ssl.keystore.key",
                )
        for low_key, mid_key, high_key in ORDERED_TRIPLES:
            low, mid, high = self[low_key], self[mid_key], self[high_key]
            if not low <= mid <= high:
                raise ConfigError(
                    mid_key, f"value {mid} must lie within {low_key}={low} and {high_key}={high}"
                )
        for heartbeat, session in (
            (bk.GROUP_SHARE_HEARTBEAT_INTERVAL_MS, bk.GROUP_SHARE_SESSION_TIMEOUT_MS),
            (bk.GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS, bk.GROUP_CONSUMER_SESSION_TIMEOUT_MS),
        ):
            if self.get(heartbeat) >= self.get(session):
                raise ConfigError(heartbeat.name, f"must be lower than {session.name}")
        if self.get(bk.GROUP_SHARE_MAX_SHARE_SESSIONS) < self.get(bk.GROUP_SHARE_MAX_SIZE):
            raise ConfigError(
                bk.GROUP_SHARE_MAX_SHARE_SESSIONS.name,
                f"must be at least {bk.GROUP_SHARE_MAX_SIZE.name}",
            )

    def get(self, key: Key[T]) -> T:
        """A broker key's value, typed by its declaration (`broker_keys`)."""
        assert key.scope is Scope.BROKER, key
        return cast("T", self.values[key.name])

    def __getitem__(self, key: str) -> Any:
        """A broker key's value by name (for code that has the name, not the key:
        DescribeConfigs, custom keys); in code, `get` with the key."""
        return self.values[key]

    # Accessors by name, the key's declared type checked at the call. `get` with a typed
    # key is the way; these remain for the modules not converted to it yet.
    def get_int(self, key: str) -> int:
        """An INT, SHORT or LONG key's value."""
        value = self._typed(key, (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG))
        assert isinstance(value, int)
        return value

    def get_bool(self, key: str) -> bool:
        value = self._typed(key, (ConfigType.BOOLEAN,))
        assert isinstance(value, bool)
        return value

    def get_str(self, key: str) -> str | None:
        """A STRING, CLASS or PASSWORD key's value (None where the key is nullable)."""
        value = self._typed(key, (ConfigType.STRING, ConfigType.CLASS, ConfigType.PASSWORD))
        assert value is None or isinstance(value, str)
        return value

    def get_list(self, key: str) -> list[str]:
        value = self._typed(key, (ConfigType.LIST,))
        assert isinstance(value, list)
        return value

    def _typed(self, key: str, types: tuple[ConfigType, ...]) -> Any:
        definition = BROKER_KEYS.get(key)
        if definition is None:
            raise KeyError(f"unknown broker config key {key!r}")
        if definition.type not in types:
            raise TypeError(f"{key} is a {definition.type.name}, not {types[0].name}")
        return self.values[key]

    def with_overrides(self, overrides: Mapping[str, object]) -> BrokerConfig:
        """A new validated config with some keys changed (IncrementalAlterConfigs)."""
        raw: dict[str, object] = {k: self.values[k] for k in self.explicit}
        raw.update(self.prefixed)
        raw.update(overrides)
        return BrokerConfig.from_raw(raw)

    # Convenience accessors for values derived from several keys.
    @property
    def node_id(self) -> int:
        return self.get(bk.NODE_ID)

    @property
    def data_dir(self) -> Path:
        return Path(self.get(bk.LOG_DIR) or self.get(bk.LOG_DIRS))

    @property
    def listener(self) -> tuple[str, int]:
        return _host_port(self.get(bk.LISTENERS)[0])

    @property
    def advertised_listener(self) -> tuple[str, int]:
        advertised = self.get(bk.ADVERTISED_LISTENERS)
        return _host_port(advertised[0]) if advertised else self.listener

    # ---- listeners and TLS
    def listener_endpoints(self) -> list[ListenerEndpoint]:
        """Every listener with its security protocol and advertised address, in the
        order of `listeners`; ConfigError for a name the protocol map lacks, a name or
        a port used twice, or an advertised listener that is not a listener."""
        protocols: dict[str, str] = {}
        for entry in self.get(bk.LISTENER_SECURITY_PROTOCOL_MAP):
            name, _, protocol = entry.partition(":")
            protocols[name.strip()] = protocol.strip()
        advertised: dict[str, tuple[str, int]] = {}
        for listener in self.get(bk.ADVERTISED_LISTENERS) or []:
            name = _listener_name(listener)
            if name in advertised:
                raise ConfigError("advertised.listeners", f"listener name {name} appears twice")
            advertised[name] = _host_port(listener)
        endpoints: list[ListenerEndpoint] = []
        for listener in self.get(bk.LISTENERS):
            name = _listener_name(listener)
            security = protocols.get(name)
            if security is None:
                raise ConfigError(
                    "listeners",
                    f"listener {name} has no security protocol in listener.security.protocol.map",
                )
            host, port = _host_port(listener)
            for other in endpoints:
                if other.name == name:
                    raise ConfigError("listeners", f"listener name {name} appears twice")
                if port != 0 and other.port == port and other.host == host:
                    raise ConfigError("listeners", f"{host}:{port} is used by two listeners")
            adv_host, adv_port = advertised.pop(name, (host, port))
            endpoints.append(ListenerEndpoint(name, security, host, port, adv_host, adv_port))
        if advertised:
            raise ConfigError(
                "advertised.listeners",
                f"{', '.join(advertised)} not among the listeners",
            )
        return endpoints

    @overload
    def listener_value(self, listener_name: str, key: Key[T]) -> T: ...
    @overload
    def listener_value(self, listener_name: str, key: str) -> Any: ...
    def listener_value(self, listener_name: str, key: Key[Any] | str) -> Any:
        """`key` for one listener: `listener.name.<lower-case name>.<key>` if set, else
        the broker key itself (Kafka's per-listener override). By name (for code that
        holds a name), None when neither is set and the name is no broker key."""
        if isinstance(key, Key):
            assert key.scope is Scope.BROKER, key
        name = key.name if isinstance(key, Key) else key
        prefixed = f"{LISTENER_PREFIX}{listener_name.lower()}.{name}"
        if prefixed in self.prefixed:
            return self.prefixed[prefixed]
        return self.values.get(name)

    def listener_jaas_config(self, listener_name: str, mechanism: str) -> str | None:
        """`listener.name.<lower-case name>.<mechanism>.sasl.jaas.config`, or None."""
        value = self.prefixed.get(
            f"{LISTENER_PREFIX}{listener_name.lower()}.{mechanism}.sasl.jaas.config"
        )
        return None if value is None else str(value)

    @property
    def metrics_listener(self) -> tuple[str, int] | None:
        """The HTTP listener's (host, port), or None when `metrics.listener` is unset."""
        value = self.get(bk.METRICS_LISTENER)
        return None if value is None else http_listener_address(value)


@dataclass(frozen=True, slots=True)
class ListenerEndpoint:
    """One listener: `listeners`' NAME://host:port, its protocol and where clients
    are told to connect (`advertised.listeners`; port 0 there means the bound port)."""

    name: str
    security_protocol: str
    host: str
    port: int
    advertised_host: str
    advertised_port: int

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")


def _listener_name(listener: str) -> str:
    return listener.split("://", 1)[0].strip()


def _parse_listener_key(key: str, value: object) -> Any:
    """A `listener.name.<name>.<key>` value: `<key>` a listener-configurable broker key
    (typed by its definition) or `<mechanism>.sasl.jaas.config` (kept as its string)."""
    rest = key[len(LISTENER_PREFIX) :]
    name, _, inner = rest.partition(".")
    if not name or not inner:
        raise ConfigError(key, "expected listener.name.<listener>.<config>")
    if name != name.lower():
        raise ConfigError(key, "the listener name in a per-listener key is lower case")
    definition = BROKER_KEYS.get(inner)
    if definition is None:
        mechanism, _, suffix = inner.partition(".")
        if suffix not in LISTENER_SUFFIXES or not mechanism:
            raise ConfigError(key, "unknown per-listener config key")
        return str(value)
    if not inner.startswith(LISTENER_PREFIXABLE):
        raise ConfigError(key, "unknown per-listener config key")
    try:
        return definition.parse(value)
    except ConfigError as exc:
        raise ConfigError(key, str(exc).split(": ", 1)[-1]) from None


def _host_port(listener: str) -> tuple[str, int]:
    address = listener.split("://", 1)[1]
    host, _, port = address.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


def _apply_kafka_synonyms(values: dict[str, Any], explicit: set[str]) -> None:
    """Kafka's broker keys with several spellings resolve to one value."""
    node, broker = bk.NODE_ID.name, bk.BROKER_ID.name
    if broker in explicit and node not in explicit:
        values[node] = values[broker]
    elif node in explicit and broker not in explicit:
        values[broker] = values[node]  # as Kafka: broker.id shows the node id
        explicit.add(broker)
    if bk.LOG_RETENTION_MS.name not in explicit:
        if values[bk.LOG_RETENTION_MINUTES.name] is not None:
            values[bk.LOG_RETENTION_MS.name] = values[bk.LOG_RETENTION_MINUTES.name] * 60_000
        elif bk.LOG_RETENTION_HOURS.name in explicit:
            hours = values[bk.LOG_RETENTION_HOURS.name]
            values[bk.LOG_RETENTION_MS.name] = -1 if hours < 0 else hours * 3_600_000
    if bk.LOG_ROLL_MS.name not in explicit and bk.LOG_ROLL_HOURS.name in explicit:
        values[bk.LOG_ROLL_MS.name] = values[bk.LOG_ROLL_HOURS.name] * 3_600_000
