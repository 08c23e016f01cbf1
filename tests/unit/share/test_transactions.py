"""Share groups and transactions (docs/design/share-partition.md §9; conformance G91-G95), on the
manual clock: `transactions.aborted_batches` over constructed headers, and the
manager acquiring from a log of real v2 batches (transactional data, COMMIT/ABORT
control batches, producer ids) whose last stable offset and aborted index the test
model keeps as `log.transactions` specifies them."""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.clock import ManualClock
from shoal.log.api import LogError, ReadResult
from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import BatchHeader, iter_headers
from shoal.protocol.share import AcknowledgeType
from shoal.share.acknowledge import AckBatch
from shoal.share.leader_settings import IsolationLevel, SharePartitionConfig
from shoal.share.manager import ShareFetchPartition
from shoal.share.persister import InMemoryPersister, SharePartitionKey
from shoal.share.read_committed import aborted_batches
from shoal.share.sessions import TopicIdPartition
from shoal.share.states import RecordState
from shoal.sim.share_leader import DrivenManager
from tests.support.batches import Record, build_batch, decode_records, values_batch
from tests.unit.share.support import header

P0 = TopicIdPartition(uuid.UUID("00000000-0000-0000-0000-00000000000a"), 0)
COMMITTED, UNCOMMITTED = IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED
GAP, ACCEPT = AcknowledgeType.GAP, AcknowledgeType.ACCEPT
ABORT_TYPE, COMMIT_TYPE = 0, 1


@dataclass(frozen=True)
class Aborted:
    """An aborted-index entry, shaped like `log.transactions.AbortedTxn`."""

    producer_id: int
    first_offset: int
    last_offset: int


def txn_header(first: int, last: int, *, producer_id: int, control: bool = False) -> BatchHeader:
    h = header(first, last, control=control, producer_id=producer_id)
    return h._replace(attributes=h.attributes | 0x10)


# ---- which batches are aborted ------------------------------------------------------------


def test_aborted_batches_are_a_producers_data_batches_up_to_its_abort_marker() -> None:
    read = [
        header(0, 1),  # plain
        txn_header(2, 3, producer_id=7),  # aborted below
        txn_header(4, 5, producer_id=8),  # another producer, committed
        txn_header(6, 6, producer_id=7),  # same aborted transaction
        txn_header(7, 7, producer_id=7, control=True),  # ABORT marker of 7
        txn_header(8, 8, producer_id=8, control=True),  # COMMIT marker of 8
        txn_header(9, 10, producer_id=7),  # 7's next transaction: not aborted
    ]
    index = [Aborted(7, 2, 7)]
    assert aborted_batches(read, index) == [(2, 3), (6, 6)]
    assert aborted_batches(read, []) == []


def test_adjacent_aborted_batches_join_and_markers_never_count() -> None:
    read = [
        txn_header(0, 1, producer_id=1),
        txn_header(2, 4, producer_id=2),
        txn_header(5, 5, producer_id=1, control=True),
        txn_header(6, 6, producer_id=2, control=True),
    ]
    index = [Aborted(1, 0, 5), Aborted(2, 2, 6)]
    assert aborted_batches(read, index) == [(0, 4)]


def test_a_transaction_that_began_before_the_read_still_aborts_its_batches() -> None:
    read = [txn_header(10, 12, producer_id=3), txn_header(13, 13, producer_id=3, control=True)]
    assert aborted_batches(read, [Aborted(3, 4, 13)]) == [(10, 12)]


# ---- a log with transactions ---------------------------------------------------------------


