"""Client quotas for `shoal configs` (kafka-configs.sh --entity-type clients|users|ips):

  --alter --entity-type clients --entity-name app --add-config 'producer_byte_rate=1048576'
  --alter --entity-type users --entity-name alice --entity-type clients --entity-default
          --add-config 'consumer_byte_rate=2097152,producer_byte_rate=1048576'
  --alter --entity-type clients --entity-name app --delete-config producer_byte_rate
  --describe --entity-type clients [--entity-name app | --entity-default]
  --alter --entity-type clients --entity-name app --add-config 'request_percentage=50'
  --alter --entity-type ips --entity-name 127.0.0.1 --add-config 'connection_creation_rate=10'
  --describe --entity-type ips [--entity-name 127.0.0.1 | --entity-default]

Entity types pair with names (or `--entity-default`) in the order given, as in
kafka-configs.sh. Describe prints one line per entity, as kafka-configs.sh does:
`Quota configs for client-id 'app' are producer_byte_rate=1048576.0`.
"""

from __future__ import annotations

import argparse
from typing import IO

from shoal.cli.kafka_options import ToolFailed, UsageError
from shoal.client import Client
from shoal.client.errors import ErrorCode, error_name
from shoal.client.quota_requests import (
    MATCH_ANY,
    MATCH_DEFAULT,
    MATCH_EXACT,
    alter_client_quotas,
    describe_client_quotas,
)

ENTITY_TYPES = {"users": "user", "clients": "client-id", "ips": "ip"}
"""kafka-configs.sh's entity types and their quota entity types."""
QUOTA_KEYS = (
    "producer_byte_rate",
    "consumer_byte_rate",
    "request_percentage",
    "connection_creation_rate",
)
"""The keys the broker takes (it says which entity types each is for)."""
_LABELS = {"user": "user-principal", "client-id": "client-id", "ip": "ip"}


def entity_of(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    """(quota entity type, name or None for the default) per `--entity-type`."""
    types: list[str] = args.entity_type or []
    names: list[str | None] = args.entity_names or []
    if len(names) > len(types):
        raise UsageError("more --entity-name/--entity-default than --entity-type")
    return [
        (ENTITY_TYPES[kind], names[i] if i < len(names) else _MISSING)
        for i, kind in enumerate(types)
    ]


_MISSING = "\0missing"
"""An entity type given without a name (describe: any name)."""


def parse_quota_configs(text: str) -> dict[str, float]:
    """'producer_byte_rate=1048576,consumer_byte_rate=2048' -> {key: value}."""
    result: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in QUOTA_KEYS:
            raise UsageError(f"Invalid quota config: {part} (keys: {', '.join(QUOTA_KEYS)})")
        try:
            result[key] = float(value)
        except ValueError:
            raise UsageError(f"{key} must be a number") from None
    return result


def parse_quota_deletions(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    for name in names:
        if name not in QUOTA_KEYS:
            raise UsageError(f"Invalid config to delete: {name}")
    return names


def validate_alter(args: argparse.Namespace) -> None:
    entity = entity_of(args)
    if any(name == _MISSING for _kind, name in entity):
        raise UsageError("--entity-name or --entity-default must be given for each entity type")
    parse_quota_configs(args.add_config or "")
    parse_quota_deletions(args.delete_config or "")


def alter(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    entity = entity_of(args)
    changes: dict[str, float | None] = dict(parse_quota_configs(args.add_config or ""))
    changes.update(dict.fromkeys(parse_quota_deletions(args.delete_config or "")))
    response = client.call(alter_client_quotas([(entity, changes)]))
    for entry in response.entries:
        if entry.error_code != ErrorCode.none:
            raise ToolFailed(f"{error_name(entry.error_code)}: {entry.error_message or ''}")
    print(f"Completed updating config for {describe_entity(entity)}.", file=out)
    return 0


def describe(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    components = [
        (kind, MATCH_ANY, None)
        if name == _MISSING
        else (kind, MATCH_DEFAULT, None)
        if name is None
        else (kind, MATCH_EXACT, name)
        for kind, name in entity_of(args)
    ]
    response = client.call(describe_client_quotas(components, strict=True))
    if response.error_code != ErrorCode.none:
        raise ToolFailed(f"{error_name(response.error_code)}: {response.error_message or ''}")
    for entry in response.entries or ():
        entity = [(e.entity_type, e.entity_name) for e in entry.entity]
        values = ",".join(f"{v.key}={float(v.value)}" for v in sorted(entry.values, key=_key))
        print(f"Quota configs for {describe_entity(entity)} are {values}", file=out)
    return 0


def _key(value: object) -> str:
    return str(getattr(value, "key", ""))


def describe_entity(entity: list[tuple[str, str | None]]) -> str:
    """ "user-principal 'alice', client-id 'app'" (users first, as Kafka prints them)."""
    ordered = sorted(entity, key=lambda part: part[0] != "user")
    return ", ".join(
        f"the default {_LABELS[kind]}" if name is None else f"{_LABELS[kind]} '{name}'"
        for kind, name in ordered
    )
