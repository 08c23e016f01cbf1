"""Typed configuration: every key Shoal understands, with its default and bounds.

One table (`DEFINITIONS`) describes each key: its type, default, bounds and whether
it is a broker key, a topic key (with the broker key it falls back to), or a share
group key. Everything else reads configs through it:

- `BrokerConfig.load` parses a `server.properties`-style file plus overrides and
  refuses unknown keys and out-of-range values, naming the key.
- `validate_topic_configs` checks a topic's overrides (CreateTopics,
  IncrementalAlterConfigs) and `effective_topic_config` resolves a topic's values.

Values are held as Python values (int, bool, str, float, list[str]); the wire form is
the string Kafka would show, produced by `render`.

Longer than 600 lines on purpose: `DEFINITIONS` is one table with a row per key
(broker, topic and group), and keeping every key, default and bound in one place is
the point of this module.
"""

from __future__ import annotations

import decimal
import enum
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from shoal import limits

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


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
    Every such key carries one of these (`ConfigDef.no_effect`); docs/configs.md lists
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
    bounds: tuple[str, str] | None = None
    """For a group key: the broker keys holding its (min, max): checked when a group
    sets it, clamped into afterwards (group/configs.py, share/settings.py), and
    ordered around `synonym` at start-up."""
    read_only: bool = False
    nullable: bool = False
    check: Callable[[Any], str | None] | None = None
    """Extra validation: returns an error message or None."""
    dynamic: bool = False
    """A broker key IncrementalAlterConfigs may change (besides those
    server/dynamic_config.py lists): the Kafka keys Kafka marks dynamic."""
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


def _check_listeners(value: Any) -> str | None:
    for listener in value:
        if "://" not in listener or ":" not in listener.split("://", 1)[1]:
            return f"listener {listener!r} is not of the form NAME://host:port"
    return None


def _check_sasl_mechanisms(value: Any) -> str | None:
    served = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
    unknown = [m for m in value if m not in served]
    if unknown:
        return f"unsupported SASL mechanisms {unknown} (Shoal serves {', '.join(served)})"
    return None


def _check_jwks_url(value: Any) -> str | None:
    if value is not None and not str(value).startswith("file:"):
        return "only file: URLs are supported (a JWK set read from a local file)"
    return None


def _check_protocol_map(value: Any) -> str | None:
    for entry in value:
        name, sep, protocol = entry.partition(":")
        if not sep or not name or protocol not in SECURITY_PROTOCOLS:
            return f"entry {entry!r} is not NAME:PROTOCOL with PROTOCOL one of " + ", ".join(
                SECURITY_PROTOCOLS
            )
    return None


def _check_mapping_rules(value: Any) -> str | None:
    from shoal.security.principal_mapping import InvalidRules, PrincipalMapper

    try:
        PrincipalMapper.parse(value)
    except InvalidRules as exc:
        return str(exc)
    return None


# ---- metrics.listener (issue 13: the HTTP listener of /metrics and the console)


def http_listener_address(value: str) -> tuple[str, int]:
    """`http://host:port` as (host, port): no host means loopback (127.0.0.1), port 0
    an ephemeral port. Raises ValueError for anything else."""
    scheme, sep, address = value.strip().partition("://")
    if not sep or scheme.lower() != "http":
        raise ValueError(f"{value!r} is not of the form http://host:port")
    host, colon, port_text = address.rstrip("/").rpartition(":")
    if not colon or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"{value!r} has no valid port (0-65535)")
    return host.strip("[]") or "127.0.0.1", int(port_text)


def _check_http_listener(value: Any) -> str | None:
    try:
        http_listener_address(str(value))
    except ValueError as exc:
        return str(exc)
    return None


def _check_finite(value: Any) -> str | None:
    if not math.isfinite(value):
        return f"value {value} is not a finite number"
    return None


def _check_by_duration(value: Any) -> str | None:
    from shoal.iso_duration import parse_iso_duration_ms

    if value in ("latest", "earliest"):
        return None
    if isinstance(value, str) and value.startswith("by_duration:"):
        try:
            parse_iso_duration_ms(value.removeprefix("by_duration:"))
        except ValueError as exc:
            return str(exc)
        return None
    return f"value {value!r} must be latest, earliest or by_duration:<ISO-8601 duration>"


SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
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

_B, _T, _G = Scope.BROKER, Scope.TOPIC, Scope.GROUP
MIGRATION_POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")
"""`group.consumer.migration.policy` values (Kafka's ConsumerGroupMigrationPolicy)."""

_INT, _LONG, _BOOL, _STR, _LIST = (
    ConfigType.INT,
    ConfigType.LONG,
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.LIST,
)
_DAY_MS = 24 * 3600 * 1000

COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
"""`compression.type`'s values, in the order Kafka's refusal lists them."""


def _check_gzip_level(value: Any) -> str | None:
    """Kafka's gzip level: 1..9, or -1 (zlib's default)."""
    if value is None or value == -1 or 1 <= value <= 9:
        return None
    return "Value must be between 1 and 9 or equal to -1"


_COMPRESSION_LEVEL_KEYS: tuple[
    tuple[str, str, int | None, int | None, int, Callable[[Any], str | None] | None], ...
] = (
    ("compression.gzip.level", "gzip", None, None, -1, _check_gzip_level),
    ("compression.lz4.level", "lz4", 1, 17, 9, None),
    ("compression.zstd.level", "zstd", -131072, 22, 3, None),
)
"""(key, codec, min, max, default, check) of the level keys (KIP-390): Kafka's
CompressionType ranges, which protocol/compression.py applies (a unit test keeps the
two equal)."""
_JAVA_INT = re.compile(r"[+-]?[0-9]+")
"""What Java's Integer.parseInt takes (no underscores, unlike Python's int)."""

