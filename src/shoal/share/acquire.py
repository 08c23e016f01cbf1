"""Acquisition: turning a log read (batch headers only) into AcquiredRecords ranges.

One `Acquisition` serves one ShareFetch on one share-partition. It walks the offsets
the read covers, in order, through three kinds of territory (docs/design/share-partition.md §7):

1. cached batches inside the window: AVAILABLE ones without a pending write are
   re-acquired, a whole unsplit batch at once, otherwise per offset (§7.3); those
   whose redelivery delay (share/redelivery.py) is not over are passed over and
   stay AVAILABLE;
2. holes of an open gap window (§10.4): acquired as new records;
3. offsets past the end offset: new records, in whole log batches (§7.4), cut into
   ranges at log-batch boundaries by BatchSize (§7.5), or in record-limit mode one
   range of at most MaxRecords with the rest of the log batch left AVAILABLE (§7.9).

Budgets: MaxRecords is one soft budget for cached and new records alike (checked
before each cached batch in batch-optimized mode, per record in record-limit mode);
new records beyond the end are further limited by the in-flight limit minus the
window size measured before the walk (§5), stretched to the end of a log batch.

Poison-record throttling (§7, 4.2): a cached batch holding an AVAILABLE record with
count >= T is taken only if nothing was taken before it, is cut to
max(1, n >> (count - T + 1)) records, and ends the walk; a record on its last attempt
(count = limit - 1, limit > 2) goes out alone. An AVAILABLE record whose count already
reached a lowered limit is archived instead of acquired (§2).

Adjacent per-offset acquisitions with the same delivery count within one cached batch
come back as one range (§7.7); ranges of different cache entries are never joined, so
BatchSize boundaries survive.

Read_committed (§9): `archive_aborted` archives acquired offsets of aborted
transactions and removes them from the result. Which batches are aborted is decided
by `transactions.aborted_batches` from the log's aborted-transaction index, which the
manager asks for.

Key order and scheduled delivery (`Holds`, share/holding.py builds it): the walk notes the
keys of the records it leaves, passes held-back records (at most the scan bound), and
puts new records into the window with `_take_new_holding` (held-back runs and waiting
records stay AVAILABLE). About 650 lines: that variant shares the walk's state and
budgets, so it lives in the same class.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from shoal.protocol.record_batch import BatchHeader
from shoal.protocol.records import RecordFacts
from shoal.protocol.share import AcquireMode
from shoal.share.inflight import InFlightBatch, InFlightState
from shoal.share.key_order import Key, RecordKeys
from shoal.share.persister import StateBatch
from shoal.share.schedule import due_ms
from shoal.share.states import Event, RecordState, throttle_threshold
from shoal.share.window import InFlightWindow


@dataclass(slots=True)
class Holds:
    """What one acquisition holds back (Shoal's extensions; None fields = off):
    records whose key an earlier record holds (`held`: the keys it must not hand out,
    share/key_order.py), and new records not yet due (share/schedule.py)."""

    facts: RecordFacts
    """The keys and scheduled times of the read's records."""
    held: set[Key] | None = None
    """Key order: the keys not to hand out; grows as the walk passes records it leaves."""
    keys: RecordKeys | None = None
    scan_max: int = 0
    """Key order: held-back records the walk may pass before it stops."""
    max_delay_ms: int = 0
    """Scheduled delivery: `shoal.share.delivery.delay.max.ms` (0 = off)."""
    now_wall_ms: int = 0
    now_mono_ms: int = 0
    scheduled_max: int = 0
    """Scheduled delivery: how many records the window may hold waiting."""
    passed: int = 0
    """Held-back records passed so far."""
    span_last: int | None = None
    """Scheduled delivery: the last offset the window may reach
    (`limits.SHARE_WINDOW_SPAN_MAX_OFFSETS` from its start)."""

    def key_of(self, offset: int) -> Key:
        keys = self.keys
        return None if keys is None else keys.get(offset)

    def hold(self, first: int, last: int) -> None:
        """The walk leaves [first, last] AVAILABLE: their keys hold back later records."""
        held = self.held
        keys = self.keys
        if held is None or keys is None:
            return
        for key in keys.between(first, last):
            if key is not None:
                held.add(key)

    def blocks(self, first: int, last: int) -> int:
        """How much of [first, last] its keys hold back: 0 none (the batch may go
        whole), 1 some (it goes offset by offset), 2 all (every record has a held key:
        the walk passes it whole)."""
        held = self.held
        keys = self.keys
        if not held or keys is None:
            return 0
        found = keys.between(first, last)
        if held.isdisjoint(found):
            return 0
        return 2 if None not in found and held.issuperset(found) else 1


@dataclass(frozen=True, slots=True)
class AcquiredRecords:
    first_offset: int
    last_offset: int
    delivery_count: int

    @property
    def count(self) -> int:
        return self.last_offset - self.first_offset + 1


class Acquisition:
    """One acquisition pass; read `acquired`, `count` and `archived` after `run`."""

    def __init__(
        self,
        window: InFlightWindow,
        *,
        member_id: str,
        headers: Sequence[BatchHeader],
        max_records: int,
        batch_size: int,
        mode: AcquireMode,
        limit: int,
        deadline_ms: int,
        window_room: int,
        holds: Holds | None = None,
    ) -> None:
        assert headers and max_records > 0
        self.window = window
        self.member_id = member_id
        self.headers = headers
        self._bases = [h.base_offset for h in headers]
        self._base_set = frozenset(self._bases)
        self.batch_size = max(1, batch_size)
        self.mode = mode
        self.limit = limit
        self.threshold = throttle_threshold(limit)
        self.deadline_ms = deadline_ms
        self.window_room = window_room
        self.remaining = max_records
        self.count = 0
        self.acquired: list[AcquiredRecords] = []
        self.archived: list[StateBatch] = []
        self.stopped = False
        self.scanned_to = -1
        """Every offset below this was examined (acquired, skipped or found empty)."""
        self.holds = holds
        """Key order and scheduled delivery, when the group has either on."""

    # ---- the walk

    def run(self, *, first_offset: int, last_offset: int) -> None:
        window = self.window
        new_from = window.new_records_from()
        cache = window.cache
        ready = window.is_ready
        holds = self.holds
        unordered = holds is None or holds.held is None  # nothing to note of what is left
        position = first_offset
        index = cache.index_from(position)
        self.scanned_to = first_offset
        while position <= last_offset and not self.stopped:
            if position >= new_from:
                self._take_new(position, last_offset, beyond_end=True)
                break
            batch = cache[index] if index < len(cache) else None
            if batch is None or batch.first_offset > position:
                hole_last = min(
                    last_offset, batch.first_offset - 1 if batch is not None else new_from - 1
                )
                self._take_hole(position, hole_last)
                position = hole_last + 1
                index = cache.index_from(position)  # the hole may have gained batches
                continue
            whole = batch.whole
            if whole is not None and (not whole.is_acquirable or (unordered and not ready(whole))):
                # acquired, written or done, or (no key order) not ready: nothing to take
                # (the usual entries of a window that waiting or held-back records keep
                # wide; keys in flight are counted)
                position = batch.last_offset + 1
                self.scanned_to = max(self.scanned_to, position)
                index += 1
                continue
            self._take_cached(batch, position, min(last_offset, batch.last_offset))
            position = batch.last_offset + 1
            index += 1

    def _stop(self, at: int) -> None:
        self.stopped = True
        self.scanned_to = max(self.scanned_to, at)

    def _done_through(self, offset: int) -> None:
        self.scanned_to = max(self.scanned_to, offset + 1)

    # ---- cached batches

    def _take_cached(self, batch: InFlightBatch, first: int, last: int) -> None:
        if self.remaining <= 0:
            self._stop(first)
            return
        whole = batch.whole
        holds = self.holds
        if whole is not None:
            if not self.window.is_ready(whole):
                if holds is not None and whole.is_acquirable:  # waiting or delayed
                    holds.hold(first, last)
                self._done_through(last)
                return
            if whole.delivery_count >= self.limit:
                self._archive(whole, batch.first_offset, batch.last_offset, Event.OVER_LIMIT)
                self._done_through(last)
                return
            throttled = whole.delivery_count >= self.threshold
            if throttled and self.count > 0:
                self._stop(first)
                return
            full = first == batch.first_offset and last == batch.last_offset
            too_big = self.mode is AcquireMode.RECORD_LIMIT and batch.size > self.remaining
            blocked = 0 if holds is None else holds.blocks(batch.first_offset, batch.last_offset)
            if blocked == 2 and full:  # every key held: passed whole, not split
                assert holds is not None
                holds.passed += batch.size
                if holds.passed > holds.scan_max:
                    self._stop(first)
                    return
                self._done_through(last)
                return
            if full and not throttled and not too_big and not blocked:
                self.window.acquire(
                    whole,
                    batch.first_offset,
                    batch.last_offset,
                    member_id=self.member_id,
                    deadline_ms=self.deadline_ms,
                )
                self._add(batch.first_offset, batch.last_offset, whole.delivery_count)
                self._done_through(last)
                return
            self.window.split(batch)
        self._take_offsets(batch, first, last)

    def _take_offsets(self, batch: InFlightBatch, first: int, last: int) -> None:
        offsets = batch.offsets
        assert offsets is not None
        base = batch.first_offset
        ready = self.window.is_ready
        throttled = any(
            self.threshold <= st.delivery_count < self.limit
            for st in offsets[first - base : last - base + 1]
            if ready(st)
        )
        if throttled and self.count > 0:
            self._stop(first)
            return
        cap: int | None = None
        taken = 0
        run: list[int] = []  # [first, last, count] of the current range
        holds = self.holds
        held = None if holds is None else holds.held
        for offset in range(first, last + 1):
            st = offsets[offset - base]
            if not ready(st):
                if held is not None and st.is_acquirable:  # waiting or delayed
                    assert holds is not None
                    holds.hold(offset, offset)
                continue
            if held is not None:
                assert holds is not None
                key = holds.key_of(offset)
                if key is not None and key in held:
                    holds.passed += 1
                    if holds.passed > holds.scan_max:
                        self._stop(offset)
                        break
                    continue
            count = st.delivery_count
            if count >= self.limit:
                self._archive(st, offset, offset, Event.OVER_LIMIT)
                continue
            last_attempt = self.limit > 2 and count == self.limit - 1
            if last_attempt and self.count + taken > 0:
                self._stop(offset)
                break
            if cap is None and count >= self.threshold:
                cap = max(1, batch.size >> (count - self.threshold + 1))
            self.window.acquire(
                st, offset, offset, member_id=self.member_id, deadline_ms=self.deadline_ms
            )
            taken += 1
            if run and run[1] == offset - 1 and run[2] == st.delivery_count:
                run[1] = offset
            else:
                self._flush(run)
                run = [offset, offset, st.delivery_count]
            record_limit_full = (
                self.mode is AcquireMode.RECORD_LIMIT and self.remaining - taken <= 0
            )
            if last_attempt or record_limit_full or (cap is not None and taken >= cap):
                self._stop(offset + 1)
                break
        self._flush(run)
        self.remaining -= taken
        self.count += taken
        if throttled and taken > 0:
            self._stop(last + 1 if not self.stopped else self.scanned_to)
        if not self.stopped:
            self._done_through(last)

    def _flush(self, run: list[int]) -> None:
        if run:
            self.acquired.append(AcquiredRecords(run[0], run[1], run[2]))

    # ---- new records

    def _take_hole(self, first: int, last: int) -> None:
        gap = self.window.gap_start
        if gap is None or gap > last:
            self._done_through(last)  # a natural hole: no records there
            return
        self._take_new(max(first, gap), last, beyond_end=False)

    def _take_new(self, first: int, last: int, *, beyond_end: bool) -> None:
        if self.holds is not None:
            self._take_new_holding(first, last, beyond_end=beyond_end)
            return
        allowed = self.remaining
        if beyond_end:
            allowed = min(allowed, self.window_room)
        if allowed <= 0:
            self._stop(first)
            return
        headers = self.headers
        index = self._header_index_from(first)
        if index == len(headers) or headers[index].base_offset > last:
            self._done_through(last)
            return
        first = max(first, headers[index].base_offset)
        end = self._budget_end(first, last, allowed)
        if self.mode is AcquireMode.RECORD_LIMIT:
            self._new_range(first, end, acquire_count=min(allowed, end - first + 1))
        else:
            start = first
            for header in headers[index + 1 :]:
                if header.base_offset > end:
                    break
                if header.base_offset - start >= self.batch_size:
                    self._new_range(start, header.base_offset - 1)
                    start = header.base_offset
            self._new_range(start, end)
        if end < last:
            self._stop(end + 1)  # out of budget: the rest is not examined
        else:
            self._done_through(last)

    def _budget_end(self, first: int, last: int, allowed: int) -> int:
        """The last offset of new records [first, last] within `allowed` records,
        stretched to the end of the log batch that holds the last one (§7.4)."""
        target = first + allowed - 1
        if target >= last:
            return last
        header_last = self.headers[bisect_right(self._bases, target) - 1].last_offset
        return min(last, header_last if header_last >= target else target)

    def _new_range(self, first: int, last: int, *, acquire_count: int | None = None) -> None:
        batch = InFlightBatch(first, last, InFlightState(RecordState.AVAILABLE, 0))
        window = self.window
        window.cache.add(batch)
        window.end_offset = max(window.end_offset, last)
        size = last - first + 1
        if acquire_count is None or acquire_count == size:
            assert batch.whole is not None
            window.acquire(
                batch.whole, first, last, member_id=self.member_id, deadline_ms=self.deadline_ms
            )
            self._add(first, last, 1)
            return
        window.split(batch)
        assert batch.offsets is not None
        for offset in range(first, first + acquire_count):
            window.acquire(
                batch.offsets[offset - first],
                offset,
                offset,
                member_id=self.member_id,
                deadline_ms=self.deadline_ms,
            )
        window.note_available(first + acquire_count)
        self._add(first, first + acquire_count - 1, 1)
        self._stop(first + acquire_count)

    def _take_new_holding(self, first: int, last: int, *, beyond_end: bool) -> None:
        """`_take_new` for a group with key order or scheduled delivery on: the new
        records go into the window; those held back by their key or not yet due stay
        AVAILABLE (one batch per run of held ones, one per waiting record), the others
        are acquired in runs. Records left take no part of MaxRecords (waiting ones no
        room in the window either), so the walk goes on past them while the budget and
        the room last."""
        headers = self.headers
        holds = self.holds
        assert holds is not None
        whole_last = last
        if holds.span_last is not None and last > holds.span_last:
            last = holds.span_last  # the window's widest span (scheduled delivery)
            if first > last:
                self._stop(first)
                return
        while True:
            allowed = self.remaining
            if beyond_end:
                allowed = min(allowed, self.window_room)
            if allowed <= 0:
                self._stop(first)
                return
            index = self._header_index_from(first)
            if index == len(headers) or headers[index].base_offset > last:
                if last < whole_last:
                    self._stop(last + 1)
                else:
                    self._done_through(last)
                return
            first = max(first, headers[index].base_offset)
            end = self._budget_end(first, last, allowed)
            special, cut = self._specials(first, end)
            if cut < first:
                self._stop(first)
                return
            if self.mode is AcquireMode.RECORD_LIMIT:
                self._pieces(first, cut, special, limited=True)
            else:
                start = first
                for header in headers[index + 1 :]:
                    if header.base_offset > cut:
                        break
                    if header.base_offset - start >= self.batch_size:
                        self._pieces(start, header.base_offset - 1, special, limited=False)
                        start = header.base_offset
                self._pieces(start, cut, special, limited=False)
            if self.stopped:
                return
            if cut < end:  # the scan bound or the waiting limit
                self._stop(cut + 1)
                return
            if end >= last:
                if last < whole_last:
                    self._stop(last + 1)
                else:
                    self._done_through(last)
                return
            if self.remaining <= 0 or not special:
                self._stop(end + 1)  # out of budget: the rest is not examined
                return
            # held-back and waiting records took part of the budget's range: go on
            if beyond_end:  # they take no room under the in-flight limit either
                self.window_room -= end - first + 1 - len(special)
            first = end + 1

    def _specials(self, first: int, end: int) -> tuple[dict[int, int], int]:
        """The new records of [first, end] to leave AVAILABLE: offset -> HELD, or the
        monotonic time a waiting one is due; and where the range ends (cut short by
        the scan bound or the waiting limit)."""
        holds = self.holds
        assert holds is not None
        facts = holds.facts
        window = self.window
        waiting: dict[int, int] = {}
        if holds.max_delay_ms > 0 and (facts.deliver_at or facts.malformed):
            room = holds.scheduled_max - len(window.schedule)
            for offset in sorted(facts.deliver_at):
                if offset < first:
                    continue
                if offset > end:
                    break
                at, timestamp = facts.deliver_at[offset]
                due = due_ms(at, timestamp, max_delay_ms=holds.max_delay_ms)
                if due <= holds.now_wall_ms:
                    continue
                if room <= 0:  # the waiting limit: the rest stays in the log
                    end = offset - 1
                    break
                room -= 1
                waiting[offset] = due
            window.schedule.malformed += sum(1 for o in facts.malformed if first <= o <= end)
        special: dict[int, int] = {}
        held = holds.held
        if held is None or holds.keys is None:
            special.update(waiting)
            return special, end
        keys = holds.keys.between(first, end)
        if not waiting and held.isdisjoint(keys):
            return special, end
        room = holds.scan_max - len(window.held)
        for offset in range(first, end + 1):
            key = keys[offset - first]
            waits = waiting.get(offset)
            if waits is not None:
                special[offset] = waits
                if key is not None:
                    held.add(key)
            elif key is not None and key in held:
                holds.passed += 1
                room -= 1
                if holds.passed > holds.scan_max or room < 0:  # the rest stays in the log
                    return special, offset - 1
                special[offset] = HELD
        return special, end

    def _pieces(self, first: int, last: int, special: dict[int, int], *, limited: bool) -> None:
        """Put [first, last] into the window: runs between the special offsets are
        acquired (`limited`, record-limit mode: within the records left to take; the
        rest stays AVAILABLE), a run of held offsets becomes one AVAILABLE batch, a
        waiting one a batch of its own."""
        window = self.window
        holds = self.holds
        assert holds is not None
        marks = sorted(o for o in special if first <= o <= last) if special else []
        position = first
        index = 0
        while position <= last:
            run_end = marks[index] - 1 if index < len(marks) else last
            if position <= run_end:
                take = run_end - position + 1
                if limited:
                    take = max(0, min(take, self.remaining))
                if take > 0:
                    self._new_range(position, position + take - 1)
                if position + take <= run_end:
                    self._available(position + take, run_end, 0)
                    self._stop(position + take)
                position = run_end + 1
                continue
            offset = marks[index]
            due = special[offset]
            if due == HELD:
                # a run of held-back records in one log batch is one cache entry (so
                # taking it later oversteps MaxRecords by at most a log batch)
                run_last = offset
                while index + 1 < len(marks) and marks[index + 1] == run_last + 1:
                    if special[marks[index + 1]] != HELD or run_last + 1 in self._base_set:
                        break
                    index += 1
                    run_last += 1
                self._available(offset, run_last, 0)
                window.held.update(range(offset, run_last + 1))
                position = run_last + 1
            else:
                # +1: the two clocks are read in whole ms; never a millisecond early
                mono = holds.now_mono_ms + (due - holds.now_wall_ms) + 1
                self._available(offset, offset, mono)
                window.redelivery.hold_until(mono)
                window.schedule.wait(offset, due)
                position = offset + 1
            index += 1
        if limited and self.remaining <= 0:
            self._stop(last + 1)

    def _available(self, first: int, last: int, not_before_ms: int) -> None:
        """New records [first, last] enter the window AVAILABLE, not acquired."""
        window = self.window
        state = InFlightState(RecordState.AVAILABLE, 0, not_before_ms=not_before_ms)
        window.cache.add(InFlightBatch(first, last, state))
        window.end_offset = max(window.end_offset, last)
        window.note_available(first)

    def _header_index_from(self, offset: int) -> int:
        index = bisect_right(self._bases, offset) - 1
        if index >= 0 and self.headers[index].last_offset >= offset:
            return index
        return index + 1

    # ---- bookkeeping

    def _add(self, first: int, last: int, delivery_count: int) -> None:
        self.acquired.append(AcquiredRecords(first, last, delivery_count))
        self.remaining -= last - first + 1
        self.count += last - first + 1

    def _archive(self, st: InFlightState, first: int, last: int, event: Event) -> None:
        self.window.move(st, first, last, event, limit=self.limit)
        self.archived.append(self.window.persisted(st, first, last))

    # ---- before and after the walk

    def archive_compacted(self, *, fetch_offset: int, first_base_offset: int) -> None:
        """§4.5: cached AVAILABLE records between the fetch offset and the first batch
        the log returned are gone (compaction, retention): archive them."""
        window = self.window
        first = max(fetch_offset, window.start_offset)
        last = first_base_offset - 1
        if first > last:
            return
        self._archive_range(first, last, Event.COMPACTED, acquirable_only=True)

    def archive_aborted(self, aborted: Sequence[tuple[int, int]]) -> None:
        """Hook for read_committed (§9): archive the acquired offsets inside `aborted`
        ranges (delivery count kept) and leave them out of `acquired`."""
        if not aborted or not self.acquired:
            return
        kept: list[AcquiredRecords] = []
        for records in self.acquired:
            pieces = [(records.first_offset, records.last_offset)]
            for first, last in aborted:
                next_pieces = []
                for lo, hi in pieces:
                    if last < lo or first > hi:
                        next_pieces.append((lo, hi))
                        continue
                    self._archive_range(max(lo, first), min(hi, last), Event.ABORTED)
                    if lo < first:
                        next_pieces.append((lo, first - 1))
                    if hi > last:
                        next_pieces.append((last + 1, hi))
                pieces = next_pieces
            kept.extend(AcquiredRecords(lo, hi, records.delivery_count) for lo, hi in pieces)
        self.acquired = kept

    def _archive_range(
        self, first: int, last: int, event: Event, *, acquirable_only: bool = False
    ) -> None:
        cache = self.window.cache
        for edge in (first, last + 1):
            batch = cache.batch_at(edge)
            if batch is not None and batch.first_offset < edge <= batch.last_offset:
                self.window.split(batch)
        index = cache.index_from(first)
        while index < len(cache) and cache[index].first_offset <= last:
            for lo, hi, st in cache[index].states():
                if lo < first or hi > last:
                    continue
                if acquirable_only and not st.is_acquirable:
                    continue
                if st.pending is None and (st.state, event) in _ARCHIVABLE:
                    self._archive(st, lo, hi, event)
            index += 1


HELD = -1
"""A new record held back by its key (`Acquisition._specials`)."""

_ARCHIVABLE = {
    (RecordState.AVAILABLE, Event.COMPACTED),
    (RecordState.ACQUIRED, Event.ABORTED),
}
