"""The in-flight window of one share-partition: cache, locks, start and end offsets,
DeliveryCompleteCount, gap window, and the primitives that change record states.

Every state change goes through `move` (a transition that stands), `begin` (a
transition whose state write is pending), `commit` or `rollback`; each consults the
transition table in `states.py` and keeps the DeliveryCompleteCount in step.

Invariants (checked by `check_invariants`, which tests call after every operation):
- the cache is sorted and non-overlapping; no unsplit batch straddles the start
  offset (the SPSO), so a batch is either wholly at/above it or wholly below;
- `delivery_complete_count` = terminal offsets (tentative states included) >= SPSO;
- if any cached offset is >= SPSO, `end_offset` is the last cached offset, else
  `end_offset` == SPSO (Kafka's convention: the next offset to fetch);
- no offset below the SPSO is AVAILABLE without a pending write;
- an ACQUIRED record without a pending write has an owner and a lock; other records
  have neither; a pending write was started from ACQUIRED;
- the gap window, when open, starts at or after the SPSO;
- every ARCHIVING offset without a pending write has a reason in `dlq_reasons`.

The gap window (docs/design/share-partition.md §10.4): after loading persisted state with holes
between the SPSO and the last persisted offset, offsets >= `gap_start` that no batch
covers may still hold records nobody acquired; they are fetched and acquired like new
ones. Holes below `gap_start`, and all holes once the window closes, are natural (no
data, e.g. compaction) and count as archived.
"""

from __future__ import annotations

from collections.abc import Callable

from shoal.share.inflight import (
    NO_MEMBER,
    InFlightBatch,
    InFlightCache,
    InFlightState,
    LockTimers,
    Pending,
)
from shoal.share.key_order import RecordKeys
from shoal.share.persister import StateBatch
from shoal.share.redelivery import Redelivery
from shoal.share.schedule import Schedule
from shoal.share.states import (
    DLQ_CHOICE_EVENTS,
    TERMINAL_STATES,
    Event,
    RecordState,
    code_of_reason,
    dlq_reason,
    next_delivery_count,
    target_state,
)

Span = tuple[int, int]


