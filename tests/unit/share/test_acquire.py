"""Acquisition (docs/design/share-partition.md §5, §7).

Conformance items covered here: 11, 12, 15 (core share), 30, 31, 32, 33, 34, 35, 45.
"""

from __future__ import annotations

import random

import pytest

from shoal.protocol.record_batch import BatchHeader
from shoal.protocol.share import AcquireMode
from shoal.share.partition import _usable_headers
from shoal.share.persister import StateBatch
from shoal.share.states import RecordState
from tests.unit.share.support import (
    ACQ,
    ARC,
    AV,
    GAP,
    RELEASE,
    Rig,
    ack,
    batches,
    header,
    headers,
    ranges,
    started,
    state_of,
    view,
)

RECORD_LIMIT = AcquireMode.RECORD_LIMIT


def test_first_fetch_takes_the_whole_batch() -> None:
    """11: 10 records -> AcquiredRecords [(0, 9, 1)], 30 s lock."""
    rig = started((0, 9))
    result = rig.fetch("a")
    assert (ranges(result), result.lock_duration_ms, result.count) == ([(0, 9, 1)], 30_000, 10)


def test_max_records_and_batch_size_one() -> None:
    """12: MaxRecords 1 / BatchSize 1 on single-record batches."""
    rig = started((0, 0), (1, 1), (2, 2), (3, 3), (4, 4))
    assert ranges(rig.fetch("a", max_records=1, batch_size=1)) == [(0, 0, 1)]
    assert ranges(rig.fetch("a", max_records=5, batch_size=1)) == [
        (1, 1, 1),
        (2, 2, 1),
        (3, 3, 1),
        (4, 4, 1),
    ]


def test_members_get_disjoint_records() -> None:
    """15 (core share): two members of one group never share a record."""
    rig = started((0, 4), (5, 9))
    assert ranges(rig.fetch("a", max_records=1)) == [(0, 4, 1)]
    assert ranges(rig.fetch("b", max_records=1)) == [(5, 9, 1)]
    assert ranges(rig.fetch("a")) == []


def test_release_redelivers_until_the_limit() -> None:
    """30: RELEASE -> redelivered with DeliveryCount + 1; never after the limit."""
    rig = started((0, 0))
    for count in range(1, 6):
        assert ranges(rig.fetch("a")) == [(0, 0, count)]
        rig.ack("a", ack(0, 0, RELEASE))
    assert ranges(rig.fetch("a")) == []
    assert (view(rig.sp), rig.sp.start_offset) == ([], 1)


def test_release_redelivery_of_a_batch_is_throttled_from_the_threshold() -> None:
    """30 with §7 throttling: limit 5 gives T = 3, so a 3-record batch goes out whole
    three times, then one record at a time."""
    rig = started((0, 2))
    delivered = []
    while got := ranges(rig.fetch("a")):
        delivered.extend(got)
        for first, last, _ in got:
            rig.ack("a", ack(first, last, RELEASE))
    assert delivered == [
        (0, 2, 1),
        (0, 2, 2),
        (0, 2, 3),
        (0, 0, 4),
        (0, 0, 5),
        (1, 1, 4),
        (1, 1, 5),
        (2, 2, 4),
        (2, 2, 5),
    ]
    assert (view(rig.sp), rig.sp.start_offset) == ([], 3)


def test_batch_size_cuts_at_log_batch_boundaries() -> None:
    """31: log batches 2-6, 10-14, 15-21, 22-27 with BatchSize 5 -> 2-9, 10-14, 15-21,
    22-27 (2-9 includes the hole 7-9, §7.6)."""
    rig = started((2, 6), (10, 14), (15, 21), (22, 27))
    result = rig.fetch("a", max_records=100, batch_size=5)
    assert ranges(result) == [(2, 9, 1), (10, 14, 1), (15, 21, 1), (22, 27, 1)]
    assert len(result.batches) == 4
    # Each range is a cache entry of its own, with its own lock.
    assert [(v.first_offset, v.last_offset) for v in rig.sp.in_flight()] == [
        (2, 9),
        (10, 14),
        (15, 21),
        (22, 27),
    ]


