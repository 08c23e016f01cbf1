"""Key-ordered acquisition (`shoal.share.delivery.order=key`, docs/design/key-order.md) under
a randomised state machine, and the bounds of key order in plain tests.

The machine is the share-partition machine of test_stateful.py (its rules, model and
checks: members acquiring in both modes, every acknowledgement type, pending writes
that commit or roll back, lock expiry, session releases, a lowered delivery limit,
reloads from the persister, the final drain) over a log of real batches whose records
carry a few keys, null keys and transaction markers (keyed_rig.py), with key order on.
On top, it checks after every acquisition and every step:
- (I1) all ACQUIRED records of one key (a pending write's included: a rollback gives
  them back) belong to one acquisition;
- (I2) no record is handed out, first time or again, while an earlier record of its
  key is still in the window, not ACKNOWLEDGED/ARCHIVED and not in the same
  acquisition; nor while a record of its key is held outside it;
- first deliveries of a key are in offset order, across reloads;
- progress: a fetch with room to spare takes something whenever the model knows a
  record it may take (so held-back records never stall the others);
- nothing lost: after the drain every record of the log was delivered at least once.
The model of who holds what comes from the results observed, never from the views.
"""

from __future__ import annotations

import itertools
import sys
from collections import defaultdict

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, rule

from shoal import limits
from shoal.protocol.share import AcknowledgeType, AcquireMode
from shoal.share.acknowledge import AckBatch
from shoal.share.partition import AcquireResult
from shoal.share.states import RecordState
from tests.unit.share.keyed_rig import KeyedRig, offsets_of
from tests.unit.share.test_stateful import MEMBERS, TERMINAL, SharePartitionMachine

KEYS = (b"a", b"b", b"c", None)
"""Few keys, so records of one key meet often; None = a null key."""

BATCH = st.tuples(
    st.sampled_from([0, 0, 0, 0, 1]),  # a hole before the batch (compacted away)
    st.lists(st.sampled_from(KEYS), min_size=1, max_size=5),
    st.integers(0, 11),  # 0: a transaction marker instead
)


