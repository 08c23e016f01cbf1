"""SharePartitionManager (docs/design/share-partition.md §7.1, §8, §10, §11): loading with each
`share.auto.offset.reset`, acquisition across a session (round-robin, MaxBytes split,
one MaxRecords budget, record slices), acknowledgements persisted or rolled back,
release on session end, lock expiry, log start moves, dropping.

Conformance items covered here (manager half): 11, 12, 14 (release), 15, 19 (empty
records), 25, 30, 72 (an untouched partition stays at -1 durably). (Just past 600
lines: one rig serves every manager operation, as manager.py is one class.)
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace

from shoal import limits
from shoal.clock import ManualClock
from shoal.log.api import LogError, ReadResult
from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import BatchHeader, iter_headers
from shoal.protocol.share import AcknowledgeType, AcquireMode
from shoal.share.acknowledge import AckBatch
from shoal.share.leader_settings import SharePartitionConfig
from shoal.share.manager import (
    Acknowledged,
    Effects,
    ShareFetchPartition,
)
from shoal.share.persister import InMemoryPersister, SharePartitionKey, StateWrite
from shoal.share.sessions import TopicIdPartition
from shoal.share.states import RecordState
from shoal.sim.share_leader import DrivenManager
from tests.support.batches import values_batch

T = uuid.UUID("00000000-0000-0000-0000-00000000000a")
U = uuid.UUID("00000000-0000-0000-0000-00000000000b")
P0, P1, Q0 = TopicIdPartition(T, 0), TopicIdPartition(T, 1), TopicIdPartition(U, 0)
GROUP = "g"
BASE_WALL_MS = 1_700_000_000_000
ACCEPT, RELEASE, RENEW = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.RENEW


class FakeLog:
    """A partition log in memory holding real v2 batches (values `v0`, `v1`, ...)."""

    def __init__(self) -> None:
        self.batches: list[tuple[BatchHeader, bytes]] = []
        self.log_start_offset = 0

    @property
    def log_end_offset(self) -> int:
        return self.batches[-1][0].next_offset if self.batches else 0

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset

    def append(self, count: int, *, timestamp_ms: int = BASE_WALL_MS) -> None:
        data = values_batch(count, base_offset=self.log_end_offset, base_timestamp=timestamp_ms)
        (header,) = iter_headers(data)
        self.batches.append((header, data))

    def read(self, offset: int, *, max_bytes: int, min_one_batch: bool = True) -> ReadResult:
        if not self.log_start_offset <= offset <= self.log_end_offset:
            raise LogError(ErrorCode.offset_out_of_range, f"{offset} outside the log")
        parts: list[bytes] = []
        total = 0
        for header, data in self.batches:
            if header.last_offset < offset:
                continue
            if total + len(data) > max_bytes and (parts or not min_one_batch):
                break
            parts.append(data)
            total += len(data)
        records = b"".join(parts)
        return ReadResult(
            records, iter_headers(records), self.log_end_offset, self.log_start_offset
        )

    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int] | None:
        for header, _ in self.batches:
            if header.max_timestamp >= timestamp_ms and header.last_offset >= self.log_start_offset:
                return max(header.base_offset, self.log_start_offset), header.max_timestamp
        return None

    def bytes_of(self, first: int, last: int) -> bytes:
        return b"".join(
            data
            for header, data in self.batches
            if header.last_offset >= first and header.base_offset <= last
        )


class FailingPersister(InMemoryPersister):
    def __init__(self) -> None:
        super().__init__()
        self.write_error: ErrorCode | None = None
        self.writes: list[StateWrite] = []

    def write(self, *, write: StateWrite) -> ErrorCode | None:
        self.writes.append(write)
        if self.write_error is not None:
            return self.write_error
        return super().write(write=write)


@dataclass
class Rig:
    clock: ManualClock = field(default_factory=lambda: ManualClock(wall_offset_ms=BASE_WALL_MS))
    persister: FailingPersister = field(default_factory=FailingPersister)
    logs: dict[TopicIdPartition, FakeLog] = field(default_factory=dict)
    config: SharePartitionConfig = field(default_factory=SharePartitionConfig)
    reset: str = "earliest"
    woken: list[SharePartitionKey] = field(default_factory=list)
    manager: DrivenManager = field(init=False)

    def __post_init__(self) -> None:
        self.manager = DrivenManager(
            clock=self.clock,
            logs=self.lookup,
            persister=self.persister,
            settings_for=lambda _group: replace(self.config, auto_offset_reset=self.reset),
        )

    def lookup(self, topic_id: uuid.UUID, partition: int) -> FakeLog | ErrorCode:
        if not any(tp.topic_id == topic_id for tp in self.logs):
            return ErrorCode.unknown_topic_id
        return self.logs.get(
            TopicIdPartition(topic_id, partition), ErrorCode.unknown_topic_or_partition
        )

    def effects(self, effects: Effects) -> None:
        """Record what the service would wake."""
        self.woken.extend(sorted(effects.wake, key=str))

    def topic(self, *partitions: TopicIdPartition, group: str = GROUP) -> None:
        """Create logs and initialise the group's state, as the group coordinator does."""
        for tp in partitions:
            self.logs[tp] = FakeLog()
            key = SharePartitionKey(group, tp.topic_id, tp.partition)
            assert self.persister.initialize(key=key, state_epoch=0, start_offset=-1) is None

    def fetch(
        self,
        member: str,
        *partitions: TopicIdPartition,
        max_records: int = 500,
        batch_size: int = 500,
        max_bytes: int = 2**31 - 1,
        rotation: int = 0,
        mode: AcquireMode = AcquireMode.BATCH_OPTIMIZED,
    ) -> list[ShareFetchPartition]:
        fetched = self.manager.acquire(
            group_id=GROUP,
            member_id=member,
            partitions=partitions or (P0,),
            max_records=max_records,
            batch_size=batch_size,
            max_bytes=max_bytes,
            acquire_mode=mode,
            rotation=rotation,
        )
        self.effects(fetched.effects)
        return fetched.partitions

    def ack(
        self, member: str, tp: TopicIdPartition, *batches: AckBatch, renew: bool = False
    ) -> ErrorCode | None:
        acked = self.manager.acknowledge(
            group_id=GROUP, member_id=member, partition=tp, batches=batches, renew_allowed=renew
        )
        self.effects(acked.effects)
        return acked.error

    def key(self, tp: TopicIdPartition = P0) -> SharePartitionKey:
        return SharePartitionKey(GROUP, tp.topic_id, tp.partition)