def test_in_flight_limit_overshoots_by_a_whole_batch() -> None:
    """32: limit 20 with 0-9 in flight -> log batch 10-24 is taken, then nothing new."""
    rig = started((0, 9), (10, 24), (25, 29), max_record_locks=20)
    assert ranges(rig.fetch("a", max_records=10)) == [(0, 9, 1)]
    assert ranges(rig.fetch("b")) == [(10, 24, 1)]
    assert not rig.sp.can_acquire()
    assert ranges(rig.fetch("c")) == []
    rig.ack("a", ack(0, 9))
    assert rig.sp.can_acquire()  # window 10-24 = 15 < 20
    assert ranges(rig.fetch("c")) == [(25, 29, 1)]


def test_group_record_lock_cap_bounds_every_fetch_and_applies_live() -> None:
    """The group config `share.partition.max.record.locks` = 100 (the group's value,
    read at every acquisition) on 200 records in log batches of 10: a fetch for 200
    takes 100, then nothing until the cap is raised (live) or records leave the
    window; lowering it stops new acquisitions without touching held records."""
    rig = started(*[(first, first + 9) for first in range(0, 200, 10)], max_record_locks=100)
    assert ranges(rig.fetch("a", max_records=200, batch_size=200)) == [(0, 99, 1)]
    assert not rig.sp.can_acquire()
    assert ranges(rig.fetch("b", max_records=200)) == []
    rig.set(max_record_locks=150)  # IncrementalAlterConfigs on the group
    assert rig.sp.can_acquire()
    assert ranges(rig.fetch("b", max_records=200, batch_size=200)) == [(100, 149, 1)]
    rig.set(max_record_locks=100)
    assert not rig.sp.can_acquire()
    assert ranges(rig.fetch("c", max_records=200)) == []
    rig.ack("a", ack(0, 99))  # window 100-149: 50 in flight, room 50
    assert ranges(rig.fetch("c", max_records=200, batch_size=200)) == [(150, 199, 1)]


def test_room_in_the_window_bounds_reacquisition_too() -> None:
    """§5 as Kafka's lastOffsetAndMaxRecordsToAcquire: the budget is min(MaxRecords,
    limit - window) for cached and new records alike (whole cached batches may
    overshoot it). Limit 20, window 0-14 with 0-9 released: room 5, so 0-9 is
    re-acquired and nothing new joins it; the next fetch takes 15-19."""
    rig = started((0, 9), (10, 14), (15, 19), (20, 29), max_record_locks=20)
    assert ranges(rig.fetch("a", max_records=15)) == [(0, 14, 1)]
    rig.ack("a", ack(0, 9, RELEASE))
    assert ranges(rig.fetch("b")) == [(0, 9, 2)]
    assert ranges(rig.fetch("b")) == [(15, 19, 1)]
    assert not rig.sp.can_acquire()


def test_released_offset_is_reacquired_at_the_limit() -> None:
    """33: at the in-flight limit a released offset inside the window is re-acquired."""
    rig = started((0, 19), (20, 29), max_record_locks=20)
    rig.fetch("a")
    rig.ack("a", ack(19, 19, RELEASE))
    assert rig.sp.next_fetch_offset() == 19
    assert ranges(rig.fetch("b")) == [(19, 19, 2)]
    assert ranges(rig.fetch("b")) == []


def test_record_limit_mode_leaves_the_rest_available() -> None:
    """34: record-limit mode, MaxRecords 5, one 10-record batch -> 0-4; the next member
    gets 5-9 (one range, §7.7)."""
    rig = started((0, 9))
    assert ranges(rig.fetch("a", max_records=5, mode=RECORD_LIMIT)) == [(0, 4, 1)]
    assert view(rig.sp) == [(0, 4, ACQ, 1, "a"), (5, 9, AV, 0, "")]
    assert rig.sp.end_offset == 9 and rig.sp.next_fetch_offset() == 5
    assert ranges(rig.fetch("b", max_records=5, mode=RECORD_LIMIT)) == [(5, 9, 1)]
    assert ranges(rig.fetch("c", max_records=5, mode=RECORD_LIMIT)) == []