@dataclass
class TxnLog:
    """A partition log of real v2 batches keeping the last stable offset and the
    aborted index as the log side specifies (log.transactions)."""

    batches: list[tuple[BatchHeader, bytes]] = field(default_factory=list)
    open: dict[int, int] = field(default_factory=dict)
    """Producer id -> first offset of its open transaction."""
    aborted: list[Aborted] = field(default_factory=list)
    log_start_offset: int = 0

    @property
    def log_end_offset(self) -> int:
        return self.batches[-1][0].next_offset if self.batches else 0

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        return min(self.open.values(), default=self.log_end_offset)

    def aborted_transactions(self, start_offset: int, upper_offset: int) -> list[Aborted]:
        return sorted(
            (
                a
                for a in self.aborted
                if a.last_offset >= start_offset and a.first_offset < upper_offset
            ),
            key=lambda a: a.first_offset,
        )

    def _add(self, data: bytes) -> int:
        (h,) = iter_headers(data)
        self.batches.append((h, data))
        return h.base_offset

    def plain(self, count: int, prefix: bytes = b"p") -> None:
        self._add(values_batch(count, prefix=prefix, base_offset=self.log_end_offset))

    def txn(self, producer_id: int, count: int, prefix: bytes) -> None:
        base = self._add(
            values_batch(
                count,
                prefix=prefix,
                base_offset=self.log_end_offset,
                producer_id=producer_id,
                producer_epoch=0,
                base_sequence=0,
                transactional=True,
            )
        )
        self.open.setdefault(producer_id, base)

    def end(self, producer_id: int, *, commit: bool) -> None:
        control = COMMIT_TYPE if commit else ABORT_TYPE
        marker = Record(key=struct.pack(">hh", 0, control), value=struct.pack(">hi", 0, 0))
        offset = self._add(
            build_batch(
                [marker],
                base_offset=self.log_end_offset,
                producer_id=producer_id,
                producer_epoch=0,
                transactional=True,
                control=True,
            )
        )
        first = self.open.pop(producer_id, None)
        if first is not None and not commit:
            self.aborted.append(Aborted(producer_id, first, offset))

    def read(self, offset: int, *, max_bytes: int, min_one_batch: bool = True) -> ReadResult:
        if not self.log_start_offset <= offset <= self.log_end_offset:
            raise LogError(ErrorCode.offset_out_of_range, f"{offset} outside the log")
        parts: list[bytes] = []
        total = 0
        for h, data in self.batches:
            if h.last_offset < offset:
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
        return None


@dataclass
class Rig:
    log: TxnLog = field(default_factory=TxnLog)
    levels: dict[str, IsolationLevel] = field(default_factory=dict)
    clock: ManualClock = field(default_factory=ManualClock)
    persister: InMemoryPersister = field(default_factory=InMemoryPersister)
    manager: DrivenManager = field(init=False)

    def __post_init__(self) -> None:
        self.manager = DrivenManager(
            clock=self.clock,
            logs=lambda _topic, _partition: self.log,
            persister=self.persister,
            settings_for=lambda group: SharePartitionConfig(
                isolation_level=self.levels[group], auto_offset_reset="earliest"
            ),
        )

    def group(self, group: str, level: IsolationLevel) -> None:
        self.levels[group] = level
        key = SharePartitionKey(group, P0.topic_id, P0.partition)
        assert self.persister.initialize(key=key, state_epoch=0, start_offset=-1) is None

    def fetch(self, group: str, member: str = "m", max_records: int = 500) -> ShareFetchPartition:
        fetched = self.manager.acquire(
            group_id=group,
            member_id=member,
            partitions=[P0],
            max_records=max_records,
            batch_size=500,
            max_bytes=2**31 - 1,
        )
        (partition,) = fetched.partitions
        assert partition.error is None
        return partition

    def ack(self, group: str, *batches: AckBatch, member: str = "m") -> None:
        acked = self.manager.acknowledge(
            group_id=group, member_id=member, partition=P0, batches=batches, renew_allowed=False
        )
        assert acked.error is None

    def start_offset(self, group: str) -> int:
        sp = self.manager.get(SharePartitionKey(group, P0.topic_id, P0.partition))
        assert sp is not None
        return sp.start_offset

    def state(self, group: str, offset: int) -> RecordState:
        sp = self.manager.get(SharePartitionKey(group, P0.topic_id, P0.partition))
        assert sp is not None
        for v in sp.in_flight():
            if v.first_offset <= offset <= v.last_offset:
                return v.state
        raise KeyError(offset)


def ranges(fetched: ShareFetchPartition) -> list[tuple[int, int]]:
    return [(r.first_offset, r.last_offset) for r in fetched.acquired]


def delivered(fetched: ShareFetchPartition) -> list[bytes | None]:
    """What an application sees: the data records inside the acquired ranges (a client
    drops control records and GAP-acks their offsets)."""
    data_offsets = set()
    for h in iter_headers(fetched.records):
        if not h.is_control:
            data_offsets.update(range(h.base_offset, h.last_offset + 1))
    acquired = {o for r in fetched.acquired for o in range(r.first_offset, r.last_offset + 1)}
    return [
        r.value
        for r in decode_records(fetched.records)
        if r.offset in acquired and r.offset in data_offsets
    ]


def mixed_log(log: TxnLog) -> None:
    """G92's topic: 2 plain, 3 committed (+ COMMIT), 3 aborted (+ ABORT), 2 plain:
    offsets 0-1 plain, 2-4 committed, 5 COMMIT, 6-8 aborted, 9 ABORT, 10-11 plain."""
    log.plain(2, b"a")
    log.txn(100, 3, b"c")
    log.end(100, commit=True)
    log.txn(200, 3, b"x")
    log.end(200, commit=False)
    log.plain(2, b"b")


