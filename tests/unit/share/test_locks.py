"""Acquisition locks, expiry and session release (docs/design/share-partition.md §3, §2, §8.5).

Conformance items covered here: 25, 28, 36, 43 (the expiry half).
"""

from __future__ import annotations

from shoal.protocol.errors import ErrorCode
from shoal.share.acknowledge import AckBatch
from tests.unit.share.support import (
    ACCEPT,
    ACK,
    ACQ,
    ARC,
    AV,
    RELEASE,
    ack,
    batches,
    ranges,
    started,
    state_of,
    view,
)


def test_ack_after_lock_expiry() -> None:
    """25: after the lock expires even the former owner gets INVALID_RECORD_STATE."""
    rig = started((0, 9))
    rig.fetch("a")
    assert rig.sp.next_lock_deadline() == 30_000
    writes = rig.expire(30_000)
    assert [batches(w) for w in writes] == [[(0, 9, AV, 1)]]
    assert rig.ack("a", ack(0, 9)).error == ErrorCode.invalid_record_state
    assert rig.sp.next_lock_deadline() is None


def test_expiry_at_the_delivery_limit_archives() -> None:
    """28: limit 2: acquire, expire (AVAILABLE, 1), acquire (2), expire -> ARCHIVED."""
    rig = started((0, 9), delivery_count_limit=2)
    assert ranges(rig.fetch("a")) == [(0, 9, 1)]
    rig.expire(30_000)
    assert view(rig.sp) == [(0, 9, AV, 1, "")]
    assert ranges(rig.fetch("b")) == [(0, 9, 2)]
    writes = rig.expire(30_000)
    # The archival stands whatever happens to the write, which carries the SPSO past it.
    assert [(w.start_offset, w.delivery_complete_count, batches(w)) for w in writes] == [
        (10, 0, [(0, 9, ARC, 2)])
    ]
    assert (view(rig.sp), rig.sp.start_offset, rig.sp.next_fetch_offset()) == ([], 10, 10)


def test_session_release_keeps_the_delivery_count() -> None:
    """36: records released by a session close come back with count 2."""
    rig = started((0, 9), (10, 14))
    rig.fetch("a", max_records=1)
    rig.fetch("a", max_records=1)
    rig.ack("a", AckBatch(10, 14, (ACCEPT, RELEASE, ACCEPT, ACCEPT, ACCEPT)))
    rig.fetch("b", max_records=1)  # 11 again, count 2, held by b
    pending = rig.sp.release_member(member_id="a")
    assert pending is not None
    assert batches(pending.write) == [(0, 9, AV, 1)]
    rig.complete(pending)
    assert rig.sp.release_member(member_id="a") is None
    assert ranges(rig.fetch("c")) == [(0, 9, 2)]
    assert state_of(rig.sp, 11).member_id == "b"


def test_session_release_at_the_limit_archives() -> None:
    rig = started((0, 4), delivery_count_limit=2)
    rig.fetch("a")
    rig.ack("a", ack(0, 4, RELEASE))
    rig.fetch("a")
    pending = rig.sp.release_member(member_id="a")
    assert pending is not None and batches(pending.write) == [(0, 4, ARC, 2)]
    rig.complete(pending)
    assert (view(rig.sp), rig.sp.start_offset) == ([], 5)


def test_session_release_write_failure_restores_the_member() -> None:
    rig = started((0, 4))
    rig.fetch("a")
    pending = rig.sp.release_member(member_id="a")
    assert pending is not None
    rig.complete(pending, fail=True)
    assert view(rig.sp) == [(0, 4, ACQ, 1, "a")]
    rig.expire(30_000)  # its lock still runs
    assert view(rig.sp) == [(0, 4, AV, 1, "")]


def test_expiry_stands_when_its_write_fails() -> None:
    """43 (expiry half): the transition stands whatever happens to the write."""
    rig = started((0, 9), delivery_count_limit=2)
    rig.fetch("a")
    rig.clock.advance(30_000)
    result = rig.sp.expire_locks(now_ms=rig.clock.monotonic_ms())
    assert len(result.writes) == 1 and result.wake
    # The caller's write fails: nothing to undo, the records are available.
    rig.sp.check_invariants()
    assert view(rig.sp) == [(0, 9, AV, 1, "")]
    assert ranges(rig.fetch("b")) == [(0, 9, 2)]


