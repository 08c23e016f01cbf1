"""The in-flight cache: batches of records with one shared state that split only when
they must, and acquisition locks kept as data.

Owns:
- `Lock`: one acquisition timer ("offsets 10-19 of member m expire at t=31000").
  `LockTimers` keeps them in a heap ordered by deadline; cancelled locks are dropped
  lazily (and the heap is rebuilt when they outnumber the live ones), so arming,
  cancelling and finding the next deadline are O(log n).
- `InFlightState`: state, delivery count, owner, lock, not-before time (delayed
  redelivery), and the backup taken while a state write is pending (`Pending`; the
  record can be neither acquired nor acknowledged until the write commits or rolls
  back).
- `InFlightBatch`: a range [first, last] with either one batch-wide `InFlightState`
  (`whole`) or, once split, one per offset (`offsets`, a list indexed by offset -
  first). Splitting copies the state, the pending backup and the remaining lock time
  to every offset, each offset getting a lock of its own (as Kafka does, so each
  expires, and is written, on its own). A batch never re-merges.
- `InFlightCache`: the batches sorted by first offset, non-overlapping, in two
  parallel lists so lookups are a bisect. Batches are appended at the end and
  dropped from the front, the common cases; a gap-window batch is inserted in the
  middle (rare).

Everything here is per batch; per-offset state exists only inside split batches.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections.abc import Iterator

from shoal.share.states import TERMINAL_STATES, RecordState

NO_MEMBER = ""
"""Owner of a record nobody holds."""


class Lock:
    """An acquisition lock on [first_offset, last_offset] (a whole batch, or one offset
    of a split batch) held by `member_id` until `deadline_ms` (monotonic clock)."""

    __slots__ = ("deadline_ms", "fired", "first_offset", "last_offset", "live", "member_id")

    def __init__(
        self, *, member_id: str, first_offset: int, last_offset: int, deadline_ms: int
    ) -> None:
        self.member_id = member_id
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.deadline_ms = deadline_ms
        self.live = True
        """Armed and neither cancelled nor fired."""
        self.fired = False
        """Its deadline was reached and `LockTimers.pop_expired` returned it."""

    def has_expired(self, now_ms: int) -> bool:
        return self.fired or self.deadline_ms <= now_ms

    def __repr__(self) -> str:
        return (
            f"Lock({self.member_id!r}, {self.first_offset}-{self.last_offset}, "
            f"deadline={self.deadline_ms}, live={self.live}, fired={self.fired})"
        )


class LockTimers:
    """Acquisition locks ordered by deadline."""

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Lock]] = []
        self._sequence = 0
        self._live = 0

    def __len__(self) -> int:
        return self._live

    def arm(self, *, member_id: str, first_offset: int, last_offset: int, deadline_ms: int) -> Lock:
        lock = Lock(
            member_id=member_id,
            first_offset=first_offset,
            last_offset=last_offset,
            deadline_ms=deadline_ms,
        )
        self._push(lock)
        return lock

    def copy_for_offset(self, lock: Lock, offset: int) -> Lock:
        """A lock on one offset with the same owner and deadline (used when splitting).
        A copy of a fired lock is fired too and never armed."""
        if lock.fired:
            copy = Lock(
                member_id=lock.member_id,
                first_offset=offset,
                last_offset=offset,
                deadline_ms=lock.deadline_ms,
            )
            copy.live = False
            copy.fired = True
            return copy
        assert lock.live, f"copying a cancelled lock {lock}"
        return self.arm(
            member_id=lock.member_id,
            first_offset=offset,
            last_offset=offset,
            deadline_ms=lock.deadline_ms,
        )

    def cancel(self, lock: Lock) -> None:
        if lock.live:
            lock.live = False
            self._live -= 1
            if len(self._heap) > 64 and len(self._heap) > 4 * self._live:
                self._heap = [entry for entry in self._heap if entry[2].live]
                heapq.heapify(self._heap)

    def next_deadline_ms(self) -> int | None:
        heap = self._heap
        while heap and not heap[0][2].live:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def pop_expired(self, now_ms: int) -> list[Lock]:
        """Live locks with deadline <= now, earliest first; each is marked fired."""
        expired = []
        heap = self._heap
        while heap and heap[0][0] <= now_ms:
            lock = heapq.heappop(heap)[2]
            if lock.live:
                lock.live = False
                lock.fired = True
                self._live -= 1
                expired.append(lock)
        return expired

    def _push(self, lock: Lock) -> None:
        self._sequence += 1
        self._live += 1
        heapq.heappush(self._heap, (lock.deadline_ms, self._sequence, lock))


class Pending:
    """What a record was before a transition whose state write is still pending."""

    __slots__ = ("delivery_count", "handle", "lock", "member_id", "state")

    def __init__(
        self,
        *,
        handle: int,
        state: RecordState,
        delivery_count: int,
        member_id: str,
        lock: Lock | None,
    ) -> None:
        self.handle = handle
        self.state = state
        self.delivery_count = delivery_count
        self.member_id = member_id
        self.lock = lock


class InFlightState:
    """The state of a whole unsplit batch, or of one offset of a split batch."""

    __slots__ = ("delivery_count", "lock", "member_id", "not_before_ms", "pending", "state")

    def __init__(
        self,
        state: RecordState,
        delivery_count: int,
        member_id: str = NO_MEMBER,
        lock: Lock | None = None,
        pending: Pending | None = None,
        not_before_ms: int = 0,
    ) -> None:
        self.state = state
        self.delivery_count = delivery_count
        self.member_id = member_id
        self.lock = lock
        self.pending = pending
        self.not_before_ms = not_before_ms
        """While AVAILABLE: monotonic ms before which it is not acquired (delayed
        redelivery, share/redelivery.py); 0 = no delay."""

    @property
    def is_acquirable(self) -> bool:
        return self.state is RecordState.AVAILABLE and self.pending is None

    @property
    def is_settled(self) -> bool:
        """Terminal with no write pending: nothing can happen to it any more."""
        return self.pending is None and self.state in TERMINAL_STATES

    def __repr__(self) -> str:
        pending = f", pending#{self.pending.handle}" if self.pending else ""
        owner = f", {self.member_id!r}" if self.member_id else ""
        return f"{self.state.name}(dc={self.delivery_count}{owner}{pending})"


class InFlightBatch:
    """Records [first_offset, last_offset]: one shared state, or one per offset."""

    __slots__ = ("first_offset", "last_offset", "offsets", "whole")

    def __init__(self, first_offset: int, last_offset: int, whole: InFlightState) -> None:
        assert first_offset <= last_offset
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.whole: InFlightState | None = whole
        self.offsets: list[InFlightState] | None = None

    @property
    def size(self) -> int:
        return self.last_offset - self.first_offset + 1

    def state_at(self, offset: int) -> InFlightState:
        assert self.first_offset <= offset <= self.last_offset
        if self.offsets is not None:
            return self.offsets[offset - self.first_offset]
        assert self.whole is not None
        return self.whole

    def states(self) -> Iterator[tuple[int, int, InFlightState]]:
        """(first, last, state) for the whole batch, or per offset once split."""
        if self.offsets is None:
            assert self.whole is not None
            yield self.first_offset, self.last_offset, self.whole
        else:
            for index, state in enumerate(self.offsets):
                offset = self.first_offset + index
                yield offset, offset, state

    def states_in(self, first: int, last: int) -> Iterator[tuple[int, int, InFlightState]]:
        """Like `states`, but only the entries overlapping [first, last]: an ack range
        inside a split batch visits its own offsets, not the whole batch."""
        if self.offsets is None:
            assert self.whole is not None
            if first <= self.last_offset and last >= self.first_offset:
                yield self.first_offset, self.last_offset, self.whole
            return
        base = self.first_offset
        offsets = self.offsets
        for offset in range(max(first, base), min(last, self.last_offset) + 1):
            yield offset, offset, offsets[offset - base]

    def split(self, timers: LockTimers) -> None:
        """Give every offset its own copy of the batch state (a no-op once split)."""
        whole = self.whole
        if whole is None:
            return
        pending = whole.pending
        offsets = []
        for offset in range(self.first_offset, self.last_offset + 1):
            lock = None if whole.lock is None else timers.copy_for_offset(whole.lock, offset)
            backup = None
            if pending is not None:
                backup_lock = None
                if pending.lock is not None:
                    backup_lock = timers.copy_for_offset(pending.lock, offset)
                backup = Pending(
                    handle=pending.handle,
                    state=pending.state,
                    delivery_count=pending.delivery_count,
                    member_id=pending.member_id,
                    lock=backup_lock,
                )
            offsets.append(
                InFlightState(
                    whole.state,
                    whole.delivery_count,
                    whole.member_id,
                    lock,
                    backup,
                    whole.not_before_ms,
                )
            )
        if whole.lock is not None:
            timers.cancel(whole.lock)
        if pending is not None and pending.lock is not None:
            timers.cancel(pending.lock)
        self.offsets = offsets
        self.whole = None

    def is_settled(self) -> bool:
        whole = self.whole
        if whole is not None:  # the common case, without a generator
            return whole.pending is None and whole.state in TERMINAL_STATES
        assert self.offsets is not None
        return all(state.is_settled for state in self.offsets)

    def __repr__(self) -> str:
        if self.offsets is None:
            return f"InFlightBatch({self.first_offset}-{self.last_offset} {self.whole})"
        return f"InFlightBatch({self.first_offset}-{self.last_offset} split {self.offsets})"


class InFlightCache:
    """In-flight batches sorted by first offset, non-overlapping."""

    __slots__ = ("_firsts", "batches")

    def __init__(self) -> None:
        self._firsts: list[int] = []
        self.batches: list[InFlightBatch] = []
        """The batches in order: read-only for callers (a hot loop indexes the list
        itself rather than paying `__len__`/`__getitem__` calls); changes go through
        `add`, `drop_front` and the other methods, which keep `_firsts` in step."""

    def __len__(self) -> int:
        return len(self.batches)

    def __getitem__(self, index: int) -> InFlightBatch:
        return self.batches[index]

    def __iter__(self) -> Iterator[InFlightBatch]:
        return iter(self.batches)

    @property
    def last(self) -> InFlightBatch | None:
        return self.batches[-1] if self.batches else None

    def floor_index(self, offset: int) -> int:
        """Index of the last batch whose first offset is <= offset, or -1."""
        return bisect_right(self._firsts, offset) - 1

    def index_from(self, offset: int) -> int:
        """Index of the first batch ending at or after `offset` (len if none)."""
        index = bisect_right(self._firsts, offset) - 1
        if index >= 0 and self.batches[index].last_offset >= offset:
            return index
        return index + 1

    def batch_at(self, offset: int) -> InFlightBatch | None:
        """The batch containing `offset`, if any."""
        index = self.floor_index(offset)
        if index >= 0 and self.batches[index].last_offset >= offset:
            return self.batches[index]
        return None

    def add(self, batch: InFlightBatch) -> None:
        if not self.batches or batch.first_offset > self.batches[-1].last_offset:
            self._firsts.append(batch.first_offset)
            self.batches.append(batch)
            return
        index = bisect_left(self._firsts, batch.first_offset)
        assert index == 0 or self.batches[index - 1].last_offset < batch.first_offset
        assert index == len(self.batches) or batch.last_offset < self._firsts[index]
        self._firsts.insert(index, batch.first_offset)
        self.batches.insert(index, batch)

    def drop_front(self, count: int) -> None:
        if count:
            del self._firsts[:count]
            del self.batches[:count]
