"""`shoal configs`' command line, read as Kafka 4.2's kafka-configs.sh reads it.

Owns the options (Kafka's names, shorthands included: `--topic T` is `--entity-type
topics --entity-name T`), the pairing of entity types with names, the checks in the
order Kafka's ConfigCommandOptions.checkArgs makes them with its messages, and the
parsing of `--add-config` / `--add-config-file` / `--delete-config`. A failed check
is `ConfigArgError`: Kafka prints its message on stderr and exits 1, and so does
Shoal (docs/reference/cli.md).

Names: an `--entity-name` or `--entity-default` (the empty name) in the order given,
then the shorthands' names (`--topic`, `--client`, `--user`, `--broker`,
`--broker-logger`, `--ip`, `--client-metrics`, `--group`, then the `--*-defaults`),
as Kafka lists them; entity types likewise.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shoal.cli.kafka_options import parse_properties

TOPICS, CLIENTS, USERS, BROKERS, IPS = "topics", "clients", "users", "brokers", "ips"
CLIENT_METRICS, GROUPS, BROKER_LOGGERS = "client-metrics", "groups", "broker-loggers"
ENTITY_TYPES = (TOPICS, CLIENTS, USERS, BROKERS, IPS, CLIENT_METRICS, GROUPS, BROKER_LOGGERS)
"""Kafka's list, in the order its "Invalid entity type" message gives it."""
DEFAULT_NAME = ""
"""The name standing for `--entity-default` (Kafka's BrokerDefaultEntityName)."""
_FLAGS = (
    ("topic", TOPICS),
    ("client", CLIENTS),
    ("user", USERS),
    ("broker", BROKERS),
    ("broker_logger", BROKER_LOGGERS),
    ("ip", IPS),
    ("client_metrics", CLIENT_METRICS),
    ("group", GROUPS),
)
_DEFAULT_FLAGS = (
    ("client_defaults", CLIENTS),
    ("user_defaults", USERS),
    ("broker_defaults", BROKERS),
    ("ip_defaults", IPS),
)
_KEY = re.compile(r"[a-zA-Z0-9._-]*")
_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"
"""A separator counts only outside `[...]` (Kafka's lookahead: no `]` before the next
`[` or the end)."""
_PAIRS = re.compile("," + _OUTSIDE_BRACKETS)
_KEY_VALUE = re.compile(r"\s*=\s*" + _OUTSIDE_BRACKETS)


class ConfigArgError(Exception):
    """A bad command line, worded as Kafka's tool words it (stderr, exit 1)."""

    def __init__(self, message: str, *, usage: bool = False) -> None:
        super().__init__(message)
        self.usage = usage
        """Kafka prints its usage after this message too."""


@dataclass
class ConfigRequest:
    """What the command line asks for, checked."""

    alter: bool
    entity_types: list[str]
    entity_names: list[str]
    describe_all: bool = False
    add_config: str | None = None
    add_config_file: str | None = None
    delete_config: list[str] = field(default_factory=list)

    @property
    def entity_type(self) -> str:
        return self.entity_types[0]


