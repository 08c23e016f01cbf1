"""The manager's acquisition round under scheduled delivery: when the read of a
share-partition ends inside its window (records waiting there took its place), a second
read takes the new records past the window's end, and the answer joins both."""

from __future__ import annotations

import uuid
from dataclasses import replace

from shoal.clock import ManualClock
from shoal.limits import SHARE_FETCH_READS_MAX
from shoal.log.api import LogError, ReadResult
from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import encode_batch, iter_headers, parse_header, stamp_prefix
from shoal.protocol.records import DELIVER_AT_HEADER
from shoal.share.leader_settings import SharePartitionConfig
from shoal.share.manager import ShareFetchPartition
from shoal.share.persister import InMemoryPersister, SharePartitionKey
from shoal.share.sessions import TopicIdPartition
from shoal.sim.share_leader import DrivenManager

T = uuid.UUID("00000000-0000-0000-0000-00000000000c")
P0 = TopicIdPartition(T, 0)
GROUP = "g"
WALL_MS = 1_700_000_000_000
VALUE = b"x" * 10_000
"""Big records: the read's 64 KiB probe covers six of them."""


class BytesLog:
    """A partition log of real batches with headers, read as the broker reads."""

    def __init__(self) -> None:
        self.buffer = b""
        self.log_start_offset = 0
        self.reads: list[int] = []

    @property
    def high_watermark(self) -> int:
        headers = iter_headers(self.buffer)
        return headers[-1].next_offset if headers else 0

    log_end_offset = high_watermark

    def append(self, deliver_at: bytes | None) -> None:
        batch = encode_batch(
            [(None, VALUE)],
            timestamp_ms=WALL_MS,
            headers=[[] if deliver_at is None else [(DELIVER_AT_HEADER, deliver_at)]],
        )
        header = parse_header(batch)
        base = self.high_watermark
        self.buffer += stamp_prefix(header, base_offset=base, leader_epoch=0) + batch[17:]

    def read(self, offset: int, *, max_bytes: int, min_one_batch: bool = True) -> ReadResult:
        if not 0 <= offset <= self.high_watermark:
            raise LogError(ErrorCode.offset_out_of_range, f"{offset} outside the log")
        self.reads.append(offset)
        parts = []
        total = 0
        for header in iter_headers(self.buffer):
            if header.last_offset < offset:
                continue
            if total + header.size > max_bytes and (parts or not min_one_batch):
                break
            parts.append(self.buffer[header.position : header.position + header.size])
            total += header.size
        records = b"".join(parts)
        return ReadResult(records, iter_headers(records), self.high_watermark, 0)

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        return None


class Leader:
    """A share-partition leader (`DrivenManager`) of group GROUP with scheduled delivery
    on, over one `BytesLog`, on the manual clock."""

    def __init__(self) -> None:
        self.clock = ManualClock(wall_offset_ms=WALL_MS)
        self.log = BytesLog()
        persister = InMemoryPersister()
        config = SharePartitionConfig(delivery_delay_max_ms=60_000)
        self.manager = DrivenManager(
            clock=self.clock,
            logs=lambda topic_id, partition: self.log,
            persister=persister,
            settings_for=lambda _group: replace(config, auto_offset_reset="earliest"),
        )
        key = SharePartitionKey(GROUP, T, 0)
        assert persister.initialize(key=key, state_epoch=0, start_offset=-1) is None

    def fetch(self, *, max_records: int, max_bytes: int = 2**31 - 1) -> ShareFetchPartition:
        fetched = self.manager.acquire(
            group_id=GROUP,
            member_id="m1",
            partitions=(P0,),
            max_records=max_records,
            batch_size=max_records,
            max_bytes=max_bytes,
        )
        (entry,) = fetched.partitions
        return entry


def test_a_read_ending_among_waiting_records_is_followed_by_one_of_the_new_ones() -> None:
    leader = Leader()
    clock, log = leader.clock, leader.log
    later = str(WALL_MS + 1_000).encode()
    log.append(None)
    for _ in range(9):
        log.append(later)
    for _ in range(3):
        log.append(None)

    def fetch() -> list[tuple[int, int]]:
        entry = leader.fetch(max_records=4)
        acquired = [(r.first_offset, r.last_offset) for r in entry.acquired]
        sent = [h.base_offset for h in iter_headers(entry.records)]
        assert sent == [o for first, last in acquired for o in range(first, last + 1)]
        return acquired

    assert fetch() == [(0, 0), (10, 11)]
    assert log.reads == [0, 6]  # the probe from 0 ended at offset 5, among waiting records
    clock.advance(1_001)
    assert fetch() == [(offset, offset) for offset in range(1, 5)]


def test_one_fetch_reads_a_partition_at_most_share_fetch_reads_max_times() -> None:
    """Records due now scattered among waiting ones through a wide window: one fetch
    reads on from each read's end to the next due record, at most SHARE_FETCH_READS_MAX
    times; the next fetch takes the rest."""
    leader = Leader()
    clock, log = leader.clock, leader.log
    soon, later = str(WALL_MS + 1_000).encode(), str(WALL_MS + 60_000).encode()
    for offset in range(60):  # every tenth comes due first; reads cover about six
        log.append(soon if offset % 10 == 0 else later)

    def fetch(max_bytes: int = 2**31 - 1) -> list[int]:
        entry = leader.fetch(max_records=500, max_bytes=max_bytes)
        return [o for r in entry.acquired for o in range(r.first_offset, r.last_offset + 1)]

    assert fetch() == []  # every record waits
    clock.advance(1_001)
    log.reads.clear()
    first = fetch(max_bytes=3 * len(VALUE))  # each read covers about three records
    assert len(set(log.reads)) == SHARE_FETCH_READS_MAX
    assert first == [0, 10, 20, 30]
    assert fetch() == [40, 50]
