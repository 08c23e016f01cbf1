"""Start offset, end offset, loading, log start moves, and the delivery limit
(docs/design/share-partition.md §2, §4, §8.7, §10).

Conformance items covered here: 29, 37, 38, 39, 40, 44, 57 (core share), 71 and 72
(core share).
"""

from __future__ import annotations

import pytest

from shoal.share.leader_settings import resolve_reset_offset
from shoal.share.partition import StateLoadError
from shoal.share.persister import PersistedState, StateBatch
from shoal.share.states import RecordState
from tests.unit.share.support import (
    ACK,
    ACQ,
    ARC,
    AV,
    GAP,
    RELEASE,
    Rig,
    ack,
    batches,
    durable_batches,
    ranges,
    started,
    state_of,
    view,
)


def test_released_twice_at_limit_two_empties_the_cache() -> None:
    """29: limit 2, release a batch twice -> archived, cache empty, SPSO = end = next
    fetch offset = last + 1."""
    rig = started((0, 9), delivery_count_limit=2)
    rig.fetch("a")
    rig.ack("a", ack(0, 9, RELEASE))
    rig.fetch("a")
    result = rig.ack("a", ack(0, 9, RELEASE))
    assert result.error is None
    sp = rig.sp
    assert (view(sp), sp.start_offset, sp.end_offset, sp.next_fetch_offset()) == ([], 10, 10, 10)
    assert sp.delivery_complete_count == 0


def test_start_offset_moves_only_past_a_terminal_prefix() -> None:
    """37: 0-4 in flight, 3-4 acked while 0-2 stay acquired -> SPSO 0; then 0-2 acked
    -> SPSO 5."""
    rig = started((0, 4), (5, 9))
    rig.fetch("a", max_records=1)
    rig.ack("a", ack(3, 4))
    assert (rig.sp.start_offset, rig.sp.delivery_complete_count) == (0, 2)
    rig.ack("a", ack(0, 2))
    assert (rig.sp.start_offset, rig.sp.delivery_complete_count, view(rig.sp)) == (5, 0, [])
    assert rig.sp.next_fetch_offset() == 5


def test_log_start_offset_move() -> None:
    """38: 0-4 acquired, DeleteRecords to 5 -> SPSO 5; the later ack of 0-4 succeeds
    silently; the next member gets 5-9."""
    rig = started((0, 4), (5, 9))
    rig.fetch("a", max_records=1)
    rig.log_start_offset = 5
    assert rig.sp.on_log_start_offset(log_start_offset=5)
    assert not rig.sp.on_log_start_offset(log_start_offset=3)
    assert (rig.sp.start_offset, rig.sp.end_offset, rig.sp.next_fetch_offset()) == (5, 5, 5)
    result = rig.ack("a", ack(0, 4))
    assert (result.error, result.pending) == (None, None)
    assert view(rig.sp) == []  # archived in memory, then dropped
    assert ranges(rig.fetch("b")) == [(5, 9, 1)]
    result = rig.ack("b", ack(5, 9))
    assert result.error is None
    # The write carries the SPSO that ack moves to (past 5-9).
    assert rig.durable().start_offset == 10
    assert durable_batches(rig.durable()) == []


def test_log_start_offset_archives_available_and_splits_a_straddler() -> None:
    """§4.4: AVAILABLE below the new log start -> ARCHIVED in memory; terminal ones stop
    counting; an ACQUIRED batch straddling it is split."""
    rig = started((0, 4), (5, 9), (10, 14))
    rig.fetch("a", max_records=1)
    rig.fetch("b", max_records=1)
    rig.fetch("c", max_records=1)
    rig.ack("a", ack(0, 4, RELEASE))
    rig.ack("b", ack(5, 6))
    assert rig.sp.delivery_complete_count == 2
    rig.sp.on_log_start_offset(log_start_offset=12)
    rig.sp.check_invariants()
    assert rig.sp.start_offset == 12 and rig.sp.delivery_complete_count == 0
    assert view(rig.sp)[0][:3] == (5, 6, ACK)  # 0-4 archived and dropped
    assert (state_of(rig.sp, 7).state, state_of(rig.sp, 7).member_id) == (ACQ, "b")
    assert state_of(rig.sp, 11).state is ACQ and state_of(rig.sp, 12).state is ACQ
    assert rig.sp.next_fetch_offset() == 15


