"""A share-partition over a log of real record batches (keys, values, the
`shoal.deliver.at` header), for the tests of key-ordered and scheduled acquisition
(docs/design/key-order.md, docs/design/scheduled-delivery.md): those acquisitions read the records'
bytes, so the log read hands the share-partition a buffer whose positions the headers
refer to, as a real log read does.

`KeyedRig` is `support.Rig` (manual clock, in-memory persister, reload) with such a
log; `LogRecord` is what the tests' models know of each record."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from shoal.protocol.record_batch import (
    CONTROL_MASK,
    STAMPED_PREFIX_SIZE,
    TRANSACTIONAL_MASK,
    BatchHeader,
    encode_batch,
    iter_headers,
    parse_header,
    stamp_prefix,
)
from shoal.protocol.records import DELIVER_AT_HEADER
from shoal.protocol.share import AcquireMode
from shoal.share.partition import AcquireResult, SharePartition
from tests.unit.share.support import GROUP, TOPIC_ID, Rig


@dataclass(frozen=True, slots=True)
class LogRecord:
    offset: int
    key: bytes | None
    """The record key; None for a null key and for a control record (unordered)."""
    control: bool
    deliver_at: bytes | None
    """The raw `shoal.deliver.at` header value, None when the record has none."""
    timestamp_ms: int


def parse_deliver_at(value: bytes) -> int | None:
    """The docs' rule, written independently of the parser: 1-19 ASCII digits."""
    if 1 <= len(value) <= 19 and all(0x30 <= b <= 0x39 for b in value):
        return int(value)
    return None


def due_ms(record: LogRecord, *, delay_max_ms: int) -> int | None:
    """When `record` may first be delivered (epoch ms): min(deliver.at, timestamp +
    delay.max.ms); None when it need not wait (no header, a malformed one, scheduling
    off, a control record)."""
    if delay_max_ms <= 0 or record.deliver_at is None or record.control:
        return None
    at = parse_deliver_at(record.deliver_at)
    if at is None:
        return None
    return min(at, record.timestamp_ms + delay_max_ms)


def is_malformed(record: LogRecord) -> bool:
    return (
        record.deliver_at is not None
        and not record.control
        and parse_deliver_at(record.deliver_at) is None
    )


CONTROL_KEY = b"\x00\x00\x00\x01"
"""A COMMIT marker's record key (version 0, type 1): control records carry a key that
is not a record key; key order must not read it."""


@dataclass
class KeyedRig(Rig):
    """`Rig` over real batches. `log` holds the stamped headers (so compaction or a
    start move works as in `Rig`); `stored` the bytes of each batch by base offset."""

    stored: dict[int, bytes] = field(default_factory=dict)
    records: dict[int, LogRecord] = field(default_factory=dict)
    options: dict[str, int] = field(default_factory=dict)
    before_fetch: tuple[int, int] = (0, 0)
    """(start offset, end offset) before the last `fetch`."""
    """Test values of the core's bounds (`key_scan_max`, `scheduled_max`), passed to
    each new SharePartition when it takes them."""

    def new_partition(self) -> SharePartition:
        return SharePartition(
            group_id=GROUP,
            topic_id=TOPIC_ID,
            partition=0,
            clock=self.clock,
            settings=self.config,
            **self.options,
        )

    @property
    def scheduled_max(self) -> int:
        return self.sp.scheduled_max

    @property
    def key_scan_max(self) -> int:
        return self.sp.key_scan_max

    def append(
        self,
        records: Sequence[tuple[bytes | None, bytes | None]],
        *,
        hole: int = 0,
        timestamp_ms: int | None = None,
    ) -> range:
        """A batch of (key, deliver.at header value or None) records after a hole of
        `hole` offsets, stamped `timestamp_ms` (the wall clock by default); returns its
        offsets."""
        ts = self.clock.wall_ms() if timestamp_ms is None else timestamp_ms
        values = [(key, b"v%d" % i) for i, (key, _) in enumerate(records)]
        headers = [[] if at is None else [(DELIVER_AT_HEADER, at)] for _, at in records]
        batch = encode_batch(values, timestamp_ms=ts, headers=headers)
        base = self.log_end + hole
        added = self._store(batch, base)
        for offset, (key, at) in zip(added, records, strict=True):
            self.records[offset] = LogRecord(offset, key, False, at, ts)
        return added

    def append_marker(self, *, hole: int = 0) -> range:
        """A transaction COMMIT marker (a control batch of one record)."""
        batch = encode_batch(
            [(CONTROL_KEY, b"\x00\x00\x00\x00\x00\x00")],
            timestamp_ms=self.clock.wall_ms(),
            attributes=CONTROL_MASK | TRANSACTIONAL_MASK,
            producer_id=7,
            producer_epoch=0,
        )
        added = self._store(batch, self.log_end + hole)
        self.records[added[0]] = LogRecord(added[0], None, True, None, self.clock.wall_ms())
        return added

    def _store(self, batch: bytes, base: int) -> range:
        header = parse_header(batch)
        stored = (
            stamp_prefix(header, base_offset=base, leader_epoch=0) + batch[STAMPED_PREFIX_SIZE:]
        )
        stamped = parse_header(stored)
        self.log.append(stamped)
        self.stored[base] = stored
        return range(stamped.base_offset, stamped.last_offset + 1)

    def read_bytes(self, offset: int) -> tuple[bytes, list[BatchHeader]]:
        """The log read from `offset`: every batch ending at or after it (and at or
        after the log start), one buffer, and its headers with positions in it."""
        buffer = b"".join(
            self.stored[h.base_offset]
            for h in self.log
            if h.last_offset >= offset and h.last_offset >= self.log_start_offset
        )
        return buffer, iter_headers(buffer)

    def fetch(
        self,
        member: str,
        *,
        max_records: int = 500,
        batch_size: int | None = None,
        mode: AcquireMode = AcquireMode.BATCH_OPTIMIZED,
        max_bytes: int = 2**31 - 1,
        persist: bool = True,
    ) -> AcquireResult:
        offset = self.sp.next_fetch_offset()
        self.before_fetch = (self.sp.start_offset, self.sp.end_offset)
        buffer, headers = self.read_bytes(offset)
        result = self.sp.acquire(
            member_id=member,
            fetch_offset=offset,
            headers=headers,
            max_records=max_records,
            batch_size=max_records if batch_size is None else batch_size,
            acquire_mode=mode,
            max_bytes=max_bytes,
            records=memoryview(buffer),
        )
        if persist and result.write is not None:
            assert self.persister.write(write=result.write) is None
        self.sp.check_invariants()
        return result


def offsets_of(result: AcquireResult) -> list[int]:
    return [o for r in result.acquired for o in range(r.first_offset, r.last_offset + 1)]


def started_keyed(**config: object) -> KeyedRig:
    """A `KeyedRig` under the group settings `config`, its share-partition started at
    offset 0 (`support.started`, over real batches)."""
    rig = KeyedRig()
    rig.set(**config)
    rig.start(reset_offset=0)
    return rig