class KeyOrderMachine(SharePartitionMachine):
    def __init__(self) -> None:
        super().__init__()
        self.rig: KeyedRig = KeyedRig()
        self.acquisition_of: dict[int, int] = {}
        """offset -> the acquisition that handed it out, while it is held (ACQUIRED,
        with or without a pending write)."""
        self.acquisitions = itertools.count()
        self.ever_delivered: set[int] = set()
        self.last_first_delivery: dict[bytes, int] = {}
        """key -> the highest offset of the key delivered for the first time."""

    # ---- set-up and log

    @initialize(
        batches=st.lists(BATCH, min_size=2, max_size=12),
        limit=st.integers(2, 5),
        locks=st.sampled_from([6, 12, 40, 2000]),
        renew=st.booleans(),
        backoff=st.sampled_from([0, 0, 0, 300]),
        scan_max=st.sampled_from([2, 5, 5_000, 5_000]),
    )
    def start(  # type: ignore[override]
        self,
        batches: list[tuple[int, list[bytes | None], int]],
        limit: int,
        locks: int,
        renew: bool,
        backoff: int,
        scan_max: int,
    ) -> None:
        self.rig = KeyedRig(options={"key_scan_max": scan_max})
        self.rig.set(
            key_ordered=True,
            delivery_count_limit=limit,
            max_record_locks=locks,
            renew_enabled=renew,
            redelivery_backoff_ms=backoff,
        )
        self._append_keyed(batches)
        self.rig.start(reset_offset=0)
        self.spso = self.rig.sp.start_offset

    def _append_keyed(self, batches: list[tuple[int, list[bytes | None], int]]) -> None:
        for hole, keys, kind in batches:
            if kind == 0:
                added = self.rig.append_marker(hole=hole)
            else:
                added = self.rig.append([(key, None) for key in keys], hole=hole)
            self.record_offsets.update(added)

    @rule(batches=st.lists(BATCH, min_size=1, max_size=4))
    def produce(self, batches: list[tuple[int, list[bytes | None], int]]) -> None:  # type: ignore[override]
        self._append_keyed(batches)

    def compact(self, rare: int, data: st.DataObject) -> None:
        """Not a rule here: removing arbitrary batches is not what a compacted topic
        does (it keeps each key's last record), and this machine's model of keys
        follows the log as produced."""

    # ---- key checks at each acquisition

    def _key(self, offset: int) -> bytes | None:
        record = self.rig.records.get(offset)
        return None if record is None else record.key

    def _held(self) -> set[int]:
        """Offsets held now per the model: ACQUIRED, or in a pending write; below the
        start offset too (the log start passed them, but the member still holds them:
        test_held_records_below_the_start_offset_still_hold_their_key)."""
        held = set(self.live)
        for _member, written in self.pending_offsets.values():
            held.update(written)
        return held

    def _check_batches(self, result: AcquireResult, previous_last: int) -> None:
        """With holes in an acquisition (records held back or waiting between its
        ranges), the batches sent are exactly those an acquired range touches."""
        spans = [(r.first_offset, r.last_offset) for r in result.acquired]
        expected = [
            (h.base_offset, h.last_offset)
            for h in self.rig.log
            if h.last_offset >= self.rig.log_start_offset
            and any(first <= h.last_offset and h.base_offset <= last for first, last in spans)
        ]
        assert [(h.base_offset, h.last_offset) for h in result.batches] == expected, spans

    def _check_acquired(self, member: str, result: AcquireResult, limit: int) -> None:
        taken = offsets_of(result)
        if self.rig.config.key_ordered:
            self._check_key_order(member, result, taken)
        super()._check_acquired(member, result, limit)
        acquisition = next(self.acquisitions)
        for offset in taken:
            self.acquisition_of[offset] = acquisition
        self.ever_delivered.update(taken)

    def _check_key_order(self, member: str, result: AcquireResult, taken: list[int]) -> None:
        """(I2) and the order of first deliveries, against the model before `result`."""
        taken_set = set(taken)
        archived_now = set()
        if result.write is not None:
            archived_now = {
                o
                for b in result.write.state_batches
                if b.delivery_state in TERMINAL
                for o in range(b.first_offset, b.last_offset + 1)
            }
        done = self.terminal | archived_now
        held = self._held()
        held_keys = {self._key(o) for o in held} - {None}
        floor = max(self.rig.log_start_offset, self.rig.sp.start_offset)
        for offset in taken:
            key = self._key(offset)
            if key is None:
                continue
            assert key not in held_keys, (
                f"{offset} (key {key!r}) handed to {member} while a record of its key is "
                f"held: {sorted(o for o in held if self._key(o) == key)}"
            )
            for earlier in range(floor, offset):
                if self._key(earlier) == key:
                    assert earlier in done or earlier in taken_set, (
                        f"{offset} (key {key!r}) handed out before {earlier}, not done"
                    )
            if offset not in self.ever_delivered:
                previous = self.last_first_delivery.get(key, -1)
                assert offset > previous, (
                    f"first delivery of {offset} after {previous}, key {key!r}"
                )
                self.last_first_delivery[key] = offset

    # ---- progress

    def _waiting(self, offset: int) -> bool:
        """The record at `offset` waits for its scheduled time (none does here)."""
        return False

    def _reachable(self, offset: int, *, end: int, room: int) -> bool:
        """A record the window has no entry for (a hole, or past its end) can be
        reached by the next acquisition: inside the window, or within the room the
        in-flight limit leaves (`room`: at most what the core leaves; within one
        acquisition, the records held back on the way use it up), and within the
        window's widest span from the start offset."""
        if offset <= end:
            return True
        sp = self.rig.sp
        return offset - end <= room and offset - sp.start_offset < sp.window_span_max

    def _may_take(self) -> list[int]:
        """Offsets the model knows a fetch could take now (or archive, at a lowered
        limit): available, due, no earlier record of its key (key order) left
        undone, and within the room the in-flight limit leaves."""
        sp, rig = self.rig.sp, self.rig
        ordered = rig.config.key_ordered
        start = sp.start_offset
        floor = max(rig.log_start_offset, start)
        views: dict[int, tuple[RecordState, bool, bool]] = {}
        waiting_inside = 0
        now = rig.clock.wall_ms()
        for v in sp.in_flight():
            for offset in range(v.first_offset, v.last_offset + 1):
                views[offset] = (v.state, v.pending, v.redelivery_due_ms is not None)
            if v.deliver_at_ms is not None and v.deliver_at_ms > now and v.last_offset >= start:
                waiting_inside += v.last_offset - max(start, v.first_offset) + 1
        held = self._held()
        config = rig.config
        if (config.key_ordered or config.delivery_delay_max_ms > 0) and len(
            held
        ) >= config.max_record_locks:
            return []  # members hold all share.partition.max.record.locks allows
        held_keys = {self._key(o) for o in held} - {None}
        end = sp.end_offset
        in_flight = any(o >= start for o in views)
        size = end - start + 1 if in_flight else 0
        if not in_flight:
            end = start - 1
        # what the core counts less than its size: its waiting records (the views say
        # which; held-back ones are left in, so `room` is at most the core's)
        room = rig.config.max_record_locks - (size - waiting_inside)
        # the scan bound: an acquisition passes at most key_scan_max held-back records,
        # and the window keeps at most that many new ones (at most the never-delivered
        # records it has)
        scan_max = rig.key_scan_max
        new_in_window = sum(
            1 for o, (state, _, _) in views.items() if o >= floor and o not in self.ever_delivered
        )
        blocked = 0
        found = []
        for offset in sorted(o for o in rig.records if o >= floor):
            if offset in views:
                state, pending, delayed = views[offset]
                if state is not RecordState.AVAILABLE or pending or delayed:
                    continue
            elif offset in held or offset in self.terminal:
                continue
            if self._waiting(offset):
                continue
            key = self._key(offset)
            if (
                ordered
                and key is not None
                and (
                    key in held_keys
                    or any(
                        self._key(e) == key and e not in self.terminal for e in range(floor, offset)
                    )
                )
            ):
                blocked += 1
                continue
            if ordered and blocked >= scan_max:
                continue
            if offset not in views:
                if ordered and blocked + new_in_window >= scan_max:
                    continue
                if not self._reachable(offset, end=end, room=room):
                    continue
            found.append(offset)
        return found

    @rule(member=st.sampled_from(MEMBERS), mode=st.sampled_from(list(AcquireMode)))
    def fetch_with_room(self, member: str, mode: AcquireMode) -> None:
        """A fetch with a large budget takes (or archives) something whenever the model
        knows a record it may take."""
        expected = [] if self.rig.config.delivery_paused else self._may_take()
        result = self.rig.fetch(member, max_records=500, batch_size=500, mode=mode, persist=False)
        self._check_acquired(member, result, self.rig.config.delivery_count_limit)
        if result.write is not None:
            self._written(result.write)
        if expected:
            assert result.acquired or result.write is not None, self._stalled(expected)

    def _stalled(self, expected: list[int]) -> str:
        sp = self.rig.sp
        views = [
            (v.first_offset, v.last_offset, v.state.name, v.pending, v.key_blocked)
            for v in sp.in_flight()
        ]
        keys = {o: self._key(o) for o in range(sp.start_offset, max(expected) + 1)}
        return (
            f"nothing taken although {expected} may be: start {sp.start_offset}, end "
            f"{sp.end_offset}, next fetch {sp.next_fetch_offset()}, log start "
            f"{self.rig.log_start_offset}, held {sorted(self._held())}, terminal "
            f"{sorted(self.terminal)}, views {views}, keys {keys}, holds "
            f"{sp.delivery_holds()}"
        )

    # ---- invariants

    @invariant()
    def one_acquisition_per_key(self) -> None:
        """(I1), from the model's acquisitions and the window's ACQUIRED records."""
        held = self._held()
        for offset in list(self.acquisition_of):
            if offset not in held:
                del self.acquisition_of[offset]
        by_key: dict[bytes, set[int]] = defaultdict(set)
        for v in self.rig.sp.in_flight():
            if v.state is not RecordState.ACQUIRED:
                continue
            for offset in range(v.first_offset, v.last_offset + 1):
                held.add(offset)
        for offset in held:
            key = self._key(offset)
            if key is not None:
                assert offset in self.acquisition_of, f"{offset} ACQUIRED, never acquired"
                by_key[key].add(self.acquisition_of[offset])
        if not self.rig.config.key_ordered:
            return
        for key, acquisitions in by_key.items():
            assert len(acquisitions) == 1, f"key {key!r} held by acquisitions {acquisitions}"

    @invariant()
    def key_holds_agree(self) -> None:
        """A record the views show held back by its key is AVAILABLE, has a key, and
        that key is held, or an earlier record of it is not done; DeliveryHolds counts
        such records by key."""
        sp = self.rig.sp
        holds = sp.delivery_holds()
        if not self.rig.config.key_ordered:
            assert (holds.blocked_keys, holds.blocked_records) == (0, 0), holds
            return
        assert holds.blocked_keys <= holds.blocked_records, holds
        assert sum(n for _, n in holds.top_blocked_keys) <= holds.blocked_records, holds
        floor = max(self.rig.log_start_offset, sp.start_offset)
        held_keys = {self._key(o) for o in self._held()}
        for v in sp.in_flight():
            if not v.key_blocked:
                continue
            assert v.state is RecordState.AVAILABLE and not v.pending, v
            key = self._key(v.first_offset)
            assert key is not None, v
            assert key in held_keys or any(
                self._key(e) == key and e not in self.terminal for e in range(floor, v.first_offset)
            ), (v, key)
        for key, count in holds.top_blocked_keys:
            assert count > 0 and (
                key in held_keys
                or any(self._key(o) == key and o not in self.terminal for o in self.rig.records)
            ), (key, count)

    def teardown(self) -> None:
        if not self.rig.sp.initialized or sys.exc_info()[0] is not None:
            # a step failed (teardown runs in Hypothesis's `finally`): the model may
            # have missed that step's result, and the drain would only add a
            # second, confusing failure
            return
        super().teardown()
        lost = [
            o
            for o in self.rig.records
            if o >= self.rig.log_start_offset and o not in self.ever_delivered
        ]
        assert not lost, f"never delivered: {lost}"