class _EntityName(argparse.Action):
    """--entity-name and --entity-default share one list, in command-line order."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        names = list(getattr(namespace, "entity_names", None) or [])
        names.append(DEFAULT_NAME if values is None or values == [] else str(values))
        namespace.entity_names = names


def add_options(parser: argparse.ArgumentParser) -> None:
    """Kafka's options (--bootstrap-server and --command-config come with the tool)."""
    parser.add_argument("--bootstrap-controller", metavar="HOST:PORT", help=argparse.SUPPRESS)
    parser.add_argument("--alter", action="store_true", help="alter the entity's configs")
    parser.add_argument("--describe", action="store_true", help="list the entity's configs")
    parser.add_argument(
        "--all", action="store_true", help="with --describe: every config, not only set ones"
    )
    parser.add_argument(
        "--entity-type",
        dest="entity_type",
        action="append",
        metavar="TYPE",
        help="/".join(ENTITY_TYPES),
    )
    parser.add_argument(
        "--entity-name",
        dest="entity_names",
        action=_EntityName,
        metavar="NAME",
        help="topic, client id, user principal, broker id, ip, client metrics or group id",
    )
    parser.add_argument(
        "--entity-default",
        dest="entity_names",
        action=_EntityName,
        nargs=0,
        help="the default entity of clients/users/brokers/ips",
    )
    parser.add_argument(
        "--add-config",
        metavar="K=V,...",
        help="configs to set; [] groups a value with commas: 'k1=v1,k2=[v1,v2],k3=v3'",
    )
    parser.add_argument(
        "--add-config-file", metavar="FILE", help="a properties file of configs to set"
    )
    parser.add_argument(
        "--delete-config", action="append", metavar="K1,K2", help="config keys to remove"
    )
    parser.add_argument("--force", action="store_true", help="(accepted; nothing to confirm)")
    for flag, kind in _FLAGS:
        option = "--" + flag.replace("_", "-")
        parser.add_argument(option, metavar="NAME", help=f"--entity-type {kind} --entity-name")
    for flag, kind in _DEFAULT_FLAGS:
        option = "--" + flag.replace("_", "-")
        parser.add_argument(
            option, action="store_true", help=f"--entity-type {kind} --entity-default"
        )


def entity_types(args: argparse.Namespace) -> list[str]:
    given: list[str] = list(args.entity_type or [])
    return (
        given
        + [kind for flag, kind in _FLAGS if getattr(args, flag) is not None]
        + [kind for flag, kind in _DEFAULT_FLAGS if getattr(args, flag)]
    )


def entity_names(args: argparse.Namespace) -> list[str]:
    given: list[str] = list(args.entity_names or [])
    return (
        given
        + [getattr(args, flag) for flag, _kind in _FLAGS if getattr(args, flag) is not None]
        + [DEFAULT_NAME for flag, _kind in _DEFAULT_FLAGS if getattr(args, flag)]
    )


def check(args: argparse.Namespace) -> ConfigRequest:
    """Kafka's checks, in its order; ConfigArgError with its message on the first
    that fails."""
    if int(args.alter) + int(args.describe) != 1:
        raise ConfigArgError(
            "Command must include exactly one action: --describe, --alter", usage=True
        )
    if args.describe:
        for name, given in (
            ("alter", args.alter),
            ("add-config", args.add_config is not None),
            ("delete-config", bool(args.delete_config)),
        ):
            if given:
                raise ConfigArgError(
                    f'Option "[describe]" can\'t be used with option "[{name}]"', usage=True
                )
    if args.bootstrap_server is None and args.bootstrap_controller is None:
        raise ConfigArgError(
            "Either --bootstrap-server or --bootstrap-controller must be specified."
        )
    if args.bootstrap_server is not None and args.bootstrap_controller is not None:
        raise ConfigArgError(
            "You must not specify both --bootstrap-controller and --bootstrap-server."
        )
    types, names = entity_types(args), entity_names(args)
    duplicates = [t for i, t in enumerate(types) if t in types[:i]]
    if duplicates:
        raise ConfigArgError(
            f"Duplicate entity type(s) specified: {','.join(dict.fromkeys(duplicates))}"
        )
    for kind in types:
        if kind not in ENTITY_TYPES:
            raise ConfigArgError(
                f"Invalid entity type {kind}, the entity type must be one of "
                f"{', '.join(ENTITY_TYPES)} with a --bootstrap-server or "
                "--bootstrap-controller argument"
            )
    if not types:
        raise ConfigArgError("At least one entity type must be specified")
    if len(types) > 1 and set(types) != {USERS, CLIENTS}:
        raise ConfigArgError("Only 'users' and 'clients' entity types may be specified together")
    flags = [f for f, _k in _FLAGS if getattr(args, f) is not None] + [
        f for f, _k in _DEFAULT_FLAGS if getattr(args, f)
    ]
    if (args.entity_type or args.entity_names) and flags:
        raise ConfigArgError(
            "--entity-{type,name,default} should not be used in conjunction with specific "
            "entity flags"
        )
    has_name = any(n != DEFAULT_NAME for n in names)
    has_default = any(n == DEFAULT_NAME for n in names)
    if has_name and (BROKERS in types or BROKER_LOGGERS in types):
        for broker_id in _given_names(args, "broker", "broker_logger"):
            if not _is_int(broker_id):
                raise ConfigArgError(
                    f"The entity name for {types[0]} must be a valid integer broker id, "
                    f"but it is: {broker_id}"
                )
    if has_name and IPS in types:
        for ip in _given_names(args, "ip"):
            if not _valid_ip_entity(ip):
                raise ConfigArgError(
                    f"The entity name for {types[0]} must be a valid IP or resolvable host, "
                    f"but it is: {ip}"
                )
    defaults_allowed = {USERS, CLIENTS, BROKERS, IPS}
    if args.describe:
        if not defaults_allowed & set(types) and has_default:
            raise ConfigArgError(
                f"--entity-default must not be specified with --describe of {','.join(types)}"
            )
        if BROKER_LOGGERS in types and not has_name:
            raise ConfigArgError(
                f"An entity name must be specified with --describe of {','.join(types)}"
            )
    if args.alter:
        if defaults_allowed & set(types):
            if not has_name and not has_default:
                raise ConfigArgError(
                    "An entity-name or default entity must be specified with --alter of users, "
                    "clients, brokers or ips"
                )
        elif not has_name:
            raise ConfigArgError(
                f"An entity name must be specified with --alter of {','.join(types)}"
            )
        if args.add_config is not None and args.add_config_file is not None:
            raise ConfigArgError("Only one of --add-config or --add-config-file must be specified")
        if args.add_config is None and args.add_config_file is None and not args.delete_config:
            raise ConfigArgError(
                "At least one of --add-config, --add-config-file, or --delete-config must be "
                "specified with --alter"
            )
        if len(types) != len(names):
            raise ConfigArgError("An entity name must be specified for every entity type")
    return ConfigRequest(
        alter=args.alter,
        entity_types=types,
        entity_names=names,
        describe_all=args.all,
        add_config=args.add_config,
        add_config_file=args.add_config_file,
        delete_config=[
            name.strip() for given in args.delete_config or () for name in given.split(",")
        ],
    )


