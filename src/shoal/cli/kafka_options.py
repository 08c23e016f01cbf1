"""What `shoal topics`, `shoal share-groups` and `shoal consumer-groups` share:
Kafka-tool option checks, `--command-config` files, and the run wrapper that turns
failures into messages and exit codes.

Option checks word their messages as Kafka's tools do (`Option "[group]" can't be
used with option "[list]"`, `Missing required argument "[topic]"`). Exit status: 0
on success, 1 when the operation failed (the broker refused, could not be reached,
or a group or topic is unknown), 2 for a bad command line (message and usage on
stderr, as argparse does for its own errors).

The tools talk to the cluster through `shoal.client.Client`; its `ClientError`s
(`KafkaError`, `BrokerUnreachable`, `RequestTimeout`) are already worded for the user
and become exit 1 with that message.

A `--command-config` file holds admin-client properties in Java properties syntax.
Used: `request.timeout.ms`, `default.api.timeout.ms`, `client.id`, and the security
settings (`security.protocol`, `ssl.*`, `sasl.*`, Java or librdkafka names, read by
`ClientSecurity.from_properties`: an unknown security key is an error naming it);
`bootstrap.servers` yields to `--bootstrap-server`. Other keys are reported and
ignored, as Kafka's clients warn about unknown configs.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from shoal.cli.versions import add_version_option
from shoal.client import Client, ClientError, ClientSettings, parse_bootstrap
from shoal.client.security import ClientSecurity, is_security_property
from shoal.client.settings import API_TIMEOUT_MS_DEFAULT, REQUEST_TIMEOUT_MS_DEFAULT

CLIENT_ID_DEFAULT = "shoal-admin"
"""`client.id` of the admin tools unless `--command-config` names another."""
COMMAND_CONFIG_BYTES_MAX = 1 << 20
"""A `--command-config` file larger than this is refused (it is a handful of
properties; anything bigger is the wrong file)."""
_IGNORED_KEYS = frozenset({"bootstrap.servers"})


class UsageError(Exception):
    """The command line is wrong; the message says how."""


class ToolFailed(Exception):
    """The operation failed for a reason already worded for the user (exit 1)."""


def add_tool_parser(commands: Any, name: str, *, help_text: str, description: str) -> Any:
    """The sub-command parser of an admin tool, with the options every tool has:
    --bootstrap-server and --command-config."""
    parser = commands.add_parser(
        name,
        help=help_text,
        description=description,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]", help="REQUIRED")
    parser.add_argument(
        "--command-config", metavar="FILE", help="admin-client properties (request.timeout.ms, ...)"
    )
    add_version_option(parser)
    return parser


def opt(name: str) -> str:
    """An option as Kafka's messages show it: "[group]"."""
    return f"[{name}]"


def present(args: argparse.Namespace, dest: str) -> bool:
    """Whether an option was given (options default to None or False)."""
    value = getattr(args, dest)
    return value is not None and value is not False


def check_invalid(args: argparse.Namespace, used: str, invalid: Iterable[str]) -> None:
    """Kafka's CommandLineUtils.checkInvalidArgs: with `used`, none of `invalid`."""
    if not present(args, dest(used)):
        return
    for name in invalid:
        if present(args, dest(name)):
            raise UsageError(f'Option "{opt(used)}" can\'t be used with option "{opt(name)}"')


def require(args: argparse.Namespace, name: str) -> None:
    if not present(args, dest(name)):
        raise UsageError(f'Missing required argument "{opt(name)}"')


def check_bootstrap(args: argparse.Namespace) -> None:
    """--bootstrap-server is required and must read HOST:PORT[,HOST:PORT...]."""
    require(args, "bootstrap-server")
    try:
        parse_bootstrap(args.bootstrap_server)
    except ValueError as exc:
        raise UsageError(f"--bootstrap-server: {exc}") from None


def dest(name: str) -> str:
    """The argparse attribute of an option: "to-datetime" -> "to_datetime"."""
    return name.replace("-", "_")


def parse_properties(text: str) -> dict[str, str]:
    """Java properties, the common subset: `key=value`, `key: value` or `key value`
    lines; `#` and `!` comments; surrounding blanks trimmed."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        cut = min(
            (i for i in (line.find("="), line.find(":"), line.find(" ")) if i >= 0), default=-1
        )
        if cut < 0:
            out[line] = ""
            continue
        key, value = line[:cut].strip(), line[cut + 1 :].strip()
        out[key] = value.lstrip("=:").strip() if line[cut] == " " else value
    return out


def load_command_config(path: str | None, *, warn: IO[str]) -> dict[str, str]:
    if path is None:
        return {}
    try:
        file = Path(path)
        if file.stat().st_size > COMMAND_CONFIG_BYTES_MAX:
            raise ToolFailed(
                f"--command-config file {path} is larger than {COMMAND_CONFIG_BYTES_MAX} bytes"
            )
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ToolFailed(f"cannot read --command-config file {path}: {exc}") from exc
    properties = parse_properties(text)
    known = {"request.timeout.ms", "default.api.timeout.ms", "client.id"}
    for key in properties:
        if key not in known and key not in _IGNORED_KEYS and not is_security_property(key):
            print(
                f"WARN The configuration '{key}' was supplied but isn't a known config.",
                file=warn,
            )
    return properties


def client_settings(
    properties: dict[str, str], *, api_timeout_ms: int | None = None
) -> ClientSettings:
    """The client's settings from command-config properties; `api_timeout_ms` (a
    tool's `--timeout`) wins over `default.api.timeout.ms`."""
    security = client_security(properties)
    request_ms = _positive_ms(properties, "request.timeout.ms", REQUEST_TIMEOUT_MS_DEFAULT)
    default_api_ms = _positive_ms(properties, "default.api.timeout.ms", API_TIMEOUT_MS_DEFAULT)
    return ClientSettings(
        api_timeout_ms=api_timeout_ms if api_timeout_ms is not None else default_api_ms,
        request_timeout_ms=request_ms,
        client_id=properties.get("client.id") or CLIENT_ID_DEFAULT,
        security=security,
    )


def client_security(properties: dict[str, str]) -> ClientSecurity:
    """The security settings among command-config properties; ToolFailed naming the key
    for one Shoal does not know or a bad value."""
    try:
        return ClientSecurity.from_properties(
            {k: v for k, v in properties.items() if is_security_property(k)}
        )
    except ValueError as exc:
        raise ToolFailed(f"--command-config: {exc}") from None


def _positive_ms(properties: dict[str, str], key: str, default: int) -> int:
    text = properties.get(key)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise ToolFailed(f"{key} must be a positive number of milliseconds, got {text!r}")
    return value


def run_tool(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    *,
    validate: Callable[[argparse.Namespace], None],
    api_timeout_ms: Callable[[argparse.Namespace], int | None],
    action: Callable[[Client, argparse.Namespace, IO[str]], int],
    out: IO[str] | None = None,
    error_prefix: str = "Error: ",
) -> int:
    """Validate, connect, act; failures become a message on stderr and an exit code."""
    out = sys.stdout if out is None else out
    try:
        validate(args)
    except UsageError as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        parser.print_usage(sys.stderr)
        return 2
    try:
        properties = load_command_config(args.command_config, warn=sys.stderr)
        settings = client_settings(properties, api_timeout_ms=api_timeout_ms(args))
        with Client(args.bootstrap_server, settings=settings) as client:
            return action(client, args, out)
    except (ClientError, ToolFailed) as exc:
        out.flush()
        print(f"{error_prefix}{exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly; the interpreter's final flush
        # of stdout goes nowhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
