"""Client quotas and SCRAM credentials for `shoal configs` (kafka-configs.sh
--entity-type clients|users|ips, or --client/--user/--ip and their --*-defaults):

  --alter --entity-type clients --entity-name app --add-config 'producer_byte_rate=1048576'
  --alter --user alice --client app --add-config 'consumer_byte_rate=2097152'
  --alter --entity-type clients --entity-name app --delete-config producer_byte_rate
  --alter --ip 127.0.0.1 --add-config 'connection_creation_rate=10'
  --alter --user alice --add-config 'SCRAM-SHA-256=[iterations=8192,password=s3cret]'
  --describe --entity-type users [--entity-name alice | --entity-default]

Entity types pair with names (or defaults) in the order given, as in kafka-configs.sh.
Describe prints one line per entity, in the order of Kafka's Admin client's HashMap
(java_order.py), its values likewise, each a Java double:
`Quota configs for client-id 'app' are producer_byte_rate=1048576.0, request_percentage=50.0`;
users then get a line per user with SCRAM credentials:
`SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192`.
A SCRAM password is salted here, on the client (32 random bytes of salt, 4096
iterations unless given), and only the salted form is sent. Kafka's checks and
messages: quota and SCRAM configs not mixed, no SCRAM on the default user, only
connection quotas for ips.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from decimal import Decimal
from typing import IO

from shoal.cli.configs_options import (
    CLIENTS,
    DEFAULT_NAME,
    IPS,
    USERS,
    ConfigArgError,
    ConfigRequest,
)
from shoal.cli.java_order import hash_map_order, quota_entity_order
from shoal.client import Client, KafkaError
from shoal.client.errors import ErrorCode
from shoal.client.quota_requests import (
    MATCH_ANY,
    MATCH_DEFAULT,
    MATCH_EXACT,
    alter_client_quotas,
    describe_client_quotas,
)
from shoal.client.scram_requests import (
    SALT_BYTES,
    alter_user_scram_credentials,
    describe_user_scram_credentials,
    upsertion,
)
from shoal.security.scram import ITERATIONS_MIN, MECHANISMS, MECHANISMS_BY_ID

QUOTA_ENTITY_TYPES = {USERS: "user", CLIENTS: "client-id", IPS: "ip"}
"""kafka-configs.sh's entity types and their quota entity types."""
CLIENT_QUOTA_KEYS = (
    "producer_byte_rate",
    "consumer_byte_rate",
    "request_percentage",
    "controller_mutation_rate",
)
"""Kafka's user and client quota configs (QuotaConfig.isClientOrUserQuotaConfig)."""
IP_QUOTA_KEYS = ("connection_creation_rate",)
SCRAM_ITERATIONS_DEFAULT = 4096
_LABELS = {"user": "user-principal", "client-id": "client-id", "ip": "ip"}
_CREDENTIAL = re.compile(r"(?:iterations=(-?[0-9]*),)?password=(.*)", re.DOTALL)

Entity = Sequence[tuple[str, str | None]]


