"""Scheduled delivery (`shoal.share.delivery.delay.max.ms` > 0 and the record header
`shoal.deliver.at`, docs/design/scheduled-delivery.md) under a randomised state machine, and
its bounds in plain tests.

The machine is the key-order machine of test_key_order_stateful.py (itself the
share-partition machine of test_stateful.py), its log's records carrying
`shoal.deliver.at` headers: none, due now, later, in the past, beyond the delay cap,
malformed; batches stamped now or a while ago; key order on or off; a test value of
the waiting-records limit; the clock moved to a record's due time or just short of it.
On top of the key-order checks (with key order on), after every acquisition and step:
- no record goes out for the first time before its due time, min(deliver.at, record
  timestamp + delay.max.ms), by the wall clock, reloads included (delays survive a
  restart);
- malformed values and past times are delivered at once: a fetch with room takes
  something whenever such a record (or a due one) is waiting to be taken, and waiting
  records take no room under share.partition.max.record.locks;
- at most `scheduled_max` records wait, and no record past more than that many
  waiting ones is taken (nothing skipped past the limit);
- the DeliveryHolds view agrees (scheduled records, next due time, malformed count);
- nothing lost: the drain (the clock moved past every due time) delivers every record.
"""

from __future__ import annotations

import sys

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule

from shoal import limits
from shoal.protocol.share import AcknowledgeType, AcquireMode
from shoal.share.acknowledge import AckBatch
from shoal.share.partition import AcquireResult
from tests.unit.share.keyed_rig import KeyedRig, due_ms, is_malformed, offsets_of
from tests.unit.share.test_key_order_stateful import KeyOrderMachine

MALFORMED = (b"", b"soon", b"12a4", b"-5", b"1" * 20, b" 1700000000000", "\u0661".encode())
"""Not 1-19 ASCII digits: empty, letters, a sign, 20 digits, a space, an Arabic-Indic
digit."""

WHEN = st.one_of(
    st.none(),
    st.tuples(st.just("in"), st.sampled_from([0, 1, 500, 5_000, 30_000, 120_000])),
    st.tuples(st.just("past"), st.sampled_from([1, 10_000])),
    st.tuples(st.just("beyond"), st.just(0)),
    st.tuples(st.just("malformed"), st.sampled_from(range(len(MALFORMED)))),
)
"""A record's `shoal.deliver.at`: none, in some ms, some ms ago, beyond the delay cap,
or malformed."""

KEYS = (b"a", b"b", None)
RECORD = st.tuples(st.sampled_from(KEYS), WHEN)
BATCH = st.tuples(
    st.sampled_from([0, 0, 0, 1]),  # a hole before the batch
    st.lists(RECORD, min_size=1, max_size=5),
    st.sampled_from([0, 0, 0, 45_000]),  # the batch's timestamp is this much old
)

Batch = tuple[int, list[tuple[bytes | None, object]], int]

SPAN_SLACK = 4
"""How far past the widest span an acquisition may stretch a window: the rest of a log
batch it took whole (batches here hold at most 5 records)."""