def ranges(fetched: ShareFetchPartition) -> list[tuple[int, int, int]]:
    return [(r.first_offset, r.last_offset, r.delivery_count) for r in fetched.acquired]


# ---- loading (§10) -------------------------------------------------------------------------


def test_loading_with_earliest_latest_and_by_duration() -> None:
    rig = Rig()
    rig.topic(P0)
    log = rig.logs[P0]
    log.append(5, timestamp_ms=BASE_WALL_MS - 3_600_000)  # 0-4, an hour old
    log.append(5, timestamp_ms=BASE_WALL_MS - 60_000)  # 5-9, a minute old
    log.log_start_offset = 2
    expected = {"earliest": 2, "latest": 10, "by_duration:PT10M": 5, "by_duration:PT1S": 10}
    for strategy, start in expected.items():
        rig.reset = strategy
        rig.manager.forget_group(GROUP)
        sp = rig.manager.load(rig.key())
        assert not isinstance(sp, str)
        assert sp.start_offset == start, strategy
    summary = rig.persister.read_summary(key=rig.key(), leader_epoch=0)
    assert summary.start_offset == -1, "the reset start offset is kept in memory only"


def test_unloading_persists_a_start_offset_resolved_from_the_reset_first() -> None:
    """A `latest` start resolved in memory is written before the share-partition
    leaves memory, so a reload does not resolve `latest` again and skip records."""
    rig = Rig(reset="latest")
    rig.topic(P0)
    rig.logs[P0].append(5)
    sp = rig.manager.load(rig.key())
    assert not isinstance(sp, str) and sp.start_offset == 5
    rig.manager.drop_group(GROUP)
    assert rig.manager.get(rig.key()) is None
    assert rig.persister.read_summary(key=rig.key(), leader_epoch=0).start_offset == 5
    rig.logs[P0].append(3)  # 5-7 arrive while unloaded
    (fetched,) = rig.fetch("m", P0)
    assert ranges(fetched) == [(5, 7, 1)]


