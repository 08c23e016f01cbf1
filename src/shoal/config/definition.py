"""What one config key is, and how its values parse and render.

- `ConfigDef`: a key's name, type, default, scope, bounds and checks; `parse` turns a
  raw value (a string from a file or the wire, or a Python value) into the typed value
  or raises `ConfigError`, worded as Kafka words it where Shoal has Kafka's words.
- `Key[T]`: a declared key with the Python type of its value, the handle code reads a
  value with (`BrokerConfig.get(broker_keys.NUM_PARTITIONS) -> int`).
- `Declarer`: what the declaration modules (broker_keys, topic_keys, group_keys,
  client_metrics_keys) declare their keys with, one typed method per value type; it
  keeps the definitions in declaration order, which the table (table.py) is built from.
- `render` and `java_double`: the string Kafka shows for a value (DescribeConfigs).

Values are held as Python values (int, bool, str, float, list[str]).
"""

from __future__ import annotations

import decimal
import enum
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypedDict, TypeVar, Unpack, cast

from kio.schema.errors import ErrorCode

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
_JAVA_INT = re.compile(r"[+-]?[0-9]+")
"""What Java's Integer.parseInt takes (no underscores, unlike Python's int)."""


class ConfigType(enum.IntEnum):
    """Kafka's DescribeConfigs ConfigType ids."""

    UNKNOWN = 0
    """A custom key Kafka (and Shoal) knows nothing about."""
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class Scope(enum.Enum):
    BROKER = "broker"
    TOPIC = "topic"
    GROUP = "group"
    CLIENT_METRICS = "client metrics"


class NoEffect(enum.Enum):
    """Why a Kafka key is accepted and stored but changes nothing on one Shoal node.
    Every such key carries one of these (`ConfigDef.no_effect`); docs/reference/configs.md lists
    them all. Kafka validates and shows them as it does; Shoal only keeps the value."""

    KRAFT = "no KRaft controller quorum or metadata log: one process is the whole cluster"
    REPLICATION = "no replicas: every partition has one copy, on this node"
    TIERED = "no tiered (remote) storage: every segment stays in the data directory"
    CLEANER = "the cleaner reads and rewrites a segment batch by batch: no I/O buffer to size"
    THREADS = "one asyncio event loop (and a small disk pool) instead of Kafka's thread pools"
    PLUGINS = "no Java plug-ins (classes, reporters, config providers, security providers)"
    JAAS = "no JAAS, Kerberos or OAuth client login: brokers only validate credentials"
    JSSE = "TLS through Python's ssl module with PEM files, not Java's JSSE"
    SOCKETS = "socket buffers, backlogs and inter-broker timeouts are left to the OS and asyncio"
    PURGATORY = "no purgatory purge intervals, fetch sessions cache or broker-wide fetch cap"
    CONNECTIONS = "per-IP connection limits are client quotas (connection_creation_rate) here"
    DELEGATION = "no delegation tokens"
    LOG_FILES = "segment files are neither preallocated, jittered nor deleted with a delay"
    TELEMETRY = "no client telemetry (KIP-714)"
    COMPRESSION = "the share-group state topic is written uncompressed"
    STREAMS = "no Kafka Streams groups (KIP-1071)"
    UNCHECKED = "a Kafka check or tuning knob Shoal does not implement"


class ConfigError(ValueError):
    """A config key is unknown or its value is invalid; the message names the key.
    `code` is the Kafka error a request that set it is refused with."""

    code = ErrorCode.invalid_config

    def __init__(
        self, key: str, message: str, *, whole: bool = False, kafka_message: str | None = None
    ) -> None:
        """`message` is prefixed by the key unless `whole` (it is Kafka's own text
        already); `kafka_message` is Kafka's text for a refusal Shoal words its own way."""
        super().__init__(message if whole else f"{key}: {message}")
        self.key = key
        self.kafka_message = kafka_message

    @property
    def wire_message(self) -> str:
        """The message a request refused for this value gets: Kafka's words
        (ConfigDef's ConfigException, "Invalid value <v> for configuration <key>:
        <reason>") where Shoal has them, else its own."""
        return self.kafka_message or str(self)


@dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    type: ConfigType
    default: Any
    scope: Scope
    doc: str
    min: int | float | None = None
    max: int | float | None = None
    choices: tuple[str, ...] | None = None
    synonym: str | None = None
    """For a topic or group key: the broker key whose value it defaults to."""
    read_only: bool = False
    nullable: bool = False
    check: Callable[[Any], str | None] | None = None
    """Extra validation: returns an error message or None."""
    dynamic: bool = False
    """A broker key IncrementalAlterConfigs may change (besides those
    server/metadata/dynamic_config.py lists): the Kafka keys Kafka marks dynamic."""
    no_effect: NoEffect | None = None
    """Set for a Kafka key Shoal accepts and stores without acting on it."""
    kafka_words: bool = False
    """Refusals are worded as Kafka's ConfigDef words them (`Invalid value <v> for
    configuration <key>: <reason>`); `check` then returns Kafka's reason."""

    def parse(self, raw: object) -> Any:
        """Turn a raw value (string from a file or the wire, or a Python value) into
        this key's typed value, or raise ConfigError."""
        if raw is None or (isinstance(raw, str) and raw.strip() == "" and self.nullable):
            if self.nullable:
                return None
            raise ConfigError(self.name, "a value is required")
        if self.kafka_words:
            return self._parse_as_kafka(raw)
        value = self._coerce(raw)
        self._check_bounds(value)
        return value

    def _parse_as_kafka(self, raw: object) -> Any:
        """`parse`, refusing as Kafka's ConfigDef does: the value shown as given (an
        INT's as parsed), the reason in Kafka's words (its Range, ValidString and
        type checks)."""
        text = raw.strip() if isinstance(raw, str) else raw

        def refuse(shown: object, reason: str) -> ConfigError:
            return ConfigError(
                self.name,
                f"Invalid value {shown} for configuration {self.name}: {reason}",
                whole=True,
            )

        value: Any = text
        if self.type is ConfigType.INT:
            if isinstance(text, bool) or not _JAVA_INT.fullmatch(str(text)):
                raise refuse(text, "Not a number of type INT")
            value = int(str(text))
            if not -(2**31) <= value <= INT_MAX:
                raise refuse(text, "Not a number of type INT")
            if self.min is not None and value < self.min:
                raise refuse(value, f"Value must be at least {self.min}")
            if self.max is not None and value > self.max:
                raise refuse(value, f"Value must be no more than {self.max}")
        else:
            value = str(text)
            if self.choices is not None and value not in self.choices:
                raise refuse(value, f"String must be one of: {', '.join(self.choices)}")
        if self.check is not None and (reason := self.check(value)) is not None:
            raise refuse(value, reason)
        return value

    def _coerce(self, raw: object) -> Any:
        text = raw.strip() if isinstance(raw, str) else raw
        try:
            match self.type:
                case ConfigType.BOOLEAN:
                    if isinstance(text, bool):
                        return text
                    lowered = str(text).lower()
                    if lowered not in ("true", "false"):
                        raise ValueError
                    return lowered == "true"
                case ConfigType.INT | ConfigType.SHORT | ConfigType.LONG:
                    if isinstance(text, bool):
                        raise ValueError
                    number = int(str(text))
                    if self.type is ConfigType.INT and not -(2**31) <= number <= INT_MAX:
                        raise ValueError  # Java's parseInt refuses it
                    return number
                case ConfigType.DOUBLE:
                    return float(str(text))
                case ConfigType.LIST:
                    if isinstance(text, list | tuple):
                        return [str(v) for v in text]
                    return [part.strip() for part in str(text).split(",") if part.strip()]
                case _:
                    return str(text)
        except ValueError:
            kind = self.type.name.lower()
            reason = (
                "Expected value to be either true or false"
                if self.type is ConfigType.BOOLEAN
                else f"Not a number of type {self.type.name}"
            )
            raise ConfigError(
                self.name,
                f"value {raw!r} is not a valid {kind}",
                kafka_message=self._kafka_refusal(raw, reason),
            ) from None

    def _kafka_refusal(self, shown: object, reason: str) -> str:
        """Kafka's ConfigException message (ConfigDef.parseType, Range.ensureValid)."""
        if isinstance(shown, float):
            shown = java_double(shown)
        return f"Invalid value {shown} for configuration {self.name}: {reason}"

    def _check_bounds(self, value: Any) -> None:
        if isinstance(value, int | float) and not isinstance(value, bool):
            if self.min is not None and value < self.min:
                raise ConfigError(
                    self.name,
                    f"value {value} is below the minimum {self.min}",
                    kafka_message=self._kafka_refusal(
                        value, f"Value must be at least {_java_number(self.min)}"
                    ),
                )
            if self.max is not None and value > self.max:
                raise ConfigError(
                    self.name,
                    f"value {value} is above the maximum {self.max}",
                    kafka_message=self._kafka_refusal(
                        value, f"Value must be no more than {_java_number(self.max)}"
                    ),
                )
            if self.type is ConfigType.INT and not -(2**31) <= value <= INT_MAX:
                raise ConfigError(self.name, f"value {value} does not fit an int")
        if self.choices is not None:
            values = value if isinstance(value, list) else [value]
            for v in values:
                if v not in self.choices:
                    raise ConfigError(
                        self.name, f"value {v!r} is not one of {', '.join(self.choices)}"
                    )
        if self.check is not None:
            problem = self.check(value)
            if problem is not None:
                raise ConfigError(self.name, problem)


