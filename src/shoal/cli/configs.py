"""`shoal configs`: SCRAM users and client quotas, as Kafka's kafka-configs.sh manages them.

  --alter --entity-type users --entity-name alice
      --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret],
                    SCRAM-SHA-512=[password=x]'   (one argument, no line break)
      --delete-config 'SCRAM-SHA-512'
  --describe --entity-type users [--entity-name alice]

`--add-config` salts the password here, on the client (32 random bytes of salt,
4096 iterations unless given), and sends only the salted form. Describe prints
`SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192`
per user, as kafka-configs.sh does.

Client quotas (`--entity-type clients` or `ips`, or `users` with quota keys such as
`producer_byte_rate`; both types together for a user and client-id entity): see
cli/client_quotas.py. Describing users prints their quota configs, then their SCRAM
credentials. `--describe --entity-type topics [--entity-name T] [--all]` (or `--topic
T`) prints topic configs (cli/topic_configs.py); altering them and broker configs are
for later. Exit 0 done, 1 failed, 2 bad usage.
"""

from __future__ import annotations

import argparse
import os
import re
from typing import IO, Any

from shoal.cli import client_quotas, topic_configs
from shoal.cli.kafka_options import (
    ToolFailed,
    UsageError,
    add_tool_parser,
    check_bootstrap,
    run_tool,
)
from shoal.client import Client
from shoal.client.errors import ErrorCode, error_name
from shoal.client.scram_requests import (
    SALT_BYTES,
    alter_user_scram_credentials,
    describe_user_scram_credentials,
    upsertion,
)
from shoal.security.scram import ITERATIONS_MIN, MECHANISMS, MECHANISMS_BY_ID

TOPICS = "topics"
_ENTRY = re.compile(r"\s*([A-Za-z0-9-]+)\s*=\s*\[([^\]]*)\]\s*(?:,|$)")


def add_parser(commands: Any) -> None:
    parser = add_tool_parser(
        commands,
        "configs",
        help_text="add, delete and describe SCRAM users (kafka-configs.sh --entity-type users)",
        description=__doc__ or "",
    )
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--alter", action="store_true", help="alter the entity's configs")
    action.add_argument("--describe", action="store_true", help="describe the entity's configs")
    parser.add_argument(
        "--entity-type",
        metavar="TYPE",
        action="append",
        choices=sorted([*client_quotas.ENTITY_TYPES, TOPICS]),
        help="users, clients, ips or topics (users and clients, in turn, for a user and "
        "client-id quota)",
    )
    parser.add_argument(
        "--topic", metavar="TOPIC", help="the topic (--entity-type topics --entity-name TOPIC)"
    )
    parser.add_argument(
        "--all", action="store_true", help="with --describe of topics: every config, not only set"
    )
    parser.add_argument("--entity-name", metavar="NAME", dest="entity_names", action="append")
    parser.add_argument(
        "--entity-default",
        dest="entity_names",
        action="append_const",
        const=None,
        help="the default entity of the matching --entity-type (client quotas)",
    )
    parser.add_argument("--add-config", metavar="CONFIGS")
    parser.add_argument("--delete-config", metavar="NAMES")
    parser.set_defaults(
        run=lambda args: run_tool(
            parser,
            args,
            validate=_validate,
            api_timeout_ms=lambda a: None,
            action=_act,
            error_prefix="Error while executing config command with args: ",
        )
    )


def _validate(args: argparse.Namespace) -> None:
    check_bootstrap(args)
    if not (args.alter or args.describe):
        raise UsageError("Command must include exactly one action: --describe, --alter")
    if args.topic is not None:
        if args.entity_type or args.entity_names:
            raise UsageError("--topic can't be used with --entity-type or --entity-name")
        args.entity_type, args.entity_names = [TOPICS], [args.topic]
    if args.entity_type and TOPICS in args.entity_type:
        _validate_topics(args)
        return
    if args.all:
        raise UsageError("--all can only be used to describe topic configs")
    if not args.entity_type:
        raise UsageError("--entity-type must be given (users, clients or ips)")
    if _quotas(args):
        if args.alter:
            if not args.add_config and not args.delete_config:
                raise UsageError(
                    "At least one of --add-config or --delete-config must be specified"
                )
            client_quotas.validate_alter(args)
        else:
            client_quotas.entity_of(args)
        return
    args.entity_name = (args.entity_names or [None])[0]
    if args.alter:
        if not args.entity_name:
            raise UsageError("--entity-name must be specified with --alter of users")
        if not args.add_config and not args.delete_config:
            raise UsageError("At least one of --add-config or --delete-config must be specified")
        parse_add_config(args.add_config or "")
        parse_delete_config(args.delete_config or "")


