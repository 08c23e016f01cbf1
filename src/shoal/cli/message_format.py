"""How the console consumers print a record: Kafka's DefaultMessageFormatter.

Fields in a fixed order, each but the last followed by `key.separator`:
timestamp (`CreateTime:1700000000000`, `LogAppendTime:...` or `NO_TIMESTAMP`),
`Partition:N`, `Offset:N`, `Delivery:N` (share consumers; `NOT_PRESENT` when the
record has none), `Epoch:N` (its leader epoch, `NOT_PRESENT` when unknown), the
headers (`k1:v1,k2:v2`, `NO_HEADERS` when none), the key, the value; the last field
printed is followed by `line.separator` instead (Kafka 4.2's writeSeparator), so
nothing at all is printed with every field off. A null key, value or header
value prints `null.literal`. Keys, values and header values are written as their
bytes (Kafka's default, no deserializer), so the output is bytes.

Properties (`--property key=value`): print.timestamp, print.key, print.value,
print.partition, print.offset, print.delivery, print.epoch, print.headers
(true/false); key.separator, line.separator, headers.separator, null.literal
(taken as typed, as Kafka takes them). The deserializer
properties (key.deserializer, ...) are refused: Shoal prints bytes only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Any

BOOL_PROPERTIES = {
    "print.timestamp": "print_timestamp",
    "print.key": "print_key",
    "print.value": "print_value",
    "print.partition": "print_partition",
    "print.offset": "print_offset",
    "print.delivery": "print_delivery",
    "print.epoch": "print_epoch",
    "print.headers": "print_headers",
}
TEXT_PROPERTIES = {
    "key.separator": "key_separator",
    "line.separator": "line_separator",
    "headers.separator": "headers_separator",
    "null.literal": "null_literal",
}
TIMESTAMP_TYPES = {1: "CreateTime", 2: "LogAppendTime"}
"""librdkafka's TIMESTAMP_* values by Kafka's name (0: no timestamp)."""


class FormatError(ValueError):
    """A formatter property Shoal does not take, or a bad value."""


@dataclass
class MessageFormatter:
    print_timestamp: bool = False
    print_key: bool = False
    print_value: bool = True
    print_partition: bool = False
    print_offset: bool = False
    print_delivery: bool = False
    print_epoch: bool = False
    print_headers: bool = False
    key_separator: bytes = b"\t"
    line_separator: bytes = b"\n"
    headers_separator: bytes = b","
    null_literal: bytes = b"null"

    def format(self, message: Any) -> bytes:
        """A confluent-kafka Message (or anything with its methods) as Kafka prints it."""
        fields: list[bytes] = []
        if self.print_timestamp:
            kind, stamp = message.timestamp()
            name = TIMESTAMP_TYPES.get(kind)
            fields.append(f"{name}:{stamp}".encode() if name else b"NO_TIMESTAMP")
        if self.print_partition:
            fields.append(b"Partition:%d" % message.partition())
        if self.print_offset:
            fields.append(b"Offset:%d" % message.offset())
        if self.print_delivery:
            count = _optional(message, "delivery_count")
            fields.append(b"Delivery:NOT_PRESENT" if count is None else b"Delivery:%d" % count)
        if self.print_epoch:
            epoch = _optional(message, "leader_epoch")
            fields.append(b"Epoch:NOT_PRESENT" if epoch is None else b"Epoch:%d" % epoch)
        if self.print_headers:
            headers = message.headers() or []
            fields.append(
                self.headers_separator.join(
                    _bytes(name) + b":" + self._bytes_or_null(value) for name, value in headers
                )
                if headers
                else b"NO_HEADERS"
            )
        if self.print_key:
            fields.append(self._bytes_or_null(message.key()))
        if self.print_value:
            fields.append(self._bytes_or_null(message.value()))
        # each field is followed by the key separator, the last by the line separator
        return self.key_separator.join(fields) + self.line_separator if fields else b""

    def _bytes_or_null(self, data: bytes | str | None) -> bytes:
        return self.null_literal if data is None else _bytes(data)


def _bytes(data: bytes | str) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


def _optional(message: Any, method: str) -> int | None:
    reader = getattr(message, method, None)
    value = reader() if reader is not None else None
    return None if value is None or value < 0 else int(value)


def unescape(text: str) -> str:
    """`\\t`, `\\n` and friends as typed on a command line."""
    return text.encode("utf-8").decode("unicode_escape") if "\\" in text else text


def pairs(items: Iterable[str], what: str) -> dict[str, str]:
    """KEY=VALUE arguments (the value may hold '=')."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise FormatError(f"{what} takes KEY=VALUE, got {item!r}")
        out[key.strip()] = value
    return out


def formatter_from(properties: dict[str, str], *, escapes: bool = False) -> MessageFormatter:
    """The formatter of `--property` pairs. Kafka takes separators as typed (`\\t` is two
    characters); with `escapes` they are read as escapes (the share consumer's way)."""
    formatter = MessageFormatter()
    for key, value in properties.items():
        if key in BOOL_PROPERTIES:
            # Kafka reads "true" (any case) as true and anything else as false
            setattr(formatter, BOOL_PROPERTIES[key], value.strip().lower() == "true")
        elif key in TEXT_PROPERTIES:
            text = unescape(value) if escapes else value
            setattr(formatter, TEXT_PROPERTIES[key], text.encode("utf-8"))
        else:
            known = ", ".join([*BOOL_PROPERTIES, *TEXT_PROPERTIES])
            raise FormatError(f"unknown --property {key!r} (known: {known})")
    return formatter


def write_bytes(out: IO[str], data: bytes) -> None:
    """Write a formatted record to a text stream's bytes (stdout), or, for a stream
    without bytes (a StringIO), as UTF-8 text; then flush."""
    out.flush()
    buffer = getattr(out, "buffer", None)
    if buffer is not None:
        buffer.write(data)
        buffer.flush()
    else:
        out.write(data.decode("utf-8", errors="replace"))
        out.flush()