def test_record_limit_mode_splits_a_cached_batch() -> None:
    rig = started((0, 9))
    rig.fetch("a")
    rig.ack("a", ack(0, 9, RELEASE))
    assert ranges(rig.fetch("b", max_records=3, mode=RECORD_LIMIT)) == [(0, 2, 2)]
    assert ranges(rig.fetch("c", max_records=3, mode=RECORD_LIMIT)) == [(3, 5, 2)]


def test_batch_mode_max_records_is_soft() -> None:
    """§7.4: the last offset stretches to the end of the containing log batch."""
    rig = started((0, 9), (10, 19), (20, 29))
    assert ranges(rig.fetch("a", max_records=12)) == [(0, 19, 1)]


def test_poison_records_are_throttled() -> None:
    """35: limit 7, 20 records at count 4 -> 10, then 5, then singles."""
    rig = Rig()
    rig.set(delivery_count_limit=7)
    rig.produce((0, 19))
    rig.start(start_offset=0, state_batches=[StateBatch(0, 19, int(RecordState.AVAILABLE), 4)])

    def deliver() -> list[tuple[int, int, int]]:
        got = ranges(rig.fetch("a"))
        for first, last, _ in got:
            rig.ack("a", ack(first, last, RELEASE))
        return got

    assert deliver() == [(0, 9, 5)]
    assert deliver() == [(0, 4, 6)]
    assert deliver() == [(0, 0, 7)]  # last attempt: alone
    assert deliver() == [(1, 1, 7)]
    assert [deliver() for _ in range(3)] == [[(2, 2, 7)], [(3, 3, 7)], [(4, 4, 7)]]
    assert rig.sp.start_offset == 5  # 0-4 archived at the limit
    assert deliver() == [(5, 9, 6)]  # count 5 -> 20 >> 2


def test_throttled_batch_waits_for_a_fetch_of_its_own() -> None:
    """§7: a throttled run is not appended to other records."""
    rig = Rig()
    rig.set(delivery_count_limit=7)
    rig.produce((0, 4), (5, 9))
    rig.start(
        start_offset=0,
        state_batches=[
            StateBatch(0, 4, int(RecordState.AVAILABLE), 1),
            StateBatch(5, 9, int(RecordState.AVAILABLE), 4),
        ],
    )
    assert ranges(rig.fetch("a")) == [(0, 4, 2)]
    assert ranges(rig.fetch("b")) == [(5, 6, 5)]  # 5 >> 1 = 2


def test_max_bytes() -> None:
    """45: MaxBytes 0 -> nothing; a batch larger than MaxBytes still goes out; later
    batches stop at the byte limit."""
    rig = started((0, 9), (10, 19))
    assert ranges(rig.fetch("a", max_bytes=0)) == []
    result = rig.fetch("a", max_bytes=1)
    assert ranges(result) == [(0, 9, 1)]
    assert result.batches[0].size > 1 and len(result.batches) == 1
    assert result.byte_range == (0, result.batches[0].size)


def test_holes_and_control_batches_are_acquired() -> None:
    """§7.6: offsets without a record inside a range (holes, control batches) are
    acquired; clients GAP-ack them."""
    rig = started((0, 4))
    rig.sp.check_invariants()
    rig.log.append(header(5, 5, control=True))
    rig.produce((8, 9))
    assert ranges(rig.fetch("a")) == [(0, 9, 1)]
    rig.ack("a", ack(0, 4), ack(5, 7, GAP), ack(8, 9))
    assert (rig.sp.start_offset, rig.sp.delivery_complete_count) == (10, 0)