class ScheduledMachine(KeyOrderMachine):
    @initialize(
        batches=st.lists(BATCH, min_size=2, max_size=10),
        cap=st.sampled_from([1_000, 60_000, 3_600_000]),
        ordered=st.booleans(),
        limit=st.integers(2, 5),
        locks=st.sampled_from([4, 10, 2000]),
        scheduled_max=st.sampled_from([2, 5, 1_000]),
        span_max=st.sampled_from([12, 30, 1_000_000]),
    )
    def start(  # type: ignore[override]
        self,
        batches: list[Batch],
        cap: int,
        ordered: bool,
        limit: int,
        locks: int,
        scheduled_max: int,
        span_max: int,
    ) -> None:
        self.rig = KeyedRig(options={"scheduled_max": scheduled_max, "window_span_max": span_max})
        self.rig.set(
            key_ordered=ordered,
            delivery_delay_max_ms=cap,
            delivery_count_limit=limit,
            max_record_locks=locks,
        )
        self._append_scheduled(batches)
        self.rig.start(reset_offset=0)
        self.spso = self.rig.sp.start_offset

    def _append_scheduled(self, batches: list[Batch]) -> None:
        rig = self.rig
        now = rig.clock.wall_ms()
        cap = rig.config.delivery_delay_max_ms
        for hole, records, age in batches:
            encoded = []
            for key, when in records:
                at: bytes | None = None
                if isinstance(when, tuple):
                    kind, amount = when
                    if kind == "in":
                        at = b"%d" % (now + amount)
                    elif kind == "past":
                        at = b"%d" % (now - amount)
                    elif kind == "beyond":
                        at = b"%d" % (now + 10 * cap)
                    else:
                        at = MALFORMED[amount]
                encoded.append((key, at))
            self.record_offsets.update(rig.append(encoded, hole=hole, timestamp_ms=now - age))

    @rule(batches=st.lists(BATCH, min_size=1, max_size=3))
    def produce(self, batches: list[Batch]) -> None:  # type: ignore[override]
        self._append_scheduled(batches)

    # ---- time

    def _due(self, offset: int) -> int | None:
        record = self.rig.records.get(offset)
        if record is None:
            return None
        return due_ms(record, delay_max_ms=self.rig.config.delivery_delay_max_ms)

    def _waiting(self, offset: int) -> bool:
        """Not due yet by the wall clock, and never delivered."""
        due = self._due(offset)
        return (
            due is not None
            and due > self.rig.clock.wall_ms()
            and offset not in self.ever_delivered
            and offset not in self.terminal
        )

    def _floor(self) -> int:
        return max(self.rig.log_start_offset, self.rig.sp.start_offset)

    def _waiting_between(self, first: int, last: int) -> int:
        return sum(1 for o in self.rig.records if first <= o <= last and self._waiting(o))

    @rule(data=st.data(), short=st.booleans())
    def advance_to_due(self, data: st.DataObject, short: bool) -> None:
        """Move the clock (wall and monotonic together) to a waiting record's due
        time, or 1 ms short of it."""
        floor = self._floor()
        waiting = sorted(
            {d for o in self.rig.records if o >= floor and self._waiting(o) if (d := self._due(o))}
        )
        if not waiting:
            return
        due = data.draw(st.sampled_from(waiting[:3]))
        step = due - self.rig.clock.wall_ms() - (1 if short else 0)
        if step > 0:
            self.rig.clock.advance(step)

    # ---- checks at each acquisition

    def _check_acquired(self, member: str, result: AcquireResult, limit: int) -> None:
        self._check_schedule(result)
        self._check_span(result)
        super()._check_acquired(member, result, limit)

    def _check_schedule(self, result: AcquireResult) -> None:
        now = self.rig.clock.wall_ms()
        floor = self._floor()
        for offset in offsets_of(result):
            if offset in self.ever_delivered:
                continue  # only the first delivery waits
            due = self._due(offset)
            assert due is None or now >= due, (
                f"{offset} delivered at {now}, due at {due} ({self.rig.records[offset]})"
            )
            before = self._waiting_between(floor, offset - 1)
            assert before <= self.rig.scheduled_max, (
                f"{offset} taken past {before} waiting records (limit {self.rig.scheduled_max})"
            )

    def _reachable(self, offset: int, *, end: int, room: int) -> bool:
        """Besides the room: not past `scheduled_max` waiting records (counting all the
        model's, at least as many as the core meets on the way)."""
        if self._waiting_between(self._floor(), offset - 1) >= self.rig.scheduled_max:
            return False
        if offset <= end:
            return True
        sp = self.rig.sp
        return (
            offset - end - self._waiting_between(end + 1, offset - 1) <= room
            and offset - sp.start_offset < sp.window_span_max
        )

    def _check_span(self, result: AcquireResult) -> None:
        """limits.SHARE_WINDOW_SPAN_MAX_OFFSETS (a test value): a window spanning that
        many offsets or more takes no new record from the log until its start offset
        moves, and an acquisition stretches it no further than the rest of the last
        log batch it took whole."""
        sp = self.rig.sp
        start, end = self.rig.before_fetch
        if end - start + 1 >= sp.window_span_max:
            taken = offsets_of(result)
            assert not taken or max(taken) <= end, (start, end, taken)
        if sp.end_offset > end:
            span = sp.end_offset - sp.start_offset + 1
            assert span <= sp.window_span_max + SPAN_SLACK, (span, sp.window_span_max)

    @invariant()
    def schedule_holds_agree(self) -> None:
        """The DeliveryHolds view and the record views against the model."""
        holds = self.rig.sp.delivery_holds()
        assert holds.scheduled_records <= self.rig.scheduled_max, holds
        # a record may stay counted until an acquisition passes it after its time
        undelivered = {
            o: due
            for o in self.rig.records
            if o not in self.ever_delivered and (due := self._due(o)) is not None
        }
        assert holds.scheduled_records <= len(undelivered), (holds, undelivered)
        if holds.scheduled_records:
            assert holds.next_due_ms in undelivered.values(), (holds, undelivered)
        else:
            assert holds.next_due_ms is None, holds
        malformed = sum(1 for r in self.rig.records.values() if is_malformed(r))
        assert holds.malformed_deliver_at <= malformed, (holds, malformed)
        for v in self.rig.sp.in_flight():
            if v.deliver_at_ms is not None:
                assert v.first_offset == v.last_offset, v
                assert v.deliver_at_ms == self._due(v.first_offset), v

    def teardown(self) -> None:
        if not self.rig.sp.initialized or sys.exc_info()[0] is not None:
            return
        dues = [d for o in self.rig.records if (d := self._due(o)) is not None]
        if dues:
            step = max(dues) - self.rig.clock.wall_ms()
            if step > 0:
                self.rig.clock.advance(step)
        super().teardown()


