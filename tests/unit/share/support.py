"""Test rig for the share-partition core: BatchHeader values for offset ranges, a
fake log, and a SharePartition wired to a ManualClock and an InMemoryPersister."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from shoal.clock import ManualClock
from shoal.protocol.record_batch import CONTROL_MASK, HEADER_SIZE, LOG_OVERHEAD, BatchHeader
from shoal.protocol.share import AcknowledgeType, AcquireMode
from shoal.share.acknowledge import AckBatch
from shoal.share.leader_settings import SharePartitionConfig
from shoal.share.partition import (
    AckResult,
    AcquireResult,
    PendingWrite,
    RecordView,
    SharePartition,
    WriteCompletion,
)
from shoal.share.persister import (
    InMemoryPersister,
    PersistedState,
    SharePartitionKey,
    StateBatch,
    StateWrite,
)
from shoal.share.states import RecordState

TOPIC_ID = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
GROUP = "group-1"
RECORD_BYTES = 10
"""Pretend size of one record inside a batch, for byte-limit tests."""

AV, ACQ, ACK, ARC = (
    RecordState.AVAILABLE,
    RecordState.ACQUIRED,
    RecordState.ACKNOWLEDGED,
    RecordState.ARCHIVED,
)
GAP, ACCEPT, RELEASE, REJECT, RENEW = (int(t) for t in AcknowledgeType)


def header(
    first: int, last: int, *, position: int = 0, control: bool = False, producer_id: int = -1
) -> BatchHeader:
    """A BatchHeader for offsets first..last (no bytes behind it)."""
    count = last - first + 1
    return BatchHeader(
        position=position,
        base_offset=first,
        batch_length=HEADER_SIZE - LOG_OVERHEAD + RECORD_BYTES * count,
        partition_leader_epoch=0,
        magic=2,
        crc=0,
        attributes=CONTROL_MASK if control else 0,
        last_offset_delta=last - first,
        base_timestamp=0,
        max_timestamp=0,
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=-1,
        records_count=count,
    )


def headers(*ranges: tuple[int, int]) -> list[BatchHeader]:
    """Headers for consecutive batches, positions laid out as in one read buffer."""
    result = []
    position = 0
    for first, last in ranges:
        h = header(first, last, position=position)
        result.append(h)
        position += h.size
    return result


def ack(first: int, last: int, *types: int) -> AckBatch:
    return AckBatch(first, last, tuple(types) or (ACCEPT,))


def ranges(result: AcquireResult) -> list[tuple[int, int, int]]:
    return [(r.first_offset, r.last_offset, r.delivery_count) for r in result.acquired]


def view(sp: SharePartition) -> list[tuple[int, int, RecordState, int, str]]:
    """(first, last, state, count, owner) per cache entry, adjacent equal ones joined."""
    joined: list[tuple[int, int, RecordState, int, str]] = []
    for v in sp.in_flight():
        entry = (v.first_offset, v.last_offset, v.state, v.delivery_count, v.member_id)
        if joined:
            first, last, state, count, member = joined[-1]
            if last + 1 == v.first_offset and (state, count, member) == entry[2:]:
                joined[-1] = (first, v.last_offset, state, count, member)
                continue
        joined.append(entry)
    return joined


def state_of(sp: SharePartition, offset: int) -> RecordView:
    for v in sp.in_flight():
        if v.first_offset <= offset <= v.last_offset:
            return v
    raise KeyError(offset)


def batches(write: StateWrite) -> list[tuple[int, int, RecordState, int]]:
    return [
        (b.first_offset, b.last_offset, RecordState(b.delivery_state), b.delivery_count)
        for b in write.state_batches
    ]


@dataclass
class Rig:
    """A share-partition over a fake log, with a persister and a manual clock."""

    config: SharePartitionConfig = field(default_factory=SharePartitionConfig)
    clock: ManualClock = field(default_factory=ManualClock)
    persister: InMemoryPersister = field(default_factory=InMemoryPersister)
    log: list[BatchHeader] = field(default_factory=list)
    log_start_offset: int = 0
    sp: SharePartition = field(init=False)

    def __post_init__(self) -> None:
        self.sp = self.new_partition()

    @property
    def key(self) -> SharePartitionKey:
        return SharePartitionKey(GROUP, TOPIC_ID, 0)

    def new_partition(self) -> SharePartition:
        return SharePartition(
            group_id=GROUP,
            topic_id=TOPIC_ID,
            partition=0,
            clock=self.clock,
            settings=self.config,
        )

    def __setattr__(self, name: str, value: object) -> None:
        """A new `config` is handed to the share-partition, as its owner does with
        the settings of each operation."""
        object.__setattr__(self, name, value)
        if name == "config" and "sp" in self.__dict__:
            self.sp.settings = self.config

    def set(self, **changes: object) -> None:
        self.config = dataclasses.replace(self.config, **changes)  # type: ignore[arg-type]

    @property
    def log_end(self) -> int:
        return self.log[-1].last_offset + 1 if self.log else 0

    def produce(self, *ranges_: tuple[int, int]) -> None:
        for first, last in ranges_:
            assert first == self.log_end or not self.log or first > self.log_end
            self.log.append(header(first, last))

    def start(
        self,
        *,
        state_epoch: int = 0,
        start_offset: int = -1,
        state_batches: Sequence[StateBatch] = (),
        reset_offset: int | None = None,
    ) -> SharePartition:
        """Initialise the persisted key (as the group coordinator would) and load."""
        assert (
            self.persister.initialize(
                key=self.key, state_epoch=state_epoch, start_offset=start_offset
            )
            is None
        )
        if state_batches:
            write = StateWrite(self.key, state_epoch, 0, start_offset, -1, tuple(state_batches))
            assert self.persister.write(write=write) is None
        return self.load(reset_offset=reset_offset)

    def load(self, *, reset_offset: int | None = None) -> SharePartition:
        result = self.persister.read(key=self.key, leader_epoch=0)
        assert result.error is None and result.state is not None
        self.sp = self.new_partition()
        self.sp.initialize(
            state=result.state,
            log_start_offset=self.log_start_offset,
            reset_offset=self.log_end if reset_offset is None else reset_offset,
        )
        self.sp.check_invariants()
        return self.sp

    def read(self, offset: int) -> list[BatchHeader]:
        """The log read from `offset`: every batch ending at or after it, laid out as
        one buffer."""
        found = [
            h
            for h in self.log
            if h.last_offset >= offset and h.last_offset >= self.log_start_offset
        ]
        return headers(*((h.base_offset, h.last_offset) for h in found))

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
        result = self.sp.acquire(
            member_id=member,
            fetch_offset=offset,
            headers=self.read(offset),
            max_records=max_records,
            batch_size=max_records if batch_size is None else batch_size,
            acquire_mode=mode,
            max_bytes=max_bytes,
        )
        if persist and result.write is not None:
            assert self.persister.write(write=result.write) is None
        self.sp.check_invariants()
        return result

    def ack(self, member: str, *batch_list: AckBatch) -> AckResult:
        """Acknowledge; on success persist the write and commit it."""
        result = self.sp.acknowledge(member_id=member, batches=batch_list)
        self.sp.check_invariants()
        if result.pending is not None:
            self.complete(result.pending)
        return result

    def complete(self, pending: PendingWrite, *, fail: bool = False) -> WriteCompletion:
        if fail:
            completion = self.sp.rollback_write(handle=pending.handle)
        else:
            assert self.persister.write(write=pending.write) is None
            completion = self.sp.commit_write(handle=pending.handle)
        for write in completion.writes:
            assert self.persister.write(write=write) is None
        self.sp.check_invariants()
        return completion

    def expire(self, advance_ms: int = 0) -> list[StateWrite]:
        self.clock.advance(advance_ms)
        result = self.sp.expire_locks(now_ms=self.clock.monotonic_ms())
        for write in result.writes:
            assert self.persister.write(write=write) is None
        self.sp.check_invariants()
        return list(result.writes)

    def durable(self) -> PersistedState:
        result = self.persister.read(key=self.key, leader_epoch=0)
        assert result.state is not None
        return result.state


def started(*log: tuple[int, int], **config: object) -> Rig:
    """A Rig whose log holds batches `log` and whose share-partition starts at 0."""
    rig = Rig()
    rig.set(**config)
    rig.produce(*log)
    rig.start(reset_offset=0)
    return rig


def durable_batches(state: PersistedState) -> list[tuple[int, int, RecordState, int]]:
    return [
        (b.first_offset, b.last_offset, RecordState(b.delivery_state), b.delivery_count)
        for b in state.state_batches
    ]