def test_records_are_the_batches_overlapping_the_acquired_ranges() -> None:
    """§7.8: the log batches overlapping [first acquired, last acquired]."""
    rig = started((0, 9), (10, 19), (20, 29))
    rig.fetch("a", max_records=1)
    rig.fetch("b", max_records=1)  # 10-19
    rig.ack("a", ack(0, 9, RELEASE))
    result = rig.fetch("c", max_records=1, mode=RECORD_LIMIT)
    assert ranges(result) == [(0, 0, 2)]
    assert [(h.base_offset, h.last_offset) for h in result.batches] == [(0, 9)]


def test_compacted_cached_batches_are_archived() -> None:
    """§4.5: cached AVAILABLE batches between the fetch offset and the first batch the
    log returns are archived (and written)."""
    rig = started((0, 4), (5, 9), (10, 14))
    rig.fetch("a", max_records=1)
    rig.fetch("b", max_records=1)
    rig.ack("a", ack(0, 4, RELEASE))
    rig.log[:] = [h for h in rig.log if h.base_offset != 0]  # compaction removed 0-4
    result = rig.fetch("c", max_records=100)
    assert ranges(result) == [(10, 14, 1)]
    assert result.write is not None
    assert batches(result.write) == [(0, 4, ARC, 1)]
    assert rig.sp.start_offset == 5


def test_fetch_from_inside_a_log_batch_starts_at_the_start_offset() -> None:
    rig = Rig()
    rig.produce((0, 9))
    sp = rig.start(reset_offset=5)
    assert sp.next_fetch_offset() == 5
    result = rig.fetch("a")
    assert ranges(result) == [(5, 9, 1)]
    assert [(h.base_offset, h.last_offset) for h in result.batches] == [(0, 9)]


def test_end_offset_limit_bounds_acquisition() -> None:
    """§7.2: a read bounded by the last stable offset (read_committed) or the high
    watermark; batches at or past the limit are left alone."""
    rig = started((0, 4), (5, 9))
    result = rig.sp.acquire(
        member_id="a",
        fetch_offset=0,
        headers=headers((0, 4), (5, 9)),
        max_records=100,
        batch_size=100,
        end_offset_limit=5,
    )
    assert ranges(result) == [(0, 4, 1)]


def test_aborted_batches_hook_archives_under_read_committed() -> None:
    """§9 hook: under read_committed the given aborted batches are archived after
    acquisition, counted complete, and left out of AcquiredRecords."""
    from shoal.share.leader_settings import IsolationLevel

    rig = started((0, 4), (5, 9), (10, 14), isolation_level=IsolationLevel.READ_COMMITTED)
    result = rig.sp.acquire(
        member_id="a",
        fetch_offset=0,
        headers=rig.read(0),
        max_records=100,
        batch_size=5,
        aborted=[(5, 9)],
    )
    assert ranges(result) == [(0, 4, 1), (10, 14, 1)]
    assert result.write is not None and batches(result.write) == [(5, 9, ARC, 1)]
    assert state_of(rig.sp, 7).state is ARC
    assert rig.sp.delivery_complete_count == 5
    rig.sp.check_invariants()


def _check_acquirable_from(rig: Rig) -> int | None:
    """`acquirable_from` (the fetch's one-pass check) against the reference pair."""
    expected = rig.sp.next_fetch_offset() if rig.sp.can_acquire() else None
    assert rig.sp.acquirable_from() == expected
    return expected


