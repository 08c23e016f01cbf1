"""The one model and the one wire form of coordinator records on internal topics.

Every coordinator (the group coordinator on `__consumer_offsets`, the share
coordinator on `__share_group_state`) models its records the same way, as Apache
Kafka's coordinator-record schemas do:

- a record is a `CoordinatorRecord(key, value)`: `value=None` is a tombstone;
- a key and a value are kio entity dataclasses mirroring Kafka's JSON schema field
  for field and in order (`kafka_type` metadata on each field), read and written by
  kio's `entity_reader` and kio's writers (composed by protocol/fast_writer.py):
  no field is coded by hand. They derive
  from `KeyStruct`, `ValueStruct` and `NestedStruct`, which carry what kio reads
  besides the fields (entity kind, version, flexibility as in Kafka's schemas);
- a key class names its record type (`RECORD_TYPE`, the schema's apiKey) and the
  value class that goes with it (`VALUE`); the value's `__version__` is the value
  version written.

`RecordCodec` frames them, Kafka's exact bytes:

    key   = int16 record type   | key struct    (keys: flexibleVersions "none")
    value = int16 value version | value struct  (values: flexible, tagged fields)
    value = None                                 a tombstone

Keys are immutable and a coordinator writes the same few again and again, so the
codec keeps the bytes of the keys it encoded (`limits.COORDINATOR_KEY_BYTES_KEPT`,
oldest dropped first), found first by the key object's identity (a shard that writes
the same key entity again, as the share coordinator does, pays no hash of its UUID
field), then by equality.

Decoding is strict. A type the codec was not given raises `UnknownRecordType`
(loading logs and skips it, as Kafka's loader does: offset commits, other group
types, a newer Kafka's records). For a known type, bytes that do not parse, bytes
left over, an unknown value version, a tagged field the schema does not declare
(kio reads declared tags only), or a null UUID (kio reads the zero UUID as None;
no coordinator field may be null there) raise `RecordDecodeError`.
"""

from __future__ import annotations

import dataclasses
import io
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from kio.serial import entity_reader
from kio.serial.errors import SerialError
from kio.static.constants import EntityType
from kio.static.primitive import i16

from shoal import limits
from shoal.protocol import fast_writer


class KeyStruct:
    """Base of key entities: Kafka's coordinator keys are not flexible. A key class
    sets `RECORD_TYPE` (the int16 before the struct) and `VALUE` (its value class)."""

    __slots__ = ()
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = False
    RECORD_TYPE: ClassVar[int]
    VALUE: ClassVar[type[Any]]


class ValueStruct:
    """Base of value entities: flexible; `__version__` is the value version written
    (0 unless a value class sets another)."""

    __slots__ = ()
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True


class NestedStruct:
    """Base of the structs nested in values (flexible, as their value)."""

    __slots__ = ()
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True


K = TypeVar("K", bound=KeyStruct)
V = TypeVar("V")


@dataclass(frozen=True, kw_only=True)
class CoordinatorRecord(Generic[K, V]):
    """One record: a key and its value, or `value=None` for a tombstone.
    Invariant: the value is an instance of the key's `VALUE` class. (No slots: a
    frozen slotted generic dataclass cannot be built through its subscripted alias,
    `ShareCoordinatorRecord(...)`, in Python 3.11.)"""

    key: K
    value: V | None

    def __post_init__(self) -> None:
        expected = type(self.key).VALUE
        assert self.value is None or isinstance(self.value, expected), (
            f"{type(self.value).__name__} is not the value of {type(self.key).__name__}"
        )

    @property
    def record_type(self) -> int:
        """The int16 written before the key struct."""
        return self.key.RECORD_TYPE

    @property
    def is_tombstone(self) -> bool:
        return self.value is None


class RecordDecodeError(ValueError):
    """The bytes of a record are not a valid record of a known type."""


class UnknownRecordType(RecordDecodeError):
    """A record of a type the decoder does not know (another coordinator's, a newer
    version's): loading logs it and goes on."""

    def __init__(self, message: str, *, record_type: int) -> None:
        super().__init__(message)
        self.record_type = record_type


_INT16 = struct.Struct(">h")
_Reader = Callable[[Any, int], tuple[Any, int]]
_Writer = Callable[[Any, Any], None]


@dataclass(frozen=True, slots=True)
class _RecordType:
    key_class: type[KeyStruct]
    value_class: type[Any]
    value_version: int
    read_key: _Reader
    read_value: _Reader


