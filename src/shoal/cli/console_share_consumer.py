"""`shoal console-share-consumer`: read a topic through a share group and print it.

Modelled on Kafka's `kafka-console-share-consumer.sh`: joins share group `--group`
(default "console-share-consumer") on `--topic`, prints each record's value (UTF-8,
undecodable bytes replaced) on its own line, and acknowledges every record it
printed with `--ack` (accept by default; `--release` and `--reject` are Kafka's
spellings). Acknowledgements are explicit, per record, and reach the broker with
the next poll or at close.

Exit: after `--max-messages` records, after `--timeout-ms` without a record, or on
Ctrl-C / SIGTERM; the consumer is always closed (pending acknowledgements sent,
group left, records held but not printed released). "Processed a total of N
messages" goes to stderr as Kafka's tool prints it. Status 0 then; 1 when the
broker cannot be reached, a fatal client error occurs, or confluent-kafka is not
installed (`pip install 'shoal[clients]'`); 2 for bad arguments.

Formatting is Kafka's DefaultMessageFormatter (cli/message_format.py, shared with
`shoal console-consumer`): `--property print.key=true` and the rest; here separators
may be typed as escapes (`key.separator=\\t`); `--print-key` and
`--print-delivery-count` are shortcuts.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import IO, Any

from shoal.cli.kafka_options import ToolFailed, UsageError, client_security, load_command_config
from shoal.cli.message_format import (
    FormatError,
    MessageFormatter,
    formatter_from,
    pairs,
    write_bytes,
)
from shoal.cli.versions import add_version_option
from shoal.client.security import is_security_property
from shoal.clock import Clock, SystemClock

PROG = "shoal console-share-consumer"
DEFAULT_GROUP = "console-share-consumer"
INSTALL_HINT = "pip install 'shoal[clients]'"
_ACKS = ("accept", "release", "reject")


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "console-share-consumer",
        help="consume a topic through a share group and print it",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--bootstrap-server", required=True, help="HOST:PORT[,HOST:PORT...]")
    parser.add_argument("--topic", required=True, help="the topic to consume from")
    parser.add_argument(
        "--group", default=DEFAULT_GROUP, help=f"share group id (default {DEFAULT_GROUP})"
    )
    parser.add_argument(
        "--ack",
        choices=_ACKS,
        default=None,
        help="how each printed record is acknowledged (default accept)",
    )
    parser.add_argument("--release", action="store_true", help="same as --ack release")
    parser.add_argument("--reject", action="store_true", help="same as --ack reject")
    parser.add_argument(
        "--max-messages", type=int, default=None, help="exit after this many records"
    )
    parser.add_argument(
        "--timeout-ms", type=int, default=None, help="exit after this long without a record"
    )
    parser.add_argument(
        "--formatter-property",
        "--property",
        dest="property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="formatter property, e.g. print.key=true (repeatable)",
    )
    parser.add_argument("--print-key", action="store_true", help="same as print.key=true")
    parser.add_argument(
        "--print-delivery-count", action="store_true", help="same as print.delivery=true"
    )
    parser.add_argument(
        "--command-property",
        "--consumer-property",
        dest="consumer_property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="librdkafka share-consumer setting (repeatable)",
    )
    parser.add_argument(
        "--command-config",
        "--consumer-config",
        dest="command_config",
        metavar="FILE",
        help="client properties (security.protocol, ssl.*, sasl.*: Java or librdkafka names)",
    )
    parser.add_argument(
        "--connect-timeout-ms",
        type=int,
        default=10_000,
        help="give up when the broker cannot be reached within this (default 10000)",
    )
    add_version_option(parser)
    parser.set_defaults(run=run)


def _pairs(items: list[str], what: str) -> dict[str, str]:
    try:
        return pairs(items, what)
    except FormatError as exc:
        raise UsageError(str(exc)) from None


def build_formatter(args: argparse.Namespace) -> MessageFormatter:
    try:
        formatter = formatter_from(pairs(args.property, "--property"), escapes=True)
    except FormatError as exc:
        raise UsageError(str(exc)) from None
    if args.print_key:
        formatter.print_key = True
    if args.print_delivery_count:
        formatter.print_delivery = True
    return formatter


def ack_name(args: argparse.Namespace) -> str:
    chosen = {name for name, flag in (("release", args.release), ("reject", args.reject)) if flag}
    if args.ack is not None:
        chosen.add(args.ack)
    if len(chosen) > 1:
        raise UsageError("at most one of --ack, --release and --reject may be given")
    return chosen.pop() if chosen else "accept"


def import_client() -> Any:
    try:
        import confluent_kafka
        import confluent_kafka.admin
    except ImportError as exc:
        raise ClientMissing(
            f"{PROG} needs confluent-kafka ({exc}); install it with: {INSTALL_HINT}"
        ) from exc
    return confluent_kafka


class ClientMissing(Exception):
    pass


JAVA_ONLY_KEYS = frozenset({"default.api.timeout.ms"})
"""Java client keys the other tools' `--command-config` takes that librdkafka has no
property for (it refuses unknown ones): dropped with a warning, so one file serves
every tool."""


def command_config_properties(path: str | None) -> dict[str, str]:
    """A `--command-config` file as librdkafka settings: its security keys (Java or
    librdkafka names) through `ClientSecurity`, the other keys as they are, less
    `JAVA_ONLY_KEYS`."""
    properties = load_command_config(path, warn=sys.stderr)
    security = client_security(properties)
    others: dict[str, str] = {}
    for key, value in properties.items():
        if key in JAVA_ONLY_KEYS:
            print(
                f"WARN The configuration '{key}' has no librdkafka equivalent; ignored.",
                file=sys.stderr,
            )
        elif not is_security_property(key):
            others[key] = value
    if not any(is_security_property(k) for k in properties):
        return others
    return {**others, **security.librdkafka_config()}


def run(args: argparse.Namespace, *, out: IO[str] | None = None) -> int:
    out = sys.stdout if out is None else out
    try:
        formatter = build_formatter(args)
        ack = ack_name(args)
        consumer_properties = {
            **command_config_properties(args.command_config),
            **_pairs(args.consumer_property, "--consumer-property"),
        }
        if args.max_messages is not None and args.max_messages < 1:
            raise UsageError("--max-messages must be at least 1")
        if args.timeout_ms is not None and args.timeout_ms < 0:
            raise UsageError("--timeout-ms must not be negative")
    except UsageError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    except ToolFailed as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    try:
        ck = import_client()
    except ClientMissing as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1

    try:
        topics = list_topics(
            ck, args.bootstrap_server, args.connect_timeout_ms / 1000, consumer_properties
        )
    except KeyboardInterrupt:
        print("Processed a total of 0 messages", file=sys.stderr)
        return 0
    if isinstance(topics, str):
        print(
            f"{PROG}: cannot reach the broker at {args.bootstrap_server}: {topics}",
            file=sys.stderr,
        )
        return 1
    if args.topic not in topics:
        print(f"{PROG}: warning: topic {args.topic!r} does not exist (yet)", file=sys.stderr)

    fatal: list[str] = []

    def on_error(error: Any) -> None:
        if error.fatal():
            fatal.append(str(error))
        else:
            print(f"{PROG}: warning: {error}", file=sys.stderr)

    settings: dict[str, Any] = {
        "client.id": "console-share-consumer",
        **consumer_properties,
        "bootstrap.servers": args.bootstrap_server,
        "group.id": args.group,
        "share.acknowledgement.mode": "explicit",
        "error_cb": on_error,
        "log_level": 3,  # librdkafka's own log: errors only; the rest via on_error
    }
    if args.max_messages is not None and "max.poll.records" not in consumer_properties:
        settings["max.poll.records"] = min(500, args.max_messages)
    try:
        consumer = ck.ShareConsumer(settings)
        consumer.subscribe([args.topic])
    except (ck.KafkaException, ValueError, TypeError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    ack_type = getattr(ck.AcknowledgeType, ack.upper())
    release = ck.AcknowledgeType.RELEASE
    loop = _Loop(
        consumer,
        formatter,
        ack_type,
        release,
        out,
        args.max_messages,
        args.timeout_ms,
        SystemClock(),
    )
    # Ctrl-C and SIGTERM only raise a flag, seen between records and after each poll
    # (at most 0.5 s away): a record printed is always acknowledged.
    previous = {
        signum: signal.signal(signum, loop.stop) for signum in (signal.SIGINT, signal.SIGTERM)
    }
    status = 0
    try:
        loop.run(lambda: bool(fatal))
    except KeyboardInterrupt:
        pass
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly; later writes to the closed
        # pipe (the interpreter's final flush) go nowhere.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except ck.KafkaException as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        status = 1
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        loop.release_unprinted()
        try:
            consumer.close()
        except (ck.KafkaException, RuntimeError) as exc:
            print(f"{PROG}: close failed: {exc}", file=sys.stderr)
            status = 1
    if fatal:
        print(f"{PROG}: fatal error: {fatal[0]}", file=sys.stderr)
        status = 1
    print(f"Processed a total of {loop.count} messages", file=sys.stderr)
    return status


def list_topics(
    ck: Any, bootstrap: str, timeout_s: float, properties: dict[str, str]
) -> set[str] | str:
    """The cluster's topic names if a Metadata request is answered within
    `timeout_s`, else why not.

    librdkafka retries unreachable brokers forever and a share consumer's poll just
    stays empty, so this asks once, up front, with a separate admin client."""
    errors: list[str] = []
    admin = ck.admin.AdminClient(
        {
            **{k: v for k, v in properties.items() if is_security_property(k)},
            "bootstrap.servers": bootstrap,
            "error_cb": lambda error: errors.append(error.str()),
            "reconnect.backoff.max.ms": 1000,
            "log_level": 0,  # the error callback and the exception say it all
        }
    )
    try:
        metadata = admin.list_topics(timeout=max(timeout_s, 0.1))
    except ck.KafkaException as exc:
        return "; ".join(dict.fromkeys([*errors, exc.args[0].str()]))
    return set(metadata.topics)


class _Loop:
    def __init__(
        self,
        consumer: Any,
        formatter: MessageFormatter,
        ack_type: Any,
        release: Any,
        out: IO[str],
        max_messages: int | None,
        timeout_ms: int | None,
        clock: Clock,
    ) -> None:
        self.consumer = consumer
        self.formatter = formatter
        self.ack_type = ack_type
        self.release = release
        self.out = out
        self.max_messages = max_messages
        self.timeout_ms = timeout_ms
        self.clock = clock
        self.count = 0
        self.batch: list[Any] = []
        self.unprinted_from = 0  # batch[unprinted_from:] is taken but not printed
        self.stopped = False

    def stop(self, signum: int, frame: FrameType | None) -> None:
        self.stopped = True

    def run(self, failed: Callable[[], bool]) -> None:
        last = self.clock.monotonic_ms()
        while not failed() and not self.stopped:
            if self.max_messages is not None and self.count >= self.max_messages:
                return
            wait = 0.5
            if self.timeout_ms is not None:
                left = self.timeout_ms - (self.clock.monotonic_ms() - last)
                if left <= 0:
                    return
                wait = min(wait, left / 1000)
            self.batch, self.unprinted_from = list(self.consumer.poll(wait)), 0
            if self.batch:
                last = self.clock.monotonic_ms()
            for index, message in enumerate(self.batch):
                error = message.error()
                if error is not None:
                    self.unprinted_from = index + 1
                    if error.fatal():
                        raise _kafka_exception(error)
                    print(f"{PROG}: warning: {error}", file=sys.stderr)
                    continue
                if self.stopped or (
                    self.max_messages is not None and self.count >= self.max_messages
                ):
                    return  # the rest is released at exit
                write_bytes(self.out, self.formatter.format(message))
                self.count += 1
                # Marked printed before the acknowledgement: interrupted in between,
                # the record is left unacknowledged, and close() releases it.
                self.unprinted_from = index + 1
                self.consumer.acknowledge(message, self.ack_type)

    def release_unprinted(self) -> None:
        """Records taken but not printed go back to the group at once."""
        pending = self.batch[self.unprinted_from :]
        self.batch, self.unprinted_from = [], 0
        for message in pending:
            if message.error() is None:
                self.consumer.acknowledge(message, self.release)


def _kafka_exception(error: Any) -> Exception:
    import confluent_kafka

    return confluent_kafka.KafkaException(error)