ScheduledMachine.TestCase.settings = settings(
    # max_examples from the Hypothesis profile (tests/conftest.py: 100 in CI, more at night)
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestScheduledMachine = ScheduledMachine.TestCase


# ---- the bounds, one by one

CAP = 60_000
LATE = 1
"""A record comes due at most this many ms after its time: the core rounds up, as
its two clocks are read in whole milliseconds (never early; acquire.py)."""
ACCEPT = (int(AcknowledgeType.ACCEPT),)
RELEASE = (int(AcknowledgeType.RELEASE),)


def _rig(**options: int) -> KeyedRig:
    rig = KeyedRig(options=dict(options))
    rig.set(delivery_delay_max_ms=CAP)
    return rig


def _at(rig: KeyedRig, ms: int) -> bytes:
    return b"%d" % (rig.clock.wall_ms() + ms)


def test_waiting_records_take_no_room_under_the_lock_limit() -> None:
    rig = _rig()
    rig.set(max_record_locks=3)
    later = _at(rig, 30_000)
    rig.append([(None, later)] * 4)
    rig.append([(None, None), (None, None)])
    rig.start(reset_offset=0)
    assert offsets_of(rig.fetch("m0")) == [4, 5]
    assert rig.sp.delivery_holds().scheduled_records == 4
    assert rig.sp.delivery_holds().next_due_ms == rig.clock.wall_ms() + 30_000


def test_at_the_waiting_limit_nothing_further_is_taken_or_skipped() -> None:
    """limits.SHARE_SCHEDULED_RECORDS_MAX, at a test value of 2: a third record that
    would wait stays in the log, and nothing past it is taken (it is not skipped)."""
    rig = _rig(scheduled_max=2)
    assert rig.scheduled_max == 2, "the core takes no `scheduled_max`"
    for ms in (10_000, 20_000, 30_000):
        rig.append([(None, _at(rig, ms))])
    rig.append([(None, None)])
    rig.start(reset_offset=0)
    assert offsets_of(rig.fetch("m0")) == []
    assert rig.sp.delivery_holds().scheduled_records == 2
    rig.clock.advance(10_000 + LATE)
    # the first came due; the third takes its place, and the fourth (due) goes out
    assert offsets_of(rig.fetch("m0")) == [0, 3]
    assert rig.sp.delivery_holds().scheduled_records == 2
    rig.clock.advance(10_000)
    assert offsets_of(rig.fetch("m1")) == [1]
    rig.clock.advance(10_000)
    assert offsets_of(rig.fetch("m2")) == [2]
    assert rig.sp.delivery_holds().scheduled_records == 0


def test_the_default_waiting_limit_is_the_named_limit() -> None:
    assert KeyedRig().sp.scheduled_max == limits.SHARE_SCHEDULED_RECORDS_MAX


def test_malformed_and_past_times_go_at_once_and_are_counted() -> None:
    rig = _rig()
    past = _at(rig, -5_000)
    rig.append([(None, value) for value in MALFORMED] + [(None, past)])
    rig.start(reset_offset=0)
    assert offsets_of(rig.fetch("m0")) == list(range(len(MALFORMED) + 1))
    assert rig.sp.delivery_holds().malformed_deliver_at == len(MALFORMED)


def test_the_delay_is_capped_from_the_record_timestamp() -> None:
    rig = _rig()
    rig.append([(None, _at(rig, 10 * 3_600_000))], timestamp_ms=rig.clock.wall_ms() - 1_000)
    rig.start(reset_offset=0)
    rig.clock.advance(CAP - 1_000 - 1)
    assert offsets_of(rig.fetch("m0")) == []
    rig.clock.advance(1 + LATE)
    assert offsets_of(rig.fetch("m0")) == [0]


def test_only_the_first_delivery_waits() -> None:
    rig = _rig()
    rig.append([(None, _at(rig, 5_000))])
    rig.start(reset_offset=0)
    assert offsets_of(rig.fetch("m0")) == []
    rig.clock.advance(5_000 + LATE)
    assert offsets_of(rig.fetch("m0")) == [0]
    rig.ack("m0", AckBatch(0, 0, RELEASE))
    assert offsets_of(rig.fetch("m1")) == [0]


def test_a_restart_keeps_the_delay() -> None:
    rig = _rig()
    rig.append([(None, _at(rig, 5_000)), (None, None)])
    rig.start(reset_offset=0)
    assert offsets_of(rig.fetch("m0")) == [1]
    rig.ack("m0", AckBatch(1, 1, ACCEPT))
    rig.load(reset_offset=0)
    rig.clock.advance(4_999)
    assert offsets_of(rig.fetch("m1")) == []
    rig.clock.advance(1 + LATE)
    assert offsets_of(rig.fetch("m1")) == [0]


def test_off_by_default_the_header_is_not_read() -> None:
    rig = KeyedRig()
    rig.append([(None, b"%d" % (rig.clock.wall_ms() + 60_000)), (None, b"junk")])
    rig.start(reset_offset=0)
    assert offsets_of(rig.fetch("m0")) == [0, 1]
    assert rig.sp.delivery_holds().malformed_deliver_at == 0


def test_a_waiting_record_holds_back_its_key() -> None:
    rig = _rig()
    rig.set(key_ordered=True)
    rig.append([(b"k", _at(rig, 5_000)), (b"k", None), (b"j", None)])
    rig.start(reset_offset=0)
    assert offsets_of(rig.fetch("m0", mode=AcquireMode.BATCH_OPTIMIZED)) == [2]
    rig.clock.advance(5_000 + LATE)
    assert offsets_of(rig.fetch("m1")) == [0, 1]


@pytest.mark.parametrize("hold", ["waiting", "held back"])
def test_the_window_span_bounds_one_walk_too(hold: str) -> None:
    """limits.SHARE_WINDOW_SPAN_MAX_OFFSETS, at a test value of 10: one acquisition
    passing 15 records that wait (or are held back by their key) does not stretch the
    window to 20 offsets."""
    rig = KeyedRig(options={"window_span_max": 10})
    if hold == "waiting":
        rig.set(delivery_delay_max_ms=CAP)
        for _ in range(3):
            rig.append([(None, _at(rig, 30_000))] * 5)
    else:
        rig.set(key_ordered=True)
        for _ in range(3):
            rig.append([(b"k", None)] * 5)
    rig.append([(None, None)] * 5)
    rig.start(reset_offset=0)
    if hold != "waiting":
        assert offsets_of(rig.fetch("m0", max_records=1, mode=AcquireMode.RECORD_LIMIT)) == [0]
    rig.fetch("m1")
    span = rig.sp.end_offset - rig.sp.start_offset + 1
    assert span <= 10, span


def test_records_below_the_start_offset_stop_waiting() -> None:
    """At a waiting limit of 2: 0 (due in 30 s) and 1 (due in 10 s) wait; the log start
    moves to 1. 0 left the window, so 2 (due in 20 s) can wait in its place, and 3 (no
    header) goes out."""
    rig = _rig(scheduled_max=2)
    rig.append([(None, _at(rig, 30_000))])
    rig.append([(None, _at(rig, 10_000))])
    rig.start(reset_offset=0)
    assert offsets_of(rig.fetch("m0")) == []
    rig.log_start_offset = 1
    rig.sp.on_log_start_offset(log_start_offset=1)
    rig.append([(None, _at(rig, 20_000))])
    rig.append([(None, None)])
    assert offsets_of(rig.fetch("m0")) == [3]
    assert rig.sp.delivery_holds().scheduled_records == 2