_DEFS: list[ConfigDef] = [
    # ---- broker: identity and listeners
    ConfigDef("node.id", _INT, 1, _B, "This broker's node id.", min=0, read_only=True),
    ConfigDef("broker.id", _INT, -1, _B, "Synonym of node.id (Kafka's older name).", min=-1),
    ConfigDef(
        "listeners",
        _LIST,
        ["PLAINTEXT://127.0.0.1:9092"],
        _B,
        "Where the broker listens.",
        read_only=True,
        check=_check_listeners,
    ),
    ConfigDef(
        "advertised.listeners",
        _LIST,
        None,
        _B,
        "What clients are told to connect to; defaults to listeners.",
        nullable=True,
        read_only=True,
        check=_check_listeners,
    ),
    # ---- broker: metrics.listener (issue 13)
    ConfigDef(
        "metrics.listener",
        _STR,
        None,
        _B,
        "HTTP listener for /metrics and the web console, e.g. http://127.0.0.1:9404 "
        "(port 0: ephemeral); off when unset. Binds only the host named.",
        nullable=True,
        read_only=True,
        check=_check_http_listener,
    ),
    ConfigDef("log.dirs", _STR, "./shoal-data", _B, "Data directory.", read_only=True),
    ConfigDef("log.dir", _STR, None, _B, "Synonym of log.dirs.", nullable=True, read_only=True),
    ConfigDef("cluster.id", _STR, None, _B, "Cluster id; generated on first start.", nullable=True),
    ConfigDef(
        "log.level", _STR, "INFO", _B, "Log level.", choices=("DEBUG", "INFO", "WARNING", "ERROR")
    ),
    # ---- broker: network and limits
    ConfigDef(
        "socket.request.max.bytes",
        _INT,
        104_857_600,
        _B,
        "Largest request frame; a larger one closes the connection.",
        min=1,
    ),
    ConfigDef(
        "max.connections",
        _INT,
        limits.CONNECTIONS_MAX_DEFAULT,
        _B,
        "Open client connections at most; more are closed at accept.",
        min=1,
    ),
    # ---- connections (issue 15): idle, slowloris and non-reading connections
    ConfigDef(
        "connections.max.idle.ms",
        _LONG,
        limits.CONNECTIONS_MAX_IDLE_MS_DEFAULT,
        _B,
        "Close a connection idle this long, or whose client has not read a response this long.",
        min=1,
    ),
    ConfigDef(
        "shoal.request.read.timeout.ms",
        _INT,
        limits.REQUEST_READ_TIMEOUT_MS_DEFAULT,
        _B,
        "A request frame must arrive whole this soon after its size; else the connection closes.",
        min=1,
    ),
    # ---- client quotas (issue 15): the rate window of producer/consumer_byte_rate
    ConfigDef(
        "quota.window.num",
        _INT,
        11,
        _B,
        "Samples of a client quota's rate window (Kafka's default 11).",
        min=1,
    ),
    ConfigDef(
        "quota.window.size.seconds",
        _INT,
        1,
        _B,
        "Length of one sample of a client quota's rate window, in seconds.",
        min=1,
    ),
    ConfigDef(
        "shoal.max.topics",
        _INT,
        limits.TOPICS_MAX_DEFAULT,
        _B,
        "User topics at most (internal ones not counted); more gets POLICY_VIOLATION.",
        min=1,
    ),
    ConfigDef(
        "shoal.max.partitions",
        _INT,
        limits.PARTITIONS_MAX_DEFAULT,
        _B,
        "Partitions at most across all user topics; more gets INVALID_PARTITIONS.",
        min=1,
    ),
    ConfigDef(
        "shoal.fetch.max.wait.ms",
        _INT,
        limits.FETCH_WAIT_MS_MAX,
        _B,
        "A Fetch's MaxWaitMs is clamped to this.",
        min=0,
        max=limits.FETCH_WAIT_MS_MAX,
    ),
    ConfigDef(
        "queued.max.requests",
        _INT,
        500,
        _B,
        "Requests read ahead per connection before the broker stops reading it.",
        min=1,
    ),
    ConfigDef(
        "shoal.shutdown.timeout.ms",
        _INT,
        limits.SHUTDOWN_DRAIN_MS,
        _B,
        "How long shutdown waits for in-flight requests.",
        min=0,
    ),
    ConfigDef(
        "shoal.share.partition.idle.unload.ms",
        _INT,
        limits.SHARE_PARTITION_IDLE_UNLOAD_MS,
        _B,
        "A share-partition unused this long with nothing acquired leaves memory; "
        "its next use reloads it from the share coordinator.",
        min=100,
    ),
    ConfigDef(
        "shoal.share.browse.max.entries",
        _INT,
        limits.SHARE_BROWSE_ENTRIES_MAX,
        _B,
        "In-flight entries (a batch range or one record) per share-partition that one "
        "ShareGroupBrowse (Shoal's extension API, `shoal share-groups --browse`) returns "
        "at most; the rest is flagged truncated.",
        min=0,
        max=100_000,
    ),
    # ---- broker: web console (issue 13, server/console/)
    ConfigDef(
        "console.allow.writes",
        _BOOL,
        False,
        _B,
        "Let the web console reset offsets of and delete empty groups (POST actions).",
    ),
    ConfigDef(
        "console.inflight.max.records",
        _INT,
        limits.CONSOLE_INFLIGHT_ENTRIES_MAX,
        _B,
        "Entries (a batch range or one record) of a share-partition's in-flight window "
        "one console view shows; the rest is counted as truncated.",
        min=1,
        max=100_000,
    ),
    # ---- broker: topics
    ConfigDef(
        "num.partitions",
        _INT,
        1,
        _B,
        "Partitions of auto-created topics.",
        min=1,
        max=limits.PARTITIONS_PER_TOPIC_MAX,
    ),
    ConfigDef(
        "default.replication.factor",
        _INT,
        1,
        _B,
        "Replication factor; a single node supports only 1.",
        min=1,
        max=1,
    ),
    ConfigDef(
        "auto.create.topics.enable",
        _BOOL,
        True,
        _B,
        "Create a topic when Metadata or Produce names an unknown one.",
    ),
    ConfigDef("delete.topic.enable", _BOOL, True, _B, "Allow DeleteTopics."),
    # ---- broker: log (each has a topic-level synonym below)
    ConfigDef("log.segment.bytes", _INT, 1_073_741_824, _B, "Segment size.", min=14),
    ConfigDef("log.roll.ms", _LONG, 7 * _DAY_MS, _B, "Roll a segment after this age.", min=1),
    ConfigDef("log.roll.hours", _INT, 168, _B, "Roll after hours (if log.roll.ms unset).", min=1),
    ConfigDef(
        "log.retention.ms",
        _LONG,
        7 * _DAY_MS,
        _B,
        "Delete segments older than this; -1 keeps forever.",
        min=-1,
    ),
    ConfigDef("log.retention.minutes", _INT, None, _B, "Retention in minutes.", nullable=True),
    ConfigDef("log.retention.hours", _INT, 168, _B, "Retention in hours.", min=-1),
    ConfigDef(
        "log.retention.bytes",
        _LONG,
        -1,
        _B,
        "Delete oldest segments past this partition size; -1 no limit.",
        min=-1,
    ),
    ConfigDef(
        "log.retention.check.interval.ms", _LONG, 300_000, _B, "How often retention runs.", min=1
    ),
    ConfigDef(
        "log.flush.interval.messages",
        _LONG,
        LONG_MAX,
        _B,
        "fsync after this many records; 1 = every write.",
        min=1,
    ),
    ConfigDef(
        "log.flush.interval.ms",
        _LONG,
        None,
        _B,
        "fsync data older than this; unset = page cache only.",
        nullable=True,
        min=0,
    ),
    ConfigDef(
        "log.flush.scheduler.interval.ms",
        _LONG,
        LONG_MAX,
        _B,
        "How often the flusher looks.",
        min=1,
    ),
    ConfigDef("log.index.interval.bytes", _INT, 4096, _B, "Bytes between index entries.", min=0),
    ConfigDef("log.index.size.max.bytes", _INT, 10_485_760, _B, "Max index size.", min=4),
    ConfigDef(
        "log.cleanup.policy",
        _LIST,
        ["delete"],
        _B,
        "delete (retention), compact (the latest record per key), or both.",
        choices=("compact", "delete"),
    ),
    ConfigDef(
        "log.message.timestamp.type",
        _STR,
        "CreateTime",
        _B,
        "Timestamp type.",
        choices=("CreateTime", "LogAppendTime"),
    ),
    ConfigDef("message.max.bytes", _INT, 1_048_588, _B, "Largest record batch.", min=0),
    ConfigDef("min.insync.replicas", _INT, 1, _B, "Single node: always 1.", min=1, max=1),
    ConfigDef(
        "compression.type",
        _STR,
        "producer",
        _B,
        "Codec of the stored batches: producer keeps each batch's own; another value "
        "recompresses batches of another codec (docs/compression.md).",
        choices=COMPRESSION_TYPES,
        kafka_words=True,
    ),
    *(
        ConfigDef(
            key,
            _INT,
            default,
            _B,
            f"Level of broker-side {codec} compression.",
            min=low,
            max=high,
            check=check,
            dynamic=True,
            kafka_words=True,
        )
        for key, codec, low, high, default, check in _COMPRESSION_LEVEL_KEYS
    ),
    # ---- broker: producers and transactions
    ConfigDef("transaction.max.timeout.ms", _INT, 900_000, _B, "Largest txn timeout.", min=1),
    ConfigDef(
        "transaction.partition.verification.enable",
        _BOOL,
        True,
        _B,
        "Verify transactional writes with the coordinator (KIP-890) before appending them.",
    ),
    ConfigDef("transaction.state.log.num.partitions", _INT, 50, _B, "Txn state topic.", min=1),
    ConfigDef("transaction.state.log.segment.bytes", _INT, 104_857_600, _B, "Segment.", min=1),
    ConfigDef("transaction.state.log.load.buffer.size", _INT, 5_242_880, _B, "Load.", min=1),
    ConfigDef("transactional.id.expiration.ms", _INT, 7 * _DAY_MS, _B, "Idle ids.", min=1),
    ConfigDef(
        "transaction.state.log.prune.interval.ms",
        _INT,
        300_000,
        _B,
        "Shoal: how often __transaction_state is re-written and pruned (Kafka compacts).",
        min=1,
    ),
    ConfigDef(
        "transaction.state.log.rewrite.window.records",
        _INT,
        10_000,
        _B,
        "Shoal: a transactional id whose latest record lies more records than this below "
        "its __transaction_state partition's end is re-written, so idle ids do not pin the log.",
        min=0,
    ),
    ConfigDef(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        _INT,
        10_000,
        _B,
        "How often timed-out transactions are aborted.",
        min=1,
    ),
    ConfigDef(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        _INT,
        3_600_000,
        _B,
        "How often expired transactional ids are removed.",
        min=1,
    ),
    ConfigDef(
        "producer.id.expiration.ms",
        _INT,
        _DAY_MS,
        _B,
        "Forget idle producer ids after this.",
        min=1,
    ),
    # ---- broker: classic consumer groups (Kafka's defaults and bounds)
    ConfigDef("group.initial.rebalance.delay.ms", _INT, 3_000, _B, "First join wait.", min=0),
    ConfigDef("group.min.session.timeout.ms", _INT, 6_000, _B, "Bound.", min=1),
    ConfigDef("group.max.session.timeout.ms", _INT, 1_800_000, _B, "Bound.", min=1),
    ConfigDef("group.max.size", _INT, 2_147_483_647, _B, "Classic members per group.", min=1),
    ConfigDef("offsets.retention.minutes", _INT, 10_080, _B, "Empty groups' offsets.", min=1),
    ConfigDef("offsets.retention.check.interval.ms", _LONG, 600_000, _B, "Expiry scan.", min=1),
    # ---- broker: consumer groups, KIP-848 protocol (Kafka's defaults)
    ConfigDef("group.consumer.session.timeout.ms", _INT, 45_000, _B, "Member expiry.", min=1),
    ConfigDef("group.consumer.heartbeat.interval.ms", _INT, 5_000, _B, "Heartbeat.", min=1),
    ConfigDef("group.consumer.max.size", _INT, 2_147_483_647, _B, "Members per group.", min=1),
    ConfigDef("group.consumer.min.session.timeout.ms", _INT, 45_000, _B, "Bound.", min=1),
    ConfigDef("group.consumer.max.session.timeout.ms", _INT, 60_000, _B, "Bound.", min=1),
    ConfigDef("group.consumer.min.heartbeat.interval.ms", _INT, 5_000, _B, "Bound.", min=1),
    ConfigDef("group.consumer.max.heartbeat.interval.ms", _INT, 15_000, _B, "Bound.", min=1),
    ConfigDef(
        "group.consumer.assignors",
        _LIST,
        ["uniform", "range"],
        _B,
        "Server assignors, the first is the default.",
        choices=("uniform", "range"),
    ),
    ConfigDef(
        "group.consumer.migration.policy",
        _STR,
        "bidirectional",
        _B,
        "Online classic<->consumer group conversion: disabled, upgrade, downgrade or "
        "bidirectional (case-insensitive).",
        check=lambda v: (
            None
            if str(v).lower() in MIGRATION_POLICIES
            else f"value {v!r} is not one of {', '.join(MIGRATION_POLICIES)}"
        ),
    ),
    # ---- broker: share groups (see configs.md)
    ConfigDef("share.version", _INT, 1, _B, "0 disables share groups.", min=0, max=1),
    ConfigDef("group.share.session.timeout.ms", _INT, 45_000, _B, "Member expiry.", min=1),
    ConfigDef("group.share.min.session.timeout.ms", _INT, 45_000, _B, "Bound.", min=1),
    ConfigDef("group.share.max.session.timeout.ms", _INT, 60_000, _B, "Bound.", min=1),
    ConfigDef("group.share.heartbeat.interval.ms", _INT, 5_000, _B, "Heartbeat.", min=1),
    ConfigDef("group.share.min.heartbeat.interval.ms", _INT, 5_000, _B, "Bound.", min=1),
    ConfigDef("group.share.max.heartbeat.interval.ms", _INT, 15_000, _B, "Bound.", min=1),
    ConfigDef("group.share.max.size", _INT, 200, _B, "Members per group.", min=1, max=1000),
    ConfigDef("group.share.assignors", _LIST, ["simple"], _B, "Assignor.", choices=("simple",)),
    ConfigDef("group.share.initialize.retry.interval.ms", _INT, 30_000, _B, "Retry.", min=1),
    ConfigDef("group.share.assignment.interval.ms", _INT, 0, _B, "Assignment rate.", min=0),
    ConfigDef("group.share.delivery.count.limit", _INT, 5, _B, "Deliveries.", min=2, max=10),
    ConfigDef("group.share.min.delivery.count.limit", _INT, 2, _B, "Bound.", min=2, max=5),
    ConfigDef("group.share.max.delivery.count.limit", _INT, 10, _B, "Bound.", min=5, max=25),
    ConfigDef(
        "group.share.record.lock.duration.ms", _INT, 30_000, _B, "Lock.", min=1000, max=3_600_000
    ),
    ConfigDef(
        "group.share.min.record.lock.duration.ms", _INT, 15_000, _B, "Bound.", min=1000, max=30_000
    ),
    ConfigDef(
        "group.share.max.record.lock.duration.ms",
        _INT,
        60_000,
        _B,
        "Bound.",
        min=30_000,
        max=3_600_000,
    ),
    ConfigDef(
        "group.share.partition.max.record.locks",
        _INT,
        2000,
        _B,
        "In-flight window.",
        min=100,
        max=10_000,
    ),
    ConfigDef(
        "group.share.min.partition.max.record.locks", _INT, 100, _B, "Bound.", min=100, max=2000
    ),
    ConfigDef(
        "group.share.max.partition.max.record.locks", _INT, 4000, _B, "Bound.", min=2000, max=10_000
    ),
    ConfigDef("group.share.max.share.sessions", _INT, 2000, _B, "Sessions per broker.", min=1),
    # ---- dead-letter queues for share groups (KIP-1191, Kafka 4.4)
    ConfigDef(
        "errors.deadletterqueue.topic.name.prefix",
        _STR,
        "dlq.",
        _B,
        "KIP-1191: prefix every share group DLQ topic name must start with (empty: any).",
    ),
    ConfigDef(
        "offsets.topic.num.partitions", _INT, 50, _B, "Partitions of __consumer_offsets.", min=1
    ),
    ConfigDef(
        "offsets.topic.replication.factor", ConfigType.SHORT, 1, _B, "Single node.", min=1, max=1
    ),
    ConfigDef(
        "offsets.topic.segment.bytes",
        _INT,
        104_857_600,
        _B,
        "Segment size of __consumer_offsets (at least Shoal's smallest segment, 14).",
        min=14,
    ),
    ConfigDef(
        "offsets.load.buffer.size",
        _INT,
        5_242_880,
        _B,
        "Read size when replaying __consumer_offsets.",
        min=1,
    ),
    ConfigDef(
        "offsets.topic.prune.interval.ms",
        _INT,
        30_000,
        _B,
        "Shoal: how often the group coordinator re-writes old records and deletes the "
        "__consumer_offsets records no live key needs.",
        min=1,
    ),
    ConfigDef(
        "offsets.topic.rewrite.window.records",
        _INT,
        10_000,
        _B,
        "Shoal: a live key whose latest record lies more records than this below its "
        "__consumer_offsets partition's end is re-written, so old keys do not pin the log.",
        min=0,
    ),
    ConfigDef("share.coordinator.state.topic.num.partitions", _INT, 50, _B, "State topic.", min=1),
    ConfigDef(
        "share.coordinator.state.topic.replication.factor",
        ConfigType.SHORT,
        1,
        _B,
        "Single node.",
        min=1,
        max=1,
    ),
    ConfigDef(
        "share.coordinator.state.topic.min.isr",
        ConfigType.SHORT,
        1,
        _B,
        "Single node.",
        min=1,
        max=1,
    ),
    ConfigDef("share.coordinator.state.topic.segment.bytes", _INT, 104_857_600, _B, "Seg.", min=1),
    ConfigDef(
        "share.coordinator.snapshot.update.records.per.snapshot",
        _INT,
        500,
        _B,
        "Updates between snapshots.",
        min=0,
    ),
    ConfigDef("share.coordinator.write.timeout.ms", _INT, 5000, _B, "Write timeout.", min=1),
    ConfigDef("share.coordinator.load.buffer.size", _INT, 5_242_880, _B, "Replay buffer.", min=1),
    ConfigDef("share.coordinator.append.linger.ms", _INT, -1, _B, "Append linger.", min=-1),
    ConfigDef(
        "share.coordinator.state.topic.prune.interval.ms", _INT, 300_000, _B, "Prune.", min=1
    ),
    ConfigDef(
        "share.coordinator.cold.partition.snapshot.interval.ms",
        _INT,
        300_000,
        _B,
        "Cold snapshot.",
        min=1,
    ),
    ConfigDef(
        "share.coordinator.state.topic.compression.codec",
        _INT,
        0,
        _B,
        "Codec id of state records; Shoal writes them uncompressed.",
        no_effect=NoEffect.COMPRESSION,
    ),
    ConfigDef(
        "share.coordinator.threads",
        _INT,
        1,
        _B,
        "Kafka knob; no Shoal meaning.",
        min=1,
        no_effect=NoEffect.THREADS,
    ),
    ConfigDef(
        "share.fetch.purgatory.purge.interval.requests",
        _INT,
        1000,
        _B,
        "Kafka knob; no Shoal meaning.",
        no_effect=NoEffect.PURGATORY,
    ),
    ConfigDef(
        "group.share.persister.class.name",
        _STR,
        "org.apache.kafka.server.share.persister.DefaultStatePersister",
        _B,
        "Kafka knob; Shoal always persists through its share coordinator.",
        no_effect=NoEffect.PLUGINS,
    ),
    # ---- broker: authorization (security/authorizer.py, server/acl_store.py)
    ConfigDef(
        "authorizer.class.name",
        _STR,
        "",
        _B,
        "Empty: no authorizer (everything allowed, the ACL APIs answer SECURITY_DISABLED). "
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer or its short name "
        "'standard': Kafka's ACL authorizer.",
        read_only=True,
        choices=("", "org.apache.kafka.metadata.authorizer.StandardAuthorizer", "standard"),
    ),
    ConfigDef(
        "super.users",
        _STR,
        "",
        _B,
        "Principals always allowed, separated by semicolons (User:admin;User:ops).",
        read_only=True,
        check=lambda v: next(
            (
                f"expected a string in format principalType:principalName but got {p.strip()}"
                for p in str(v).split(";")
                if p.strip() and ":" not in p
            ),
            None,
        ),
    ),
    ConfigDef(
        "allow.everyone.if.no.acl.found",
        _BOOL,
        False,
        _B,
        "Allow an action on a resource no ACL names (with an authorizer configured).",
        read_only=True,
    ),
    # ---- broker: SASL authentication (see README "### SASL")
    ConfigDef(
        "sasl.enabled.mechanisms",
        _LIST,
        ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"],
        _B,
        "SASL mechanisms served on SASL listeners (Kafka's default GSSAPI is not served; "
        "OAUTHBEARER must be enabled explicitly).",
        check=_check_sasl_mechanisms,
    ),
    ConfigDef(
        "connections.max.reauth.ms",
        _LONG,
        0,
        _B,
        "KIP-368: a SASL session's lifetime; past it only a re-authentication is served "
        "(0: sessions never expire).",
        min=0,
    ),
    ConfigDef(
        "connection.failed.authentication.delay.ms",
        _INT,
        100,
        _B,
        "How long a failed SASL authentication's response is delayed before the close.",
        min=0,
    ),
    ConfigDef(
        "sasl.server.max.receive.size",
        _INT,
        524_288,
        _B,
        "Largest frame a SASL listener reads before the connection is authenticated "
        "(Kafka's default, 512 KiB); a larger one closes the connection.",
        min=1,
    ),
    ConfigDef(
        "sasl.oauthbearer.jwks.endpoint.url",
        _STR,
        None,
        _B,
        "OAUTHBEARER: a file: URL of a JWK set; tokens must be RS256/ES256-signed by one of "
        "its keys. Unset: the unsecured (alg none) validator for development.",
        nullable=True,
        check=_check_jwks_url,
    ),
    ConfigDef(
        "sasl.oauthbearer.expected.audience",
        _LIST,
        [],
        _B,
        "OAUTHBEARER (JWKS): a token's 'aud' must name one of these (empty: not checked).",
    ),
    ConfigDef(
        "sasl.oauthbearer.expected.issuer",
        _STR,
        None,
        _B,
        "OAUTHBEARER (JWKS): a token's 'iss' must equal this (unset: not checked).",
        nullable=True,
    ),
    ConfigDef(
        "sasl.oauthbearer.sub.claim.name",
        _STR,
        "sub",
        _B,
        "OAUTHBEARER (JWKS): the claim naming the principal.",
    ),
    ConfigDef(
        "sasl.oauthbearer.scope.claim.name",
        _STR,
        "scope",
        _B,
        "OAUTHBEARER (JWKS): the claim holding the scope.",
    ),
    ConfigDef(
        "sasl.oauthbearer.clock.skew.seconds",
        _INT,
        30,
        _B,
        "OAUTHBEARER (JWKS): clock skew allowed when checking 'exp' and 'iat'.",
        min=0,
    ),
    # ---- topic keys (fall back to their broker synonym)
    ConfigDef(
        "cleanup.policy",
        _LIST,
        ["delete"],
        _T,
        "delete (retention), compact (the latest record per key), or both.",
        choices=("compact", "delete"),
        synonym="log.cleanup.policy",
    ),
    ConfigDef(
        "retention.ms",
        _LONG,
        7 * _DAY_MS,
        _T,
        "Time retention; -1 forever.",
        min=-1,
        synonym="log.retention.ms",
    ),
    ConfigDef(
        "retention.bytes",
        _LONG,
        -1,
        _T,
        "Size retention; -1 none.",
        min=-1,
        synonym="log.retention.bytes",
    ),
    ConfigDef(
        "segment.bytes",
        _INT,
        1_073_741_824,
        _T,
        "Segment size.",
        min=14,
        synonym="log.segment.bytes",
    ),
    ConfigDef(
        "segment.ms",
        _LONG,
        7 * _DAY_MS,
        _T,
        "Segment age before roll.",
        min=1,
        synonym="log.roll.ms",
    ),
    ConfigDef(
        "max.message.bytes",
        _INT,
        1_048_588,
        _T,
        "Largest batch.",
        min=0,
        synonym="message.max.bytes",
    ),
    ConfigDef(
        "flush.messages",
        _LONG,
        LONG_MAX,
        _T,
        "fsync after N records.",
        min=1,
        synonym="log.flush.interval.messages",
    ),
    ConfigDef(
        "flush.ms", _LONG, LONG_MAX, _T, "fsync after ms.", min=0, synonym="log.flush.interval.ms"
    ),
    ConfigDef(
        "index.interval.bytes",
        _INT,
        4096,
        _T,
        "Index spacing.",
        min=0,
        synonym="log.index.interval.bytes",
    ),
    ConfigDef(
        "segment.index.bytes",
        _INT,
        10_485_760,
        _T,
        "Index size.",
        min=4,
        synonym="log.index.size.max.bytes",
    ),
    ConfigDef(
        "errors.deadletterqueue.group.enable",
        _BOOL,
        False,
        _T,
        "KIP-1191: the topic may serve as a share group's dead-letter queue topic.",
    ),
    ConfigDef(
        "message.timestamp.type",
        _STR,
        "CreateTime",
        _T,
        "Timestamp type.",
        choices=("CreateTime", "LogAppendTime"),
        synonym="log.message.timestamp.type",
    ),
    ConfigDef(
        "min.insync.replicas",
        _INT,
        1,
        _T,
        "Single node.",
        min=1,
        max=1,
        synonym="min.insync.replicas",
    ),
    ConfigDef(
        "compression.type",
        _STR,
        "producer",
        _T,
        "Codec of the stored batches: producer keeps each batch's own; another value "
        "recompresses batches of another codec (docs/compression.md).",
        choices=COMPRESSION_TYPES,
        synonym="compression.type",
        kafka_words=True,
    ),
    *(
        ConfigDef(
            key,
            _INT,
            default,
            _T,
            f"Level of broker-side {codec} compression.",
            min=low,
            max=high,
            check=check,
            synonym=key,
            kafka_words=True,
        )
        for key, codec, low, high, default, check in _COMPRESSION_LEVEL_KEYS
    ),
    # ---- consumer group keys (resource type GROUP, KIP-848 groups); bounds are checked
    # against the broker's group.consumer.min/max.* keys (group/configs.py)
    ConfigDef(
        "consumer.session.timeout.ms",
        _INT,
        None,
        _G,
        "A consumer group member's session timeout (default: group.consumer.session.timeout.ms).",
        min=1,
        synonym="group.consumer.session.timeout.ms",
    ),
    ConfigDef(
        "consumer.heartbeat.interval.ms",
        _INT,
        None,
        _G,
        "A consumer group member's heartbeat interval "
        "(default: group.consumer.heartbeat.interval.ms).",
        min=1,
        synonym="group.consumer.heartbeat.interval.ms",
    ),
    # ---- share group keys (resource type GROUP); bounds are checked against the broker
    ConfigDef(
        "share.session.timeout.ms",
        _INT,
        None,
        _G,
        "Member expiry.",
        min=1,
        synonym="group.share.session.timeout.ms",
        bounds=("group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"),
    ),
    ConfigDef(
        "share.heartbeat.interval.ms",
        _INT,
        None,
        _G,
        "Heartbeat.",
        min=1,
        synonym="group.share.heartbeat.interval.ms",
        bounds=("group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"),
    ),
    ConfigDef(
        "share.record.lock.duration.ms",
        _INT,
        None,
        _G,
        "Lock.",
        min=1000,
        synonym="group.share.record.lock.duration.ms",
        bounds=(
            "group.share.min.record.lock.duration.ms",
            "group.share.max.record.lock.duration.ms",
        ),
    ),
    ConfigDef(
        "share.auto.offset.reset",
        _STR,
        "latest",
        _G,
        "Start of a new share-partition.",
        check=_check_by_duration,
    ),
    ConfigDef(
        "share.isolation.level",
        _STR,
        "read_uncommitted",
        _G,
        "Isolation.",
        choices=("read_committed", "read_uncommitted"),
    ),
    ConfigDef(
        "share.delivery.count.limit",
        _INT,
        None,
        _G,
        "Deliveries.",
        min=2,
        synonym="group.share.delivery.count.limit",
        bounds=("group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"),
    ),
    ConfigDef(
        "share.partition.max.record.locks",
        _INT,
        None,
        _G,
        "Window.",
        min=100,
        synonym="group.share.partition.max.record.locks",
        bounds=(
            "group.share.min.partition.max.record.locks",
            "group.share.max.partition.max.record.locks",
        ),
    ),
    ConfigDef("share.renew.acknowledge.enable", _BOOL, True, _G, "Allow RENEW."),
    ConfigDef(
        "errors.deadletterqueue.topic.name",
        _STR,
        "",
        _G,
        "KIP-1191: the share group's dead-letter queue topic (empty: none).",
    ),
    ConfigDef(
        "errors.deadletterqueue.copy.record.enable",
        _BOOL,
        False,
        _G,
        "KIP-1191: copy key, value and headers onto the DLQ record (else context headers only).",
    ),
    # ---- Shoal extensions to share groups (not Kafka keys; issue 16)
    ConfigDef(
        "shoal.share.redelivery.backoff.ms",
        _INT,
        0,
        _G,
        "Shoal extension (not a Kafka config): delay before a RELEASEd record, or one "
        "whose acquisition lock expired, can be acquired again, after its first "
        "delivery; grows by shoal.share.redelivery.backoff.multiplier per further "
        "delivery, up to shoal.share.redelivery.backoff.max.ms. 0 (the default) "
        "redelivers at once, as Kafka does. Kept in memory only: a broker restart makes "
        "delayed records available at once.",
        min=0,
        max=_DAY_MS,
    ),
    ConfigDef(
        "shoal.share.redelivery.backoff.multiplier",
        ConfigType.DOUBLE,
        2.0,
        _G,
        "Shoal extension (not a Kafka config): factor the redelivery backoff grows by "
        "with each delivery (delay = backoff.ms * multiplier^(delivery count - 1)); 1.0 "
        "keeps it constant.",
        min=1.0,
        max=1000.0,
        check=_check_finite,
    ),
    ConfigDef(
        "shoal.share.redelivery.backoff.max.ms",
        _INT,
        60_000,
        _G,
        "Shoal extension (not a Kafka config): the longest redelivery backoff; must be "
        "at least shoal.share.redelivery.backoff.ms when both are set.",
        min=0,
        max=_DAY_MS,
    ),
    ConfigDef(
        "shoal.share.delivery.paused",
        _BOOL,
        False,
        _G,
        "Shoal extension (not a Kafka config): true stops the group's acquisitions "
        "(ShareFetch answers without records; acknowledgements work; held locks run "
        "out normally) until it is false or deleted. Set by `shoal share-groups "
        "--pause` / `--resume`.",
    ),
    # ---- broker: listeners and TLS (issue 12). Each `ssl.*` key may also be set
    # for one listener as `listener.name.<lower-case listener name>.ssl.*` (`listener_value`).
    ConfigDef(
        "listener.security.protocol.map",
        _LIST,
        ["PLAINTEXT:PLAINTEXT", "SSL:SSL", "SASL_PLAINTEXT:SASL_PLAINTEXT", "SASL_SSL:SASL_SSL"],
        _B,
        "Listener name to security protocol (NAME:PROTOCOL, comma-separated).",
        read_only=True,
        check=_check_protocol_map,
    ),
    ConfigDef(
        "ssl.keystore.type", _STR, "PEM", _B, "Key store format (PEM only).", choices=("PEM",)
    ),
    ConfigDef(
        "ssl.keystore.location",
        _STR,
        None,
        _B,
        "PEM file with the private key and the certificate chain.",
        nullable=True,
    ),
    ConfigDef(
        "ssl.keystore.certificate.chain",
        ConfigType.PASSWORD,
        None,
        _B,
        "The certificate chain in PEM, inline.",
        nullable=True,
    ),
    ConfigDef(
        "ssl.keystore.key", ConfigType.PASSWORD, None, _B, "The key in PEM, inline.", nullable=True
    ),
    ConfigDef(
        "ssl.key.password",
        ConfigType.PASSWORD,
        None,
        _B,
        "Password of an encrypted private key.",
        nullable=True,
    ),
    ConfigDef(
        "ssl.truststore.type", _STR, "PEM", _B, "Trust store format (PEM only).", choices=("PEM",)
    ),
    ConfigDef(
        "ssl.truststore.location",
        _STR,
        None,
        _B,
        "PEM file of the CA certificates client certificates are checked against.",
        nullable=True,
    ),
    ConfigDef(
        "ssl.truststore.certificates",
        ConfigType.PASSWORD,
        None,
        _B,
        "CA certificates in PEM, inline.",
        nullable=True,
    ),
    ConfigDef(
        "ssl.client.auth",
        _STR,
        "none",
        _B,
        "Client certificates: none, requested or required.",
        choices=("none", "requested", "required"),
    ),
    ConfigDef(
        "ssl.enabled.protocols",
        _LIST,
        ["TLSv1.2", "TLSv1.3"],
        _B,
        "TLS versions accepted (TLS 1.2 and later only).",
        choices=("TLSv1.2", "TLSv1.3"),
    ),
    ConfigDef(
        "ssl.cipher.suites",
        _LIST,
        [],
        _B,
        "TLS 1.2 cipher suites (OpenSSL names); empty: the defaults.",
    ),
    ConfigDef(
        "ssl.principal.mapping.rules",
        _STR,
        "DEFAULT",
        _B,
        "Client certificate DN to user name (Kafka's RULE:pattern/replacement/[LU], DEFAULT).",
        check=_check_mapping_rules,
    ),
    ConfigDef(
        "shoal.ssl.handshake.timeout.ms",
        _INT,
        limits.SSL_HANDSHAKE_TIMEOUT_MS_DEFAULT,
        _B,
        "A TLS handshake not finished within this closes the connection (logged).",
        min=100,
    ),
    ConfigDef(
        "shoal.ssl.reload.check.interval.ms",
        _INT,
        limits.SSL_RELOAD_CHECK_INTERVAL_MS_DEFAULT,
        _B,
        "How often the key and trust store files are checked for a change (then reloaded).",
        min=100,
    ),
]