def test_leading_hole_is_refetched() -> None:
    """39: persisted state with a hole at the start -> the hole is fetched and acquired
    as new records (gap window)."""
    rig = Rig()
    rig.produce((0, 4), (5, 9), (10, 14), (15, 19))
    sp = rig.start(
        start_offset=0,
        state_batches=[
            StateBatch(10, 14, int(RecordState.ACKNOWLEDGED), 1),
            StateBatch(15, 19, int(RecordState.AVAILABLE), 2),
        ],
    )
    assert (sp.start_offset, sp.end_offset, sp.next_fetch_offset()) == (0, 19, 0)
    assert sp.delivery_complete_count == 5
    assert ranges(rig.fetch("a", max_records=1)) == [(0, 4, 1)]
    assert ranges(rig.fetch("b", max_records=100)) == [(5, 9, 1), (15, 19, 3)]
    rig.ack("a", ack(0, 4))
    assert rig.sp.start_offset == 5
    rig.ack("b", ack(5, 9), ack(15, 19))
    assert (rig.sp.start_offset, view(rig.sp)) == (20, [])


def test_gap_window_holes_with_no_records_are_natural() -> None:
    """§10.4: a gap-window hole the log has no records for (compaction) is skipped once
    read, and the SPSO moves across it. Offsets of a hole after a record are acquired
    with it (Kafka acquires up to the next cached batch; clients GAP-ack them)."""
    rig = Rig()
    rig.produce((0, 4), (10, 14))  # 5-9 compacted away
    sp = rig.start(
        start_offset=0,
        state_batches=[StateBatch(10, 14, int(RecordState.ARCHIVED), 1)],
    )
    assert ranges(rig.fetch("a")) == [(0, 9, 1)]
    rig.ack("a", ack(0, 4), ack(5, 9, GAP))
    assert (sp.start_offset, view(sp), sp.next_fetch_offset()) == (15, [], 15)
    # A hole before the first batch the log returns holds nothing at all.
    rig = Rig()
    rig.produce((10, 14))
    sp = rig.start(
        start_offset=0,
        state_batches=[StateBatch(10, 14, int(RecordState.ARCHIVED), 1)],
    )
    assert sp.next_fetch_offset() == 0
    assert ranges(rig.fetch("a")) == []
    assert (sp.start_offset, view(sp), sp.next_fetch_offset()) == (15, [], 15)


def test_gap_in_the_middle_closes_when_the_end_moves_on() -> None:
    rig = Rig()
    rig.produce((0, 4), (5, 9), (10, 14), (15, 19))
    sp = rig.start(
        start_offset=0,
        state_batches=[
            StateBatch(0, 4, int(RecordState.ACKNOWLEDGED), 1),
            StateBatch(10, 14, int(RecordState.ACKNOWLEDGED), 1),
        ],
    )
    assert (sp.start_offset, sp.next_fetch_offset()) == (5, 5)
    assert ranges(rig.fetch("a")) == [(5, 9, 1), (15, 19, 1)]
    rig.ack("a", ack(5, 9), ack(15, 19))
    assert (sp.start_offset, view(sp)) == (20, [])


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [("latest", 100), ("earliest", 0), ("by_duration:PT1H", 40)],
)
def test_auto_offset_reset(strategy: str, expected: int) -> None:
    """40: StartOffset -1: `latest` skips old records, `earliest` delivers them,
    `by_duration:PT1H` starts an hour back."""
    rig = Rig()
    rig.produce((0, 99))
    asked: list[int] = []

    def offset_for_timestamp(timestamp_ms: int) -> int | None:
        asked.append(timestamp_ms)
        return 40

    offset = resolve_reset_offset(
        strategy,
        clock=rig.clock,
        log_start_offset=lambda: 0,
        high_watermark=lambda: 100,
        offset_for_timestamp=offset_for_timestamp,
    )
    assert offset == expected
    if strategy.startswith("by_duration"):
        assert asked == [rig.clock.wall_ms() - 3_600_000]
    sp = rig.start(reset_offset=offset)
    assert sp.next_fetch_offset() == expected
    rig.produce((100, 104))
    assert ranges(rig.fetch("a", max_records=1000))[0][0] == expected
    assert rig.durable().start_offset == -1  # kept in memory until the next write