def render(definition: ConfigDef, value: Any) -> str | None:
    """The string Kafka shows for a value (DescribeConfigs)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(value)
    if isinstance(value, float):
        return java_double(value)
    return str(value)


def _java_number(value: float) -> str:
    """A bound as Java's Number.toString shows it (Kafka's Range validator)."""
    return java_double(value) if isinstance(value, float) else str(value)


def java_double(value: float) -> str:
    """A double as Java's Double.toString writes it (Kafka's DescribeConfigs shows
    DOUBLE values that way): plain between 10^-3 and 10^7, else d.dddE<exponent>."""
    if not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(value)
    sign, digits, exponent = decimal.Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    fraction = text[1:].rstrip("0") or "0"
    return f"{'-' if sign else ''}{text[0]}.{fraction}E{len(text) + exponent - 1}"


# ---- typed keys

T_co = TypeVar("T_co", covariant=True)


@dataclass(frozen=True, slots=True, eq=False)
class Key(Generic[T_co]):
    """A declared config key whose value is a `T`. Code reads a value through its key
    (`BrokerConfig.get`, `topic_value`), so the key's name is written once, where it
    is declared, and the value's type is known to mypy at the call. Compared by
    identity: each key is declared once. Covariant: a `Key[list[str]]` is read where
    an iterable of strings is wanted."""

    definition: ConfigDef
    name: str = field(init=False)
    """The key's name (`definition.name`), a field: read on hot paths."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", self.definition.name)

    @property
    def scope(self) -> Scope:
        return self.definition.scope

    @property
    def default(self) -> T_co:
        return cast("T_co", self.definition.default)

    def parse(self, raw: object) -> T_co:
        """`ConfigDef.parse`, typed."""
        return cast("T_co", self.definition.parse(raw))

    def __repr__(self) -> str:
        return f"Key({self.name!r}, {self.scope.value})"


class KeyOptions(TypedDict, total=False):
    """`ConfigDef`'s optional fields, as a declaration gives them."""

    min: int | float | None
    max: int | float | None
    choices: tuple[str, ...] | None
    synonym: Key[Any] | str | None
    read_only: bool
    nullable: bool
    check: Callable[[Any], str | None] | None
    dynamic: bool
    no_effect: NoEffect | None
    kafka_words: bool


KafkaRow = tuple[str, ConfigType, "str | None", "bool | str | None", NoEffect]
"""A Kafka key Shoal accepts without acting on it: (name, type, Kafka's default as
Kafka shows it, dynamic in Kafka (a broker key) or its broker synonym (a topic or group
key), why it has no effect)."""