# ---- Kafka 4.2's keys that do nothing on one Shoal node (docs/configs.md). Each is
# accepted in a properties file and by the admin APIs (dynamically where Kafka allows
# it), stored and shown as Kafka shows it, with its Kafka type and default; the
# NoEffect member says why it changes nothing here.
_N = NoEffect
# (name, type, Kafka's default as Kafka shows it, dynamic in Kafka, why no effect)
_KAFKA_BROKER_ONLY: tuple[tuple[str, ConfigType, str | None, bool, NoEffect | None], ...] = (
    ("add.partitions.to.txn.retry.backoff.max.ms", _INT, "100", False, _N.UNCHECKED),
    ("add.partitions.to.txn.retry.backoff.ms", _INT, "20", False, _N.UNCHECKED),
    ("alter.config.policy.class.name", ConfigType.CLASS, None, False, _N.PLUGINS),
    ("alter.log.dirs.replication.quota.window.num", _INT, "11", False, _N.REPLICATION),
    ("alter.log.dirs.replication.quota.window.size.seconds", _INT, "1", False, _N.REPLICATION),
    ("auto.leader.rebalance.enable", ConfigType.BOOLEAN, "true", False, _N.KRAFT),
    ("background.threads", _INT, "10", True, _N.THREADS),
    ("broker.heartbeat.interval.ms", _INT, "2000", False, _N.KRAFT),
    ("broker.rack", ConfigType.STRING, None, False, _N.KRAFT),
    ("broker.session.timeout.ms", _INT, "9000", False, _N.KRAFT),
    ("client.quota.callback.class", ConfigType.CLASS, None, False, _N.PLUGINS),
    ("config.providers", _LIST, "", True, _N.PLUGINS),
    ("controlled.shutdown.enable", ConfigType.BOOLEAN, "true", False, _N.KRAFT),
    ("controller.listener.names", _LIST, None, False, _N.KRAFT),
    ("controller.quorum.append.linger.ms", _INT, "25", False, _N.KRAFT),
    ("controller.quorum.auto.join.enable", ConfigType.BOOLEAN, "false", False, _N.KRAFT),
    ("controller.quorum.bootstrap.servers", _LIST, "", False, _N.KRAFT),
    ("controller.quorum.election.backoff.max.ms", _INT, "1000", False, _N.KRAFT),
    ("controller.quorum.election.timeout.ms", _INT, "1000", False, _N.KRAFT),
    ("controller.quorum.fetch.timeout.ms", _INT, "2000", False, _N.KRAFT),
    ("controller.quorum.request.timeout.ms", _INT, "2000", False, _N.KRAFT),
    ("controller.quorum.retry.backoff.ms", _INT, "20", False, _N.KRAFT),
    ("controller.quorum.voters", _LIST, "", False, _N.KRAFT),
    ("controller.quota.window.num", _INT, "11", False, _N.KRAFT),
    ("controller.quota.window.size.seconds", _INT, "1", False, _N.KRAFT),
    ("controller.socket.timeout.ms", _INT, "30000", False, _N.KRAFT),
    ("create.topic.policy.class.name", ConfigType.CLASS, None, False, _N.PLUGINS),
    ("delegation.token.expiry.check.interval.ms", _LONG, "3600000", False, _N.DELEGATION),
    ("delegation.token.expiry.time.ms", _LONG, "86400000", False, _N.DELEGATION),
    ("delegation.token.max.lifetime.ms", _LONG, "604800000", False, _N.DELEGATION),
    ("delegation.token.secret.key", ConfigType.PASSWORD, None, False, _N.DELEGATION),
    ("delete.records.purgatory.purge.interval.requests", _INT, "1", False, _N.PURGATORY),
    ("early.start.listeners", _LIST, None, False, _N.KRAFT),
    ("fetch.max.bytes", _INT, "57671680", False, _N.PURGATORY),
    ("fetch.purgatory.purge.interval.requests", _INT, "1000", False, _N.PURGATORY),
    ("follower.replication.throttled.rate", _LONG, "9223372036854775807", True, _N.REPLICATION),
    ("group.coordinator.append.linger.ms", _INT, "-1", False, _N.UNCHECKED),
    (
        "group.coordinator.rebalance.protocols",
        _LIST,
        "classic,consumer,streams",
        False,
        _N.UNCHECKED,
    ),
    ("group.coordinator.threads", _INT, "4", False, _N.THREADS),
    ("group.streams.heartbeat.interval.ms", _INT, "5000", False, _N.STREAMS),
    ("group.streams.initial.rebalance.delay.ms", _INT, "3000", False, _N.STREAMS),
    ("group.streams.max.heartbeat.interval.ms", _INT, "15000", False, _N.STREAMS),
    ("group.streams.max.session.timeout.ms", _INT, "60000", False, _N.STREAMS),
    ("group.streams.max.size", _INT, "2147483647", False, _N.STREAMS),
    ("group.streams.max.standby.replicas", _INT, "2", False, _N.STREAMS),
    ("group.streams.min.heartbeat.interval.ms", _INT, "5000", False, _N.STREAMS),
    ("group.streams.min.session.timeout.ms", _INT, "45000", False, _N.STREAMS),
    ("group.streams.num.standby.replicas", _INT, "0", False, _N.STREAMS),
    ("group.streams.session.timeout.ms", _INT, "45000", False, _N.STREAMS),
    ("initial.broker.registration.timeout.ms", _INT, "60000", False, _N.KRAFT),
    ("inter.broker.listener.name", ConfigType.STRING, None, False, _N.KRAFT),
    ("kafka.metrics.polling.interval.secs", _INT, "10", False, _N.PLUGINS),
    ("kafka.metrics.reporters", _LIST, "", False, _N.PLUGINS),
    ("leader.imbalance.check.interval.seconds", _LONG, "300", False, _N.KRAFT),
    ("leader.replication.throttled.rate", _LONG, "9223372036854775807", True, _N.REPLICATION),
    ("log.cleaner.backoff.ms", _LONG, "15000", True, None),
    ("log.cleaner.dedupe.buffer.size", _LONG, "134217728", True, None),
    ("log.cleaner.delete.retention.ms", _LONG, "86400000", True, None),
    ("log.cleaner.enable", ConfigType.BOOLEAN, "true", False, None),
    ("log.cleaner.io.buffer.load.factor", ConfigType.DOUBLE, "0.9", True, None),
    ("log.cleaner.io.buffer.size", _INT, "524288", True, _N.CLEANER),
    (
        "log.cleaner.io.max.bytes.per.second",
        ConfigType.DOUBLE,
        "1.7976931348623157E308",
        True,
        None,
    ),
    ("log.cleaner.max.compaction.lag.ms", _LONG, "9223372036854775807", True, None),
    ("log.cleaner.min.cleanable.ratio", ConfigType.DOUBLE, "0.5", True, None),
    ("log.cleaner.min.compaction.lag.ms", _LONG, "0", True, None),
    ("log.cleaner.threads", _INT, "1", True, None),
    ("log.dir.failure.timeout.ms", _LONG, "30000", False, _N.REPLICATION),
    ("log.flush.offset.checkpoint.interval.ms", _INT, "60000", False, _N.LOG_FILES),
    ("log.flush.start.offset.checkpoint.interval.ms", _INT, "60000", False, _N.LOG_FILES),
    ("log.local.retention.bytes", _LONG, "-2", True, _N.TIERED),
    ("log.local.retention.ms", _LONG, "-2", True, _N.TIERED),
    ("log.message.timestamp.after.max.ms", _LONG, "3600000", True, _N.UNCHECKED),
    ("log.message.timestamp.before.max.ms", _LONG, "9223372036854775807", True, _N.UNCHECKED),
    ("log.preallocate", ConfigType.BOOLEAN, "false", True, _N.LOG_FILES),
    ("log.roll.jitter.hours", _INT, "0", False, _N.LOG_FILES),
    ("log.roll.jitter.ms", _LONG, None, True, _N.LOG_FILES),
    ("log.segment.delete.delay.ms", _LONG, "60000", True, _N.LOG_FILES),
    ("max.connection.creation.rate", _INT, "2147483647", True, _N.CONNECTIONS),
    ("max.connections.per.ip", _INT, "2147483647", True, _N.CONNECTIONS),
    ("max.connections.per.ip.overrides", ConfigType.STRING, "", True, _N.CONNECTIONS),
    ("max.decompressed.message.bytes", _INT, "2147483639", True, _N.UNCHECKED),
    ("max.incremental.fetch.session.cache.slots", _INT, "1000", False, _N.PURGATORY),
    ("max.request.partition.size.limit", _INT, "2000", False, _N.UNCHECKED),
    ("metadata.log.dir", ConfigType.STRING, None, False, _N.KRAFT),
    ("metadata.log.max.record.bytes.between.snapshots", _LONG, "20971520", False, _N.KRAFT),
    ("metadata.log.max.snapshot.interval.ms", _LONG, "3600000", False, _N.KRAFT),
    ("metadata.log.segment.bytes", _INT, "1073741824", False, _N.KRAFT),
    ("metadata.log.segment.ms", _LONG, "604800000", False, _N.KRAFT),
    ("metadata.max.idle.interval.ms", _INT, "500", False, _N.KRAFT),
    ("metadata.max.retention.bytes", _LONG, "104857600", False, _N.KRAFT),
    ("metadata.max.retention.ms", _LONG, "604800000", False, _N.KRAFT),
    ("metric.reporters", _LIST, "org.apache.kafka.common.metrics.JmxReporter", True, _N.PLUGINS),
    ("metrics.num.samples", _INT, "2", False, _N.PLUGINS),
    ("metrics.recording.level", ConfigType.STRING, "INFO", False, _N.PLUGINS),
    ("metrics.sample.window.ms", _LONG, "30000", False, _N.PLUGINS),
    ("num.io.threads", _INT, "8", True, _N.THREADS),
    ("num.network.threads", _INT, "3", True, _N.THREADS),
    ("num.recovery.threads.per.data.dir", _INT, "2", True, _N.THREADS),
    ("num.replica.alter.log.dirs.threads", _INT, None, False, _N.REPLICATION),
    ("num.replica.fetchers", _INT, "1", True, _N.REPLICATION),
    ("offset.metadata.max.bytes", _INT, "4096", False, _N.UNCHECKED),
    ("offsets.commit.timeout.ms", _INT, "5000", False, _N.UNCHECKED),
    ("offsets.topic.compression.codec", _INT, "0", False, _N.UNCHECKED),
    (
        "principal.builder.class",
        ConfigType.CLASS,
        "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder",
        True,
        _N.PLUGINS,
    ),
    ("process.roles", _LIST, None, False, _N.KRAFT),
    ("producer.purgatory.purge.interval.requests", _INT, "1000", False, _N.PURGATORY),
    ("queued.max.request.bytes", _LONG, "-1", False, _N.SOCKETS),
    ("remote.fetch.max.wait.ms", _INT, "500", True, _N.TIERED),
    ("remote.list.offsets.request.timeout.ms", _LONG, "30000", True, _N.TIERED),
    ("remote.log.index.file.cache.total.size.bytes", _LONG, "1073741824", True, _N.TIERED),
    ("remote.log.manager.copier.thread.pool.size", _INT, "10", True, _N.TIERED),
    ("remote.log.manager.copy.max.bytes.per.second", _LONG, "9223372036854775807", True, _N.TIERED),
    ("remote.log.manager.copy.quota.window.num", _INT, "11", False, _N.TIERED),
    ("remote.log.manager.copy.quota.window.size.seconds", _INT, "1", False, _N.TIERED),
    ("remote.log.manager.expiration.thread.pool.size", _INT, "10", True, _N.TIERED),
    (
        "remote.log.manager.fetch.max.bytes.per.second",
        _LONG,
        "9223372036854775807",
        True,
        _N.TIERED,
    ),
    ("remote.log.manager.fetch.quota.window.num", _INT, "11", False, _N.TIERED),
    ("remote.log.manager.fetch.quota.window.size.seconds", _INT, "1", False, _N.TIERED),
    ("remote.log.manager.follower.thread.pool.size", _INT, "2", True, _N.TIERED),
    ("remote.log.manager.task.interval.ms", _LONG, "30000", False, _N.TIERED),
    ("remote.log.manager.thread.pool.size", _INT, "2", False, _N.TIERED),
    ("remote.log.metadata.custom.metadata.max.bytes", _INT, "128", False, _N.TIERED),
    (
        "remote.log.metadata.manager.class.name",
        ConfigType.STRING,
        "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager",
        False,
        _N.TIERED,
    ),
    ("remote.log.metadata.manager.class.path", ConfigType.STRING, None, False, _N.TIERED),
    (
        "remote.log.metadata.manager.impl.prefix",
        ConfigType.STRING,
        "rlmm.config.",
        False,
        _N.TIERED,
    ),
    ("remote.log.metadata.manager.listener.name", ConfigType.STRING, None, False, _N.TIERED),
    ("remote.log.reader.max.pending.tasks", _INT, "100", False, _N.TIERED),
    ("remote.log.reader.threads", _INT, "10", True, _N.TIERED),
    ("remote.log.storage.manager.class.name", ConfigType.STRING, None, False, _N.TIERED),
    ("remote.log.storage.manager.class.path", ConfigType.STRING, None, False, _N.TIERED),
    ("remote.log.storage.manager.impl.prefix", ConfigType.STRING, "rsm.config.", False, _N.TIERED),
    ("remote.log.storage.system.enable", ConfigType.BOOLEAN, "false", False, _N.TIERED),
    (
        "replica.alter.log.dirs.io.max.bytes.per.second",
        _LONG,
        "9223372036854775807",
        True,
        _N.REPLICATION,
    ),
    ("replica.fetch.backoff.ms", _INT, "1000", False, _N.REPLICATION),
    ("replica.fetch.max.bytes", _INT, "1048576", False, _N.REPLICATION),
    ("replica.fetch.min.bytes", _INT, "1", False, _N.REPLICATION),
    ("replica.fetch.response.max.bytes", _INT, "10485760", False, _N.REPLICATION),
    ("replica.fetch.wait.max.ms", _INT, "500", False, _N.REPLICATION),
    ("replica.high.watermark.checkpoint.interval.ms", _LONG, "5000", False, _N.REPLICATION),
    ("replica.lag.time.max.ms", _LONG, "30000", False, _N.REPLICATION),
    ("replica.selector.class", ConfigType.STRING, None, False, _N.REPLICATION),
    ("replica.socket.receive.buffer.bytes", _INT, "65536", False, _N.REPLICATION),
    ("replica.socket.timeout.ms", _INT, "30000", False, _N.REPLICATION),
    ("replication.quota.window.num", _INT, "11", False, _N.REPLICATION),
    ("replication.quota.window.size.seconds", _INT, "1", False, _N.REPLICATION),
    ("request.timeout.ms", _INT, "30000", False, _N.SOCKETS),
    ("sasl.client.callback.handler.class", ConfigType.CLASS, None, False, _N.PLUGINS),
    ("sasl.jaas.config", ConfigType.PASSWORD, None, True, _N.JAAS),
    ("sasl.kerberos.kinit.cmd", ConfigType.STRING, "/usr/bin/kinit", True, _N.JAAS),
    ("sasl.kerberos.min.time.before.relogin", _LONG, "60000", True, _N.JAAS),
    ("sasl.kerberos.principal.to.local.rules", _LIST, "DEFAULT", True, _N.JAAS),
    ("sasl.kerberos.service.name", ConfigType.STRING, None, True, _N.JAAS),
    ("sasl.kerberos.ticket.renew.jitter", ConfigType.DOUBLE, "0.05", True, _N.JAAS),
    ("sasl.kerberos.ticket.renew.window.factor", ConfigType.DOUBLE, "0.8", True, _N.JAAS),
    ("sasl.login.callback.handler.class", ConfigType.CLASS, None, False, _N.PLUGINS),
    ("sasl.login.class", ConfigType.CLASS, None, False, _N.PLUGINS),
    ("sasl.login.connect.timeout.ms", _INT, None, False, _N.JAAS),
    ("sasl.login.read.timeout.ms", _INT, None, False, _N.JAAS),
    ("sasl.login.refresh.buffer.seconds", ConfigType.SHORT, "300", True, _N.JAAS),
    ("sasl.login.refresh.min.period.seconds", ConfigType.SHORT, "60", True, _N.JAAS),
    ("sasl.login.refresh.window.factor", ConfigType.DOUBLE, "0.8", True, _N.JAAS),
    ("sasl.login.refresh.window.jitter", ConfigType.DOUBLE, "0.05", True, _N.JAAS),
    ("sasl.login.retry.backoff.max.ms", _LONG, "10000", False, _N.JAAS),
    ("sasl.login.retry.backoff.ms", _LONG, "100", False, _N.JAAS),
    ("sasl.mechanism.controller.protocol", ConfigType.STRING, "GSSAPI", False, _N.KRAFT),
    ("sasl.mechanism.inter.broker.protocol", ConfigType.STRING, "GSSAPI", True, _N.KRAFT),
    ("sasl.oauthbearer.assertion.algorithm", ConfigType.STRING, "RS256", False, _N.JAAS),
    ("sasl.oauthbearer.assertion.claim.aud", ConfigType.STRING, None, False, _N.JAAS),
    ("sasl.oauthbearer.assertion.claim.exp.seconds", _INT, "300", False, _N.JAAS),
    ("sasl.oauthbearer.assertion.claim.iss", ConfigType.STRING, None, False, _N.JAAS),
    ("sasl.oauthbearer.assertion.claim.jti.include", ConfigType.BOOLEAN, "false", False, _N.JAAS),
    ("sasl.oauthbearer.assertion.claim.nbf.seconds", _INT, "60", False, _N.JAAS),
    ("sasl.oauthbearer.assertion.claim.sub", ConfigType.STRING, None, False, _N.JAAS),
    ("sasl.oauthbearer.assertion.file", ConfigType.STRING, None, False, _N.JAAS),
    ("sasl.oauthbearer.assertion.private.key.file", ConfigType.STRING, None, False, _N.JAAS),
    (
        "sasl.oauthbearer.assertion.private.key.passphrase",
        ConfigType.PASSWORD,
        None,
        False,
        _N.JAAS,
    ),
    ("sasl.oauthbearer.assertion.template.file", ConfigType.STRING, None, False, _N.JAAS),
    ("sasl.oauthbearer.client.credentials.client.id", ConfigType.STRING, None, False, _N.JAAS),
    (
        "sasl.oauthbearer.client.credentials.client.secret",
        ConfigType.PASSWORD,
        None,
        False,
        _N.JAAS,
    ),
    ("sasl.oauthbearer.jwks.endpoint.refresh.ms", _LONG, "3600000", False, _N.JAAS),
    ("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", _LONG, "10000", False, _N.JAAS),
    ("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", _LONG, "100", False, _N.JAAS),
    (
        "sasl.oauthbearer.jwt.retriever.class",
        ConfigType.CLASS,
        "org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever",
        False,
        _N.PLUGINS,
    ),
    (
        "sasl.oauthbearer.jwt.validator.class",
        ConfigType.CLASS,
        "org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator",
        False,
        _N.PLUGINS,
    ),
    ("sasl.oauthbearer.scope", ConfigType.STRING, None, False, _N.JAAS),
    ("sasl.oauthbearer.token.endpoint.url", ConfigType.STRING, None, False, _N.JAAS),
    ("sasl.server.callback.handler.class", ConfigType.CLASS, None, False, _N.PLUGINS),
    ("security.inter.broker.protocol", ConfigType.STRING, "PLAINTEXT", False, _N.KRAFT),
    ("security.providers", ConfigType.STRING, None, False, _N.PLUGINS),
    ("socket.connection.setup.timeout.max.ms", _LONG, "30000", False, _N.SOCKETS),
    ("socket.connection.setup.timeout.ms", _LONG, "10000", False, _N.SOCKETS),
    ("socket.listen.backlog.size", _INT, "50", False, _N.SOCKETS),
    ("socket.receive.buffer.bytes", _INT, "102400", False, _N.SOCKETS),
    ("socket.send.buffer.bytes", _INT, "102400", False, _N.SOCKETS),
    ("ssl.allow.dn.changes", ConfigType.BOOLEAN, "false", False, _N.JSSE),
    ("ssl.allow.san.changes", ConfigType.BOOLEAN, "false", False, _N.JSSE),
    ("ssl.endpoint.identification.algorithm", ConfigType.STRING, "https", True, _N.JSSE),
    ("ssl.engine.factory.class", ConfigType.CLASS, None, True, _N.PLUGINS),
    ("ssl.keymanager.algorithm", ConfigType.STRING, "SunX509", True, _N.JSSE),
    ("ssl.keystore.password", ConfigType.PASSWORD, None, True, _N.JSSE),
    ("ssl.protocol", ConfigType.STRING, "TLSv1.3", True, _N.JSSE),
    ("ssl.provider", ConfigType.STRING, None, True, _N.JSSE),
    ("ssl.secure.random.implementation", ConfigType.STRING, None, True, _N.JSSE),
    ("ssl.trustmanager.algorithm", ConfigType.STRING, "PKIX", True, _N.JSSE),
    ("ssl.truststore.password", ConfigType.PASSWORD, None, True, _N.JSSE),
    ("telemetry.max.bytes", _INT, "1048576", False, _N.TELEMETRY),
    ("transaction.partition.verification.enable", ConfigType.BOOLEAN, "true", True, _N.UNCHECKED),
    ("transaction.state.log.min.isr", _INT, "2", False, _N.REPLICATION),
    ("transaction.state.log.replication.factor", ConfigType.SHORT, "3", False, _N.REPLICATION),
    ("transaction.two.phase.commit.enable", ConfigType.BOOLEAN, "false", False, _N.UNCHECKED),
    ("unclean.leader.election.enable", ConfigType.BOOLEAN, "false", True, _N.REPLICATION),
)
# (name, type, Kafka's default, broker synonym, why no effect)
_KAFKA_TOPIC_ONLY: tuple[tuple[str, ConfigType, str | None, str | None, NoEffect | None], ...] = (
    ("delete.retention.ms", _LONG, "86400000", "log.cleaner.delete.retention.ms", None),
    ("file.delete.delay.ms", _LONG, "60000", "log.segment.delete.delay.ms", _N.LOG_FILES),
    ("follower.replication.throttled.replicas", _LIST, "", None, _N.REPLICATION),
    ("leader.replication.throttled.replicas", _LIST, "", None, _N.REPLICATION),
    ("local.retention.bytes", _LONG, "-2", "log.local.retention.bytes", _N.TIERED),
    ("local.retention.ms", _LONG, "-2", "log.local.retention.ms", _N.TIERED),
    (
        "max.compaction.lag.ms",
        _LONG,
        "9223372036854775807",
        "log.cleaner.max.compaction.lag.ms",
        None,
    ),
    (
        "max.decompressed.message.bytes",
        _INT,
        "2147483639",
        "max.decompressed.message.bytes",
        _N.UNCHECKED,
    ),
    (
        "message.timestamp.after.max.ms",
        _LONG,
        "3600000",
        "log.message.timestamp.after.max.ms",
        _N.UNCHECKED,
    ),
    (
        "message.timestamp.before.max.ms",
        _LONG,
        "9223372036854775807",
        "log.message.timestamp.before.max.ms",
        _N.UNCHECKED,
    ),
    (
        "min.cleanable.dirty.ratio",
        ConfigType.DOUBLE,
        "0.5",
        "log.cleaner.min.cleanable.ratio",
        None,
    ),
    ("min.compaction.lag.ms", _LONG, "0", "log.cleaner.min.compaction.lag.ms", None),
    ("preallocate", ConfigType.BOOLEAN, "false", "log.preallocate", _N.LOG_FILES),
    ("remote.log.copy.disable", ConfigType.BOOLEAN, "false", None, _N.TIERED),
    ("remote.log.delete.on.disable", ConfigType.BOOLEAN, "false", None, _N.TIERED),
    ("remote.storage.enable", ConfigType.BOOLEAN, "false", None, _N.TIERED),
    ("segment.jitter.ms", _LONG, "0", "log.roll.jitter.ms", _N.LOG_FILES),
    (
        "unclean.leader.election.enable",
        ConfigType.BOOLEAN,
        "false",
        "unclean.leader.election.enable",
        _N.REPLICATION,
    ),
)
_KAFKA_GROUP_ONLY: tuple[tuple[str, ConfigType, str | None, str | None, NoEffect], ...] = (
    (
        "streams.heartbeat.interval.ms",
        _INT,
        "5000",
        "group.streams.heartbeat.interval.ms",
        _N.STREAMS,
    ),
    (
        "streams.initial.rebalance.delay.ms",
        _INT,
        "3000",
        "group.streams.initial.rebalance.delay.ms",
        _N.STREAMS,
    ),
    ("streams.num.standby.replicas", _INT, "0", "group.streams.num.standby.replicas", _N.STREAMS),
    ("streams.session.timeout.ms", _INT, "45000", "group.streams.session.timeout.ms", _N.STREAMS),
)