def test_by_duration_with_nothing_that_recent_starts_at_the_end() -> None:
    rig = Rig()
    offset = resolve_reset_offset(
        "by_duration:PT5M",
        clock=rig.clock,
        log_start_offset=lambda: 0,
        high_watermark=lambda: 7,
        offset_for_timestamp=lambda _: None,
    )
    assert offset == 7
    with pytest.raises(ValueError, match="by_duration"):
        resolve_reset_offset(
            "sometime",
            clock=rig.clock,
            log_start_offset=lambda: 0,
            high_watermark=lambda: 7,
            offset_for_timestamp=lambda _: None,
        )


def test_lowered_delivery_limit_archives_at_the_next_transition() -> None:
    """44: a record whose count reached a lowered limit finishes its attempt and is
    archived at its next transition: release of an acquired one, acquisition of an
    available one."""
    rig = started((0, 4), (5, 9), delivery_count_limit=10)  # no throttling below 5
    for _ in range(3):
        rig.fetch("a", max_records=1)
        rig.ack("a", ack(0, 4, RELEASE))
    assert ranges(rig.fetch("a", max_records=1)) == [(0, 4, 4)]  # 4th delivery
    assert ranges(rig.fetch("b", max_records=1)) == [(5, 9, 1)]
    rig.ack("b", ack(5, 9, RELEASE))
    rig.fetch("b", max_records=1)
    rig.ack("b", ack(5, 9, RELEASE))  # 5-9 AVAILABLE at count 2
    rig.set(delivery_count_limit=2)
    result = rig.sp.acknowledge(member_id="a", batches=[ack(0, 4, RELEASE)])
    assert result.pending is not None
    assert batches(result.pending.write) == [(0, 4, ARC, 4)]
    rig.complete(result.pending)
    fetched = rig.fetch("c")
    assert ranges(fetched) == []
    assert fetched.write is not None and batches(fetched.write) == [(5, 9, ARC, 2)]
    assert (view(rig.sp), rig.sp.start_offset) == ([], 10)


def test_delivery_complete_count_tracks_terminal_offsets() -> None:
    """§8.7 and 73 (core share): rises when a transition starts, falls on rollback and
    when the SPSO passes terminal offsets."""
    rig = started((0, 4), (5, 9))
    rig.fetch("a", max_records=1)
    rig.fetch("a", max_records=1)
    result = rig.sp.acknowledge(member_id="a", batches=[ack(5, 9)])
    assert result.pending is not None and rig.sp.delivery_complete_count == 5
    rig.complete(result.pending, fail=True)
    assert rig.sp.delivery_complete_count == 0
    rig.ack("a", ack(5, 9))
    assert rig.sp.delivery_complete_count == 5
    rig.ack("a", ack(0, 4, RELEASE))
    assert rig.sp.delivery_complete_count == 5
    rig.fetch("a")
    rig.ack("a", ack(0, 4))
    assert (rig.sp.delivery_complete_count, rig.sp.start_offset) == (0, 10)
    summary = rig.persister.read_summary(key=rig.key, leader_epoch=0)
    # The last write carried the SPSO that ack moved to, and no terminal offset above.
    assert (summary.start_offset, summary.delivery_complete_count) == (10, 0)


def test_restart_keeps_acked_and_released_records() -> None:
    """71 (core share): after a reload acked records never return, released ones return
    with their count, only-acquired ones return with count 1."""
    rig = started((0, 4), (5, 9), (10, 14))
    rig.fetch("a", max_records=1)
    rig.fetch("a", max_records=1)
    rig.fetch("a", max_records=1)
    rig.ack("a", ack(0, 4), ack(5, 9, RELEASE))
    assert rig.durable().start_offset == 5, "0-4 accepted: the write moved the start"
    assert durable_batches(rig.durable()) == [(5, 9, AV, 1)]
    rig.load()
    assert ranges(rig.fetch("b")) == [(5, 9, 2), (10, 14, 1)]