def test_idle_share_partitions_unload_unless_records_are_acquired() -> None:
    rig = Rig()
    rig.topic(P0, P1)
    rig.logs[P0].append(4)
    rig.logs[P1].append(4)
    (held,) = rig.fetch("m", P0)  # P0 has acquired records, P1 is merely loaded
    assert ranges(held) == [(0, 3, 1)]
    assert not isinstance(rig.manager.load(rig.key(P1)), str)
    rig.clock.advance(999)
    assert rig.manager.unload_idle(now_ms=rig.clock.monotonic_ms(), idle_ms=1_000) == []
    rig.clock.advance(1)
    assert rig.manager.unload_idle(now_ms=rig.clock.monotonic_ms(), idle_ms=1_000) == [rig.key(P1)]
    assert rig.manager.get(rig.key(P0)) is not None
    # Once acknowledged, P0 unloads too; its state comes back from the persister.
    assert rig.ack("m", P0, AckBatch(0, 1, (ACCEPT,)), AckBatch(2, 3, (RELEASE,))) is None
    rig.clock.advance(1_000)
    assert rig.manager.unload_idle(now_ms=rig.clock.monotonic_ms(), idle_ms=1_000) == [rig.key(P0)]
    (again,) = rig.fetch("m2", P0)
    assert ranges(again) == [(2, 3, 2)]


def test_a_persisted_start_offset_wins_over_the_reset() -> None:
    rig = Rig(reset="latest")
    rig.logs[P0] = FakeLog()
    rig.logs[P0].append(10)
    assert rig.persister.initialize(key=rig.key(), state_epoch=0, start_offset=3) is None
    sp = rig.manager.load(rig.key())
    assert not isinstance(sp, str) and sp.start_offset == 3


def test_an_uninitialised_state_is_not_loaded_and_retried() -> None:
    rig = Rig()
    rig.logs[P0] = FakeLog()
    rig.logs[P0].append(3)
    (fetched,) = rig.fetch("a")
    assert fetched.error == ErrorCode.unknown_server_error and fetched.records == b""
    assert rig.manager.get(rig.key()) is None
    assert rig.persister.initialize(key=rig.key(), state_epoch=0, start_offset=-1) is None
    (fetched,) = rig.fetch("a")
    assert fetched.error is None and ranges(fetched) == [(0, 2, 1)]


def test_unknown_topics_and_partitions_are_errors_per_partition() -> None:
    rig = Rig()
    rig.topic(P0)
    rig.logs[P0].append(2)
    results = rig.fetch("a", P0, P1, Q0)
    assert [(f.partition, f.error) for f in results] == [
        (P0, None),
        (P1, ErrorCode.unknown_topic_or_partition),
        (Q0, ErrorCode.unknown_topic_id),
    ]
    assert ranges(results[0]) == [(0, 1, 1)]
    assert rig.ack("a", Q0, AckBatch(0, 0, (ACCEPT,))) == ErrorCode.unknown_topic_id


# ---- acquisition (§7) ------------------------------------------------------------------------


def test_11_records_are_the_overlapping_batches() -> None:
    rig = Rig()
    rig.topic(P0)
    log = rig.logs[P0]
    log.append(10)
    (fetched,) = rig.fetch("a")
    assert ranges(fetched) == [(0, 9, 1)]
    assert fetched.records == log.bytes_of(0, 9)


