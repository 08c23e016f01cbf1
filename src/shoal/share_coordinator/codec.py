"""Bytes of `__share_group_state` records: Kafka's coordinator record format.

A record's key is an int16 record type (0 ShareSnapshot, 1 ShareUpdate) followed by
the key struct; its value is an int16 value version (0) followed by the value struct,
or absent (a tombstone). The structs are written and read by `kio.serial` from the
dataclasses in `records`; nothing here encodes a field by hand.

Errors: bytes that do not form a record raise `RecordDecodeError`; a key of an
unknown record type raises `UnknownRecordTypeError`, also a
`coordinator.log_sink.UnknownRecordType`, which loading logs and skips, as Kafka's
loader does.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Callable
from typing import Any

from kio.serial import entity_reader, entity_writer

from shoal.coordinator.log_sink import UnknownRecordType
from shoal.share_coordinator.records import (
    VALUE_VERSION,
    ShareCoordinatorRecord,
    ShareSnapshotKey,
    ShareSnapshotValue,
    ShareUpdateKey,
    ShareUpdateValue,
)

_INT16 = struct.Struct(">h")
_KEY_CLASSES: dict[int, type[ShareSnapshotKey] | type[ShareUpdateKey]] = {
    ShareSnapshotKey.RECORD_TYPE: ShareSnapshotKey,
    ShareUpdateKey.RECORD_TYPE: ShareUpdateKey,
}
_VALUE_CLASSES: dict[int, type[ShareSnapshotValue] | type[ShareUpdateValue]] = {
    ShareSnapshotKey.RECORD_TYPE: ShareSnapshotValue,
    ShareUpdateKey.RECORD_TYPE: ShareUpdateValue,
}
_READERS: dict[type, Callable[[Any, int], tuple[Any, int]]] = {
    cls: entity_reader(cls) for cls in (*_KEY_CLASSES.values(), *_VALUE_CLASSES.values())
}
_WRITERS: dict[type, Callable[[Any, Any], None]] = {
    cls: entity_writer(cls) for cls in (*_KEY_CLASSES.values(), *_VALUE_CLASSES.values())
}


class RecordDecodeError(ValueError):
    """The bytes are not a `__share_group_state` record."""


class UnknownRecordTypeError(UnknownRecordType, RecordDecodeError):
    """The key names a record type this coordinator does not know."""

    def __init__(self, record_type: int) -> None:
        super().__init__(f"unknown __share_group_state record type {record_type}")
        self.record_type = record_type


def encode(record: ShareCoordinatorRecord) -> tuple[bytes, bytes | None]:
    """The (key, value) bytes of a record; value None for a tombstone."""
    key = io.BytesIO()
    key.write(_INT16.pack(record.record_type))
    _WRITERS[type(record.key)](key, record.key)
    if record.value is None:
        return key.getvalue(), None
    value = io.BytesIO()
    value.write(_INT16.pack(VALUE_VERSION))
    _WRITERS[type(record.value)](value, record.value)
    return key.getvalue(), value.getvalue()


def decode(key: bytes, value: bytes | None) -> ShareCoordinatorRecord:
    """The record in (key, value) bytes. Raises `RecordDecodeError`."""
    record_type = _prefix(key, "key")
    key_class = _KEY_CLASSES.get(record_type)
    if key_class is None:
        raise UnknownRecordTypeError(record_type)
    decoded_key = _read(key_class, key, "key")
    if decoded_key.topic_id is None:
        raise RecordDecodeError(f"{key_class.__name__} has a null topic id")
    if value is None:
        return ShareCoordinatorRecord(key=decoded_key, value=None)
    version = _prefix(value, "value")
    if version != VALUE_VERSION:
        raise RecordDecodeError(
            f"{key_class.__name__} value version {version} is not {VALUE_VERSION}"
        )
    decoded_value = _read(_VALUE_CLASSES[record_type], value, "value")
    return ShareCoordinatorRecord(key=decoded_key, value=decoded_value)


def _prefix(data: bytes, what: str) -> int:
    if len(data) < _INT16.size:
        raise RecordDecodeError(f"record {what} of {len(data)} bytes has no version prefix")
    return int(_INT16.unpack_from(data, 0)[0])


def _read(cls: type, data: bytes, what: str) -> Any:
    try:
        decoded, size = _READERS[cls](memoryview(data)[_INT16.size :], 0)
    except Exception as exc:  # kio raises several types for malformed input
        raise RecordDecodeError(f"malformed {cls.__name__} {what}: {exc}") from exc
    if _INT16.size + size != len(data):
        extra = len(data) - _INT16.size - size
        raise RecordDecodeError(f"{cls.__name__} {what} has {extra} trailing bytes")
    return decoded