def _given_names(args: argparse.Namespace, *flags: str) -> list[str]:
    names = [n for n in (args.entity_names or []) if n != DEFAULT_NAME]
    return names + [getattr(args, f) for f in flags if getattr(args, f) is not None]


def _is_int(text: str) -> bool:
    try:
        value = int(text) if re.fullmatch(r"[+-]?[0-9]+", text) else None
    except ValueError:
        return False
    return value is not None and -(2**31) <= value < 2**31


def _valid_ip_entity(name: str) -> bool:
    """An IP address or a name that resolves (Kafka asks InetAddress.getByName)."""
    import ipaddress
    import socket

    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    try:
        socket.getaddrinfo(name, None)
    except (OSError, UnicodeError):
        return False
    return True


def configs_to_add(request: ConfigRequest) -> dict[str, str]:
    """`--add-config-file`'s properties, then `--add-config`'s pairs: 'k1=v1,k2=[v1,v2]'
    (brackets group a value with commas and are dropped), each key checked as Kafka
    checks it."""
    added: dict[str, str] = {}
    if request.add_config_file is not None:
        try:
            text = Path(request.add_config_file).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigArgError(f"{request.add_config_file} ({exc.strerror})") from None
        added.update(parse_properties(text))
    if request.add_config is not None:
        pairs = [_KEY_VALUE.split(pair) for pair in _PAIRS.split(request.add_config)]
        if not all(len(pair) == 2 for pair in pairs):
            raise ConfigArgError(
                "requirement failed: Invalid entity config: all configs to be added must be "
                'in the format "key=val" or  "key=[val1,val2]" to group values which contain '
                "commas."
            )
        for key, value in pairs:
            added[key.strip()] = re.sub(r"\[?\]?", "", value).strip()
    for key in added:
        if not _KEY.fullmatch(key):
            raise ConfigArgError(f"Invalid character found for config key: {key}")
    return added