def test_19_nothing_to_acquire_gives_empty_records() -> None:
    rig = Rig()
    rig.topic(P0)
    (fetched,) = rig.fetch("a")
    assert (fetched.error, fetched.records, fetched.acquired) == (None, b"", ())


def test_12_max_records_and_batch_size() -> None:
    rig = Rig()
    rig.topic(P0)
    for _ in range(5):
        rig.logs[P0].append(1)
    (first,) = rig.fetch("a", max_records=1, batch_size=1)
    assert ranges(first) == [(0, 0, 1)]
    assert first.records == rig.logs[P0].bytes_of(0, 0)
    (rest,) = rig.fetch("a", max_records=5, batch_size=1)
    assert ranges(rest) == [(1, 1, 1), (2, 2, 1), (3, 3, 1), (4, 4, 1)]


def test_15_members_get_disjoint_records_and_groups_all_of_them() -> None:
    rig = Rig()
    rig.topic(P0)
    rig.topic(P0, group="other")
    for _ in range(2):
        rig.logs[P0].append(5)
    (a,) = rig.fetch("a", max_records=5)
    (b,) = rig.fetch("b", max_records=5)
    assert (ranges(a), ranges(b)) == ([(0, 4, 1)], [(5, 9, 1)])
    (c,) = rig.manager.acquire(
        group_id="other",
        member_id="c",
        partitions=[P0],
        max_records=500,
        batch_size=500,
        max_bytes=2**31 - 1,
    ).partitions
    assert ranges(c) == [(0, 9, 1)]


def test_partitions_are_visited_round_robin() -> None:
    rig = Rig()
    rig.topic(P0, P1)
    for tp in (P0, P1):
        for _ in range(3):
            rig.logs[tp].append(5)
    # MaxRecords 5 is one budget: only the partition visited first acquires.
    first = rig.fetch("a", P0, P1, max_records=5, rotation=0)
    assert [ranges(f) for f in first] == [[(0, 4, 1)], []]
    second = rig.fetch("a", P0, P1, max_records=5, rotation=1)
    assert [ranges(f) for f in second] == [[], [(0, 4, 1)]]
    third = rig.fetch("a", P0, P1, max_records=5, rotation=2)
    assert [ranges(f) for f in third] == [[(5, 9, 1)], []]


def test_max_bytes_is_split_evenly_among_partitions_that_can_acquire() -> None:
    rig = Rig()
    rig.topic(P0, P1, Q0)
    for tp in (P0, P1):
        for _ in range(3):
            rig.logs[tp].append(5)
    batch_bytes = len(rig.logs[P0].batches[0][1])
    # Q0 has no data: it takes no share, so each of P0 and P1 gets one batch.
    results = rig.fetch("a", P0, P1, Q0, max_bytes=2 * batch_bytes)
    assert [ranges(f) for f in results] == [[(0, 4, 1)], [(0, 4, 1)], []]
    assert [len(f.records) for f in results] == [batch_bytes, batch_bytes, 0]
    # Once P1 has nothing left to acquire, P0 gets the whole budget.
    rig.fetch("b", P1, max_bytes=2**31 - 1)
    p0, p1 = rig.fetch("a", P0, P1, max_bytes=2 * batch_bytes)
    assert p1.acquired == ()
    assert ranges(p0) == [(5, 14, 1)]


def test_the_first_batch_goes_out_whatever_max_bytes() -> None:
    rig = Rig()
    rig.topic(P0, P1)
    rig.logs[P0].append(5)
    rig.logs[P1].append(5)
    results = rig.fetch("a", P0, P1, max_bytes=10)
    assert [ranges(f) for f in results] == [[(0, 4, 1)], []]


def test_max_bytes_zero_acquires_nothing() -> None:
    rig = Rig()
    rig.topic(P0)
    rig.logs[P0].append(5)
    (fetched,) = rig.fetch("a", max_bytes=0)
    assert fetched.acquired == ()