class RecordCodec(Generic[K, V]):
    """Encodes and decodes the records of one coordinator, whose key classes are
    `keys` (see the module docstring). `topic` names the records in errors."""

    def __init__(
        self,
        *,
        topic: str,
        keys: Iterable[type[K]],
        key_bytes_kept: int = limits.COORDINATOR_KEY_BYTES_KEPT,
    ) -> None:
        assert key_bytes_kept >= 1, key_bytes_kept
        self._topic = topic
        self._types: dict[int, _RecordType] = {}
        self._writers: dict[type, _Writer] = {}
        self._key_bytes: dict[Any, bytes] = {}
        self._key_bytes_by_id: dict[int, tuple[Any, bytes]] = {}
        """id(key) -> (key, its bytes): the entry holds the key, so the id stays its."""
        self._key_bytes_kept = key_bytes_kept
        for key_class in keys:
            record_type = key_class.RECORD_TYPE
            assert record_type not in self._types, f"record type {record_type} registered twice"
            value_class = key_class.VALUE
            self._types[record_type] = _RecordType(
                key_class=key_class,
                value_class=value_class,
                value_version=int(value_class.__version__),
                read_key=entity_reader(key_class),
                read_value=entity_reader(value_class),
            )
            self._writers[key_class] = fast_writer.entity_writer(key_class)
            self._writers[value_class] = fast_writer.entity_writer(value_class)

    @property
    def record_types(self) -> frozenset[int]:
        """The record types this codec reads and writes."""
        return frozenset(self._types)

    def encode(self, record: CoordinatorRecord[K, V]) -> tuple[bytes, bytes | None]:
        """The (key, value) bytes of `record`; value None for a tombstone."""
        key = record.key
        spec = self._types.get(key.RECORD_TYPE)
        assert spec is not None and spec.key_class is type(key), (
            f"{type(key).__name__} is not a {self._topic} record"
        )
        same = self._key_bytes_by_id.get(id(key))
        key_bytes = same[1] if same is not None and same[0] is key else self._key_bytes_of(key)
        if record.value is None:
            return key_bytes, None
        return key_bytes, self._framed(spec.value_version, record.value)

    def _key_bytes_of(self, key: Any) -> bytes:
        """A coordinator writes the same few keys again and again (a share-partition's
        ShareUpdate per acknowledgement, a group's offset commits): their bytes are
        kept, by equality and by identity, at most `key_bytes_kept` keys each (the
        oldest go first)."""
        kept = self._key_bytes
        key_bytes = kept.get(key)
        if key_bytes is None:
            key_bytes = self._framed(key.RECORD_TYPE, key)
            if len(kept) >= self._key_bytes_kept:
                del kept[next(iter(kept))]
            kept[key] = key_bytes
        by_id = self._key_bytes_by_id
        if len(by_id) >= self._key_bytes_kept:
            del by_id[next(iter(by_id))]
        by_id[id(key)] = (key, key_bytes)
        return key_bytes

    def decode(self, key: bytes, value: bytes | None) -> CoordinatorRecord[K, V]:
        """The record whose bytes are `key` and `value`. Raises `UnknownRecordType`
        or `RecordDecodeError` (module docstring)."""
        if len(key) < _INT16.size:
            raise RecordDecodeError(f"record key of {len(key)} bytes has no record type")
        record_type = _prefix(key)
        spec = self._types.get(record_type)
        if spec is None:
            raise UnknownRecordType(
                f"record type {record_type} is not a {self._topic} record",
                record_type=record_type,
            )
        name = spec.key_class.__name__
        decoded_key = _read(spec.read_key, key, name)
        if value is None:
            return CoordinatorRecord(key=decoded_key, value=None)
        if len(value) < _INT16.size:
            raise RecordDecodeError(f"{name} value of {len(value)} bytes has no version")
        version = _prefix(value)
        if version != spec.value_version:
            raise RecordDecodeError(f"{name} value version {version} is not {spec.value_version}")
        decoded_value = _read(spec.read_value, value, spec.value_class.__name__)
        return CoordinatorRecord(key=decoded_key, value=decoded_value)

    def _framed(self, prefix: int, entity: Any) -> bytes:
        buffer = io.BytesIO()
        buffer.write(_INT16.pack(prefix))
        self._writers[type(entity)](buffer, entity)
        return buffer.getvalue()


def _prefix(data: bytes) -> int:
    return int(_INT16.unpack_from(data, 0)[0])


def _read(reader: _Reader, data: bytes, name: str) -> Any:
    try:
        entity, size = reader(memoryview(data)[_INT16.size :], 0)
    except KeyError as exc:  # kio's reader knows only the declared tags
        raise RecordDecodeError(f"{name} carries an unknown tagged field: {exc}") from exc
    except (SerialError, ValueError) as exc:  # truncated, bad lengths, bad UTF-8
        raise RecordDecodeError(f"malformed {name}: {exc}") from exc
    left = len(data) - _INT16.size - size
    if left:
        raise RecordDecodeError(f"{name} has {left} bytes left over")
    _refuse_null_uuids(entity, name)
    return entity


def _refuse_null_uuids(entity: Any, name: str) -> None:
    """kio reads an all-zero UUID as None; no coordinator record has a null one."""
    for field in dataclasses.fields(entity):
        item = getattr(entity, field.name)
        if field.metadata.get("kafka_type") == "uuid" and item is None:
            raise RecordDecodeError(f"{name} has a null {field.name.replace('_', ' ')}")
        if isinstance(item, tuple):
            for element in item:
                if dataclasses.is_dataclass(element):
                    _refuse_null_uuids(element, name)