def alter(client: Client, request: ConfigRequest, added: dict[str, str]) -> None:
    """Kafka's alter of users, clients and ips: quota configs through
    AlterClientQuotas, SCRAM credentials through AlterUserScramCredentials."""
    types, names, deleted = request.entity_types, request.entity_names, request.delete_config
    if request.entity_type == IPS:
        unknown = [k for k in [*added, *deleted] if k not in IP_QUOTA_KEYS]
        if unknown:
            raise ConfigArgError(
                "Only connection quota configs can be added for 'ips' using "
                f"--bootstrap-server. Unexpected config names: {','.join(unknown)}"
            )
        _alter_quotas(client, types, names, added, deleted)
        return
    quota_add = [k for k in added if k in CLIENT_QUOTA_KEYS]
    scram_add = [k for k in added if k in MECHANISMS]
    other_add = [k for k in added if k not in CLIENT_QUOTA_KEYS and k not in MECHANISMS]
    quota_delete = [k for k in deleted if k in CLIENT_QUOTA_KEYS]
    scram_delete = [k for k in deleted if k in MECHANISMS]
    other_delete = [k for k in deleted if k not in CLIENT_QUOTA_KEYS and k not in MECHANISMS]
    if request.entity_type == CLIENTS or len(types) == 2:
        if other_add or scram_add:
            raise ConfigArgError(
                "Only quota configs can be added for 'clients' using --bootstrap-server. "
                f"Unexpected config names: {_scala_set([*other_add, *scram_add])}"
            )
        if other_delete or scram_delete:
            raise ConfigArgError(
                "Only quota configs can be deleted for 'clients' using --bootstrap-server. "
                f"Unexpected config names: {_scala_set([*other_delete, *scram_delete])}"
            )
    else:
        if other_add:
            raise ConfigArgError(
                "Only quota and SCRAM credential configs can be added for 'users' using "
                f"--bootstrap-server. Unexpected config names: {_scala_set(other_add)}"
            )
        if other_delete:
            raise ConfigArgError(
                "Only quota and SCRAM credential configs can be deleted for 'users' using "
                f"--bootstrap-server. Unexpected config names: {_scala_set(other_delete)}"
            )
        if scram_add or scram_delete:
            if DEFAULT_NAME in names:
                raise ConfigArgError(
                    "The use of --entity-default or --user-defaults is not allowed with User "
                    "SCRAM Credentials using --bootstrap-server."
                )
            if quota_add or quota_delete:
                raise ConfigArgError(
                    "Cannot alter both quota and SCRAM credential configs simultaneously for "
                    "'users' using --bootstrap-server."
                )
    if quota_add or quota_delete:
        _alter_quotas(client, types, names, added, deleted)
    else:
        _alter_scram(client, names[0], {k: added[k] for k in scram_add}, scram_delete)


def _scala_set(names: Sequence[str]) -> str:
    """A few names as Scala prints a small Set: `Set(a, b)`."""
    return f"Set({', '.join(dict.fromkeys(names))})"


def _alter_quotas(
    client: Client,
    types: Sequence[str],
    names: Sequence[str],
    added: dict[str, str],
    deleted: Sequence[str],
) -> None:
    entity = _entity(types, names)
    current = _described(client, _components(types, names))
    old = dict(current[0][1]) if current else {}
    missing = [k for k in deleted if k not in old]
    if missing:
        raise ConfigArgError(f"Invalid config(s): {','.join(missing)}")
    changes: dict[str, float | None] = {}
    for key, value in added.items():
        try:
            changes[key] = float(value)
        except ValueError:
            raise ConfigArgError(
                f"Cannot parse quota configuration value for {key}: {value}"
            ) from None
    changes.update(dict.fromkeys(deleted))
    response = client.call(alter_client_quotas([(entity, changes)]))
    for entry in response.entries:
        _check(entry.error_code, entry.error_message)


def _alter_scram(client: Client, user: str, added: dict[str, str], deleted: Sequence[str]) -> None:
    upsertions = []
    for mechanism, text in added.items():
        match = _CREDENTIAL.fullmatch(text)
        if match is None:
            raise ConfigArgError(f"Invalid credential property {mechanism}={text}")
        given = match.group(1)
        iterations = int(given) if given not in (None, "", "-1") else SCRAM_ITERATIONS_DEFAULT
        if iterations < ITERATIONS_MIN:
            raise ConfigArgError(
                f"Iterations {iterations} is less than the minimum {ITERATIONS_MIN} required "
                f"for {mechanism}"
            )
        upsertions.append(
            upsertion(
                user, mechanism, match.group(2), iterations=iterations, salt=os.urandom(SALT_BYTES)
            )
        )
    response = client.call(
        alter_user_scram_credentials(upsertions=upsertions, deletions=[(user, m) for m in deleted])
    )
    for result in response.results:
        _check(result.error_code, result.error_message)