_KAFKA_MINIMUMS: dict[str, int | float] = {
    **dict.fromkeys(
        (
            "background.threads",
            "log.cleaner.max.compaction.lag.ms",
            "max.decompressed.message.bytes",
            "num.io.threads",
            "num.network.threads",
            "num.recovery.threads.per.data.dir",
            "num.replica.fetchers",
            "remote.fetch.max.wait.ms",
            "remote.list.offsets.request.timeout.ms",
            "remote.log.index.file.cache.total.size.bytes",
            "remote.log.manager.copier.thread.pool.size",
            "remote.log.manager.copy.max.bytes.per.second",
            "remote.log.manager.expiration.thread.pool.size",
            "remote.log.manager.fetch.max.bytes.per.second",
            "remote.log.manager.follower.thread.pool.size",
            "remote.log.reader.threads",
            "streams.heartbeat.interval.ms",
            "streams.session.timeout.ms",
        ),
        1,
    ),
    **dict.fromkeys(
        (
            "follower.replication.throttled.rate",
            "leader.replication.throttled.rate",
            "log.cleaner.backoff.ms",
            "log.cleaner.delete.retention.ms",
            "log.cleaner.io.buffer.size",
            "log.cleaner.min.cleanable.ratio",
            "log.cleaner.min.compaction.lag.ms",
            "log.cleaner.threads",
            "log.message.timestamp.after.max.ms",
            "log.message.timestamp.before.max.ms",
            "log.roll.jitter.ms",
            "log.segment.delete.delay.ms",
            "max.connection.creation.rate",
            "max.connections.per.ip",
            "replica.alter.log.dirs.io.max.bytes.per.second",
            "streams.initial.rebalance.delay.ms",
            "streams.num.standby.replicas",
        ),
        0,
    ),
    "log.local.retention.bytes": -2,
    "log.local.retention.ms": -2,
}
"""The lower bounds Kafka 4.2 checks on the dynamic keys above (and, through their
broker synonyms, the topic keys), as the reference broker answers them."""


