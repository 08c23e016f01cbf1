"""`shoal configs`: describe and alter configs as Kafka 4.2's kafka-configs.sh does,
with its options, output, messages and exit codes.

  --describe --entity-type topics|brokers|broker-loggers|groups|client-metrics
             [--entity-name NAME | --entity-default] [--all]
  --describe --entity-type users|clients|ips [--entity-name NAME | --entity-default]
  --alter ENTITY --add-config 'k1=v1,k2=[a,b]' | --add-config-file FILE
                 --delete-config 'k1,k2'

Shorthands: --topic T, --broker ID, --broker-defaults, --broker-logger ID, --group G,
--client-metrics NAME, --user U, --user-defaults, --client C, --client-defaults,
--ip IP, --ip-defaults; users and clients together name a user's client.

Config resources (topics, brokers, broker loggers, groups, client metrics):
cli/resource_configs.py. Client quotas and SCRAM credentials (users, clients, ips):
cli/client_quotas.py. The command line: cli/configs_options.py.

Exit status, as Kafka's tool: 0 done; 1 for a bad command line (Kafka's message on
stderr) or a refusal (Kafka's "Error while executing config command with args ..."
and the exception it would print, on stderr). One deliberate difference: describing
a named entity that does not exist prints Kafka's line and exits 1 (Kafka: 0).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import IO, Any

from shoal.cli import client_quotas, resource_configs
from shoal.cli.configs_options import (
    CLIENTS,
    DEFAULT_NAME,
    IPS,
    USERS,
    ConfigArgError,
    ConfigRequest,
    add_options,
    check,
    configs_to_add,
)
from shoal.cli.kafka_exceptions import execution_exception_text
from shoal.cli.kafka_options import (
    ToolFailed,
    add_tool_parser,
    client_settings,
    load_command_config,
)
from shoal.client import Client, ClientError, KafkaError

PROG = "shoal configs"


def add_parser(commands: Any) -> None:
    parser = add_tool_parser(
        commands,
        "configs",
        help_text="describe and alter configs of topics, brokers, groups, users, clients, "
        "ips (kafka-configs.sh)",
        description=__doc__ or "",
    )
    add_options(parser)
    parser.set_defaults(run=lambda args: run(parser, args))


def run(
    parser: argparse.ArgumentParser, args: argparse.Namespace, out: IO[str] | None = None
) -> int:
    out = sys.stdout if out is None else out
    argv = " ".join(getattr(args, "argv", None) or [])
    try:
        request = check(args)
    except ConfigArgError as exc:
        print(exc, file=sys.stderr)
        if exc.usage:
            parser.print_help(sys.stderr)
        return 1
    try:
        properties = load_command_config(args.command_config, warn=sys.stderr)
        settings = client_settings(properties)
        bootstrap = args.bootstrap_server or args.bootstrap_controller
        with Client(bootstrap, settings=settings) as client:
            return act(client, request, out)
    except ConfigArgError as exc:
        out.flush()
        print(exc, file=sys.stderr)
        return 1
    except KafkaError as exc:
        out.flush()
        print(f"Error while executing config command with args '{argv}'", file=sys.stderr)
        print(execution_exception_text(exc), file=sys.stderr)
        return 1
    except (ClientError, ToolFailed) as exc:
        out.flush()
        print(f"Error while executing config command with args '{argv}'", file=sys.stderr)
        print(exc, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        return 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def act(client: Client, request: ConfigRequest, out: IO[str]) -> int:
    kind, names = request.entity_type, request.entity_names
    if not request.alter:
        if kind in (USERS, CLIENTS, IPS):
            client_quotas.describe(client, request, out)
            return 0
        return resource_configs.describe(
            client, kind, names[0] if names else None, describe_all=request.describe_all, out=out
        )
    added = configs_to_add(request)
    if kind in (USERS, CLIENTS, IPS):
        client_quotas.alter(client, request, added)
    else:
        resource_configs.alter(client, kind, names[0], added, request.delete_config)
    if names[0] != DEFAULT_NAME:
        entity = f"{resource_configs.singular(kind)} {names[0]}"
        print(f"Completed updating config for {entity}.", file=out)
    else:
        print(f"Completed updating default config for {kind} in the cluster.", file=out)
    return 0