def describe(client: Client, request: ConfigRequest, out: IO[str]) -> None:
    """Quota lines, then (users only, no client, no default) SCRAM credential lines."""
    types, names = request.entity_types, request.entity_names
    described = _described(client, _components(types, names))
    for entity, values in described:
        shown = ", ".join(f"{k}={java_double(v)}" for k, v in values)
        print(f"Quota configs for {describe_entity(entity)} are {shown}", file=out)
    if CLIENTS in types or DEFAULT_NAME in names or IPS in types:
        return
    response = client.call(describe_user_scram_credentials(list(names) or None))
    _check(response.error_code, response.error_message)
    for result in response.results:
        if result.error_code == ErrorCode.resource_not_found:
            continue
        _check(result.error_code, result.error_message)
        configs = ", ".join(
            f"{MECHANISMS_BY_ID[int(i.mechanism)].name}=iterations={i.iterations}"
            for i in result.credential_infos
        )
        print(
            f"SCRAM credential configs for user-principal '{result.user}' are {configs}", file=out
        )


def _components(types: Sequence[str], names: Sequence[str]) -> list[tuple[str, int, str | None]]:
    if len(names) > len(types):
        raise ConfigArgError("More entity names specified than entity types")
    components: list[tuple[str, int, str | None]] = []
    for i, kind in enumerate(types):
        quota_type = QUOTA_ENTITY_TYPES[kind]
        if i >= len(names):
            components.append((quota_type, MATCH_ANY, None))
        elif names[i] == DEFAULT_NAME:
            components.append((quota_type, MATCH_DEFAULT, None))
        else:
            components.append((quota_type, MATCH_EXACT, names[i]))
    return components


def _entity(types: Sequence[str], names: Sequence[str]) -> list[tuple[str, str | None]]:
    return [
        (QUOTA_ENTITY_TYPES[kind], None if name == DEFAULT_NAME else name)
        for kind, name in zip(types, names, strict=True)
    ]


def _described(
    client: Client, components: list[tuple[str, int, str | None]]
) -> list[tuple[Entity, list[tuple[str, float]]]]:
    """The matching entities and their values, in the Admin client's HashMap orders."""
    response = client.call(describe_client_quotas(components, strict=True))
    _check(response.error_code, response.error_message)
    found: dict[tuple[tuple[str, str | None], ...], dict[str, float]] = {}
    for entry in response.entries or ():
        entity = tuple((str(e.entity_type), e.entity_name) for e in entry.entity)
        found[entity] = {str(v.key): float(v.value) for v in entry.values}
    ordered = quota_entity_order(list(found), capacity=len(found))
    return [
        (
            entity,
            [
                (k, found[tuple(entity)][k])
                for k in hash_map_order(found[tuple(entity)], capacity=len(found[tuple(entity)]))
            ],
        )
        for entity in ordered
    ]


def describe_entity(entity: Entity) -> str:
    """ "user-principal 'alice', client-id 'app'" (user, client-id, ip: Kafka's order)."""
    parts = dict(entity)
    return ", ".join(
        f"the default {_LABELS[kind]}"
        if parts[kind] is None
        else f"{_LABELS[kind]} '{parts[kind]}'"
        for kind in ("user", "client-id", "ip")
        if kind in parts
    )


def java_double(value: float) -> str:
    """Java's Double.toString: plain from 10^-3 up to 10^7 ("1000.0"), otherwise
    computerized scientific notation ("1.0E7", "1.5E-4"); shortest round-trip digits."""
    if math.isnan(value):
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    magnitude = abs(float(value))
    if magnitude == 0 or 1e-3 <= magnitude < 1e7:
        return sign + repr(magnitude)  # Python's repr is plain in this range too
    exact = Decimal(repr(magnitude)).normalize()
    digits = "".join(str(d) for d in exact.as_tuple().digits)
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exact.adjusted()}"


def _check(code: int, message: str | None) -> None:
    if code != ErrorCode.none:
        raise KafkaError(code, message)
