"""Per-key ordered acquisition (a Shoal extension, `shoal.share.delivery.order=key`):
which records of a share-partition's window hold back the later records of their key.

The rule (docs/design/key-order.md): an acquisition hands out a record of key K only if no
record of K is ACQUIRED outside it (a write pending counts as acquired), and every
record of K below it in the window is done (ACKNOWLEDGED, ARCHIVING or ARCHIVED) or
handed out by the same acquisition. A null key is unordered. So all acquired records of
a key belong to one acquisition, and a key's records go out in offset order.

Owns:
- `RecordKeys`: the key of each offset of the window, learned from the log reads
  (`record_facts`), a list per log batch so a batch's keys are one slice.
  An offset no read has covered yet (a share-partition loaded after a restart) is
  `UNKNOWN` until one does.
- `in_flight_keys`: the keys of the records acquired anywhere in the window (counted
  by `RecordKeys.enter`/`leave`, which the window calls as records enter and leave
  flight).
- `holding_keys`: those, plus the keys of the records below an offset that are not
  done (held back, waiting, delayed): what an acquisition starting there must not hand out.
- `first_eligible`: where an acquisition can start, for the next fetch offset: the
  first AVAILABLE record, ready, whose key nothing holds (or not yet known). It passes
  over at most `scan_max` held-back records (limits.SHARE_KEY_ORDER_SCAN_MAX_RECORDS).
- `held_back`: the AVAILABLE records held back by their key, by key, for the views.

Everything is per batch where it can be: a whole batch's keys are one slice, and a set
test against it runs in C. Deterministic; no clock.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from shoal.share.inflight import InFlightState
from shoal.share.states import RecordState

if TYPE_CHECKING:
    from shoal.share.window import InFlightWindow


class _Unknown:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Final = _Unknown()
"""The key of an offset no log read has covered yet."""

Key = bytes | None | _Unknown

_DONE: Final = frozenset({RecordState.ACKNOWLEDGED, RecordState.ARCHIVING, RecordState.ARCHIVED})
"""States that hold nothing back (a record never handed out again)."""

_COMPACT_AT: Final = 64
"""`RecordKeys` drops the batches below the start offset once this many have gathered."""


class RecordKeys:
    """The key of each record of the window, learned a log batch at a time (a batch's
    keys are one list by offset - its base offset, so a batch's keys are one slice,
    and offsets between batches, a compacted log's holes, take no room). An offset no
    read has covered is UNKNOWN."""

    __slots__ = ("_firsts", "_keys", "_known", "_lasts", "in_flight")

    def __init__(self, base: int) -> None:
        self._firsts: list[int] = []
        self._lasts: list[int] = []
        self._keys: list[Sequence[bytes | None]] = []
        self.in_flight: dict[Key, int] = {}
        """Key -> its records acquired (or with a write pending) now: kept by the
        window as records enter and leave flight, so no scan finds them."""
        self._known: list[list[int]] = []
        """Disjoint [first, last] runs of offsets whose keys were all learned (each read
        covers one; adjacent or overlapping ones merge). An offset in a run that no
        batch holds has no record (None); outside every run a key is UNKNOWN."""

    def learn(self, batches: Sequence[tuple[int, Sequence[bytes | None]]], *, high: int) -> None:
        """The keys of a read: (base offset, keys by offset - base) per log batch, in
        order, the read covering everything up to `high`."""
        if not batches:
            return
        firsts, lasts, store = self._firsts, self._lasts, self._keys
        for first, keys in batches:
            last = first + len(keys) - 1
            index = bisect_left(firsts, first)
            if index < len(firsts) and firsts[index] == first and lasts[index] == last:
                continue  # the same batch again
            stop = index
            while stop < len(firsts) and firsts[stop] <= last:
                stop += 1
            if index > 0 and lasts[index - 1] >= first:
                index -= 1
            firsts[index:stop] = [first]
            lasts[index:stop] = [last]
            store[index:stop] = [keys]
        self._know(batches[0][0], high)

    def _know(self, low: int, high: int) -> None:
        known = self._known
        index = bisect_left(known, [low])
        if index > 0 and known[index - 1][1] >= low - 1:
            index -= 1
        stop = index
        while stop < len(known) and known[stop][0] <= high + 1:
            low = min(low, known[stop][0])
            high = max(high, known[stop][1])
            stop += 1
        known[index:stop] = [[low, high]]

    def _run_of(self, offset: int) -> list[int] | None:
        """The known run holding `offset`, or None."""
        known = self._known
        index = bisect_right(known, [offset, 2**63]) - 1
        if index >= 0 and known[index][1] >= offset:
            return known[index]
        return None

    def enter(self, first: int, last: int) -> None:
        """[first, last] were acquired."""
        counts = self.in_flight
        for key in self.between(first, last):
            if key is not None:
                counts[key] = counts.get(key, 0) + 1

    def leave(self, first: int, last: int) -> None:
        """[first, last] are no longer acquired (done, released or expired)."""
        counts = self.in_flight
        for key in self.between(first, last):
            if key is None:
                continue
            left = counts.get(key, 0) - 1
            if left > 0:
                counts[key] = left
            else:
                counts.pop(key, None)

    def knows(self, first: int, last: int) -> bool:
        """Whether the keys of [first, last] are all learned."""
        run = self._run_of(first)
        return run is not None and last <= run[1]

    def get(self, offset: int) -> Key:
        index = bisect_right(self._firsts, offset) - 1
        if index >= 0 and offset <= self._lasts[index]:
            return self._keys[index][offset - self._firsts[index]]
        return None if self._run_of(offset) is not None else UNKNOWN

    def between(self, first: int, last: int) -> list[Key]:
        """The key of each offset of [first, last], in order (None where no record is,
        UNKNOWN where nothing was learned)."""
        firsts, lasts, store = self._firsts, self._lasts, self._keys
        index = bisect_right(firsts, first) - 1
        if index >= 0 and lasts[index] >= last and firsts[index] <= first:
            base = firsts[index]  # within one batch: the usual case
            return list(store[index][first - base : last - base + 1])
        if index < 0 or lasts[index] < first:
            index += 1
        found: list[Key] = []
        position = first
        while position <= last:
            if index < len(firsts) and firsts[index] <= position:
                base = firsts[index]
                end = min(last, lasts[index])
                found.extend(store[index][position - base : end - base + 1])
                position = end + 1
                index += 1
                continue
            gap_end = last if index >= len(firsts) else min(last, firsts[index] - 1)
            while position <= gap_end:  # no batch: no record where known, else UNKNOWN
                run = self._run_of(position)
                if run is not None:
                    stop = min(gap_end, run[1])
                    found.extend([None] * (stop - position + 1))
                else:
                    following = bisect_right(self._known, [position, 2**63])
                    stop = gap_end
                    if following < len(self._known):
                        stop = min(gap_end, self._known[following][0] - 1)
                    found.extend([UNKNOWN] * (stop - position + 1))
                position = stop + 1
        return found

    def drop_below(self, start: int) -> None:
        """Forget the batches wholly below `start` (the window's start offset) now and
        then."""
        lasts = self._lasts
        drop = bisect_left(lasts, start)
        if drop >= _COMPACT_AT:
            del self._firsts[:drop]
            del lasts[:drop]
            del self._keys[:drop]
            known = self._known
            while known and known[0][1] < start:
                del known[0]


def _add(into: set[Key], keys: Sequence[Key]) -> None:
    into.update(keys)


def _is_holding(st: InFlightState) -> bool:
    """Not done: acquired, written, waiting, held back or delayed."""
    return st.pending is not None or st.state not in _DONE


def _is_acquired(st: InFlightState) -> bool:
    return st.pending is not None or st.state is RecordState.ACQUIRED


def in_flight_keys(keys: RecordKeys) -> set[Key]:
    """The keys of the records acquired (or with a write pending) in the window, null
    and unknown keys left out."""
    found = set(keys.in_flight)
    found.discard(None)
    found.discard(UNKNOWN)
    return found


def holding_keys(window: InFlightWindow, keys: RecordKeys, *, upto: int) -> set[Key]:
    """What an acquisition starting at `upto` must not hand out: the keys of the records
    acquired anywhere in the window, and of those below `upto` not done. Null keys
    and UNKNOWN are left out (an unknown key below `upto` cannot be: every record below
    an acquisition's start was read by an earlier one)."""
    found = in_flight_keys(keys)
    cache = window.cache
    for index in range(cache.index_from(window.start_offset), len(cache)):
        batch = cache[index]
        if batch.first_offset >= upto:
            break
        whole = batch.whole
        if whole is not None:
            if _is_holding(whole) and not _is_acquired(whole):
                _add(found, keys.between(batch.first_offset, min(batch.last_offset, upto - 1)))
            continue
        assert batch.offsets is not None
        base = batch.first_offset
        for position, st in enumerate(batch.offsets):
            offset = base + position
            if offset >= upto:
                break
            if _is_holding(st) and not _is_acquired(st):
                found.add(keys.get(offset))
    found.discard(None)
    found.discard(UNKNOWN)
    return found


def first_eligible(
    window: InFlightWindow, keys: RecordKeys, *, scan_max: int
) -> tuple[int | None, int]:
    """(The first AVAILABLE ready record whose key nothing holds back, or whose key is
    not known yet; None when there is none within `scan_max` held-back records) and the
    number of held-back records passed."""
    held = in_flight_keys(keys)
    passed = 0
    cache = window.cache
    ready = window.is_ready
    for index in range(cache.index_from(window.start_offset), len(cache)):
        batch = cache[index]
        whole = batch.whole
        if whole is not None:
            if not _is_holding(whole) or _is_acquired(whole):
                continue
            batch_keys = keys.between(batch.first_offset, batch.last_offset)
            if not ready(whole):
                _add(held, batch_keys)
                continue
            if held.isdisjoint(batch_keys):
                return batch.first_offset, passed
            for position, key in enumerate(batch_keys):
                if key is None or key is UNKNOWN or key not in held:
                    return batch.first_offset + position, passed
                passed += 1
            if passed > scan_max:
                return None, passed
            continue
        assert batch.offsets is not None
        base = batch.first_offset
        for position, st in enumerate(batch.offsets):
            if not _is_holding(st) or _is_acquired(st):
                continue
            key = keys.get(base + position)
            if not ready(st):
                held.add(key)
                continue
            if key is None or key is UNKNOWN or key not in held:
                return base + position, passed
            passed += 1
            if passed > scan_max:
                return None, passed
    return None, passed


def held_back(window: InFlightWindow, keys: RecordKeys) -> tuple[dict[bytes, int], set[int]]:
    """The AVAILABLE records held back by their key now: (key -> records, their
    offsets). O(window)."""
    held = in_flight_keys(keys)
    counts: dict[bytes, int] = {}
    offsets: set[int] = set()
    start = window.start_offset
    for batch in window.cache:
        for first, last, st in batch.states():
            if last < start or not _is_holding(st) or _is_acquired(st):
                continue
            ready = window.is_ready(st)
            for offset in range(max(first, start), last + 1):
                key = keys.get(offset)
                if not isinstance(key, bytes):
                    continue
                if ready and key in held:
                    counts[key] = counts.get(key, 0) + 1
                    offsets.add(offset)
                held.add(key)
    return counts, offsets