def test_g91_read_uncommitted_delivers_committed_and_aborted_but_never_markers() -> None:
    rig = Rig()
    mixed_log(rig.log)
    rig.group("g", UNCOMMITTED)
    fetched = rig.fetch("g")
    assert ranges(fetched) == [(0, 11)]
    assert delivered(fetched) == [
        b"a0",
        b"a1",
        b"c0",
        b"c1",
        b"c2",
        b"x0",
        b"x1",
        b"x2",
        b"b0",
        b"b1",
    ]


def test_g92_read_committed_delivers_seven_archives_aborted_and_markers_are_gap_acked() -> None:
    rig = Rig()
    mixed_log(rig.log)
    rig.group("g", COMMITTED)
    fetched = rig.fetch("g")
    assert ranges(fetched) == [(0, 5), (9, 11)]
    assert delivered(fetched) == [b"a0", b"a1", b"c0", b"c1", b"c2", b"b0", b"b1"]
    assert all(rig.state("g", o) is RecordState.ARCHIVED for o in (6, 7, 8))
    rig.ack(
        "g",
        AckBatch(0, 4, (ACCEPT,)),
        AckBatch(5, 5, (GAP,)),
        AckBatch(9, 9, (GAP,)),
        AckBatch(10, 11, (ACCEPT,)),
    )
    assert rig.start_offset("g") == 12
    write = rig.persister.read(key=SharePartitionKey("g", P0.topic_id, 0), leader_epoch=0)
    assert write.state is not None and write.state.start_offset == 12


def test_g93_an_open_transaction_stalls_the_group_at_its_first_offset() -> None:
    rig = Rig()
    rig.log.plain(2, b"a")  # 0-1
    rig.log.txn(100, 3, b"t")  # 2-4, open
    rig.log.plain(2, b"b")  # 5-6, another producer, behind the open transaction
    rig.group("g", COMMITTED)
    fetched = rig.fetch("g")
    assert ranges(fetched) == [(0, 1)]
    rig.ack("g", AckBatch(0, 1, (ACCEPT,)))
    assert rig.start_offset("g") == 2
    assert ranges(rig.fetch("g")) == [], "nothing from the LSO on"
    assert rig.manager.available_bytes(group_id="g", partitions=[P0], cap=1 << 20) == 0
    rig.log.end(100, commit=True)  # 7 COMMIT; the LSO moves to the log end
    assert rig.manager.available_bytes(group_id="g", partitions=[P0], cap=1 << 20) > 0
    fetched = rig.fetch("g")
    assert ranges(fetched) == [(2, 7)]
    assert delivered(fetched) == [b"t0", b"t1", b"t2", b"b0", b"b1"]


def test_g93_the_start_offset_never_passes_the_lso_and_an_abort_releases_the_stall() -> None:
    rig = Rig()
    rig.log.txn(100, 2, b"t")  # 0-1, open
    rig.log.plain(3, b"b")  # 2-4
    rig.group("g", COMMITTED)
    assert ranges(rig.fetch("g")) == []
    assert rig.start_offset("g") == 0
    rig.log.end(100, commit=False)  # 5 ABORT
    fetched = rig.fetch("g")
    assert ranges(fetched) == [(2, 5)]
    assert delivered(fetched) == [b"b0", b"b1", b"b2"]
    rig.ack("g", AckBatch(2, 4, (ACCEPT,)), AckBatch(5, 5, (GAP,)))
    assert rig.start_offset("g") == 6


def test_g94_a_level_change_applies_to_records_acquired_afterwards() -> None:
    rig = Rig()
    rig.log.txn(200, 2, b"x")  # 0-1
    rig.log.end(200, commit=False)  # 2 ABORT
    rig.group("g", UNCOMMITTED)
    first = rig.fetch("g", max_records=1)
    assert ranges(first) == [(0, 1)]
    assert delivered(first) == [b"x0", b"x1"], "acquired under read_uncommitted"
    rig.levels["g"] = COMMITTED
    rig.log.txn(300, 2, b"y")  # 3-4
    rig.log.end(300, commit=False)  # 5 ABORT
    rig.log.plain(1, b"p")  # 6
    second = rig.fetch("g")
    assert ranges(second) == [(2, 2), (5, 6)]
    assert delivered(second) == [b"p0"]
    assert rig.state("g", 0) is RecordState.ACQUIRED, "records already acquired keep their state"
    rig.levels["g"] = UNCOMMITTED
    rig.log.txn(400, 1, b"z")  # 7, open: read_uncommitted reads past it
    assert delivered(rig.fetch("g")) == [b"z0"]


