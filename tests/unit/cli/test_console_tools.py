"""The console producer's line reader (Kafka's LineMessageReader) and the console
consumers' formatter (Kafka's DefaultMessageFormatter), without a broker."""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import pytest

from shoal.cli.console_producer import LineError, LineReader, Record, lines
from shoal.cli.message_format import FormatError, formatter_from


def test_plain_lines_are_values() -> None:
    reader = LineReader()
    assert reader.record("a\tb") == Record(None, b"a\tb")
    assert reader.record("") == Record(None, b"")


def test_keys_headers_and_the_null_marker() -> None:
    reader = LineReader.from_properties(
        {"parse.key": "true", "parse.headers": "TRUE", "null.marker": "<null>"}
    )
    assert reader.record("h1:v1,h2:<null>\tk\tv\tw") == Record(
        b"k", b"v\tw", [("h1", b"v1"), ("h2", None)]
    )
    assert reader.record("<null>\t<null>\t<null>") == Record(None, None, [])
    reader = LineReader.from_properties({"parse.key": "true", "key.separator": "::"})
    assert reader.record("a::b::c") == Record(b"a", b"b::c")


def test_missing_separators_are_kafkas_errors_unless_ignored() -> None:
    reader = LineReader.from_properties({"parse.key": "true"})
    reader.record("k\tv")
    with pytest.raises(LineError, match="No key separator found on line number 2: 'novalue'"):
        reader.record("novalue")
    lenient = LineReader.from_properties({"parse.key": "true", "ignore.error": "true"})
    assert lenient.record("novalue") == Record(None, b"novalue")
    headers = LineReader.from_properties({"parse.headers": "true"})
    with pytest.raises(LineError, match="No header key separator found in pair 'x'"):
        headers.record("x\tv")
    with pytest.raises(LineError, match="No header key separator found in pair ''"):
        headers.record("\tv")  # Java splits "" into [""]: one empty pair
    assert headers.record("a:1,,\tv") == Record(None, b"v", [("a", b"1")])


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({"headers.delimiter": ","}, "headers.delimiter and headers.separator may not be equal"),
        ({"null.marker": "\t"}, "null.marker and key.separator may not be equal"),
        ({"headers.separator": ":"}, "headers.separator and headers.key.separator"),
    ],
)
def test_ambiguous_separators_are_refused(properties: dict[str, str], message: str) -> None:
    with pytest.raises(LineError, match=message):
        LineReader.from_properties(properties)


def test_lines_end_as_javas_readline_ends_them() -> None:
    data = b"one\ntwo\r\nthree\rfour\n\nlast\xff"
    assert list(lines(io.BytesIO(data))) == ["one", "two", "three", "four", "", "last\ufffd"]


@dataclass
class FakeMessage:
    """What the formatter reads of a confluent-kafka Message."""

    key_: bytes | None = b"k"
    value_: bytes | None = b"v"
    headers_: list[tuple[str, bytes | None]] | None = field(default_factory=list)
    epoch: int | None = None

    def timestamp(self) -> tuple[int, int]:
        return (1, 1700000000000)

    def partition(self) -> int:
        return 2

    def offset(self) -> int:
        return 7

    def headers(self) -> list[tuple[str, bytes | None]] | None:
        return self.headers_

    def key(self) -> bytes | None:
        return self.key_

    def value(self) -> bytes | None:
        return self.value_

    def leader_epoch(self) -> int | None:
        return self.epoch


def test_fields_in_kafkas_order() -> None:
    every = {
        f"print.{name}": "true"
        for name in ("timestamp", "partition", "offset", "epoch", "headers", "key")
    }
    formatter = formatter_from(every)
    message = FakeMessage(headers_=[("a", b"1"), ("b", None)], epoch=3)
    assert formatter.format(message) == (
        b"CreateTime:1700000000000\tPartition:2\tOffset:7\tEpoch:3\ta:1,b:null\tk\tv\n"
    )
    assert formatter.format(FakeMessage(value_=None)) == (
        b"CreateTime:1700000000000\tPartition:2\tOffset:7\tEpoch:NOT_PRESENT\tNO_HEADERS\tk\tnull\n"
    )


def test_the_last_field_ends_the_line_and_separators_are_taken_as_typed() -> None:
    keys_only = formatter_from({"print.key": "true", "print.value": "false", "line.separator": "X"})
    assert keys_only.format(FakeMessage()) == b"kX"  # Kafka 4.2's output
    assert formatter_from({"print.value": "false"}).format(FakeMessage()) == b""
    typed = formatter_from({"print.key": "yes", "key.separator": "\\t", "null.literal": "-"})
    assert typed.format(FakeMessage(key_=None)) == b"v\n"  # "yes" is not "true"
    typed.print_key = True
    assert typed.format(FakeMessage(key_=None)) == b"-\\tv\n"
    assert formatter_from({"key.separator": "\\t"}, escapes=True).key_separator == b"\t"
    with pytest.raises(FormatError, match="unknown --property"):
        formatter_from({"key.deserializer": "x"})


@pytest.mark.parametrize("flag", ["--command-property", "--producer-property"])
def test_the_producers_properties_take_kafka_4_2s_name_and_the_older_one(flag: str) -> None:
    """Kafka 4.2's kafka-console-producer.sh names it --command-property (KIP-1147) and
    still takes --producer-property; both reach the producer's settings."""
    from shoal.cli.console_producer import _settings
    from shoal.cli.main import build_parser

    args = build_parser().parse_args(
        ["console-producer", "--bootstrap-server", "b:9092", "--topic", "t", flag, "linger.ms=7"]
    )
    assert _settings(args)["linger.ms"] == "7"
