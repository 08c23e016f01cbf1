"""ShareGroupBrowse (30000) v0 response, a Shoal extension declared as kio declares
Kafka's messages (see `shoal.protocol.extensions`).

Per partition, the share-partition's in-flight window as its leader holds it in
memory: start and end offsets, and one entry per whole batch or per offset of a split
batch, from the start offset on, each with its state (Kafka's code and the state's
name, so states added later read without a client change), delivery count, the member
holding its acquisition lock, the time left on that lock, and (tagged) the time left
before a record held back by delayed redelivery may be acquired again, the time a
record waiting for its `shoal.deliver.at` comes due and whether its key holds it back.
Tagged too, per partition: what key-ordered and scheduled delivery hold back
(`SharePartition.delivery_holds`, the core's `DeliveryHolds`).

Tagged fields are written only when they differ from their defaults, so an answer
without either extension has the bytes it had before they existed, and an older
broker's answer reads with the defaults (nothing held back).
"""

import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.errors import ErrorCode
from kio.schema.response_header.v1.header import ResponseHeader
from kio.static.constants import EntityType
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64


@dataclass(frozen=True, slots=True, kw_only=True)
class InFlightEntry:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(30000)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    first_offset: i64 = field(metadata={"kafka_type": "int64"})
    """The first offset of the entry."""
    last_offset: i64 = field(metadata={"kafka_type": "int64"})
    """The last offset of the entry (inclusive)."""
    state: i8 = field(metadata={"kafka_type": "int8"})
    """The record state's id as Kafka persists it (0 Available, 1 Acquired, 2
    Acknowledged, 4 Archived, and any Shoal adds)."""
    state_name: str = field(metadata={"kafka_type": "string"})
    """The record state's name."""
    delivery_count: i16 = field(metadata={"kafka_type": "int16"})
    """How many times the records were acquired."""
    member_id: str | None = field(metadata={"kafka_type": "string"}, default=None)
    """The member holding the acquisition lock, or null."""
    lock_expires_in_ms: i64 = field(metadata={"kafka_type": "int64"})
    """Milliseconds left on the acquisition lock, or -1 without one."""
    pending_write: bool = field(metadata={"kafka_type": "bool"})
    """Whether a state write for the entry is being persisted."""
    redelivery_due_in_ms: i64 = field(metadata={"kafka_type": "int64", "tag": 0}, default=i64(-1))
    """Milliseconds until an AVAILABLE record held back by the group's delayed
    redelivery (`shoal.share.redelivery.backoff.ms`) may be acquired again, or -1 when
    it is not held back. Tagged (added after v0 first shipped): written only when not
    -1, and absent from older brokers' answers."""
    deliver_at_ms: i64 = field(metadata={"kafka_type": "int64", "tag": 1}, default=i64(-1))
    """When an AVAILABLE record waiting for its `shoal.deliver.at` time comes due, in
    epoch milliseconds of the broker's wall clock, or -1 when it does not wait
    (scheduled delivery, `shoal.share.delivery.delay.max.ms`). Tagged."""
    key_blocked: bool = field(metadata={"kafka_type": "bool", "tag": 2}, default=False)
    """Whether an AVAILABLE record is held back because an earlier record of its key is
    still in flight (`shoal.share.delivery.order=key`). Tagged."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockedKey:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(30000)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    key: bytes = field(metadata={"kafka_type": "bytes"})
    """The record key."""
    held_records: i32 = field(metadata={"kafka_type": "int32"})
    """AVAILABLE records of the key held back behind an earlier one in flight."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BrowsedPartition:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(30000)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    partition_index: i32 = field(metadata={"kafka_type": "int32"})
    """The partition."""
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    """The partition's error, or 0."""
    error_message: str | None = field(metadata={"kafka_type": "string"}, default=None)
    """The partition's error message, or null."""
    loaded: bool = field(metadata={"kafka_type": "bool"})
    """Whether the share-partition is in the leader's memory; if not, nothing is
    acquired and the fields below are -1 and empty."""
    start_offset: i64 = field(metadata={"kafka_type": "int64"})
    """The share-partition start offset (SPSO)."""
    end_offset: i64 = field(metadata={"kafka_type": "int64"})
    """The share-partition end offset (SPEO)."""
    delivery_complete_count: i32 = field(metadata={"kafka_type": "int32"})
    """Records at or past the SPSO whose delivery is complete."""
    truncated: bool = field(metadata={"kafka_type": "bool"})
    """Whether more entries were in flight than returned."""
    entries: tuple[InFlightEntry, ...]
    """The in-flight entries from the SPSO on, in offset order."""
    blocked_keys: i32 = field(metadata={"kafka_type": "int32", "tag": 0}, default=i32(0))
    """Distinct keys with a record held back behind an earlier record of the key still
    in flight (`shoal.share.delivery.order=key`). Tagged."""
    blocked_records: i32 = field(metadata={"kafka_type": "int32", "tag": 1}, default=i32(0))
    """AVAILABLE records held back by their key. Tagged."""
    top_blocked_keys: tuple[BlockedKey, ...] = field(metadata={"tag": 2}, default=())
    """The keys holding back the most records, most first (a few). Tagged."""
    scheduled_records: i32 = field(metadata={"kafka_type": "int32", "tag": 3}, default=i32(0))
    """Records waiting for their `shoal.deliver.at` time. Tagged."""
    next_due_ms: i64 = field(metadata={"kafka_type": "int64", "tag": 4}, default=i64(-1))
    """The earliest of those times (epoch milliseconds), or -1 when none wait. Tagged."""
    malformed_deliver_at: i64 = field(metadata={"kafka_type": "int64", "tag": 5}, default=i64(0))
    """Records delivered at once because their `shoal.deliver.at` header did not parse,
    since the share-partition was loaded. Tagged."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupBrowseResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(30000)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    """The duration in milliseconds for which the request was throttled."""
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    """The top-level error (group or topic), or 0."""
    error_message: str | None = field(metadata={"kafka_type": "string"}, default=None)
    """The top-level error message, or null."""
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    """The topic's id (zero when the topic is unknown)."""
    partitions: tuple[BrowsedPartition, ...]
    """The browsed partitions, in request order."""