def test_acquirable_from_matches_can_acquire_and_next_fetch_offset() -> None:
    """Through a window at and below the lock cap, with cached releases, a paused
    group and an empty log tail, `acquirable_from` answers `next_fetch_offset()`
    exactly when `can_acquire()`, else None."""
    rig = started((0, 9), (10, 24), (25, 29), max_record_locks=20)
    assert _check_acquirable_from(rig) == 0
    rig.fetch("a", max_records=10)
    assert _check_acquirable_from(rig) == 10
    rig.fetch("b")
    assert _check_acquirable_from(rig) is None  # at the cap, nothing cached
    rig.ack("a", ack(0, 4, RELEASE))
    assert _check_acquirable_from(rig) == 0  # a cached release below the cap
    rig.set(delivery_paused=True)
    assert _check_acquirable_from(rig) is None
    rig.set(delivery_paused=False)
    rig.fetch("c")
    rig.ack("c", ack(0, 4))
    rig.ack("a", ack(5, 9))
    assert _check_acquirable_from(rig) == 25
    rig.fetch("c")
    assert _check_acquirable_from(rig) is None  # 10-29 in flight: the cap again
    rig.ack("b", ack(10, 24))
    assert _check_acquirable_from(rig) == 30  # below the cap: from the log end


def _usable_reference(
    hs: list[BatchHeader], start: int, limit: int | None, max_bytes: int
) -> list[BatchHeader]:
    """What `_usable_headers` means, header by header (§7.10)."""
    usable: list[BatchHeader] = []
    total = 0
    for h in hs:
        if h.last_offset < start:
            continue
        if limit is not None and h.last_offset >= limit:
            break
        if usable and total + h.size > max_bytes:
            break
        total += h.size
        usable.append(h)
    return usable


def test_usable_headers_at_the_boundaries_of_the_whole_read() -> None:
    """The whole read is usable exactly when its first batch reaches the SPSO, its last
    ends below the limit and all of it fits MaxBytes; one byte or one offset short,
    the batch-by-batch answer."""
    hs = headers((0, 9), (10, 19), (20, 29))
    whole = sum(h.size for h in hs)
    cases = [
        (0, None, whole, 3),
        (0, None, whole - 1, 2),  # the last batch no longer fits
        (9, None, whole, 3),  # the SPSO inside the first batch
        (10, None, whole, 2),  # the first batch wholly below the SPSO
        (0, 30, whole, 3),
        (0, 29, whole, 2),  # the last batch reaches the limit
        (0, None, 1, 1),  # the first batch goes whatever its size
        (30, None, whole, 0),
    ]
    for start, limit, max_bytes, count in cases:
        got = _usable_headers(hs, start, limit, max_bytes)
        assert got == _usable_reference(hs, start, limit, max_bytes)
        assert len(got) == count, (start, limit, max_bytes)
    assert _usable_headers([], 0, None, whole) == []


def test_usable_headers_agree_with_the_batch_by_batch_rule() -> None:
    rng = random.Random(7)
    for _ in range(500):
        ranges, first = [], rng.randrange(5)
        for _ in range(rng.randrange(1, 8)):
            last = first + rng.randrange(5)
            ranges.append((first, last))
            first = last + 1 + rng.choice((0, 0, 0, 3))  # compaction leaves holes
        hs = headers(*ranges)
        start = rng.randrange(first + 2)
        limit = rng.choice((None, rng.randrange(first + 2)))
        max_bytes = rng.randrange(1, sum(h.size for h in hs) + 50)
        got = _usable_headers(hs, start, limit, max_bytes)
        assert got == _usable_reference(hs, start, limit, max_bytes)


def test_a_whole_usable_read_is_taken_without_walking_its_headers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The usual acquisition (all of the read usable, all of it overlapping what was
    acquired) reads no header's `size` or `last_offset`: no Python step per log batch
    for many small batches."""
    rig = started(*[(i, i + 9) for i in range(0, 500, 10)])

    def walked(_header: BatchHeader) -> int:
        raise AssertionError("a header was walked")

    monkeypatch.setattr(BatchHeader, "size", property(walked))
    monkeypatch.setattr(BatchHeader, "last_offset", property(walked))
    hs = rig.log[:]
    assert _usable_headers(hs, 0, None, 1 << 30) == hs
    monkeypatch.undo()
    result = rig.fetch("a", max_records=500)
    assert ranges(result) == [(0, 499, 1)]
    assert len(result.batches) == 50