def test_record_limit_mode_leaves_the_rest_of_the_batch() -> None:
    rig = Rig()
    rig.topic(P0)
    rig.logs[P0].append(10)
    (a,) = rig.fetch("a", max_records=5, mode=AcquireMode.RECORD_LIMIT)
    (b,) = rig.fetch("b", max_records=5, mode=AcquireMode.RECORD_LIMIT)
    assert (ranges(a), ranges(b)) == ([(0, 4, 1)], [(5, 9, 1)])
    assert a.records == b.records == rig.logs[P0].bytes_of(0, 9)


# ---- acknowledgement (§8) -------------------------------------------------------------------


def test_accepted_records_are_persisted_and_the_start_offset_moves() -> None:
    rig = Rig()
    rig.topic(P0)
    rig.logs[P0].append(10)
    rig.fetch("a")
    assert rig.ack("a", P0, AckBatch(0, 9, (ACCEPT,))) is None
    durable = rig.persister.read(key=rig.key(), leader_epoch=0).state
    assert durable is not None
    # The write carries the start offset the ack moves to; the share coordinator
    # keeps no batch below it.
    assert (durable.start_offset, list(durable.state_batches)) == (10, [])
    sp = rig.manager.get(rig.key())
    assert sp is not None and sp.start_offset == 10
    assert rig.woken == [], "the start offset moved, but nothing is acquirable: no wake"


def test_an_acknowledgement_wakes_exactly_when_available_bytes_finds_something() -> None:
    """The wake decision after an acknowledgement (`_acquirable`) is checked against
    the reference answer, `available_bytes` with cap 1, taken after the same
    acknowledgement: ACCEPTs at the head with nothing or something left to acquire,
    a RELEASE, and a RELEASE while the group's delivery is paused."""
    rig = Rig()
    rig.topic(P0)
    rig.logs[P0].append(4)
    rig.fetch("a")
    steps: list[tuple[str, bool]] = []

    def ack(batch: AckBatch) -> None:
        rig.woken.clear()
        assert rig.ack("a", P0, batch) is None
        reference = rig.manager.available_bytes(group_id=GROUP, partitions=[P0], cap=1) > 0
        woken = rig.woken == [rig.key()]
        assert woken == reference, (batch, rig.woken, reference)
        steps.append((f"{batch.first_offset}-{batch.last_offset}", woken))

    ack(AckBatch(0, 0, (ACCEPT,)))  # head moves, 1-3 still acquired
    rig.logs[P0].append(2)
    ack(AckBatch(1, 1, (ACCEPT,)))  # head moves, 4-5 acquirable
    ack(AckBatch(2, 2, (RELEASE,)))  # released: acquirable again
    rig.fetch("a")  # takes 2 and 4-5
    ack(AckBatch(3, 3, (ACCEPT,)))  # the head stops at 2 (acquired): no wake
    rig.config = replace(rig.config, delivery_paused=True)
    ack(AckBatch(2, 2, (RELEASE,)))  # released, but delivery is paused
    assert steps == [
        ("0-0", False),
        ("1-1", True),
        ("2-2", True),
        ("3-3", False),
        ("2-2", False),
    ]


def test_malformed_batches_and_renew_without_is_renew_ack_are_invalid() -> None:
    rig = Rig()
    rig.topic(P0)
    rig.logs[P0].append(10)
    rig.fetch("a")
    assert rig.ack("a", P0, AckBatch(5, 4, (ACCEPT,))) == ErrorCode.invalid_request
    assert rig.ack("a", P0, AckBatch(0, 2, (ACCEPT, ACCEPT))) == ErrorCode.invalid_request
    assert rig.ack("a", P0, AckBatch(0, 2, ())) == ErrorCode.invalid_request
    assert rig.ack("a", P0, AckBatch(0, 2, (RENEW,))) == ErrorCode.invalid_request
    assert rig.ack("a", P0, AckBatch(0, 2, (RENEW,)), renew=True) is None
    assert rig.ack("a", P0, AckBatch(0, 3, (ACCEPT,)), AckBatch(3, 4, (ACCEPT,))) == (
        ErrorCode.invalid_request
    )