KeyOrderMachine.TestCase.settings = settings(
    # max_examples from the Hypothesis profile (tests/conftest.py: 100 in CI, more at night)
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestKeyOrderMachine = KeyOrderMachine.TestCase


# ---- the bounds, one by one

ACCEPT = (int(AcknowledgeType.ACCEPT),)


def _rig(**config: object) -> KeyedRig:
    rig = KeyedRig()
    rig.set(key_ordered=True, **config)
    return rig


def test_null_keys_and_markers_are_never_held_back() -> None:
    rig = _rig()
    rig.append([(b"a", None), (None, None), (b"a", None), (None, None)])
    rig.append_marker()
    rig.append([(b"a", None)])
    rig.start(reset_offset=0)
    first = rig.fetch("m0", max_records=1, mode=AcquireMode.RECORD_LIMIT)
    assert offsets_of(first) == [0]
    second = rig.fetch("m1", max_records=500)
    # 2 and 5 wait behind 0 (key a, held by m0); null keys and the marker do not
    assert offsets_of(second) == [1, 3, 4]
    assert rig.fetch("m2", max_records=500).acquired == ()
    rig.ack("m0", AckBatch(0, 0, ACCEPT))
    third = rig.fetch("m2", max_records=500)
    assert offsets_of(third) == [2, 5]


def test_without_key_order_a_key_goes_to_several_members() -> None:
    """The setting gates it: Kafka's behaviour by default."""
    rig = KeyedRig()
    rig.append([(b"a", None), (b"a", None)])
    rig.start(reset_offset=0)
    assert offsets_of(rig.fetch("m0", max_records=1, mode=AcquireMode.RECORD_LIMIT)) == [0]
    assert offsets_of(rig.fetch("m1", max_records=1, mode=AcquireMode.RECORD_LIMIT)) == [1]


def test_consecutive_records_of_a_key_go_out_together() -> None:
    rig = _rig()
    rig.append([(b"a", None), (b"a", None), (b"b", None)])
    rig.append([(b"a", None)])
    rig.start(reset_offset=0)
    assert offsets_of(rig.fetch("m0", max_records=500)) == [0, 1, 2, 3]


def _hot_rig(*, hot: int = 6, **options: int) -> KeyedRig:
    """`hot` records of one key, each in its own batch, then one of another key; the
    first hot record held by m0."""
    rig = KeyedRig(options=dict(options))
    rig.set(key_ordered=True)
    for _ in range(hot):
        rig.append([(b"hot", None)])
    rig.append([(b"cold", None)])
    rig.start(reset_offset=0)
    assert offsets_of(rig.fetch("m0", max_records=1, mode=AcquireMode.RECORD_LIMIT)) == [0]
    return rig


def test_held_back_records_take_no_room_in_the_fetch_that_holds_them() -> None:
    """Held-back records hold no lock: behind a hot key whose first record is held, 5
    records held back do not keep a record of another key out of a window of 4 locks,
    in the very fetch that holds them back."""
    rig = _hot_rig()
    rig.set(max_record_locks=4)
    assert offsets_of(rig.fetch("m1", max_records=500)) == [6]


def test_held_back_records_take_no_room_under_the_lock_limit() -> None:
    """Held-back records hold no lock: 5 records held back do not keep a record of
    another key out of a window of 4 locks; once taken, they count like any acquired
    record."""
    rig = _hot_rig()
    rig.set(max_record_locks=4)
    assert offsets_of(rig.fetch("m1", max_records=500)) == [6]
    rig.ack("m0", AckBatch(0, 0, ACCEPT))
    # the key is free: its held records can go, 3 of them, as 6 holds the fourth lock
    assert offsets_of(rig.fetch("m2", max_records=500)) == [1, 2, 3]
    rig.append([(b"new", None)])
    assert rig.fetch("m0", max_records=500).acquired == ()
    rig.ack("m2", AckBatch(1, 3, ACCEPT))
    rig.ack("m1", AckBatch(6, 6, ACCEPT))
    # the start offset moved to 4: 4 and 5 (held back, no locks) and the new record
    assert offsets_of(rig.fetch("m0", max_records=500)) == [4, 5, 7]


def test_a_hot_key_stops_new_records_at_the_scan_bound() -> None:
    """limits.SHARE_KEY_ORDER_SCAN_MAX_RECORDS, at a test value: an acquisition passes
    over at most that many held-back records, and the window holds at most that many
    new ones held back; past 5 held-back records, a bound of 4 stops before the record
    of another key and a bound of 5 reaches it. Nothing is skipped: what the bound
    stopped is taken once the key clears."""
    stopped = _hot_rig(key_scan_max=4)
    assert stopped.key_scan_max == 4, "the core takes no `key_scan_max`"
    assert offsets_of(stopped.fetch("m1", max_records=500)) == []
    assert offsets_of(stopped.fetch("m2", max_records=500)) == []
    assert offsets_of(_hot_rig(key_scan_max=5).fetch("m1", max_records=500)) == [6]
    stopped.ack("m0", AckBatch(0, 0, ACCEPT))
    assert offsets_of(stopped.fetch("m1", max_records=500)) == [1, 2, 3, 4, 5, 6]


def test_the_default_scan_bound_is_the_named_limit() -> None:
    assert KeyedRig().sp.key_scan_max == limits.SHARE_KEY_ORDER_SCAN_MAX_RECORDS


def test_held_records_below_the_start_offset_still_hold_their_key() -> None:
    """m0 holds 0, 1 (key a) and 2 (key b); the log start moves to 2. 0 and 1 are
    still ACQUIRED by m0: 3 (key a) waits, whether m0 took the three in one fetch or
    two (the answer once depended on how the cache entries were split)."""
    answers = []
    for fetches in ((3,), (2, 1)):
        rig = _rig()
        rig.append([(b"a", None), (b"a", None), (b"b", None)])
        rig.append([(b"a", None)])
        rig.start(reset_offset=0)
        for count in fetches:
            rig.fetch("m0", max_records=count, mode=AcquireMode.RECORD_LIMIT)
        rig.log_start_offset = 2
        rig.sp.on_log_start_offset(log_start_offset=2)
        answers.append(offsets_of(rig.fetch("m1", max_records=500)))
    assert answers == [[], []]


def test_a_hole_in_an_acquired_range_keeps_its_key() -> None:
    """0 (key a), no record at 1, 2 (key b): m0 takes 0-2; 5 (key c) comes after a gap
    of two offsets; taking it must leave the window's invariants intact."""
    rig = _rig()
    rig.append([(b"a", None)])
    rig.append([(b"b", None)], hole=1)
    rig.start(reset_offset=0)
    assert offsets_of(rig.fetch("m0", max_records=5)) == [0, 1, 2]
    rig.append([(b"c", None)], hole=2)
    assert offsets_of(rig.fetch("m1", max_records=5)) == [5]  # check_invariants inside


def test_a_reload_reads_keys_again() -> None:
    """A broker restart: the reloaded share-partition knows no key but the log's, and
    still holds back the later records of a key whose earlier record is not done."""
    rig = _rig()
    rig.append([(b"a", None), (b"a", None), (b"b", None)])
    rig.start(reset_offset=0)
    assert offsets_of(rig.fetch("m0", max_records=1, mode=AcquireMode.RECORD_LIMIT)) == [0]
    rig.ack("m0", AckBatch(0, 0, (int(AcknowledgeType.RELEASE),)))
    assert offsets_of(rig.fetch("m0", max_records=1, mode=AcquireMode.RECORD_LIMIT)) == [0]
    rig.load(reset_offset=0)
    # the acquisition was not persisted: 0 is AVAILABLE (delivered once) again
    first = rig.fetch("m1", max_records=1, mode=AcquireMode.RECORD_LIMIT)
    assert offsets_of(first) == [0]
    assert offsets_of(rig.fetch("m2", max_records=500)) == [2]