_CLEANER_DOCS = {
    "log.cleaner.backoff.ms": "How long a cleaner thread sleeps when nothing is cleanable.",
    "log.cleaner.dedupe.buffer.size": (
        "The key maps' memory, shared by the cleaner threads (160 bytes per key)."
    ),
    "log.cleaner.delete.retention.ms": "How long tombstones survive their first cleaning.",
    "log.cleaner.enable": "Run the log cleaner (compaction of cleanup.policy=compact topics).",
    "log.cleaner.io.buffer.load.factor": "The share of a key map the cleaner fills.",
    "log.cleaner.io.max.bytes.per.second": "The cleaner threads' I/O bound, read and written.",
    "log.cleaner.max.compaction.lag.ms": "Dirty records older than this are cleaned at once.",
    "log.cleaner.min.cleanable.ratio": "Dirty share of a log before the cleaner takes it.",
    "log.cleaner.min.compaction.lag.ms": "Records younger than this are not cleaned yet.",
    "log.cleaner.threads": "Cleaner threads (server/log_cleaner.py).",
    "delete.retention.ms": "How long tombstones survive their first cleaning.",
    "max.compaction.lag.ms": "Dirty records older than this are cleaned at once.",
    "min.cleanable.dirty.ratio": "Dirty share of the log before the cleaner takes it.",
    "min.compaction.lag.ms": "Records younger than this are not cleaned yet.",
}
"""The Kafka keys of the log cleaner that Shoal acts on (server/log_cleaner.py)."""