def test_acks_of_records_not_held_are_invalid_record_state() -> None:
    rig = Rig()
    rig.topic(P0)
    rig.logs[P0].append(10)
    assert rig.ack("a", P0, AckBatch(0, 0, (ACCEPT,))) == ErrorCode.invalid_record_state  # loads
    rig.fetch("a")
    assert rig.ack("b", P0, AckBatch(0, 9, (ACCEPT,))) == ErrorCode.invalid_record_state


def test_a_fenced_write_rolls_back_and_unloads() -> None:
    rig = Rig()
    rig.topic(P0)
    rig.logs[P0].append(10)
    rig.fetch("a")
    rig.persister.write_error = ErrorCode.fenced_state_epoch
    assert rig.ack("a", P0, AckBatch(0, 9, (ACCEPT,))) == ErrorCode.not_leader_or_follower
    assert rig.manager.get(rig.key()) is None
    rig.persister.write_error = None
    (again,) = rig.fetch("b")
    assert ranges(again) == [(0, 9, 1)], "reloaded from the durable state"


def test_a_coordinator_error_rolls_back_and_keeps_the_partition() -> None:
    rig = Rig()
    rig.topic(P0)
    rig.logs[P0].append(10)
    rig.fetch("a")
    rig.persister.write_error = ErrorCode.coordinator_load_in_progress
    assert rig.ack("a", P0, AckBatch(0, 9, (ACCEPT,))) == ErrorCode.coordinator_not_available
    sp = rig.manager.get(rig.key())
    assert sp is not None
    assert {(v.state, v.member_id) for v in sp.in_flight()} == {(RecordState.ACQUIRED, "a")}
    rig.persister.write_error = None
    assert rig.ack("a", P0, AckBatch(0, 9, (ACCEPT,))) is None


def test_deadlines_are_compared_only_when_an_acknowledgement_may_bring_one_earlier() -> None:
    """An ACCEPT answers "not earlier" without comparing deadlines (`Acknowledged`;
    RELEASE and RENEW: test_share_service.py); a failed write answers "earlier"
    without comparing, and rightly here: the lock expired while the write was made,
    so its rollback started a redelivery delay (a new deadline)."""
    rig = Rig(config=SharePartitionConfig(redelivery_backoff_ms=500))
    rig.topic(P0)
    rig.logs[P0].append(10)
    rig.fetch("a")

    def ack(*batches: AckBatch) -> Acknowledged:
        return rig.manager.acknowledge(group_id=GROUP, member_id="a", partition=P0, batches=batches)

    accepted = ack(AckBatch(0, 0, (ACCEPT,)))
    assert accepted.error is None and not accepted.deadlines_earlier
    sp = rig.manager.get(rig.key())
    assert sp is not None and sp.deadlines() == (30_000, None)
    clock = rig.clock

    class SlowFailingPersister(FailingPersister):
        def write(self, *, write: StateWrite) -> ErrorCode | None:
            clock.advance(60_000)  # past the locks
            return ErrorCode.coordinator_load_in_progress

    rig.manager._persister = SlowFailingPersister()
    failed = ack(AckBatch(1, 1, (ACCEPT,)))
    assert failed.error is ErrorCode.coordinator_not_available and failed.deadlines_earlier
    assert {v.first_offset: v.state for v in sp.in_flight()}[1] is RecordState.AVAILABLE
    assert sp.next_redelivery_ms() == 60_500, "the rollback's expiry started a delay"


# ---- release, expiry (§3, §11) --------------------------------------------------------------


def test_14_release_hands_records_to_others_with_their_count() -> None:
    rig = Rig()
    rig.topic(P0, P1)
    rig.logs[P0].append(10)
    rig.fetch("a")
    assert rig.ack("a", P0, AckBatch(0, 4, (ACCEPT,))) is None
    rig.manager.release(group_id=GROUP, member_id="a", partitions=[P0, P1])
    (b,) = rig.fetch("b")
    assert ranges(b) == [(5, 9, 2)]