class InFlightWindow:
    """Mutable state of one share-partition's records; see the module docstring."""

    def __init__(
        self,
        *,
        start_offset: int,
        redelivery: Redelivery | None = None,
        dlq: Callable[[], bool] = lambda: False,
    ) -> None:
        self.dlq = dlq
        """Whether the group has a dead-letter queue topic now (read per transition)."""
        self.dlq_reasons: dict[int, str] = {}
        """ARCHIVING offset -> why (`__dlq.errors.message`), until DLQ_DONE."""
        self.dlq_dispatched: set[int] = set()
        """ARCHIVING offsets handed to the shell for copying, not yet done."""
        self.cache = InFlightCache()
        self.timers = LockTimers()
        self.redelivery = Redelivery() if redelivery is None else redelivery
        self.start_offset = start_offset
        self.end_offset = start_offset
        self.delivery_complete_count = 0
        self.gap_start: int | None = None
        self.gap_end = -1
        self._available_from: int | None = None
        """Lower bound of the offsets that may be AVAILABLE without a pending write."""
        self._next_handle = 1
        self.pending_writes: dict[int, list[Span]] = {}
        self.keys: RecordKeys | None = None
        """Record keys of the window under key-ordered delivery (share/key_order.py);
        None until a key-ordered acquisition first reads them."""
        self.schedule = Schedule()
        """Records waiting for their `shoal.deliver.at` time (share/schedule.py)."""
        self.acquired_records = 0
        """Records acquired now (a write pending included): what members hold."""
        self.held: set[int] = set()
        """New records that key order left AVAILABLE (an earlier record of their key in
        flight), until acquired: like waiting ones, they hold no lock and take no room
        under the in-flight limit (share/key_order.py)."""

    # ---- shape of the window

    def has_inflight(self) -> bool:
        batches = self.cache.batches
        return bool(batches) and batches[-1].last_offset >= self.start_offset

    def size(self) -> int:
        """end - SPSO + 1 (acknowledged, archived and gap offsets included)."""
        return self.end_offset - self.start_offset + 1 if self.has_inflight() else 0

    def occupancy(self, *, extended: bool = False) -> int:
        """What counts towards the in-flight limit: `size()`, as in Kafka. `extended`
        (key order or scheduled delivery on): the records not yet done, less those
        waiting for their scheduled time and the new ones held back by their key. A
        waiting or held-back record pins the start offset, so the records done
        behind it must not count, or one long wait would stop the share-partition
        (docs/design/scheduled-delivery.md; `limits.SHARE_WINDOW_SPAN_MAX_OFFSETS` bounds the
        span instead)."""
        if not extended:
            return self.size()
        return self.size() - self.delivery_complete_count - len(self.schedule) - len(self.held)

    def prune_held(self) -> None:
        """Forget held-back records the start offset has passed (archived meanwhile)."""
        held = self.held
        if held and min(held) < self.start_offset:
            self.held = {offset for offset in held if offset >= self.start_offset}

    def new_records_from(self) -> int:
        """First offset no batch or hole of the window accounts for."""
        return self.end_offset + 1 if self.has_inflight() else self.start_offset

    def open_gap_window(self, *, gap_start: int, gap_end: int) -> None:
        self.gap_start = gap_start
        self.gap_end = gap_end

    def mark_scanned(self, offset: int) -> None:
        """Every offset below `offset` has been read from the log: holes there that are
        still uncovered hold no records."""
        if self.gap_start is not None and offset > self.gap_start:
            self.gap_start = offset
            if self.gap_start > self.gap_end:
                self.gap_start = None

    # ---- state changes

    def n_at_or_above_start(self, first: int, last: int) -> int:
        return max(0, last - max(first, self.start_offset) + 1)

    def _retally(self, old: RecordState, new: RecordState, first: int, last: int) -> None:
        terminal = new in TERMINAL_STATES
        if (old in TERMINAL_STATES) != terminal:
            n = max(0, last - max(first, self.start_offset) + 1)  # n_at_or_above_start
            self.delivery_complete_count += n if terminal else -n

    def move(self, st: InFlightState, first: int, last: int, event: Event, *, limit: int) -> None:
        """A transition that stands at once (expiry, archival, renew-free paths)."""
        assert st.pending is None, f"{st} has a write pending"
        new = target_state(
            st.state,
            event,
            delivery_count=st.delivery_count,
            limit=limit,
            below_start=last < self.start_offset,
            dlq=event in DLQ_CHOICE_EVENTS and self.dlq(),
        )
        self._retally(st.state, new, first, last)
        self._note_archiving(st.state, new, first, last, event)
        if st.state is RecordState.ACQUIRED:
            self.acquired_records -= last - first + 1
            if self.keys is not None:
                self.keys.leave(first, last)
        st.state = new
        st.delivery_count = next_delivery_count(st.delivery_count, event)
        if st.lock is not None:
            self.timers.cancel(st.lock)
            st.lock = None
        st.member_id = NO_MEMBER
        if new is RecordState.AVAILABLE:
            st.not_before_ms = self.redelivery.not_before(event, st.delivery_count)
            self.note_available(first)

    def acquire(
        self, st: InFlightState, first: int, last: int, *, member_id: str, deadline_ms: int
    ) -> None:
        assert st.is_acquirable and st.lock is None
        assert first >= self.start_offset
        st.state = target_state(
            st.state, Event.ACQUIRE, delivery_count=st.delivery_count, limit=0, below_start=False
        )
        st.delivery_count = next_delivery_count(st.delivery_count, Event.ACQUIRE)
        st.member_id = member_id
        st.not_before_ms = 0
        if self.schedule.waiting_at:
            self.schedule.taken(first)
        held = self.held
        if held and first in held:  # a held-back run goes whole, or offset by offset
            held.difference_update(range(first, last + 1))
        self.acquired_records += last - first + 1
        if self.keys is not None:
            self.keys.enter(first, last)
        st.lock = self.timers.arm(
            member_id=member_id, first_offset=first, last_offset=last, deadline_ms=deadline_ms
        )

    def renew(self, st: InFlightState, first: int, last: int, *, deadline_ms: int) -> None:
        assert st.state is RecordState.ACQUIRED and st.pending is None and st.lock is not None
        target_state(st.state, Event.RENEW, delivery_count=0, limit=0, below_start=False)
        self.timers.cancel(st.lock)
        st.lock = self.timers.arm(
            member_id=st.member_id, first_offset=first, last_offset=last, deadline_ms=deadline_ms
        )

    def new_handle(self) -> int:
        handle = self._next_handle
        self._next_handle += 1
        return handle

    def begin(
        self, st: InFlightState, first: int, last: int, event: Event, *, limit: int, handle: int
    ) -> StateBatch:
        """Start a transition whose state write is pending; returns what to write."""
        old = st.state
        assert old is RecordState.ACQUIRED and st.pending is None
        new = target_state(
            old,
            event,
            delivery_count=st.delivery_count,
            limit=limit,
            below_start=last < self.start_offset,
            dlq=event in DLQ_CHOICE_EVENTS and self.dlq(),
        )
        if new is RecordState.ARCHIVING:  # from ACQUIRED: `_note_archiving`'s one case
            self._note_archiving(old, new, first, last, event)
        st.pending = Pending(
            handle=handle,
            state=old,
            delivery_count=st.delivery_count,
            member_id=st.member_id,
            lock=st.lock,
        )
        if new in TERMINAL_STATES:  # `_retally` from ACQUIRED (not terminal)
            start = self.start_offset
            if last >= start:  # n_at_or_above_start
                self.delivery_complete_count += last - (first if first > start else start) + 1
        st.state = new
        # the delivery count stays: only ACQUIRE counts (`next_delivery_count`), and
        # it never starts from ACQUIRED
        st.member_id = NO_MEMBER
        st.lock = None
        if new is RecordState.AVAILABLE:
            st.not_before_ms = self.redelivery.not_before(event, st.delivery_count)
        spans = self.pending_writes.setdefault(handle, [])
        if spans and spans[-1][1] == first - 1:
            spans[-1] = (spans[-1][0], last)  # adjacent: one span
        else:
            spans.append((first, last))
        return self.persisted(st, first, last)

    def commit(self, st: InFlightState, first: int, last: int, *, limit: int) -> None:
        backup = st.pending
        assert backup is not None
        if backup.lock is not None:
            self.timers.cancel(backup.lock)
        st.pending = None
        self.acquired_records -= last - first + 1
        if self.keys is not None:
            self.keys.leave(first, last)
        if st.state is RecordState.AVAILABLE:
            if last < self.start_offset:
                self.move(st, first, last, Event.LOG_START_PASSED, limit=limit)
            else:
                self.note_available(first)

    def rollback(
        self, st: InFlightState, first: int, last: int, *, now_ms: int, limit: int
    ) -> StateBatch | None:
        """Undo a pending transition. If the lock expired meanwhile the record becomes
        AVAILABLE (or ARCHIVED) instead; that transition stands and is returned to be
        written."""
        backup = st.pending
        assert backup is not None and backup.state is RecordState.ACQUIRED
        self._retally(st.state, backup.state, first, last)
        self._note_archiving(st.state, backup.state, first, last, Event.ACQUIRE)
        st.state = backup.state
        st.delivery_count = backup.delivery_count
        st.member_id = backup.member_id
        st.lock = backup.lock
        st.pending = None
        if st.lock is None or not st.lock.has_expired(now_ms):
            return None
        self.move(st, first, last, Event.LOCK_EXPIRED, limit=limit)
        return self.persisted(st, first, last)

    def persisted(self, st: InFlightState, first: int, last: int) -> StateBatch:
        """The state batch that persists `st` for [first, last]: an ARCHIVING one
        carries its reason's code (`states.code_of_reason`), so a reload knows it."""
        if st.state is RecordState.ARCHIVING:
            code = code_of_reason(self.dlq_reasons.get(first))
            return StateBatch(first, last, int(st.state), st.delivery_count, code)
        return StateBatch(first, last, int(st.state), st.delivery_count)

    def _note_archiving(
        self, old: RecordState, new: RecordState, first: int, last: int, event: Event
    ) -> None:
        """Keep `dlq_reasons` in step with records entering or leaving ARCHIVING."""
        if new is RecordState.ARCHIVING and old is not RecordState.ARCHIVING:
            reason = dlq_reason(event)
            for offset in range(first, last + 1):
                self.dlq_reasons[offset] = reason
        elif old is RecordState.ARCHIVING and new is not RecordState.ARCHIVING:
            for offset in range(first, last + 1):
                self.dlq_reasons.pop(offset, None)
                self.dlq_dispatched.discard(offset)

    def states_of_handle(self, handle: int) -> list[tuple[int, int, InFlightState]]:
        """The (first, last, state) entries whose pending write is `handle`. O(offsets
        written): a span only visits the states it covers."""
        found = []
        cache = self.cache
        batches = cache.batches
        count = len(batches)
        for first, last in self.pending_writes.pop(handle, []):
            index = cache.index_from(first)
            while index < count and batches[index].first_offset <= last:
                batch = batches[index]
                if batch.offsets is None:
                    st = batch.whole
                    assert st is not None
                    if st.pending is not None and st.pending.handle == handle:
                        assert first <= batch.first_offset and batch.last_offset <= last
                        found.append((batch.first_offset, batch.last_offset, st))
                else:
                    base = batch.first_offset
                    for offset in range(max(first, base), min(last, batch.last_offset) + 1):
                        st = batch.offsets[offset - base]
                        if st.pending is not None and st.pending.handle == handle:
                            found.append((offset, offset, st))
                index += 1
        return found

    def split(self, batch: InFlightBatch) -> None:
        batch.split(self.timers)

    def note_available(self, offset: int) -> None:
        if self._available_from is None or offset < self._available_from:
            self._available_from = offset

    # ---- start offset

    def advance_start(self) -> bool:
        """Move the SPSO across the prefix of terminal offsets with no write pending
        (§4.1-4.2); drop whole settled batches below it. Returns whether it moved."""
        position, passed = self._settled_prefix(handle=None)
        if position == self.start_offset:
            return False
        self.delivery_complete_count -= passed
        self._set_start(position)
        return True

    def tentative_start(self, handle: int) -> tuple[int, int]:
        """(SPSO, DeliveryCompleteCount) as they will be once the pending write of
        `handle` commits and nothing else changes: what that write carries, so the
        persisted start offset moves with the acknowledgement that moves it. Changes
        nothing; if the write fails both stay where they are."""
        position, passed = self._settled_prefix(handle=handle)
        return position, self.delivery_complete_count - passed

    def _settled_prefix(self, *, handle: int | None) -> tuple[int, int]:
        """Where the SPSO can move to, and how many terminal offsets >= SPSO it
        passes. An offset whose pending write is `handle` counts as settled when its
        tentative state is terminal (the loops below inline that test)."""
        terminal = TERMINAL_STATES
        old = self.start_offset
        cache = self.cache
        position = old
        passed = 0
        index = cache.index_from(position)
        batches = cache.batches
        count = len(batches)
        while index < count:
            batch = batches[index]
            if batch.first_offset > position:
                gap = self.gap_start
                if gap is not None and gap < batch.first_offset:
                    position = max(position, gap)
                    break
                position = batch.first_offset
            if batch.offsets is None:
                st = batch.whole
                assert st is not None and batch.first_offset >= old
                pending = st.pending
                if st.state not in terminal or (pending is not None and pending.handle != handle):
                    break
                passed += batch.last_offset - batch.first_offset + 1
                position = batch.last_offset + 1
            else:
                stop = False
                for offset in range(position, batch.last_offset + 1):
                    st = batch.offsets[offset - batch.first_offset]
                    pending = st.pending
                    if st.state not in terminal or (
                        pending is not None and pending.handle != handle
                    ):
                        stop = True
                        break
                    passed += 1
                    position = offset + 1
                if stop:
                    break
            index += 1
        return position, passed

    def move_log_start(self, log_start_offset: int, *, limit: int) -> bool:
        """§4.4: AVAILABLE records below the new log start are archived in memory,
        terminal ones stop counting, ACQUIRED ones wait for expiry or an ack."""
        if log_start_offset <= self.start_offset:
            return False
        cache = self.cache
        straddler = cache.batch_at(log_start_offset)
        if straddler is not None and straddler.first_offset < log_start_offset:
            self.split(straddler)
        index = cache.index_from(self.start_offset)
        while index < len(cache) and cache[index].first_offset < log_start_offset:
            for first, last, st in cache[index].states():
                if first >= log_start_offset:
                    break
                if st.state.is_terminal:
                    self.delivery_complete_count -= self.n_at_or_above_start(first, last)
                elif st.is_acquirable:
                    # Not counted: it is about to fall below the start offset.
                    st.state = target_state(
                        st.state,
                        Event.LOG_START_PASSED,
                        delivery_count=st.delivery_count,
                        limit=limit,
                        below_start=True,
                    )
            index += 1
        self._set_start(log_start_offset)
        return True

    def drop_settled_below_start(self) -> None:
        """Drop whole settled batches below the SPSO (after in-memory archivals)."""
        batches = self.cache.batches
        if batches and batches[0].last_offset < self.start_offset:
            self._set_start(self.start_offset)

    def _set_start(self, new_start: int) -> None:
        self.start_offset = new_start
        cache = self.cache
        batches = cache.batches
        drop = 0
        count = len(batches)
        while drop < count:
            batch = batches[drop]
            if batch.last_offset >= new_start or not batch.is_settled():
                break
            drop += 1
        cache.drop_front(drop)
        if not self.has_inflight():
            self.end_offset = new_start
        if self.gap_start is not None and self.gap_start < new_start:
            self.mark_scanned(new_start)
        if self._available_from is not None and self._available_from < new_start:
            self._available_from = new_start
        if self.keys is not None:
            self.keys.drop_below(new_start)

    # ---- where to fetch next

    def is_ready(self, st: InFlightState) -> bool:
        """AVAILABLE, no write pending, and its redelivery delay (if any) is over."""
        return st.is_acquirable and self.redelivery.is_due(st.not_before_ms)

    def first_acquirable(self) -> int | None:
        """The first AVAILABLE offset >= SPSO without a pending write whose redelivery
        delay is over. Records still delayed are passed over (and visited again by
        the next call: the lower bound stays at the first of them)."""
        lower = self._available_from
        if lower is None:
            return None
        lower = max(lower, self.start_offset)
        cache = self.cache
        delayed: int | None = None
        for index in range(cache.index_from(lower), len(cache)):
            batch = cache[index]
            if batch.offsets is None:
                assert batch.whole is not None
                if batch.whole.is_acquirable:
                    if self.is_ready(batch.whole):
                        self._available_from = batch.first_offset if delayed is None else delayed
                        return batch.first_offset
                    delayed = batch.first_offset if delayed is None else delayed
                continue
            for offset in range(max(lower, batch.first_offset), batch.last_offset + 1):
                st = batch.offsets[offset - batch.first_offset]
                if st.is_acquirable:
                    if self.is_ready(st):
                        self._available_from = offset if delayed is None else delayed
                        return offset
                    delayed = offset if delayed is None else delayed
        self._available_from = delayed
        return None

    def first_gap_offset(self) -> int | None:
        """The first uncovered offset of the open gap window, closing it if none."""
        if self.gap_start is None:
            return None
        offset = max(self.gap_start, self.start_offset)
        cache = self.cache
        index = cache.index_from(offset)
        while index < len(cache) and cache[index].first_offset <= offset:
            offset = cache[index].last_offset + 1
            index += 1
        if offset > self.gap_end:
            self.gap_start = None
            return None
        self.gap_start = offset
        return offset

    def next_fetch_offset(self) -> int:
        """§4.3: SPSO when nothing is in flight; else the first acquirable offset or
        gap-window hole, or end + 1."""
        if not self.has_inflight():
            return self.start_offset
        found = (self.first_acquirable(), self.first_gap_offset())
        candidates = [offset for offset in found if offset is not None]
        return min(candidates) if candidates else self.end_offset + 1

    # ---- checking

    def check_invariants(self, *, now_ms: int | None = None) -> None:
        """Recompute what is kept incrementally and assert every invariant. O(window)."""
        previous_last = None
        terminal = 0
        start = self.start_offset
        for batch in self.cache:
            assert previous_last is None or batch.first_offset > previous_last, self.cache
            previous_last = batch.last_offset
            if batch.offsets is None:
                assert batch.whole is not None
                assert not batch.first_offset < start <= batch.last_offset, (
                    f"unsplit {batch} straddles SPSO {start}"
                )
            else:
                assert batch.whole is None and len(batch.offsets) == batch.size
            for first, last, st in batch.states():
                _check_state(st, first, last)
                if st.state is RecordState.ARCHIVING and st.pending is None:
                    assert all(o in self.dlq_reasons for o in range(first, last + 1)), (
                        f"{first}-{last} ARCHIVING without a reason"
                    )
                if st.state.is_terminal:
                    terminal += self.n_at_or_above_start(first, last)
                if last < start:
                    assert st.state is not RecordState.AVAILABLE or st.pending is not None, (
                        f"{batch}: AVAILABLE below SPSO {start}"
                    )
        assert terminal == self.delivery_complete_count, (
            f"DeliveryCompleteCount {self.delivery_complete_count}, recomputed {terminal}"
        )
        tail = self.cache.last
        if self.has_inflight():
            assert tail is not None and self.end_offset == tail.last_offset
        else:
            assert self.end_offset == start, (self.end_offset, start)
        if self.gap_start is not None:
            assert self.gap_start >= start and self.gap_start <= self.gap_end
        acquired = sum(
            last - first + 1
            for batch in self.cache
            for first, last, st in batch.states()
            if st.pending is not None or st.state is RecordState.ACQUIRED
        )
        assert acquired == self.acquired_records, (acquired, self.acquired_records)
        if self.keys is not None:
            counted: dict[object, int] = {}
            for batch in self.cache:
                for first, last, st in batch.states():
                    if st.pending is not None or st.state is RecordState.ACQUIRED:
                        for key in self.keys.between(first, last):
                            if key is not None:
                                counted[key] = counted.get(key, 0) + 1
            assert counted == self.keys.in_flight, (counted, self.keys.in_flight)


def _check_state(st: InFlightState, first: int, last: int) -> None:
    where = f"{first}-{last} {st}"
    if st.pending is not None:
        assert st.pending.state is RecordState.ACQUIRED, where
        assert st.lock is None and st.member_id == NO_MEMBER, where
        return
    if st.state is RecordState.ACQUIRED:
        assert st.member_id != NO_MEMBER, where
        assert st.lock is not None and (st.lock.live or st.lock.fired), where
        assert (st.lock.first_offset, st.lock.last_offset) == (first, last), where
    else:
        assert st.lock is None and st.member_id == NO_MEMBER, where