_KAFKA_MAXIMUMS: dict[str, int | float] = {"log.cleaner.min.cleanable.ratio": 1}
"""Upper bounds Kafka 4.2 checks (its `between(0, 1)`), on the key and its topic synonym."""


def _no_effect_doc(reason: NoEffect) -> str:
    return f"Kafka key, accepted and stored; no effect on one Shoal node: {reason.value}."


def _kafka_doc(name: str, reason: NoEffect | None) -> str:
    return _no_effect_doc(reason) if reason is not None else _CLEANER_DOCS[name]


def _kafka_only_defs() -> list[ConfigDef]:
    defs = []
    for name, kind, default, dynamic, reason in _KAFKA_BROKER_ONLY:
        definition = ConfigDef(
            name, kind, None, _B, _kafka_doc(name, reason), nullable=default is None,
            dynamic=dynamic, no_effect=reason, min=_KAFKA_MINIMUMS.get(name),
            max=_KAFKA_MAXIMUMS.get(name),
        )  # fmt: skip
        defs.append(replace(definition, default=definition.parse(default)))
    for scope, rows in ((_T, _KAFKA_TOPIC_ONLY), (_G, _KAFKA_GROUP_ONLY)):
        for name, kind, default, synonym, reason in rows:
            bound = _KAFKA_MINIMUMS.get(name, _KAFKA_MINIMUMS.get(synonym or ""))
            upper = _KAFKA_MAXIMUMS.get(name, _KAFKA_MAXIMUMS.get(synonym or ""))
            definition = ConfigDef(
                name, kind, None, scope, _kafka_doc(name, reason), nullable=default is None,
                synonym=synonym, no_effect=reason, min=bound, max=upper,
            )  # fmt: skip
            defs.append(replace(definition, default=definition.parse(default)))
    return defs