def test_30_released_records_come_back_with_a_higher_count() -> None:
    rig = Rig()
    rig.topic(P0)
    rig.logs[P0].append(3)
    rig.fetch("a")
    assert rig.ack("a", P0, AckBatch(0, 2, (RELEASE,))) is None
    (again,) = rig.fetch("b")
    assert ranges(again) == [(0, 2, 2)]


def test_25_locks_expire_on_the_clock() -> None:
    rig = Rig(config=SharePartitionConfig(record_lock_duration_ms=1_000))
    rig.topic(P0)
    rig.logs[P0].append(4)
    rig.fetch("a")
    assert rig.manager.next_lock_deadline() == 1_000
    assert rig.manager.expire_locks(now_ms=999).writes == 0
    rig.clock.advance(1_000)
    expired = rig.manager.expire_locks(now_ms=rig.clock.monotonic_ms())
    assert expired.writes == 1
    assert expired.effects.wake == {rig.key()}
    assert rig.manager.next_lock_deadline() is None
    assert rig.ack("a", P0, AckBatch(0, 3, (ACCEPT,))) == ErrorCode.invalid_record_state
    (again,) = rig.fetch("b")
    assert ranges(again) == [(0, 3, 2)]
    assert rig.manager.next_lock_deadline() == 2_000


def test_the_earliest_deadline_over_partitions() -> None:
    rig = Rig(config=SharePartitionConfig(record_lock_duration_ms=1_000))
    rig.topic(P0, P1)
    rig.logs[P0].append(1)
    rig.logs[P1].append(1)
    rig.fetch("a", P0)
    rig.clock.advance(300)
    rig.fetch("a", P1)
    assert rig.manager.next_lock_deadline() == 1_000


# ---- the log start offset (§4.4) ------------------------------------------------------------


def test_log_start_moves_reach_the_share_partition() -> None:
    rig = Rig()
    rig.topic(P0)
    log = rig.logs[P0]
    log.append(5)
    log.append(5)
    rig.manager.load(rig.key())
    log.log_start_offset = 5
    effects = rig.manager.on_log_start_offset(topic_id=T, partition=0, log_start_offset=5)
    sp = rig.manager.get(rig.key())
    assert sp is not None and sp.start_offset == 5
    assert effects.wake == {rig.key()}


def test_a_read_below_the_log_start_catches_up_and_reads_again() -> None:
    rig = Rig()
    rig.topic(P0)
    log = rig.logs[P0]
    log.append(5)
    log.append(5)
    rig.manager.load(rig.key())
    log.log_start_offset = 5  # retention, unnoticed so far
    (fetched,) = rig.fetch("a")
    assert ranges(fetched) == [(5, 9, 1)]
    assert fetched.records == log.bytes_of(5, 9)


# ---- dropping ------------------------------------------------------------------------------


def test_deleted_topics_and_empty_groups_are_dropped() -> None:
    rig = Rig()
    rig.topic(P0, Q0)
    rig.fetch("a", P0, Q0)
    assert len(rig.manager) == 2
    assert rig.manager.retain_topics({T}).wake == {SharePartitionKey(GROUP, U, 0)}
    assert rig.manager.drop_group(GROUP) == [rig.key()]
    assert len(rig.manager) == 0


def test_available_bytes_estimates_what_a_fetch_could_get() -> None:
    rig = Rig()
    rig.topic(P0, P1)
    rig.logs[P0].append(5)
    rig.manager.load(rig.key(P0))
    rig.manager.load(rig.key(P1))
    size = len(rig.logs[P0].batches[0][1])
    assert rig.manager.available_bytes(group_id=GROUP, partitions=[P0, P1], cap=10**6) == size
    rig.fetch("a", P0)
    assert rig.manager.available_bytes(group_id=GROUP, partitions=[P0, P1], cap=10**6) == 0