def test_g95_two_groups_with_different_levels_each_see_their_own_result() -> None:
    rig = Rig()
    mixed_log(rig.log)
    rig.log.txn(300, 2, b"o")  # 12-13, open
    rig.group("committed", COMMITTED)
    rig.group("uncommitted", UNCOMMITTED)
    assert delivered(rig.fetch("committed")) == [b"a0", b"a1", b"c0", b"c1", b"c2", b"b0", b"b1"]
    assert delivered(rig.fetch("uncommitted")) == [
        b"a0", b"a1", b"c0", b"c1", b"c2", b"x0", b"x1", b"x2", b"b0", b"b1", b"o0", b"o1"
    ]  # fmt: skip
    assert rig.state("committed", 7) is RecordState.ARCHIVED
    assert rig.state("uncommitted", 7) is RecordState.ACQUIRED


def test_read_committed_released_aborted_records_are_never_redelivered() -> None:
    """Archived aborted records are terminal: releasing the rest and fetching again
    gives only the committed records, with their count raised."""
    rig = Rig()
    mixed_log(rig.log)
    rig.group("g", COMMITTED)
    rig.fetch("g")
    rig.ack(
        "g", AckBatch(0, 5, (AcknowledgeType.RELEASE,)), AckBatch(9, 11, (AcknowledgeType.RELEASE,))
    )
    again = rig.fetch("g", member="n")
    assert ranges(again) == [(0, 5), (9, 11)]
    assert [r.delivery_count for r in again.acquired] == [2, 2]


# ---- against a model -----------------------------------------------------------------------

PRODUCERS = (101, 102, 103)
Step = tuple[str, int, int]
"""("plain", -, count) | ("txn", producer, count) | ("commit"/"abort", producer, -) |
("fetch", max_records, -)."""

steps = st.lists(
    st.one_of(
        st.tuples(st.just("plain"), st.just(0), st.integers(1, 3)),
        st.tuples(st.just("txn"), st.sampled_from(PRODUCERS), st.integers(1, 3)),
        st.tuples(st.sampled_from(["commit", "abort"]), st.sampled_from(PRODUCERS), st.just(0)),
        st.tuples(st.just("fetch"), st.integers(1, 6), st.just(0)),
    ),
    max_size=30,
)


@given(steps)
@settings(max_examples=150, deadline=None)
def test_read_committed_delivers_exactly_the_committed_and_plain_records(
    script: list[Step],
) -> None:
    """Interleaved transactions of three producers, plain records and fetches: a
    read_committed group acquires nothing at or past the LSO, its start offset never
    passes the LSO, and once every transaction ended it has delivered exactly the
    plain and committed records, each once, in offset order; aborted ones are archived
    and markers GAP-acknowledged."""
    rig = Rig()
    rig.group("g", COMMITTED)
    outcome: dict[bytes, str] = {}
    """Value prefix of each data batch -> "plain", "open", "commit" or "abort"."""
    batch_of: dict[int, list[bytes]] = {pid: [] for pid in PRODUCERS}
    seen: list[bytes] = []

    def fetch(max_records: int) -> None:
        lso = rig.log.last_stable_offset
        fetched = rig.fetch("g", max_records=max_records)
        acquired = [o for r in fetched.acquired for o in range(r.first_offset, r.last_offset + 1)]
        assert all(o < lso for o in acquired), (acquired, lso)
        control = {
            o
            for h in iter_headers(fetched.records)
            if h.is_control
            for o in range(h.base_offset, h.last_offset + 1)
        }
        seen.extend(delivered(fetched))
        acks = [AckBatch(o, o, (GAP if o in control else ACCEPT,)) for o in acquired]
        if acks:
            rig.ack("g", *acks)
        assert rig.start_offset("g") <= lso

    for serial, (action, arg, count) in enumerate(script):
        if action == "plain":
            prefix = b"p%d." % serial
            rig.log.plain(count, prefix)
            outcome[prefix] = "plain"
        elif action == "txn":
            prefix = b"t%d." % serial
            rig.log.txn(arg, count, prefix)
            outcome[prefix] = "open"
            batch_of[arg].append(prefix)
        elif action in ("commit", "abort"):
            rig.log.end(arg, commit=action == "commit")
            for prefix in batch_of[arg]:
                outcome[prefix] = action
            batch_of[arg] = []
        else:
            fetch(arg)
    for pid in PRODUCERS:
        rig.log.end(pid, commit=True)
        for prefix in batch_of[pid]:
            outcome[prefix] = "commit"
    for _ in range(rig.log.log_end_offset + 1):
        fetch(500)
    expected = [
        value
        for h, data in rig.log.batches
        if not h.is_control
        for value in (r.value for r in decode_records(data))
        if value is not None and outcome[value.split(b".")[0] + b"."] in ("plain", "commit")
    ]
    assert seen == expected
    assert rig.start_offset("g") == rig.log.log_end_offset