_DEFS += _kafka_only_defs()

# ---- client metrics resources (resource type CLIENT_METRICS, KIP-714): stored and shown
# as Kafka does, with no effect (NoEffect.TELEMETRY: Shoal pushes no subscriptions)
CLIENT_METRICS_MATCH_KEYS = (
    "client_instance_id",
    "client_id",
    "client_software_name",
    "client_software_version",
    "client_source_address",
    "client_source_port",
)


def _check_match(value: Any) -> str | None:
    for pattern in value:
        key, sep, regex = pattern.partition("=")
        try:
            re.compile(regex)
        except re.error:
            return f"Illegal client matching pattern: {pattern}"
        if not sep or key not in CLIENT_METRICS_MATCH_KEYS or not regex:
            return f"Illegal client matching pattern: {pattern}"
    return None


_DEFS += [
    ConfigDef(
        "interval.ms",
        _INT,
        300_000,
        Scope.CLIENT_METRICS,
        "How often matching clients push their metrics (100 ms to 1 hour).",
        no_effect=NoEffect.TELEMETRY,
    ),
    ConfigDef(
        "match",
        _LIST,
        [],
        Scope.CLIENT_METRICS,
        "Which clients the subscription applies to: <client selector>=<regular expression>.",
        no_effect=NoEffect.TELEMETRY,
        check=_check_match,
    ),
    ConfigDef(
        "metrics",
        _LIST,
        [],
        Scope.CLIENT_METRICS,
        "Prefixes of the metric names matching clients push.",
        no_effect=NoEffect.TELEMETRY,
    ),
]

