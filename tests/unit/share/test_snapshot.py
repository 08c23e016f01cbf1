"""`SharePartition.snapshot`: the read-only, capped picture of the window the web
console draws (states, delivery counts, holders, lock deadlines)."""

from __future__ import annotations

from tests.unit.share.support import ACCEPT, ACK, ACQ, AV, RELEASE, Rig, ack


def _started() -> Rig:
    rig = Rig()
    rig.produce((0, 4), (5, 9), (10, 14))
    rig.start(start_offset=0)
    return rig


def test_snapshot_shows_state_delivery_count_holder_and_lock_deadline() -> None:
    rig = _started()
    rig.fetch("a", max_records=5)
    rig.clock.advance(1_000)
    rig.fetch("b", max_records=5)
    rig.ack("a", ack(1, 1, ACCEPT), ack(2, 2, RELEASE))
    snap = rig.sp.snapshot(max_entries=100)
    rows = [
        (e.first_offset, e.last_offset, e.state, e.delivery_count, e.member_id, e.lock_deadline_ms)
        for e in snap.entries
    ]
    assert rows == [
        (0, 0, ACQ, 1, "a", 30_000),
        (1, 1, ACK, 1, "", None),
        (2, 2, AV, 1, "", None),
        (3, 3, ACQ, 1, "a", 30_000),
        (4, 4, ACQ, 1, "a", 30_000),
        (5, 9, ACQ, 1, "b", 31_000),
    ]
    assert (snap.start_offset, snap.end_offset, snap.taken_at_ms) == (0, 9, 1_000)
    assert not snap.truncated


def test_snapshot_is_capped_and_says_so() -> None:
    rig = _started()
    rig.fetch("a", max_records=15)
    rig.ack("a", ack(0, 4, ACCEPT))  # the SPSO moves past the first batch
    snap = rig.sp.snapshot(max_entries=1)
    assert [(e.first_offset, e.last_offset) for e in snap.entries] == [(5, 5)]
    assert (snap.start_offset, snap.truncated) == (5, True)
    assert rig.sp.snapshot(max_entries=0).entries == ()
    whole = rig.sp.snapshot(max_entries=1_000)
    assert not whole.truncated and len(whole.entries) == 10  # one per offset, split


def test_snapshot_changes_nothing() -> None:
    rig = _started()
    rig.fetch("a", max_records=5)
    before = rig.sp.in_flight()
    rig.sp.snapshot(max_entries=1)
    assert rig.sp.in_flight() == before
    rig.sp.check_invariants()