class Declarer:
    """Declares the keys of one scope, in order: each method makes a `ConfigDef`,
    keeps it (`definitions`) and returns its typed `Key`."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.definitions: list[ConfigDef] = []

    def _add(
        self, kind: ConfigType, name: str, default: object, doc: str, options: KeyOptions
    ) -> ConfigDef:
        synonym = options.get("synonym")
        definition = ConfigDef(
            name,
            kind,
            default,
            self.scope,
            doc,
            min=options.get("min"),
            max=options.get("max"),
            choices=options.get("choices"),
            synonym=synonym.name if isinstance(synonym, Key) else synonym,
            read_only=options.get("read_only", False),
            nullable=options.get("nullable", False),
            check=options.get("check"),
            dynamic=options.get("dynamic", False),
            no_effect=options.get("no_effect"),
            kafka_words=options.get("kafka_words", False),
        )
        assert all(d.name != name for d in self.definitions), f"{name} declared twice"
        self.definitions.append(definition)
        return definition

    def integer(self, name: str, default: int, doc: str, **options: Unpack[KeyOptions]) -> Key[int]:
        return Key(self._add(ConfigType.INT, name, default, doc, options))

    def long(self, name: str, default: int, doc: str, **options: Unpack[KeyOptions]) -> Key[int]:
        return Key(self._add(ConfigType.LONG, name, default, doc, options))

    def short(self, name: str, default: int, doc: str, **options: Unpack[KeyOptions]) -> Key[int]:
        return Key(self._add(ConfigType.SHORT, name, default, doc, options))

    def optional_integer(
        self, name: str, default: int | None, doc: str, **options: Unpack[KeyOptions]
    ) -> Key[int | None]:
        return Key(self._add(ConfigType.INT, name, default, doc, options))

    def optional_long(
        self, name: str, default: int | None, doc: str, **options: Unpack[KeyOptions]
    ) -> Key[int | None]:
        return Key(self._add(ConfigType.LONG, name, default, doc, options))

    def double(
        self, name: str, default: float, doc: str, **options: Unpack[KeyOptions]
    ) -> Key[float]:
        return Key(self._add(ConfigType.DOUBLE, name, default, doc, options))

    def boolean(
        self, name: str, default: bool, doc: str, **options: Unpack[KeyOptions]
    ) -> Key[bool]:
        return Key(self._add(ConfigType.BOOLEAN, name, default, doc, options))

    def string(self, name: str, default: str, doc: str, **options: Unpack[KeyOptions]) -> Key[str]:
        return Key(self._add(ConfigType.STRING, name, default, doc, options))

    def optional_string(
        self, name: str, default: str | None, doc: str, **options: Unpack[KeyOptions]
    ) -> Key[str | None]:
        return Key(self._add(ConfigType.STRING, name, default, doc, options))

    def password(
        self, name: str, default: str | None, doc: str, **options: Unpack[KeyOptions]
    ) -> Key[str | None]:
        return Key(self._add(ConfigType.PASSWORD, name, default, doc, options))

    def strings(
        self, name: str, default: list[str], doc: str, **options: Unpack[KeyOptions]
    ) -> Key[list[str]]:
        """A LIST key."""
        return Key(self._add(ConfigType.LIST, name, default, doc, options))

    def optional_strings(
        self, name: str, default: list[str] | None, doc: str, **options: Unpack[KeyOptions]
    ) -> Key[list[str] | None]:
        return Key(self._add(ConfigType.LIST, name, default, doc, options))

    def kafka_keys(
        self,
        rows: Iterable[KafkaRow],
        *,
        minimums: dict[str, int | float] | None = None,
        maximums: dict[str, int | float] | None = None,
    ) -> None:
        """Kafka keys Shoal accepts and stores, without acting on them, with Kafka's
        type, default and bounds, given as rows (`KafkaRow`: nothing reads them, so
        they get no `Key` each). A topic or group row without a bound of its own takes
        its broker synonym's (`minimums` and `maximums` are by key name)."""
        broker = self.scope is Scope.BROKER
        bounds = minimums or {}
        uppers = maximums or {}
        for name, kind, default, detail, reason in rows:
            synonym = None if broker or not isinstance(detail, str) else detail
            definition = self._add(
                kind,
                name,
                None,
                no_effect_doc(reason),
                {
                    "nullable": default is None,
                    "dynamic": broker and detail is True,
                    "no_effect": reason,
                    "synonym": synonym,
                    "min": bounds.get(name, bounds.get(synonym or "")),
                    "max": uppers.get(name, uppers.get(synonym or "")),
                },
            )
            self.definitions[-1] = replace(definition, default=definition.parse(default))


def no_effect_doc(reason: NoEffect) -> str:
    return f"Kafka key, accepted and stored; no effect on one Shoal node: {reason.value}."