DEFINITIONS: dict[tuple[Scope, str], ConfigDef] = {(d.scope, d.name): d for d in _DEFS}
BROKER_KEYS: dict[str, ConfigDef] = {d.name: d for d in _DEFS if d.scope is Scope.BROKER}
TOPIC_KEYS: dict[str, ConfigDef] = {d.name: d for d in _DEFS if d.scope is Scope.TOPIC}
GROUP_KEYS: dict[str, ConfigDef] = {d.name: d for d in _DEFS if d.scope is Scope.GROUP}
CLIENT_METRICS_KEYS: dict[str, ConfigDef] = {
    d.name: d for d in _DEFS if d.scope is Scope.CLIENT_METRICS
}

# (min key, default key, max key): checked at start-up, as Kafka does; the group keys'
# broker bounds around the broker default they fall back to.
_ORDERED_TRIPLES = [
    (d.bounds[0], d.synonym, d.bounds[1])
    for d in GROUP_KEYS.values()
    if d.bounds is not None and d.synonym is not None
]


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
                self.listener_value(endpoint.name, "ssl.keystore.location")
                or self.listener_value(endpoint.name, "ssl.keystore.certificate.chain")
            ):
                raise ConfigError(
                    "ssl.keystore.location",
                    f"listener {endpoint.name} is {endpoint.security_protocol} and needs "
                    "ssl.keystore.location or ssl.keystore.certificate.chain + ssl.keystore.key",
                )
        for low_key, mid_key, high_key in _ORDERED_TRIPLES:
            low, mid, high = self[low_key], self[mid_key], self[high_key]
            if not low <= mid <= high:
                raise ConfigError(
                    mid_key, f"value {mid} must lie within {low_key}={low} and {high_key}={high}"
                )
        if self["group.share.heartbeat.interval.ms"] >= self["group.share.session.timeout.ms"]:
            raise ConfigError(
                "group.share.heartbeat.interval.ms",
                "must be lower than group.share.session.timeout.ms",
            )
        if (
            self["group.consumer.heartbeat.interval.ms"]
            >= self["group.consumer.session.timeout.ms"]
        ):
            raise ConfigError(
                "group.consumer.heartbeat.interval.ms",
                "must be lower than group.consumer.session.timeout.ms",
            )
        if self["group.share.max.share.sessions"] < self["group.share.max.size"]:
            raise ConfigError(
                "group.share.max.share.sessions", "must be at least group.share.max.size"
            )

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    # Typed accessors: the key's declared type is checked, so a typo'd key or a key read
    # as the wrong type fails loudly at the call (not as a silent `int(...)` cast).
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
        return int(self["node.id"])

    @property
    def data_dir(self) -> Path:
        return Path(self["log.dir"] or self["log.dirs"])

    @property
    def listener(self) -> tuple[str, int]:
        return _host_port(self["listeners"][0])

    @property
    def advertised_listener(self) -> tuple[str, int]:
        advertised = self["advertised.listeners"]
        return _host_port(advertised[0]) if advertised else self.listener

    # ---- listeners and TLS (issue 12)
    def listener_endpoints(self) -> list[ListenerEndpoint]:
        """Every listener with its security protocol and advertised address, in the
        order of `listeners`; ConfigError for a name the protocol map lacks, a name or
        a port used twice, or an advertised listener that is not a listener."""
        protocols: dict[str, str] = {}
        for entry in self["listener.security.protocol.map"]:
            name, _, protocol = entry.partition(":")
            protocols[name.strip()] = protocol.strip()
        advertised: dict[str, tuple[str, int]] = {}
        for listener in self["advertised.listeners"] or []:
            name = _listener_name(listener)
            if name in advertised:
                raise ConfigError("advertised.listeners", f"listener name {name} appears twice")
            advertised[name] = _host_port(listener)
        endpoints: list[ListenerEndpoint] = []
        for listener in self["listeners"]:
            name = _listener_name(listener)
            protocol = protocols.get(name)
            if protocol is None:
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
            endpoints.append(ListenerEndpoint(name, protocol, host, port, adv_host, adv_port))
        if advertised:
            raise ConfigError(
                "advertised.listeners",
                f"{', '.join(advertised)} not among the listeners",
            )
        return endpoints

    def listener_value(self, listener_name: str, key: str) -> Any:
        """`key` for one listener: `listener.name.<lower-case name>.<key>` if set, else
        the broker key itself (Kafka's per-listener override); None when neither is set
        and `key` is no broker key (a mechanism's `sasl.jaas.config`)."""
        prefixed = f"{LISTENER_PREFIX}{listener_name.lower()}.{key}"
        if prefixed in self.prefixed:
            return self.prefixed[prefixed]
        return self.values.get(key)

    @property
    def metrics_listener(self) -> tuple[str, int] | None:
        """The HTTP listener's (host, port), or None when `metrics.listener` is unset."""
        value = self["metrics.listener"]
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
    if "broker.id" in explicit and "node.id" not in explicit:
        values["node.id"] = values["broker.id"]
    elif "node.id" in explicit and "broker.id" not in explicit:
        values["broker.id"] = values["node.id"]  # as Kafka: broker.id shows the node id
        explicit.add("broker.id")
    if "log.retention.ms" not in explicit:
        if values["log.retention.minutes"] is not None:
            values["log.retention.ms"] = values["log.retention.minutes"] * 60_000
        elif "log.retention.hours" in explicit:
            hours = values["log.retention.hours"]
            values["log.retention.ms"] = -1 if hours < 0 else hours * 3_600_000
    if "log.roll.ms" not in explicit and "log.roll.hours" in explicit:
        values["log.roll.ms"] = values["log.roll.hours"] * 3_600_000


def config_int(values: Mapping[str, Any], key: str) -> int:
    """An INT, SHORT or LONG topic (or broker) key's value in a resolved config mapping
    such as `effective_topic_config`'s; absent or None takes the key's default."""
    value = _mapping_value(values, key, (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG))
    assert isinstance(value, int) and not isinstance(value, bool), (key, value)
    return value


def config_float(values: Mapping[str, Any], key: str) -> float:
    """A DOUBLE topic (or broker) key's value in a resolved config mapping; absent or
    None takes the key's default."""
    value = _mapping_value(values, key, (ConfigType.DOUBLE,))
    assert isinstance(value, (int, float)) and not isinstance(value, bool), (key, value)
    return float(value)


def config_list(values: Mapping[str, Any], key: str) -> list[str]:
    """A LIST topic (or broker) key's value in a resolved config mapping; absent or
    None takes the key's default."""
    value = _mapping_value(values, key, (ConfigType.LIST,))
    assert isinstance(value, list), (key, value)
    return [str(item) for item in value]


def config_str(values: Mapping[str, Any], key: str) -> str:
    """A STRING topic (or broker) key's value in a resolved config mapping; absent or
    None takes the key's default."""
    value = _mapping_value(values, key, (ConfigType.STRING,))
    assert isinstance(value, str), (key, value)
    return value


def _mapping_value(values: Mapping[str, Any], key: str, types: tuple[ConfigType, ...]) -> Any:
    definition = TOPIC_KEYS.get(key) or BROKER_KEYS.get(key)
    if definition is None:
        raise KeyError(f"unknown topic or broker config key {key!r}")
    if definition.type not in types:
        raise TypeError(f"{key} is a {definition.type.name}, not {types[0].name}")
    value = values.get(key)
    return definition.default if value is None else value


def validate_topic_configs(configs: Mapping[str, str | None]) -> dict[str, Any]:
    """Check topic-level overrides; returns typed values or raises ConfigError."""
    typed: dict[str, Any] = {}
    for key, value in configs.items():
        definition = TOPIC_KEYS.get(key)
        if definition is None:
            raise ConfigError(
                key, "unknown topic config key", kafka_message=f"Unknown topic config name: {key}"
            )
        typed[key] = definition.parse(value)
    if typed.get("remote.storage.enable"):  # as a Kafka broker without tiered storage
        raise ConfigError(
            "remote.storage.enable",
            "Tiered Storage functionality is disabled in the broker. "
            "Topic cannot be configured with remote log storage.",
        )
    min_lag = typed.get("min.compaction.lag.ms", 0)
    max_lag = typed.get("max.compaction.lag.ms", LONG_MAX)
    if min_lag is not None and max_lag is not None and min_lag > max_lag:
        # Kafka's LogConfig.validateValues (on the overrides with the broker's
        # defaults; here on the overrides, the broker keys keep their defaults' order)
        raise ConfigError(
            "min.compaction.lag.ms",
            f"conflict topic config setting min.compaction.lag.ms ({min_lag}) > "
            f"max.compaction.lag.ms ({max_lag})",
        )
    return typed


def effective_topic_config(broker: BrokerConfig, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Every topic key's value for one topic: its override, else the broker value."""
    result: dict[str, Any] = {}
    for key, definition in TOPIC_KEYS.items():
        if key in overrides:
            result[key] = overrides[key]
        elif definition.synonym is not None and definition.synonym in broker.values:
            value = broker.values[definition.synonym]
            result[key] = definition.default if value is None else value
        else:
            result[key] = definition.default
    return result
