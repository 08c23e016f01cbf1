"""A randomised state machine: several members against one SharePartition over a log
of random batches (holes and control batches included), with every acknowledgement
type, invalid acks, pending writes that commit or roll back, lock expiry, session
releases, log start moves, log compaction, reloads from the persister (with pending
writes lost or applied), a delivery limit lowered on the fly, and the Shoal
extensions (a redelivery backoff drawn at the start, delivery paused and resumed). Common operations
are registered twice and rare ones fire on a 1-in-N draw, so a run goes deep.

An independent model tracks which member holds which offset and how many times each
offset was delivered. Checked after every step:
- no record is held by two members (no offset returned while another acquisition of
  it is live), and the partition's ACQUIRED records are exactly the model's;
- delivery counts are the model's and never exceed the limit at acquisition;
- the SPSO never moves backwards and only past terminal records (or offsets with no
  record, or below the log start);
- DeliveryCompleteCount = terminal offsets >= SPSO;
- failed acknowledgements change nothing;
- the window's own invariants (`check_invariants`).
At the end every member acknowledges what it holds and locks expire for the rest,
repeatedly, until the SPSO reaches the log end.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from shoal.protocol.share import AcknowledgeType, AcquireMode
from shoal.share.acknowledge import AckBatch
from shoal.share.manager import _earlier, _may_bring_deadlines_earlier
from shoal.share.partition import AcquireResult, PendingWrite, WriteCompletion
from shoal.share.persister import StateWrite
from shoal.share.states import RecordState
from tests.unit.share.support import Rig, header

MEMBERS = ("m0", "m1", "m2")
ACCEPT = int(AcknowledgeType.ACCEPT)
TERMINAL = {int(RecordState.ACKNOWLEDGED), int(RecordState.ARCHIVED)}


@dataclass
class Outstanding:
    member: str
    pending: PendingWrite


class SharePartitionMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.rig = Rig()
        self.live: dict[int, str] = {}
        """offset -> member holding it (ACQUIRED, no write pending)."""
        self.deliveries: dict[int, int] = {}
        self.terminal: set[int] = set()
        self.pending_offsets: dict[int, tuple[str, set[int]]] = {}
        self.record_offsets: set[int] = set()
        self.spso = 0
        self.outstanding: list[Outstanding] = []

    # ---- set-up

    @initialize(
        shapes=st.lists(
            st.tuples(st.sampled_from([0, 0, 0, 0, 1, 3]), st.integers(1, 8), st.integers(0, 9)),
            min_size=3,
            max_size=25,
        ),
        limit=st.integers(2, 6),
        locks=st.sampled_from([8, 20, 60, 2000]),
        renew=st.booleans(),
        backoff=st.sampled_from([0, 0, 300, 5_000]),
    )
    def start(
        self,
        shapes: list[tuple[int, int, int]],
        limit: int,
        locks: int,
        renew: bool,
        backoff: int,
    ) -> None:
        self.rig.set(
            delivery_count_limit=limit,
            max_record_locks=locks,
            renew_enabled=renew,
            redelivery_backoff_ms=backoff,
        )
        self._append(shapes)
        self.rig.start(reset_offset=0)
        self.spso = self.rig.sp.start_offset

    def _append(self, shapes: list[tuple[int, int, int]]) -> None:
        offset = self.rig.log_end
        for hole, size, kind in shapes:
            offset += hole
            control = kind == 0 and size == 1
            self.rig.log.append(header(offset, offset + size - 1, control=control))
            self.record_offsets.update(range(offset, offset + size))
            offset += size

    # ---- rules

    @rule(
        shapes=st.lists(
            st.tuples(st.sampled_from([0, 0, 2]), st.integers(1, 6), st.integers(0, 9)),
            min_size=1,
            max_size=4,
        )
    )
    def produce(self, shapes: list[tuple[int, int, int]]) -> None:
        self._append(shapes)

    @rule(
        member=st.sampled_from(MEMBERS),
        max_records=st.sampled_from([0, 1, 2, 3, 5, 8, 13, 500]),
        batch_size=st.integers(1, 10),
        mode=st.sampled_from(list(AcquireMode)),
        max_bytes=st.sampled_from([0, 1, 200, 2**31 - 1]),
    )
    def fetch(
        self, member: str, max_records: int, batch_size: int, mode: AcquireMode, max_bytes: int
    ) -> None:
        limit = self.rig.config.delivery_count_limit
        result = self.rig.fetch(
            member,
            max_records=max_records,
            batch_size=batch_size,
            mode=mode,
            max_bytes=max_bytes,
            persist=False,
        )
        self._check_acquired(member, result, limit)
        if self.rig.config.delivery_paused:
            assert result.acquired == () and result.write is None, result
        if result.write is not None:
            self._written(result.write)

    @rule(rare=st.integers(0, 99))
    def toggle_pause(self, rare: int) -> None:
        """Shoal extension: paused delivery acquires nothing, and changes nothing else."""
        if rare < 5:
            self.rig.set(delivery_paused=not self.rig.config.delivery_paused)

    def _check_acquired(self, member: str, result: AcquireResult, limit: int) -> None:
        previous_last = -1
        for records in result.acquired:
            assert records.first_offset > previous_last
            previous_last = records.last_offset
            assert records.delivery_count <= limit, (records, limit)
            for offset in range(records.first_offset, records.last_offset + 1):
                assert offset not in self.live, f"{offset} already held by {self.live[offset]}"
                assert offset >= self.rig.sp.start_offset
                delivered = self.deliveries.get(offset, 0) + 1
                assert records.delivery_count == delivered, (offset, records, delivered)
                self.deliveries[offset] = delivered
                self.live[offset] = member
        self._check_batches(result, previous_last)

    def _check_batches(self, result: AcquireResult, previous_last: int) -> None:
        """The log batches overlapping the acquired span (none when compaction removed
        every record of a re-acquired cached batch: the client GAP-acks it)."""
        if result.acquired:
            first = result.acquired[0].first_offset
            assert all(
                h.last_offset >= first and h.base_offset <= previous_last for h in result.batches
            )
            expected = [
                h for h in self.rig.log if h.last_offset >= first and h.base_offset <= previous_last
            ]
            assert [(h.base_offset, h.last_offset) for h in result.batches] == [
                (h.base_offset, h.last_offset) for h in expected
            ][: len(result.batches)]
        else:
            assert result.batches == ()

    @rule(data=st.data())
    def acknowledge(self, data: st.DataObject) -> None:
        holders = sorted(set(self.live.values()))
        if holders and data.draw(st.integers(0, 9)) > 0:
            member = data.draw(st.sampled_from(holders))
        else:
            member = data.draw(st.sampled_from(MEMBERS))
        held = sorted(o for o, m in self.live.items() if m == member)
        others = sorted(o for o, m in self.live.items() if m != member)
        candidates = held if held else others
        if not candidates:
            return
        batches = _draw_ack_batches(data, candidates, others)
        before = self._snapshot()
        start = self.rig.sp.start_offset
        deadlines = self.rig.sp.deadlines()
        result = self.rig.sp.acknowledge(member_id=member, batches=batches)
        self.rig.sp.check_invariants()
        if result.error is not None:
            assert self._snapshot() == before, "a failed acknowledgement changed state"
            return
        if not _may_bring_deadlines_earlier(batches):
            # the manager's shortcut: no deadline comparison without RELEASE or RENEW
            assert not _earlier(deadlines, self.rig.sp), (batches, deadlines)
        for batch in batches:
            for offset in range(batch.first_offset, batch.last_offset + 1):
                if batch.type_at(offset) is AcknowledgeType.RENEW:
                    continue
                holder = self.live.get(offset)
                if offset >= start:
                    assert holder == member, (offset, holder)
                if holder == member:
                    del self.live[offset]
        if result.pending is not None:
            written = {
                o
                for b in result.pending.write.state_batches
                for o in range(b.first_offset, b.last_offset + 1)
            }
            self.pending_offsets[result.pending.handle.id] = (member, written)
            self.outstanding.append(Outstanding(member, result.pending))

    @rule(rare=st.integers(0, 99), member=st.sampled_from(MEMBERS))
    def close_session(self, rare: int, member: str) -> None:
        if rare % 4:
            return
        pending = self.rig.sp.release_member(member_id=member)
        held = {o for o, m in self.live.items() if m == member}
        if pending is None:
            assert not held
            return
        written = {
            o for b in pending.write.state_batches for o in range(b.first_offset, b.last_offset + 1)
        }
        assert written == held
        for offset in held:
            del self.live[offset]
        self.pending_offsets[pending.handle.id] = (member, written)
        self.outstanding.append(Outstanding(member, pending))

    @precondition(lambda self: bool(self.outstanding))
    @rule(index=st.integers(0, 100), succeed=st.booleans())
    def complete(self, index: int, succeed: bool) -> None:
        outstanding = self.outstanding.pop(index % len(self.outstanding))
        self._complete(outstanding, succeed=succeed)

    def _complete(self, outstanding: Outstanding, *, succeed: bool) -> None:
        pending = outstanding.pending
        member, written = self.pending_offsets.pop(pending.handle.id)
        completion: WriteCompletion
        if succeed:
            self._written(pending.write)
            deadlines = self.rig.sp.deadlines()
            completion = self.rig.sp.commit_write(handle=pending.handle)
            assert not _earlier(deadlines, self.rig.sp), "a commit brought a deadline earlier"
        else:
            completion = self.rig.sp.rollback_write(handle=pending.handle)
            expired: set[int] = set()
            for write in completion.writes:
                expired.update(
                    o for b in write.state_batches for o in range(b.first_offset, b.last_offset + 1)
                )
            for offset in written - expired:
                self.live[offset] = member
        for write in completion.writes:
            self._written(write)

    @rule(advance_ms=st.sampled_from([0, 500, 1_000, 10_000, 40_000]))
    def expire(self, advance_ms: int) -> None:
        self.rig.clock.advance(advance_ms)
        result = self.rig.sp.expire_locks(now_ms=self.rig.clock.monotonic_ms())
        for write in result.writes:
            assert len(write.state_batches) == 1
            batch = write.state_batches[0]
            for offset in range(batch.first_offset, batch.last_offset + 1):
                assert offset in self.live
                del self.live[offset]
            self._written(write)

    @rule(rare=st.integers(0, 99), step=st.integers(1, 3))
    def lower_delivery_limit(self, rare: int, step: int) -> None:
        if rare % 3:
            return
        limit = max(2, self.rig.config.delivery_count_limit - step)
        self.rig.set(delivery_count_limit=limit)

    @rule(rare=st.integers(0, 99), duration=st.sampled_from([1_000, 5_000, 30_000]))
    def change_lock_duration(self, rare: int, duration: int) -> None:
        if rare % 4:
            return
        self.rig.set(record_lock_duration_ms=duration)

    @rule(rare=st.integers(0, 99), step=st.integers(1, 10))
    def delete_records(self, rare: int, step: int) -> None:
        if rare % 6:
            return
        target = min(self.rig.log_end, self.rig.log_start_offset + step)
        self.rig.log_start_offset = target
        self.rig.sp.on_log_start_offset(log_start_offset=target)

    @rule(rare=st.integers(0, 99), data=st.data())
    def compact(self, rare: int, data: st.DataObject) -> None:
        """Log compaction removes a whole batch (never the last)."""
        if rare % 6:
            return
        log = self.rig.log
        if len(log) < 2:
            return
        index = data.draw(st.integers(0, len(log) - 2))
        removed = log.pop(index)
        self.record_offsets.difference_update(range(removed.base_offset, removed.last_offset + 1))

    @rule(rare=st.integers(0, 99), apply=st.lists(st.booleans(), max_size=8))
    def restart(self, rare: int, apply: list[bool]) -> None:
        """The share-partition is reloaded from the persister (leader change, or the
        group emptied). A pending write may or may not have reached it."""
        if rare % 8:
            return
        for outstanding, applied in zip(self.outstanding, apply + [False] * 8, strict=False):
            self.pending_offsets.pop(outstanding.pending.handle.id)
            if applied:
                self._written(outstanding.pending.write)
        self.outstanding.clear()
        sp = self.rig.load(reset_offset=0)
        durable = self.rig.durable()
        self.live.clear()
        self.deliveries = {
            o: b.delivery_count
            for b in durable.state_batches
            for o in range(b.first_offset, b.last_offset + 1)
        }
        self.terminal = {
            o
            for b in durable.state_batches
            if b.delivery_state in TERMINAL
            for o in range(b.first_offset, b.last_offset + 1)
        }
        self.spso = sp.start_offset

    # Common operations are registered more than once so they run more often.
    @rule(
        member=st.sampled_from(MEMBERS),
        max_records=st.sampled_from([1, 2, 5, 500]),
        batch_size=st.integers(1, 10),
        mode=st.sampled_from(list(AcquireMode)),
    )
    def fetch_again(
        self, member: str, max_records: int, batch_size: int, mode: AcquireMode
    ) -> None:
        self.fetch(member, max_records, batch_size, mode, 2**31 - 1)

    @rule(data=st.data())
    def acknowledge_again(self, data: st.DataObject) -> None:
        self.acknowledge(data)

    @precondition(lambda self: bool(self.outstanding))
    @rule(index=st.integers(0, 100), succeed=st.booleans())
    def complete_again(self, index: int, succeed: bool) -> None:
        self.complete(index, succeed)

    # ---- invariants

    @invariant()
    def consistent(self) -> None:
        sp = self.rig.sp
        sp.check_invariants()
        start = sp.start_offset
        assert start >= self.spso, "the SPSO moved backwards"
        for offset in range(self.spso, start):
            assert (
                offset in self.terminal
                or offset not in self.record_offsets
                or offset < self.rig.log_start_offset
            ), f"SPSO passed {offset}, which is not terminal"
        self.spso = start
        acquired = {}
        terminal = 0
        for v in sp.in_flight():
            for offset in range(v.first_offset, v.last_offset + 1):
                if v.state is RecordState.ACQUIRED and not v.pending:
                    acquired[offset] = v.member_id
                if v.state.is_terminal and offset >= start:
                    terminal += 1
        assert acquired == self.live
        assert sp.delivery_complete_count == terminal
        assert sp.next_fetch_offset() >= start

    def _snapshot(self) -> tuple[object, ...]:
        sp = self.rig.sp
        return (
            sp.in_flight(),
            sp.start_offset,
            sp.end_offset,
            sp.delivery_complete_count,
            sp.next_lock_deadline(),
        )

    def _written(self, write: StateWrite) -> None:
        for batch in write.state_batches:
            offsets = range(batch.first_offset, batch.last_offset + 1)
            if batch.delivery_state in TERMINAL:
                self.terminal.update(offsets)
        assert self.rig.persister.write(write=write) is None

    # ---- the end

    def teardown(self) -> None:
        rig = self.rig
        if not rig.sp.initialized:
            return
        while self.outstanding:
            self._complete(self.outstanding.pop(), succeed=True)
        rig.set(delivery_paused=False)
        for _ in range(5_000):
            if rig.sp.start_offset >= rig.log_end and not self.live:
                break
            progressed = False
            for member in MEMBERS:
                result = rig.fetch(member, max_records=1_000, persist=False)
                self._check_acquired(member, result, rig.config.delivery_count_limit)
                if result.write is not None:
                    self._written(result.write)
                held = sorted(o for o, m in self.live.items() if m == member)
                for first, last in _runs(held):
                    outcome = rig.sp.acknowledge(
                        member_id=member, batches=[AckBatch(first, last, (ACCEPT,))]
                    )
                    assert outcome.error is None, outcome
                    for offset in range(first, last + 1):
                        del self.live[offset]
                    if outcome.pending is not None:
                        self.pending_offsets[outcome.pending.handle.id] = (member, set())
                        self._complete(Outstanding(member, outcome.pending), succeed=True)
                progressed = progressed or bool(result.acquired)
            if not progressed:
                self.expire(40_000)
            self.consistent()
        assert rig.sp.start_offset >= rig.log_end, (rig.sp.start_offset, rig.log_end)
        assert not self.live
        for v in rig.sp.in_flight():
            assert v.state.is_terminal or v.first_offset >= rig.log_end


def _runs(offsets: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for offset in offsets:
        if runs and runs[-1][1] == offset - 1:
            runs[-1] = (runs[-1][0], offset)
        else:
            runs.append((offset, offset))
    return runs


def _draw_ack_batches(
    data: st.DataObject, candidates: list[int], others: list[int]
) -> list[AckBatch]:
    """Mostly valid batches over runs of `candidates`; sometimes a stray offset."""
    runs = _runs(candidates)
    chosen = data.draw(st.lists(st.sampled_from(runs), min_size=1, max_size=3, unique=True))
    batches = []
    for first, last in sorted(chosen):
        lo = data.draw(st.integers(first, last))
        hi = data.draw(st.integers(lo, last))
        if data.draw(st.booleans()):
            types = (data.draw(st.sampled_from(list(AcknowledgeType))),)
        else:
            types = tuple(
                data.draw(st.sampled_from(list(AcknowledgeType))) for _ in range(hi - lo + 1)
            )
        batches.append(AckBatch(lo, hi, tuple(int(t) for t in types)))
    if others and data.draw(st.integers(0, 9)) == 0:
        stray = data.draw(st.sampled_from(others))
        batches = [b for b in batches if not b.first_offset <= stray <= b.last_offset]
        batches.append(AckBatch(stray, stray, (int(AcknowledgeType.ACCEPT),)))
        batches.sort(key=lambda b: b.first_offset)
        batches = _drop_overlaps(batches)
    return batches


def _drop_overlaps(batches: list[AckBatch]) -> list[AckBatch]:
    kept: list[AckBatch] = []
    for batch in batches:
        if not kept or batch.first_offset > kept[-1].last_offset:
            kept.append(batch)
    return kept


SharePartitionMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestSharePartitionMachine = SharePartitionMachine.TestCase
