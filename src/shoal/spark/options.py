"""Options of the Shoal data sources: declared, parsed and checked on the driver.

Each source declares its options as `OptionSpec`s; `parse_options` turns Spark's
option map (its keys arrive lower-cased: Spark passes a case-insensitive dict) into a
dict keyed by canonical option name. Anything wrong raises `OptionError` naming the
option: an unknown option (with the closest known names), a missing required one, two
spellings of the same one, a malformed value. `require_reachable` checks that the
bootstrap servers answer. Spark Kafka's security options (`kafka.security.protocol`,
`kafka.ssl.*`, `kafka.sasl.*`, e.g. `kafka.sasl.jaas.config`) are accepted by every
source and become `parsed["security"]`, a `ClientSecurity` (PLAINTEXT when none is
given; an unknown one is an OptionError naming it). Sources call both from
`schema()`, `reader()` and `writer()`, which Spark runs on the driver, so a mistake is
reported before any task is scheduled.

Pure Python: no pyspark import, so the parsing is testable without a JVM.
"""

from __future__ import annotations

import difflib
import enum
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar, cast

from shoal.client import ClientError, parse_bootstrap
from shoal.client.security import ClientSecurity, is_security_property
from shoal.spark.cluster import FETCH_MAX_BYTES_CAP, check_reachable

T = TypeVar("T")


class _Required(enum.Enum):
    REQUIRED = "required"


REQUIRED: Final = _Required.REQUIRED
"""Default of an option that must be given."""

SPARK_OPTIONS: Final = frozenset({"path", "checkpointlocation"})
"""Options Spark itself may pass to a source or sink; accepted and ignored."""

KAFKA_PREFIX: Final = "kafka."
"""Spark Kafka's prefix of client properties; its security ones are read here."""
SECURITY: Final = "security"
"""The key of the parsed options' `ClientSecurity`."""


class OptionError(ValueError):
    """A data source option is unknown, missing or malformed; the message names it."""


@dataclass(frozen=True)
class OptionSpec(Generic[T]):
    """One option, whose parsed value is a `T` (read with `ParsedOptions.value`)."""

    name: str
    """Canonical spelling, used in messages and as the key of the parsed dict."""
    parse: Callable[[str], T]
    """Turns the string value into the parsed one; raises ValueError when malformed."""
    default: T | _Required
    """Parsed value when absent; `REQUIRED` makes absence an error."""
    aliases: tuple[str, ...] = ()
    """Other accepted spellings (e.g. Spark Kafka's `kafka.bootstrap.servers`)."""
    help: str = ""
    """What the option expects, shown when its value is malformed."""


class ParsedOptions(dict[str, Any]):
    """The parsed options by canonical name (every spec present), and the security
    options' `ClientSecurity` under `SECURITY`; read typed through the specs."""

    def value(self, spec: OptionSpec[T]) -> T:
        """The option's parsed value (its default when absent)."""
        return cast("T", self[spec.name])

    @property
    def security(self) -> ClientSecurity:
        security = self[SECURITY]
        assert isinstance(security, ClientSecurity)
        return security


def parse_options(
    raw: Mapping[str, str], specs: Sequence[OptionSpec[Any]], *, source: str
) -> ParsedOptions:
    """The parsed options, keyed by canonical name (every spec present); OptionError
    when an option is unknown, missing, given twice or malformed."""
    by_key: dict[str, OptionSpec[Any]] = {}
    for spec in specs:
        for spelling in (spec.name, *spec.aliases):
            by_key[spelling.lower()] = spec
    given: dict[str, tuple[str, str]] = {}  # canonical name -> (spelling used, value)
    security: dict[str, str] = {}
    for key, value in raw.items():
        found = by_key.get(key.lower())
        inner = key.lower().removeprefix(KAFKA_PREFIX)
        if found is None and key.lower().startswith(KAFKA_PREFIX) and is_security_property(inner):
            security[inner] = value
            continue
        if found is None:
            if key.lower() in SPARK_OPTIONS:
                continue
            raise OptionError(_unknown(key, specs, source))
        spec = found
        if spec.name in given:
            raise OptionError(
                f"options '{given[spec.name][0]}' and '{key}' of format(\"{source}\") are the "
                f"same option ({spec.name}); give one"
            )
        given[spec.name] = (key, value)
    parsed = ParsedOptions({SECURITY: _security(security)})
    for spec in specs:
        if spec.name not in given:
            if spec.default is REQUIRED:
                raise OptionError(f"option '{spec.name}' is required by format(\"{source}\")")
            parsed[spec.name] = spec.default
            continue
        key, value = given[spec.name]
        try:
            parsed[spec.name] = spec.parse(value)
        except (ValueError, TypeError) as exc:
            expected = f"; expected {spec.help}" if spec.help else ""
            raise OptionError(
                f"option '{spec.name}' = {value!r} is invalid: {exc}{expected}"
            ) from exc
    return parsed


def _security(properties: Mapping[str, str]) -> ClientSecurity:
    try:
        return ClientSecurity.from_properties(properties)
    except ValueError as exc:
        raise OptionError(f"option '{KAFKA_PREFIX}{exc}") from None


def _unknown(key: str, specs: Sequence[OptionSpec[Any]], source: str) -> str:
    names = sorted(spec.name for spec in specs)
    lowered = {name.lower(): name for name in names}
    close = difflib.get_close_matches(key.lower(), list(lowered), n=2)
    hint = f" (did you mean {' or '.join(repr(lowered[c]) for c in close)}?)" if close else ""
    return f"unknown option '{key}' for format(\"{source}\"){hint}; known options: " + ", ".join(
        names
    )


