"""`shoal console-producer`: one record per line of standard input, as Kafka 4.2's
kafka-console-producer.sh sends them.

  shoal console-producer --bootstrap-server HOST:PORT --topic T
      [--reader-property parse.key=true --reader-property key.separator=:]
      [--reader-property parse.headers=true --reader-property headers.delimiter=| ...]
      [--request-required-acks 1] [--compression-codec [gzip]] [--sync]
      [--command-property KEY=VALUE ...] [--command-config FILE]

Kafka 4.2's option names, and the older ones it still takes (--property,
--producer-property, --producer.config).

Lines are read as Kafka's LineMessageReader reads them (`LineReader`): a line ends
at `\\n`, `\\r` or `\\r\\n`; with `parse.headers` the headers come first, up to
`headers.delimiter` (default tab), as `k1:v1,k2:v2` (`headers.separator`, a regular
expression as in Kafka, and `headers.key.separator`); with `parse.key` the key comes
next, up to `key.separator` (default tab); the rest is the value. A key, value or
header value equal to `null.marker` is null. A line without a separator it needs is
an error ("No key separator found on line number 3: 'x'") unless
`ignore.error=true`, which takes the line as having no key (or headers).

The records go out through confluent-kafka's Producer (as the console share
consumer does), with Kafka's console defaults: acks -1, linger 1000 ms, request
timeout 1500 ms, 3 retries 100 ms apart, no compression (`--compression-codec`
alone: gzip). `--sync` waits for each record's acknowledgement before the next.

Exit 0 at the end of input with every record acknowledged; 1 when a record failed
(each failure printed as Kafka prints it, "Error when sending message to topic T
with key: ..."; Kafka's tool exits 0 then), a line could not be parsed, the broker
was unreachable or confluent-kafka is missing; 2 for a bad command line.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from shoal.cli.console_share_consumer import ClientMissing, command_config_properties, import_client
from shoal.cli.kafka_options import ToolFailed
from shoal.cli.message_format import FormatError, pairs
from shoal.cli.versions import add_version_option

PROG = "shoal console-producer"
COMPRESSION_CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
FLUSH_WAIT_S_MIN = 30.0
"""At the end of input, how long at least to wait for outstanding acknowledgements
(four request timeouts if that is longer); records still unacknowledged then are
reported and the exit status is 1."""


class LineError(Exception):
    """A line the reader cannot take (Kafka's KafkaException), worded as Kafka's."""


@dataclass(frozen=True)
class Record:
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


@dataclass
class LineReader:
    """Kafka's LineMessageReader, as a parser of one line at a time."""

    parse_key: bool = False
    key_separator: str = "\t"
    parse_headers: bool = False
    headers_delimiter: str = "\t"
    headers_separator: str = ","
    headers_key_separator: str = ":"
    ignore_error: bool = False
    null_marker: str | None = None
    line_number: int = 0

    @classmethod
    def from_properties(cls, properties: dict[str, str]) -> LineReader:
        reader = cls()
        for key, value in properties.items():
            if key in ("parse.key", "parse.headers", "ignore.error"):
                setattr(reader, key.replace(".", "_"), value.strip().lower() == "true")
            elif key in (
                "key.separator",
                "headers.delimiter",
                "headers.separator",
                "headers.key.separator",
                "null.marker",
            ):
                setattr(reader, key.replace(".", "_"), value)
            else:
                raise LineError(f"unknown --property {key!r} of the line reader")
        reader.check()
        return reader

    def check(self) -> None:
        """Kafka's refusals of separators that would be ambiguous."""
        pairs_equal = [
            (
                "headers.delimiter",
                self.headers_delimiter,
                "headers.separator",
                self.headers_separator,
            ),
            (
                "headers.delimiter",
                self.headers_delimiter,
                "headers.key.separator",
                self.headers_key_separator,
            ),
            (
                "headers.separator",
                self.headers_separator,
                "headers.key.separator",
                self.headers_key_separator,
            ),
            ("null.marker", self.null_marker, "key.separator", self.key_separator),
            ("null.marker", self.null_marker, "headers.separator", self.headers_separator),
            ("null.marker", self.null_marker, "headers.delimiter", self.headers_delimiter),
            ("null.marker", self.null_marker, "headers.key.separator", self.headers_key_separator),
        ]
        for first, a, second, b in pairs_equal:
            if a is not None and a == b:
                raise LineError(f"{first} and {second} may not be equal")

    def record(self, line: str) -> Record:
        self.line_number += 1
        headers = self._part(
            self.parse_headers, line, 0, self.headers_delimiter, "headers delimiter"
        )
        start = 0 if headers is None else len(headers) + len(self.headers_delimiter)
        key = self._part(self.parse_key, line, start, self.key_separator, "key separator")
        value = line[start + (0 if key is None else len(key) + len(self.key_separator)) :]
        return Record(
            key=None if key is None or key == self.null_marker else key.encode("utf-8"),
            value=None if value == self.null_marker else value.encode("utf-8"),
            headers=[]
            if headers is None or headers == self.null_marker
            else self._headers(headers),
        )

    def _part(self, enabled: bool, line: str, start: int, mark: str, name: str) -> str | None:
        if not enabled:
            return None
        index = line.find(mark, start)
        if index < 0:
            if self.ignore_error:
                return None
            raise LineError(f"No {name} found on line number {self.line_number}: '{line}'")
        return line[start:index]

    def _headers(self, text: str) -> list[tuple[str, bytes | None]]:
        parts = re.split(self.headers_separator, text)
        if len(parts) > 1:  # Java's split drops trailing empty strings when it split
            while parts and parts[-1] == "":
                parts.pop()
        out: list[tuple[str, bytes | None]] = []
        for pair in parts:
            index = pair.find(self.headers_key_separator)
            if index < 0:
                if self.ignore_error:
                    out.append((pair, None))
                    continue
                raise LineError(
                    f"No header key separator found in pair '{pair}' on line number "
                    f"{self.line_number}"
                )
            name = pair[:index]
            if name == self.null_marker:
                raise LineError(
                    f"Header keys should not be equal to the null marker '{self.null_marker}' "
                    "as they can't be null"
                )
            value = pair[index + len(self.headers_key_separator) :]
            out.append((name, None if value == self.null_marker else value.encode("utf-8")))
        return out


def lines(stream: IO[bytes]) -> Iterator[str]:
    """Lines of UTF-8 input as Java's BufferedReader.readLine gives them: ended by
    `\\n`, `\\r` or `\\r\\n`, malformed bytes replaced."""
    for raw in iter(stream.readline, b""):
        text = raw.decode("utf-8", errors="replace")
        text = text.removesuffix("\n").removesuffix("\r")
        yield from text.split("\r")


def add_parser(commands: Any) -> None:
    parser = commands.add_parser(
        "console-producer",
        help="send lines of standard input to a topic (kafka-console-producer.sh)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]", help="REQUIRED")
    parser.add_argument("--topic", help="REQUIRED: the topic to produce to")
    parser.add_argument(
        "--reader-property",
        "--property",
        dest="property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="line reader property: parse.key, key.separator, parse.headers, "
        "headers.delimiter, headers.separator, headers.key.separator, null.marker, ignore.error",
    )
    parser.add_argument(
        "--command-property",
        "--producer-property",
        dest="producer_property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="producer property (Kafka 4.2's name; --producer-property is the older one)",
    )
    parser.add_argument("--command-config", "--producer.config", metavar="FILE")
    parser.add_argument(
        "--request-required-acks", default="-1", metavar="ACKS", help="acks (default -1)"
    )
    parser.add_argument(
        "--compression-codec",
        nargs="?",
        const="gzip",
        default=None,
        metavar="CODEC",
        help="none, gzip (when given alone), snappy, lz4 or zstd",
    )
    parser.add_argument("--sync", action="store_true", help="send each record synchronously")
    parser.add_argument("--batch-size", type=int, default=16384, metavar="BYTES")
    parser.add_argument(
        "--timeout", type=int, default=1000, metavar="MS", help="linger.ms (default 1000)"
    )
    parser.add_argument("--request-timeout-ms", type=int, default=1500, metavar="MS")
    parser.add_argument("--message-send-max-retries", type=int, default=3, metavar="N")
    parser.add_argument("--retry-backoff-ms", type=int, default=100, metavar="MS")
    add_version_option(parser)
    parser.set_defaults(run=run)


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    codec = args.compression_codec
    if codec is not None and codec not in COMPRESSION_CODECS:
        raise LineError(f"--compression-codec must be one of {', '.join(COMPRESSION_CODECS)}")
    settings: dict[str, Any] = {
        "client.id": "console-producer",
        "acks": args.request_required_acks,
        "compression.type": codec or "none",
        "batch.size": args.batch_size,
        "linger.ms": args.timeout,
        "request.timeout.ms": args.request_timeout_ms,
        "message.send.max.retries": args.message_send_max_retries,
        "retry.backoff.ms": args.retry_backoff_ms,
    }
    settings.update(command_config_properties(args.command_config))
    settings.update(pairs(args.producer_property, "--producer-property"))
    settings["bootstrap.servers"] = args.bootstrap_server
    return settings


def run(args: argparse.Namespace, *, stdin: IO[bytes] | None = None) -> int:
    try:
        missing = [n for n in ("bootstrap_server", "topic") if getattr(args, n) is None]
        if missing:
            raise LineError(f'Missing required argument "[{missing[0].replace("_", "-")}]"')
        reader = LineReader.from_properties(pairs(args.property, "--property"))
        settings = _settings(args)
    except (LineError, FormatError) as exc:
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
    failures: list[str] = []

    def delivered(error: Any, message: Any) -> None:
        if error is not None:
            key = message.key()
            shown = "null" if key is None else key.decode("utf-8", errors="replace")
            size = len(message.value() or b"")
            failures.append(
                f"Error when sending message to topic {message.topic()} with key: {shown}, "
                f"value: {size} bytes with error: {error.str()}"
            )
            print(failures[-1], file=sys.stderr)

    settings["log_level"] = 3
    try:
        producer = ck.Producer(settings)
    except (ck.KafkaException, ValueError, TypeError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    status = 0
    try:
        for record in _records(reader, lines(stdin or sys.stdin.buffer)):
            _produce(producer, args.topic, record, delivered)
            if args.sync:
                producer.flush()
    except LineError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        status = 1
    except KeyboardInterrupt:
        pass
    except ck.KafkaException as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        status = 1
    finally:
        left = producer.flush(max(FLUSH_WAIT_S_MIN, args.request_timeout_ms / 1000 * 4))
        if left:
            print(f"{PROG}: {left} records were not acknowledged", file=sys.stderr)
            status = 1
    return 1 if failures else status


def _records(reader: LineReader, source: Iterable[str]) -> Iterator[Record]:
    for line in source:
        yield reader.record(line)


def _produce(producer: Any, topic: str, record: Record, delivered: Any) -> None:
    while True:
        try:
            producer.produce(
                topic,
                value=record.value,
                key=record.key,
                headers=record.headers or None,
                on_delivery=delivered,
            )
            producer.poll(0)
            return
        except BufferError:  # the local queue is full: let deliveries drain it
            producer.poll(0.1)