def _validate_topics(args: argparse.Namespace) -> None:
    if args.entity_type != [TOPICS] or len(args.entity_names or []) > 1:
        raise UsageError("Only one --entity-type topics and one --entity-name can be given")
    if args.alter:
        raise UsageError(
            "shoal configs describes topic configs only: alter them with kafka-configs.sh "
            "or an Admin client's IncrementalAlterConfigs"
        )
    args.entity_name = (args.entity_names or [None])[0]


def parse_add_config(text: str) -> dict[str, tuple[int, str]]:
    """'SCRAM-SHA-256=[iterations=8192,password=p]' -> {mechanism: (iterations, password)}."""
    result: dict[str, tuple[int, str]] = {}
    position = 0
    while position < len(text):
        match = _ENTRY.match(text, position)
        if match is None:
            raise UsageError("--add-config must be MECHANISM=[iterations=N,password=P],...")
        mechanism, body = match.group(1), match.group(2)
        if mechanism not in MECHANISMS:
            raise UsageError(f"Invalid config: {mechanism} (SCRAM-SHA-256 or SCRAM-SHA-512)")
        options = dict(part.split("=", 1) for part in body.split(",") if "=" in part)
        if "password" not in options:
            raise UsageError(f"{mechanism} needs password=...")
        try:
            iterations = int(options.get("iterations", ITERATIONS_MIN))
        except ValueError:
            raise UsageError(f"{mechanism}: iterations must be a number") from None
        result[mechanism] = (iterations, options["password"])
        position = match.end()
    return result


def parse_delete_config(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    for name in names:
        if name not in MECHANISMS:
            raise UsageError(f"Invalid config to delete: {name}")
    return names


def _quotas(args: argparse.Namespace) -> bool:
    """Client quotas rather than SCRAM credentials: clients, both entity types, or
    users with quota keys (a SCRAM add is MECHANISM=[...], a quota add key=value)."""
    if args.entity_type != ["users"]:
        return True
    if not args.alter:
        return False
    deletions = [n.strip() for n in (args.delete_config or "").split(",")]
    return (bool(args.add_config) and "[" not in args.add_config) or any(
        n in client_quotas.QUOTA_KEYS for n in deletions
    )


def _act(client: Client, args: argparse.Namespace, out: IO[str]) -> int:
    if args.entity_type == [TOPICS]:
        return topic_configs.describe(client, args.entity_name, describe_all=args.all, out=out)
    if _quotas(args):
        if args.alter:
            return client_quotas.alter(client, args, out)
        return client_quotas.describe(client, args, out)
    if args.describe:
        client_quotas.describe(client, args, out)
        return _describe(client, args.entity_name, out)
    user = args.entity_name
    upsertions = [
        upsertion(user, mechanism, password, iterations=iterations, salt=os.urandom(SALT_BYTES))
        for mechanism, (iterations, password) in parse_add_config(args.add_config or "").items()
    ]
    deletions = [(user, m) for m in parse_delete_config(args.delete_config or "")]
    # One request per change: Kafka 4.2 takes one change per user and request (two
    # mechanisms at once are DUPLICATE_RESOURCE, kafka-configs' own failure there).
    changes = [alter_user_scram_credentials(upsertions=[u]) for u in upsertions] + [
        alter_user_scram_credentials(deletions=[d]) for d in deletions
    ]
    for change in changes:
        for result in client.call(change).results:
            if result.error_code != ErrorCode.none:
                raise ToolFailed(
                    f"{error_name(result.error_code)}: {result.error_message or ''} (user {user})"
                )
    print(f"Completed updating config for user {user}.", file=out)
    return 0


def _describe(client: Client, user: str | None, out: IO[str]) -> int:
    response = client.call(describe_user_scram_credentials([user] if user else None))
    if response.error_code != ErrorCode.none:
        raise ToolFailed(f"{error_name(response.error_code)}: {response.error_message or ''}")
    for result in response.results:
        if result.error_code == ErrorCode.resource_not_found:
            continue
        if result.error_code != ErrorCode.none:
            raise ToolFailed(f"{error_name(result.error_code)}: {result.error_message or ''}")
        configs = ", ".join(
            f"{MECHANISMS_BY_ID[int(i.mechanism)].name}=iterations={i.iterations}"
            for i in result.credential_infos
        )
        print(
            f"SCRAM credential configs for user-principal '{result.user}' are {configs}", file=out
        )
    return 0