def test_untouched_partition_describes_as_minus_one() -> None:
    """72 (core share): loading and fetching write nothing; StartOffset stays -1."""
    rig = Rig()
    rig.produce((0, 4))
    rig.start()
    rig.fetch("a")
    summary = rig.persister.read_summary(key=rig.key, leader_epoch=0)
    assert (summary.start_offset, summary.delivery_complete_count) == (-1, -1)


def test_added_partition_starts_at_zero() -> None:
    """57 (core share): a partition initialised with StartOffset 0 delivers from 0
    whatever the reset strategy."""
    rig = Rig()
    rig.produce((0, 4))
    sp = rig.start(start_offset=0, reset_offset=5)
    assert ranges(rig.fetch("a")) == [(0, 4, 1)]
    assert sp.start_offset == 0


@pytest.mark.parametrize(
    "bad",
    [
        [StateBatch(3, 4, 0, 1)],  # below the start offset
        [StateBatch(5, 9, 0, 1), StateBatch(8, 12, 2, 1)],  # overlapping
    ],
)
def test_bad_persisted_state_fails_the_load(bad: list[StateBatch]) -> None:
    """§10.3: a batch below StartOffset (or last < first, refused by StateBatch itself)
    fails the load."""
    rig = Rig()
    sp = rig.new_partition()
    with pytest.raises(StateLoadError):
        sp.initialize(state=PersistedState(0, 5, tuple(bad)), log_start_offset=0, reset_offset=0)
    with pytest.raises(AssertionError):
        StateBatch(9, 8, 0, 1)


def test_loaded_terminal_prefix_advances_the_start_offset() -> None:
    rig = Rig()
    rig.produce((0, 9))
    sp = rig.start(
        start_offset=0,
        state_batches=[
            StateBatch(0, 4, int(RecordState.ACKNOWLEDGED), 1),
            StateBatch(5, 6, int(RecordState.ARCHIVED), 3),
            StateBatch(7, 9, int(RecordState.AVAILABLE), 1),
        ],
    )
    assert (sp.start_offset, sp.delivery_complete_count, sp.next_fetch_offset()) == (7, 0, 7)
    assert ranges(rig.fetch("a")) == [(7, 9, 2)]


def test_log_start_past_the_loaded_state() -> None:
    rig = Rig()
    rig.produce((0, 9), (10, 19))
    rig.log_start_offset = 12
    rig.persister.initialize(key=rig.key, state_epoch=0, start_offset=0)
    sp = rig.load()
    assert (sp.start_offset, sp.next_fetch_offset()) == (12, 12)
    assert ranges(rig.fetch("a")) == [(12, 19, 1)]


def test_log_start_splits_a_batch_with_a_pending_write() -> None:
    """A pending write survives a split: each offset keeps the backup; committing
    archives what fell below the SPSO, rolling back restores the rest."""
    rig = started((0, 9), (10, 19))
    rig.fetch("a", max_records=1)
    rig.fetch("b", max_records=1)
    accepted = rig.sp.acknowledge(member_id="a", batches=[ack(0, 9)])
    released = rig.sp.acknowledge(member_id="b", batches=[ack(10, 19, RELEASE)])
    assert accepted.pending is not None and released.pending is not None
    assert rig.sp.delivery_complete_count == 10
    rig.sp.on_log_start_offset(log_start_offset=15)
    rig.sp.check_invariants()
    assert rig.sp.delivery_complete_count == 0
    rig.complete(accepted.pending)
    rig.complete(released.pending)
    assert (rig.sp.start_offset, rig.sp.next_fetch_offset()) == (15, 15)
    assert view(rig.sp)[-1] == (15, 19, AV, 1, "")
    assert ranges(rig.fetch("c")) == [(15, 19, 2)]


def test_split_of_a_pending_batch_whose_lock_fired() -> None:
    rig = started((0, 9))
    rig.fetch("a")
    pending = rig.sp.acknowledge(member_id="a", batches=[ack(0, 9)]).pending
    assert pending is not None
    assert rig.expire(30_000) == []
    rig.sp.on_log_start_offset(log_start_offset=4)
    completion = rig.complete(pending, fail=True)
    assert [batches(w) for w in completion.writes] == [
        [(o, o, ARC, 1) for o in range(4)] + [(o, o, AV, 1) for o in range(4, 10)]
    ]
    assert (rig.sp.start_offset, ranges(rig.fetch("b"))) == (4, [(4, 9, 2)])