class CountingLog(FakeLog):
    """FakeLog that records how many bytes each read returned."""

    def __init__(self) -> None:
        super().__init__()
        self.bytes_read: list[int] = []

    def read(self, offset: int, *, max_bytes: int, min_one_batch: bool = True) -> ReadResult:
        result = super().read(offset, max_bytes=max_bytes, min_one_batch=min_one_batch)
        self.bytes_read.append(len(result.records))
        return result


def test_available_bytes_with_cap_one_answers_without_reading() -> None:
    """The wake checks ask only whether anything is acquirable (cap 1): answered from
    the next fetch offset and the read limit, with no log read."""
    rig = Rig()
    rig.topic(P0)
    log = CountingLog()
    rig.logs[P0] = log
    log.append(5)
    rig.manager.load(rig.key(P0))
    assert rig.manager.available_bytes(group_id=GROUP, partitions=[P0], cap=1) == 1
    assert log.bytes_read == []
    rig.fetch("a", P0)
    log.bytes_read.clear()
    assert rig.manager.available_bytes(group_id=GROUP, partitions=[P0], cap=1) == 0
    log.append(3)
    assert rig.manager.available_bytes(group_id=GROUP, partitions=[P0], cap=1) == 1
    assert log.bytes_read == []


def test_acquisition_reads_what_max_records_can_use_not_all_of_max_bytes() -> None:
    """librdkafka asks for 50 MiB; a share-partition hands out MaxRecords at a time, so
    reading the whole MaxBytes each request would be wasted work (limits.py)."""
    rig = Rig()
    rig.topic(P0)
    log = CountingLog()
    rig.logs[P0] = log
    for _ in range(200):
        log.append(50)  # 200 batches of 50 records, ~10k records in all
    batch_bytes = len(log.batches[0][1])
    (fetched,) = rig.fetch("m1", max_records=100, max_bytes=50 * 1024 * 1024)
    assert fetched.acquired and fetched.acquired[0].first_offset == 0
    assert 100 <= fetched.count <= 150  # whole batches: stretched to a batch end
    # A probe plus one bounded read, never the 200 batches MaxBytes would allow.
    assert sum(log.bytes_read) <= 2 * limits.SHARE_FETCH_PROBE_BYTES + 4 * batch_bytes
    assert fetched.records == log.bytes_of(0, fetched.acquired[-1].last_offset)


def test_acquisition_still_sends_a_batch_larger_than_the_probe() -> None:
    rig = Rig()
    rig.topic(P0)
    log = CountingLog()
    rig.logs[P0] = log
    log.batches.append((iter_headers(big := values_batch(1, prefix=b"x" * 200_000))[0], big))
    (fetched,) = rig.fetch("m1", max_records=500, max_bytes=50 * 1024 * 1024)
    assert [(a.first_offset, a.last_offset) for a in fetched.acquired] == [(0, 0)]
    assert fetched.records == big


def test_delayed_redeliveries_wake_when_due_and_keep_the_partition_loaded() -> None:
    """Shoal extension: the manager names the earliest due time and wakes the
    share-partition then; a pending delay keeps it from idle unloading."""
    rig = Rig(config=SharePartitionConfig(redelivery_backoff_ms=500))
    rig.topic(P0)
    rig.logs[P0].append(3)
    (held,) = rig.fetch("m", P0)
    assert ranges(held) == [(0, 2, 1)]
    assert rig.ack("m", P0, AckBatch(0, 2, (RELEASE,))) is None
    assert rig.manager.next_redelivery_deadline() == 500
    (early,) = rig.fetch("m", P0)
    assert ranges(early) == []
    rig.clock.advance(499)
    assert rig.manager.redeliveries_due(now_ms=rig.clock.monotonic_ms()) == Effects()
    assert rig.manager.unload_idle(now_ms=rig.clock.monotonic_ms(), idle_ms=1) == []
    rig.clock.advance(1)
    due = rig.manager.redeliveries_due(now_ms=rig.clock.monotonic_ms())
    assert due.wake == frozenset({rig.key()})
    assert rig.manager.next_redelivery_deadline() is None
    (again,) = rig.fetch("m", P0)
    assert ranges(again) == [(0, 2, 2)]
