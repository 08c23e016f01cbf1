"""The checks config keys' declarations name (`ConfigDef.check`), and the value sets
they check against: each returns a problem's description, or None for a good value.

Also `http_listener_address`, which both checks `metrics.listener` and turns it into
the (host, port) the HTTP listener binds.
"""

from __future__ import annotations

import math
import re
from typing import Any


def check_listeners(value: Any) -> str | None:
    for listener in value:
        if "://" not in listener or ":" not in listener.split("://", 1)[1]:
            return f"listener {listener!r} is not of the form NAME://host:port"
    return None


def check_sasl_mechanisms(value: Any) -> str | None:
    served = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
    unknown = [m for m in value if m not in served]
    if unknown:
        return f"unsupported SASL mechanisms {unknown} (Shoal serves {', '.join(served)})"
    return None


def check_jwks_url(value: Any) -> str | None:
    if value is not None and not str(value).startswith("file:"):
        return "only file: URLs are supported (a JWK set read from a local file)"
    return None


def check_protocol_map(value: Any) -> str | None:
    for entry in value:
        name, sep, protocol = entry.partition(":")
        if not sep or not name or protocol not in SECURITY_PROTOCOLS:
            return f"entry {entry!r} is not NAME:PROTOCOL with PROTOCOL one of " + ", ".join(
                SECURITY_PROTOCOLS
            )
    return None


def check_mapping_rules(value: Any) -> str | None:
    from shoal.security.principal_mapping import InvalidRules, PrincipalMapper

    try:
        PrincipalMapper.parse(value)
    except InvalidRules as exc:
        return str(exc)
    return None


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


def check_http_listener(value: Any) -> str | None:
    try:
        http_listener_address(str(value))
    except ValueError as exc:
        return str(exc)
    return None


def check_finite(value: Any) -> str | None:
    if not math.isfinite(value):
        return f"value {value} is not a finite number"
    return None


def check_by_duration(value: Any) -> str | None:
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
MIGRATION_POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")
"""`group.consumer.migration.policy` values (Kafka's ConsumerGroupMigrationPolicy)."""


def check_migration_policy(value: Any) -> str | None:
    if str(value).lower() in MIGRATION_POLICIES:
        return None
    return f"value {value!r} is not one of {', '.join(MIGRATION_POLICIES)}"


def check_super_users(value: Any) -> str | None:
    """`super.users`: principals (`Type:name`) separated by semicolons."""
    for principal in str(value).split(";"):
        if principal.strip() and ":" not in principal:
            return (
                "expected a string in format principalType:principalName but got "
                + principal.strip()
            )
    return None


COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
"""`compression.type`'s values, in the order Kafka's refusal lists them."""


def check_gzip_level(value: Any) -> str | None:
    """Kafka's gzip level: 1..9, or -1 (zlib's default)."""
    if value is None or value == -1 or 1 <= value <= 9:
        return None
    return "Value must be between 1 and 9 or equal to -1"


CLIENT_METRICS_MATCH_KEYS = (
    "client_instance_id",
    "client_id",
    "client_software_name",
    "client_software_version",
    "client_source_address",
    "client_source_port",
)


def check_match(value: Any) -> str | None:
    for pattern in value:
        key, sep, regex = pattern.partition("=")
        try:
            re.compile(regex)
        except re.error:
            return f"Illegal client matching pattern: {pattern}"
        if not sep or key not in CLIENT_METRICS_MATCH_KEYS or not regex:
            return f"Illegal client matching pattern: {pattern}"
    return None
