"""`shoal console-consumer`: print a topic's records, as Kafka 4.2's
kafka-console-consumer.sh prints them.

  shoal console-consumer --bootstrap-server HOST:PORT (--topic T | --include REGEX)
      [--from-beginning] [--partition N [--offset earliest|latest|N]] [--group G]
      [--max-messages N] [--timeout-ms MS] [--isolation-level read_committed]
      [--formatter-property print.key=true ...] [--formatter CLASS] [--formatter-config FILE]
      [--command-property KEY=VALUE ...] [--command-config FILE] [--skip-message-on-error]

Kafka 4.2's option names, and the older ones it still takes (--property,
--consumer-property, --consumer.config).

Kafka's rules: exactly one of --topic and --include; --partition needs --topic
and reads that partition alone (assigned, no group membership), from --offset
(`earliest`, `latest` or a non-negative number; default the end, or the start with
--from-beginning); otherwise the consumer joins --group (default
`console-consumer-<random>`, which commits nothing unless told to) and starts, with
no committed offset, at the end (or the start with --from-beginning). Isolation
level read_uncommitted unless told (Kafka's default; librdkafka's is the other).

Records print through Kafka's DefaultMessageFormatter (cli/message_format.py),
the only formatter Shoal has (`--formatter` may name it). "Processed a total of N
messages" goes to stderr at the end, as Kafka prints it. The consumer is
confluent-kafka's (as the console share consumer's).

Exit 0 after --max-messages records, after --timeout-ms without one (Kafka logs a
TimeoutException then), at Ctrl-C / SIGTERM; 1 when the broker cannot be reached or a
fatal client error occurs, or confluent-kafka is missing; 2 for a bad command line
(Kafka's message; Kafka exits 1).
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
from types import FrameType
from typing import IO, Any

from shoal.cli.console_share_consumer import (
    ClientMissing,
    command_config_properties,
    import_client,
    list_topics,
)
from shoal.cli.kafka_options import ToolFailed, UsageError, parse_properties
from shoal.cli.message_format import (
    FormatError,
    MessageFormatter,
    formatter_from,
    pairs,
    write_bytes,
)
from shoal.cli.versions import add_version_option
from shoal.clock import SystemClock

PROG = "shoal console-consumer"
FORMATTERS = frozenset(
    {
        "org.apache.kafka.tools.consumer.DefaultMessageFormatter",
        "kafka.tools.DefaultMessageFormatter",
    }
)
"""The formatter class names Shoal takes: Kafka's default one, by its two names."""
POLL_S = 0.5


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "console-consumer",
        help="print a topic's records (kafka-console-consumer.sh)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]", help="REQUIRED")
    parser.add_argument("--topic", help="the topic to consume")
    parser.add_argument("--include", metavar="REGEX", help="the topics to consume, a pattern")
    parser.add_argument("--partition", type=int, help="read this partition alone")
    parser.add_argument("--offset", help="with --partition: earliest, latest or an offset")
    parser.add_argument("--from-beginning", action="store_true")
    parser.add_argument("--group", help="the consumer group")
    parser.add_argument("--max-messages", type=int, metavar="N")
    parser.add_argument("--timeout-ms", type=int, metavar="MS")
    parser.add_argument(
        "--isolation-level", choices=("read_committed", "read_uncommitted"), default=None
    )
    parser.add_argument(
        "--formatter-property",
        "--property",
        dest="property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
    )
    parser.add_argument("--formatter", metavar="CLASS")
    parser.add_argument("--formatter-config", metavar="FILE")
    parser.add_argument(
        "--command-property",
        "--consumer-property",
        dest="consumer_property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
    )
    parser.add_argument("--command-config", "--consumer.config", metavar="FILE")
    parser.add_argument("--skip-message-on-error", action="store_true")
    parser.add_argument(
        "--connect-timeout-ms",
        type=int,
        default=10_000,
        help="give up when the broker cannot be reached within this (default 10000)",
    )
    add_version_option(parser)
    parser.set_defaults(run=run)


def check(args: argparse.Namespace) -> None:
    """Kafka's ConsoleConsumerOptions checks, with its messages."""
    if (args.topic is None) == (args.include is None):
        raise UsageError("Exactly one of --include/--topic is required. ")
    if args.partition is not None:
        if args.topic is None:
            raise UsageError("The topic is required when partition is specified.")
        if args.from_beginning and args.offset is not None:
            raise UsageError("Options from-beginning and offset cannot be specified together.")
    elif args.offset is not None:
        raise UsageError("The partition is required when offset is specified.")
    if args.bootstrap_server is None:
        raise UsageError('Missing required argument "[bootstrap-server]"')
    if args.group is not None and args.partition is not None:
        raise UsageError("Options group and partition cannot be specified together.")
    if args.formatter is not None and args.formatter not in FORMATTERS:
        raise UsageError(
            f"--formatter {args.formatter}: Shoal has only Kafka's DefaultMessageFormatter"
        )
    if args.max_messages is not None and args.max_messages < 1:
        args.max_messages = None  # Kafka: -1 (any non-positive) means no limit