def require_reachable(
    bootstrap: str,
    *,
    option: str = "bootstrap.servers",
    security: ClientSecurity | None = None,
) -> None:
    """OptionError naming `option` unless a broker of `bootstrap` answers Metadata."""
    try:
        check_reachable(bootstrap, security)
    except ClientError as exc:
        raise OptionError(f"option '{option}' = {bootstrap!r}: {exc}") from exc


# ---- value parsers


def parse_bootstrap_servers(value: str) -> str:
    """A bootstrap list, checked for shape (host:port, comma separated); kept as text."""
    parse_bootstrap(value)
    return ",".join(item.strip() for item in value.split(","))


def parse_topic_list(value: str) -> tuple[str, ...]:
    topics = tuple(dict.fromkeys(t.strip() for t in value.split(",") if t.strip()))
    if not topics:
        raise ValueError("no topic name")
    return topics


def parse_topic(value: str) -> str:
    topic = value.strip()
    if not topic or "," in topic:
        raise ValueError("one topic name is expected")
    return topic


def parse_bool(value: str) -> bool:
    """`true` or `false` (any case), as Spark's options take booleans."""
    text = value.strip().lower()
    if text not in ("true", "false"):
        raise ValueError("must be true or false")
    return text == "true"


def parse_group_id(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty")
    return value


def int_parser(minimum: int, maximum: int = 2**63 - 1) -> Callable[[str], int]:
    def parse(value: str) -> int:
        number = int(value.strip())
        if not minimum <= number <= maximum:
            raise ValueError(f"must be between {minimum} and {maximum}")
        return number

    return parse


OffsetSpec = str | dict[str, dict[int, int]]
"""`"earliest"`, `"latest"`, or per topic and partition an offset (-2 earliest,
-1 latest), as Spark's Kafka source takes `startingOffsets`/`endingOffsets`."""


def parse_offsets(value: str) -> OffsetSpec:
    text = value.strip()
    if text.lower() in ("earliest", "latest"):
        return text.lower()
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg})") from None
    if not isinstance(document, dict) or not document:
        raise ValueError("the JSON must be a non-empty object of topics")
    result: dict[str, dict[int, int]] = {}
    for topic, partitions in document.items():
        if not isinstance(partitions, dict) or not partitions:
            raise ValueError(f"topic {topic!r} must map to an object of partitions")
        result[topic] = {}
        for partition, offset in partitions.items():
            if not str(partition).isdigit():
                raise ValueError(f"partition {partition!r} of {topic!r} is not a number")
            if not isinstance(offset, int) or isinstance(offset, bool) or offset < -2:
                raise ValueError(f"offset of {topic}-{partition} must be an integer >= -2")
            result[topic][int(partition)] = offset
    return result


OFFSETS_HELP: Final = '"earliest", "latest" or JSON like {"topic":{"0":23,"1":-2}}'

BOOTSTRAP_SERVERS: Final = OptionSpec(
    "bootstrap.servers",
    parse_bootstrap_servers,
    REQUIRED,
    aliases=("kafka.bootstrap.servers",),
    help="host:port[,host:port...]",
)

# ---- options the topic batch source and the topic stream share (format("shoal"))

MAX_ROWS_PER_BATCH_DEFAULT: Final = 65_536
"""Rows per Arrow batch `reading.read_range` yields at most (bigger batches amortise the
cost of crossing into the JVM; Spark's own default is 10k)."""
FETCH_BYTES_DEFAULT: Final = 8 * 2**20
"""Bytes asked for per Fetch (`partition_max_bytes`); a larger first batch still comes
whole."""

TOPICS: Final = OptionSpec(
    "topic",
    parse_topic_list,
    REQUIRED,
    aliases=("topics", "subscribe"),
    help="a topic name or a comma-separated list",
)
MIN_PARTITIONS: Final = OptionSpec[int | None](
    "minPartitions", int_parser(1, 1_000_000), None, help="a positive integer"
)
MAX_RECORDS_PER_PARTITION: Final = OptionSpec[int | None](
    "maxRecordsPerPartition", int_parser(1), None, help="a positive number of records"
)
FETCH_MAX_BYTES: Final = OptionSpec(
    "fetchMaxBytes",
    int_parser(1, FETCH_MAX_BYTES_CAP),
    FETCH_BYTES_DEFAULT,
    help=f"bytes per Fetch, at most {FETCH_MAX_BYTES_CAP}",
)
MAX_ROWS_PER_BATCH: Final = OptionSpec(
    "maxRowsPerBatch",
    int_parser(1, 1_000_000),
    MAX_ROWS_PER_BATCH_DEFAULT,
    help="rows per Arrow batch a task yields",
)
READ_UNCOMMITTED: Final = 0
READ_COMMITTED: Final = 1
ISOLATION_LEVELS: Final = {"read_uncommitted": READ_UNCOMMITTED, "read_committed": READ_COMMITTED}


def parse_isolation_level(value: str) -> int:
    """`read_uncommitted` (0) or `read_committed` (1), as Kafka's `isolation.level`."""
    level = ISOLATION_LEVELS.get(value.strip().lower())
    if level is None:
        raise ValueError("must be read_uncommitted or read_committed")
    return level


def isolation_level_option(default: int) -> OptionSpec[int]:
    """`isolation.level` (or Spark's `kafka.isolation.level`): read_committed reads up
    to the last stable offset and drops aborted transactions; read_uncommitted reads up
    to the high watermark and keeps them. Control records are dropped either way."""
    return OptionSpec(
        "isolation.level",
        parse_isolation_level,
        default,
        aliases=("kafka.isolation.level",),
        help="read_uncommitted or read_committed",
    )


INCLUDE_HEADERS: Final = OptionSpec(
    "includeHeaders",
    parse_bool,
    True,
    help="true (a `headers` column, Shoal's default) or false (no such column)",
)
