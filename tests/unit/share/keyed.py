"""A share-partition over a log of real record batches (keys, headers), for the tests
of key-ordered and scheduled delivery: the reads hand the core the records' bytes, as
the broker's do."""

from __future__ import annotations

from collections.abc import Sequence

from shoal.clock import ManualClock
from shoal.protocol.record_batch import encode_batch, iter_headers, parse_header, stamp_prefix
from shoal.protocol.records import DELIVER_AT_HEADER
from shoal.protocol.share import AcquireMode
from shoal.share.leader_settings import SharePartitionConfig
from shoal.share.partition import AcquireResult, SharePartition
from tests.unit.share.support import GROUP, TOPIC_ID, Rig

Record = tuple[bytes | None, bytes | None]
"""(key, `shoal.deliver.at` value or None)."""


class KeyedRig(Rig):
    """`Rig` whose log is bytes: `produce_keyed` appends a batch of records."""

    def __post_init__(self) -> None:
        self.buffer = b""
        self.key_scan_max = 5_000
        self.scheduled_max = 20_000
        super().__post_init__()

    def new_partition(self) -> SharePartition:
        return SharePartition(
            group_id=GROUP,
            topic_id=TOPIC_ID,
            partition=0,
            clock=self.clock,
            settings=self.config,
            key_scan_max=getattr(self, "key_scan_max", 5_000),
            scheduled_max=getattr(self, "scheduled_max", 20_000),
        )

    def produce_keyed(self, records: Sequence[Record], *, timestamp_ms: int | None = None) -> int:
        """Append one batch; returns its base offset."""
        base = self.log_end
        stamp = self.clock.wall_ms() if timestamp_ms is None else timestamp_ms
        batch = encode_batch(
            [(key, b"v") for key, _ in records],
            timestamp_ms=stamp,
            headers=[[] if at is None else [(DELIVER_AT_HEADER, at)] for _, at in records],
        )
        header = parse_header(batch)
        self.buffer += stamp_prefix(header, base_offset=base, leader_epoch=0) + batch[17:]
        self.log = iter_headers(self.buffer)
        return base

    def read(self, offset: int, *, records: int = 2**31) -> list:  # type: ignore[type-arg]
        """The batches from `offset` covering at least `records` records past it, as
        the broker's reads are sized by the fetch's MaxRecords."""
        found = []
        for h in self.log:
            if h.last_offset < offset:
                continue
            found.append(h)
            if h.last_offset - offset + 1 >= records:
                break
        return found

    def fetch(  # type: ignore[override]
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
        found = self.read(offset, records=self.sp.records_to_read(offset, max_records))
        if not found:
            return AcquireResult((), 0, (), None, self.config.record_lock_duration_ms)
        result = self.sp.acquire(
            member_id=member,
            fetch_offset=offset,
            headers=found,
            max_records=max_records,
            batch_size=max_records if batch_size is None else batch_size,
            acquire_mode=mode,
            max_bytes=max_bytes,
            records=self.buffer,
        )
        if persist and result.write is not None:
            assert self.persister.write(write=result.write) is None
        self.sp.check_invariants()
        return result


def keyed_rig(**config: object) -> KeyedRig:
    rig = KeyedRig(config=SharePartitionConfig(), clock=ManualClock())
    rig.set(**config)
    rig.start(reset_offset=0)
    return rig


def offsets(result: AcquireResult) -> list[int]:
    return [o for r in result.acquired for o in range(r.first_offset, r.last_offset + 1)]