def start_offset(args: argparse.Namespace, ck: Any) -> int:
    """Where an assigned partition is read from: Kafka's parseOffset."""
    if args.offset is None:
        return int(ck.OFFSET_BEGINNING if args.from_beginning else ck.OFFSET_END)
    text = args.offset.lower()
    if text == "earliest":
        return int(ck.OFFSET_BEGINNING)
    if text == "latest":
        return int(ck.OFFSET_END)
    try:
        offset = int(args.offset)
    except ValueError:
        offset = -1
    if offset < 0:
        raise UsageError(
            f"The provided offset value '{args.offset}' is incorrect. Valid values are "
            "'earliest', 'latest', or a non-negative long."
        )
    return offset


def _formatter(args: argparse.Namespace) -> MessageFormatter:
    properties: dict[str, str] = {}
    if args.formatter_config is not None:
        try:
            with open(args.formatter_config, encoding="utf-8") as file:
                properties.update(parse_properties(file.read()))
        except OSError as exc:
            raise ToolFailed(
                f"cannot read --formatter-config {args.formatter_config}: {exc}"
            ) from exc
    properties.update(pairs(args.property, "--property"))
    return formatter_from(properties)


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    settings: dict[str, Any] = {
        **command_config_properties(args.command_config),
        **pairs(args.consumer_property, "--consumer-property"),
    }
    reset = settings.get("auto.offset.reset")
    wanted = "earliest" if args.from_beginning else "latest"
    if reset is not None and args.from_beginning and reset != "earliest":
        raise UsageError(
            f"Can't simultaneously specify --from-beginning and 'auto.offset.reset={reset}', "
            "please remove one option"
        )
    settings.setdefault("auto.offset.reset", wanted)
    settings["bootstrap.servers"] = args.bootstrap_server
    settings.setdefault("client.id", "console-consumer")
    if args.isolation_level is not None:
        settings["isolation.level"] = args.isolation_level
    settings.setdefault("isolation.level", "read_uncommitted")
    given = {g for g in (args.group, settings.get("group.id")) if g is not None}
    if len(given) > 1:
        raise UsageError(
            "The group ids provided in different places (directly using '--group', via "
            "'--consumer-property', or via '--consumer.config') do not match. Detected group "
            f"ids: {', '.join(sorted(given))}"
        )
    if given:
        settings["group.id"] = given.pop()
    else:
        settings["group.id"] = f"console-consumer-{random.randrange(100000)}"
        settings.setdefault("enable.auto.commit", "false")
    return settings


def run(args: argparse.Namespace, *, out: IO[str] | None = None) -> int:
    out = sys.stdout if out is None else out
    try:
        check(args)
        formatter = _formatter(args)
        settings = _settings(args)
    except (UsageError, FormatError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    except ToolFailed as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    try:
        ck = import_client()
        offset = start_offset(args, ck) if args.partition is not None else None
    except ClientMissing as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    except UsageError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    topics = list_topics(ck, args.bootstrap_server, args.connect_timeout_ms / 1000, settings)
    if isinstance(topics, str):
        print(
            f"{PROG}: cannot reach the broker at {args.bootstrap_server}: {topics}", file=sys.stderr
        )
        return 1
    fatal: list[str] = []

    def on_error(error: Any) -> None:
        if error.fatal():
            fatal.append(str(error))

    settings.update({"error_cb": on_error, "log_level": 3})
    try:
        consumer = ck.Consumer(settings)
        if args.partition is not None:
            consumer.assign([ck.TopicPartition(args.topic, args.partition, offset)])
        else:
            consumer.subscribe([args.topic if args.topic is not None else f"^{args.include}"])
    except (ck.KafkaException, ValueError, TypeError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    stopped: list[int] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        stopped.append(signum)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    count, status = 0, 0
    clock = SystemClock()
    last = clock.monotonic_ms()
    try:
        while not stopped and not fatal:
            if args.max_messages is not None and count >= args.max_messages:
                break
            wait = POLL_S
            if args.timeout_ms is not None:
                left = args.timeout_ms - (clock.monotonic_ms() - last)
                if left <= 0:
                    print(
                        "ERROR Error processing message, terminating consumer process: "
                        "org.apache.kafka.common.errors.TimeoutException",
                        file=sys.stderr,
                    )
                    break
                wait = min(wait, left / 1000)
            message = consumer.poll(wait)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() == ck.KafkaError._PARTITION_EOF:
                    continue
                if error.fatal():
                    raise ck.KafkaException(error)
                print(f"{PROG}: warning: {error}", file=sys.stderr)
                continue
            last = clock.monotonic_ms()
            count += 1
            try:
                write_bytes(out, formatter.format(message))
            except (ValueError, UnicodeError) as exc:
                if not args.skip_message_on_error:
                    raise
                print(
                    f"ERROR Error processing message, skipping this message: {exc}", file=sys.stderr
                )
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except ck.KafkaException as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        status = 1
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        try:
            consumer.close()
        except (ck.KafkaException, RuntimeError) as exc:
            print(f"{PROG}: close failed: {exc}", file=sys.stderr)
            status = 1
    if fatal:
        print(f"{PROG}: fatal error: {fatal[0]}", file=sys.stderr)
        status = 1
    print(f"Processed a total of {count} messages", file=sys.stderr)
    return status