def test_ack_straddling_the_start_offset_with_nothing_cached_below() -> None:
    """§8.2: no cached batch at or below the first offset, but the SPSO inside the
    range: the part from the SPSO is acknowledged."""
    rig = started((0, 4), (5, 9))
    rig.fetch("a", max_records=1)
    rig.ack("a", ack(0, 4))
    rig.fetch("a", max_records=1)
    assert rig.ack("a", ack(2, 7)).error is None
    assert [state_of(rig.sp, o).state for o in (5, 7, 8)] == [ACK, ACK, ACQ]
    assert rig.ack("a", ack(1, 2)).error is None  # wholly below: silently fine


def test_a_write_carries_the_start_offset_its_commit_gives() -> None:
    """As the KIP-932 design documents' table has it: the write that completes records at
    the start of the window carries the new SPSO (computed on the tentative state); if it
    fails, neither the durable nor the in-memory SPSO moves, and the retried ack moves
    both."""
    rig = started((0, 4), (5, 9))
    rig.fetch("a", max_records=1)
    rig.fetch("b", max_records=1)
    rig.ack("b", ack(5, 9, RELEASE))  # 5-9 AVAILABLE: not terminal
    assert rig.durable().start_offset == 0
    result = rig.sp.acknowledge(member_id="a", batches=[ack(0, 4)])
    assert result.pending is not None
    write = result.pending.write
    assert (write.start_offset, write.delivery_complete_count) == (5, 0)
    assert (rig.sp.start_offset, rig.sp.delivery_complete_count) == (0, 5)
    rig.complete(result.pending, fail=True)
    assert (rig.sp.start_offset, rig.sp.delivery_complete_count) == (0, 0)
    assert rig.durable().start_offset == 0
    assert view(rig.sp)[0] == (0, 4, ACQ, 1, "a")
    rig.ack("a", ack(0, 4))
    assert (rig.sp.start_offset, rig.durable().start_offset) == (5, 5)
    assert durable_batches(rig.durable()) == [(5, 9, AV, 1)]


def test_a_write_never_carries_offsets_another_pending_write_holds() -> None:
    """Two writes pending at once: the later one (5-9) stops at the earlier one's
    records (0-4), whose write may still fail; the earlier one carries only its own
    progress. Committed, memory and the next write catch up."""
    rig = started((0, 4), (5, 9), (10, 14))
    for member in ("a", "b", "c"):
        rig.fetch(member, max_records=1)
    first = rig.sp.acknowledge(member_id="a", batches=[ack(0, 4)])
    second = rig.sp.acknowledge(member_id="b", batches=[ack(5, 9)])
    assert first.pending is not None and second.pending is not None
    assert first.pending.write.start_offset == 5
    assert second.pending.write.start_offset == 0
    rig.complete(second.pending)
    rig.complete(first.pending, fail=True)
    assert (rig.sp.start_offset, rig.durable().start_offset) == (0, 0)
    rig.ack("a", ack(0, 4))
    assert (rig.sp.start_offset, rig.durable().start_offset) == (10, 10)
    rig.ack("c", ack(10, 14))
    assert (rig.sp.start_offset, rig.durable().start_offset) == (15, 15)


def test_a_commit_past_what_its_write_carried_writes_the_start_offset() -> None:
    """Two writes pending at once, committed in order: the second one's write was
    computed while the first held 0-4 (it carries 0); its commit moves memory to 10,
    so a follow-up write carries 10 (no acknowledgement's start offset is left
    unpersisted). A commit that moves no further than its write adds nothing."""
    rig = started((0, 4), (5, 9))
    rig.fetch("a", max_records=1)
    rig.fetch("b", max_records=1)
    first = rig.sp.acknowledge(member_id="a", batches=[ack(0, 4)])
    second = rig.sp.acknowledge(member_id="b", batches=[ack(5, 9)])
    assert first.pending is not None and second.pending is not None
    assert rig.complete(first.pending).writes == ()
    assert rig.durable().start_offset == 5
    follow = rig.complete(second.pending).writes
    assert [(w.start_offset, w.delivery_complete_count, w.state_batches) for w in follow] == [
        (10, 0, ())
    ]
    assert (rig.sp.start_offset, rig.durable().start_offset) == (10, 10)