def test_rollback_after_the_lock_expired_meanwhile() -> None:
    """§8.5: a failed write restores AVAILABLE (or ARCHIVED at the limit) when the lock
    expired while the write was pending; that transition is written."""
    rig = started((0, 4), (5, 9), delivery_count_limit=2)
    rig.fetch("a", max_records=1)
    rig.ack("a", ack(0, 4, RELEASE))
    rig.fetch("a", max_records=1)  # 0-4 at count 2 (last delivery)
    rig.fetch("a", max_records=1)  # 5-9 at count 1
    result = rig.sp.acknowledge(member_id="a", batches=[ack(0, 9)])
    assert result.pending is not None
    assert rig.expire(30_000) == []  # pending: the timer finds nothing to do
    completion = rig.complete(result.pending, fail=True)
    assert [batches(w) for w in completion.writes] == [[(0, 4, ARC, 2), (5, 9, AV, 1)]]
    assert completion.start_offset_moved and completion.wake
    assert (rig.sp.start_offset, view(rig.sp)) == (5, [(5, 9, AV, 1, "")])


def test_commit_after_the_lock_expired_meanwhile_stands() -> None:
    rig = started((0, 4))
    rig.fetch("a")
    result = rig.sp.acknowledge(member_id="a", batches=[ack(0, 4)])
    assert result.pending is not None
    rig.expire(40_000)
    rig.complete(result.pending)
    assert (view(rig.sp), rig.sp.start_offset) == ([], 5)


def test_split_offsets_keep_the_remaining_lock_time() -> None:
    """§6: a split copies the batch state and remaining lock time to each offset."""
    rig = started((0, 9))
    rig.fetch("a")
    rig.clock.advance(10_000)
    rig.ack("a", ack(3, 3))
    assert {v.lock_deadline_ms for v in rig.sp.in_flight() if v.state is ACQ} == {30_000}
    writes = rig.expire(20_000)
    assert len(writes) == 9  # one write per timer
    assert [batches(w) for w in writes][:2] == [[(0, 0, AV, 1)], [(1, 1, AV, 1)]]
    assert all(w.start_offset == 0 for w in writes)


def test_lock_duration_is_read_when_a_lock_is_armed() -> None:
    """A changed lock duration (the group config `share.record.lock.duration.ms`,
    docs/reference/configs.md) applies to locks armed afterwards."""
    rig = started((0, 4), (5, 9))
    rig.fetch("a", max_records=1)
    rig.set(record_lock_duration_ms=5_000)
    result = rig.fetch("a", max_records=1)
    assert result.lock_duration_ms == 5_000
    assert [v.lock_deadline_ms for v in rig.sp.in_flight()] == [30_000, 5_000]
    assert rig.sp.next_lock_deadline() == 5_000
    rig.expire(5_000)
    assert view(rig.sp) == [(0, 4, ACQ, 1, "a"), (5, 9, AV, 1, "")]


def test_expiry_below_the_start_offset_archives() -> None:
    """§2: lock expiry of an offset below the SPSO archives it whatever its count."""
    rig = started((0, 9))
    rig.fetch("a")
    rig.sp.on_log_start_offset(log_start_offset=5)
    # The log start split the batch (no unsplit batch straddles the SPSO).
    writes = rig.expire(30_000)
    assert [batches(w) for w in writes] == [[(o, o, ARC, 1)] for o in range(5)] + [
        [(o, o, AV, 1)] for o in range(5, 10)
    ]
    assert [w.delivery_complete_count for w in writes] == [0] * 10
    assert rig.sp.start_offset == 5
    rig.fetch("b")
    rig.ack("b", ack(5, 9))
    assert (view(rig.sp), rig.sp.start_offset) == ([], 10)


def test_acknowledged_records_never_expire() -> None:
    rig = started((0, 9))
    rig.fetch("a")
    rig.ack("a", ack(0, 4))
    writes = rig.expire(60_000)
    assert [batches(w) for w in writes] == [[(o, o, AV, 1)] for o in range(5, 10)]
    assert view(rig.sp) == [(0, 4, ACK, 1, ""), (5, 9, AV, 1, "")]
    assert rig.sp.start_offset == 5
