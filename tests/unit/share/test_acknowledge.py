"""Acknowledgement (docs/design/share-partition.md §8).

Conformance items covered here: 23, 24, 26, 27, 41, 43 (the acknowledgement half).
"""

from __future__ import annotations

import pytest

from shoal.protocol.errors import ErrorCode
from shoal.protocol.share import AcknowledgeType
from shoal.share.acknowledge import _EVENT_OF_TYPE, AckBatch
from shoal.share.inflight import InFlightBatch, InFlightState, LockTimers, Pending
from shoal.share.states import ACK_TYPE_EVENTS, RecordState
from tests.unit.share.support import (
    ACCEPT,
    ACK,
    ACQ,
    ARC,
    AV,
    GAP,
    REJECT,
    RELEASE,
    RENEW,
    Rig,
    ack,
    batches,
    ranges,
    state_of,
    view,
)


@pytest.fixture
def rig() -> Rig:
    rig = Rig()
    rig.produce((0, 9), (10, 19))
    rig.start(reset_offset=0)
    return rig


def test_ack_of_other_members_released_or_acked_records(rig: Rig) -> None:
    """23: another member's records, released offsets, acked offsets ->
    INVALID_RECORD_STATE."""
    assert ranges(rig.fetch("a", max_records=1)) == [(0, 9, 1)]
    assert ranges(rig.fetch("b", max_records=1)) == [(10, 19, 1)]
    assert rig.ack("a", ack(10, 12)).error == ErrorCode.invalid_record_state
    assert rig.ack("a", ack(0, 1, RELEASE)).error is None
    assert rig.ack("a", ack(0, 0)).error == ErrorCode.invalid_record_state  # released
    assert rig.ack("a", ack(2, 3)).error is None
    assert rig.ack("a", ack(3, 3)).error == ErrorCode.invalid_record_state  # acked
    assert rig.ack("b", ack(4, 4)).error == ErrorCode.invalid_record_state  # a's record


def test_ack_empty_cache_and_past_the_last_cached_offset() -> None:
    """24: empty cache -> INVALID_RECORD_STATE; past the last cached offset ->
    INVALID_REQUEST."""
    rig = Rig()
    rig.produce((0, 9))
    rig.start(reset_offset=0)
    assert rig.ack("a", ack(0, 4)).error == ErrorCode.invalid_record_state
    rig.fetch("a")
    assert rig.ack("a", ack(5, 12)).error == ErrorCode.invalid_request
    assert rig.ack("a", ack(10, 12)).error == ErrorCode.invalid_request
    assert view(rig.sp) == [(0, 9, ACQ, 1, "a")]


def test_per_offset_types_with_gap_and_delivery_complete_count(rig: Rig) -> None:
    """26: per-offset types with GAP -> those offsets ARCHIVED; DeliveryCompleteCount
    counts GAP, ACCEPT and REJECT (not RELEASE)."""
    rig.fetch("a", max_records=1)
    types = (ACCEPT, GAP, GAP, REJECT, RELEASE, ACCEPT, GAP, ACCEPT, ACCEPT, RELEASE)
    result = rig.sp.acknowledge(member_id="a", batches=[AckBatch(0, 9, types)])
    assert result.pending is not None
    # The write carries the SPSO its own commit gives: past 0-3, the count covers 5-8.
    write = result.pending.write
    assert (write.start_offset, write.delivery_complete_count) == (4, 4)
    assert rig.sp.delivery_complete_count == 8, "memory moves only when the write commits"
    assert batches(result.pending.write) == [
        (0, 0, ACK, 1),
        (1, 1, ARC, 1),
        (2, 2, ARC, 1),
        (3, 3, ARC, 1),
        (4, 4, AV, 1),
        (5, 5, ACK, 1),
        (6, 6, ARC, 1),
        (7, 7, ACK, 1),
        (8, 8, ACK, 1),
        (9, 9, AV, 1),
    ]
    rig.complete(result.pending)
    assert [state_of(rig.sp, o).state for o in (1, 2, 6)] == [ARC, ARC, ARC]
    # SPSO moved past 0-3; the count now covers 5-8.
    assert (rig.sp.start_offset, rig.sp.delivery_complete_count) == (4, 4)


def test_one_failing_batch_changes_nothing(rig: Rig) -> None:
    """27: the first failing batch rolls back the whole partition's request."""
    rig.fetch("a", max_records=1)
    rig.fetch("b", max_records=1)
    before = rig.sp.in_flight()
    result = rig.sp.acknowledge(
        member_id="a", batches=[ack(0, 4), ack(5, 6, RELEASE), ack(9, 9, RENEW), ack(12, 12)]
    )
    assert result.error == ErrorCode.invalid_record_state
    assert rig.sp.in_flight() == before
    assert rig.sp.delivery_complete_count == 0
    rig.sp.check_invariants()
    # A malformed later batch fails the partition with INVALID_REQUEST, same story.
    bad = [ack(0, 4), AckBatch(5, 6, (ACCEPT, ACCEPT, ACCEPT))]
    assert rig.sp.acknowledge(member_id="a", batches=bad).error == ErrorCode.invalid_request
    assert rig.sp.in_flight() == before


@pytest.mark.parametrize(
    "bad",
    [
        [AckBatch(5, 4, (ACCEPT,))],
        [ack(0, 4), ack(4, 6)],
        [ack(5, 6), ack(0, 1)],
        [AckBatch(0, 4, ())],
        [AckBatch(0, 4, (ACCEPT, ACCEPT))],
        [AckBatch(0, 0, (5,))],
    ],
)
def test_malformed_batches_are_invalid_request(rig: Rig, bad: list[AckBatch]) -> None:
    """21 (the core's share): first > last, overlap, order, type counts, unknown type."""
    rig.fetch("a")
    assert rig.sp.acknowledge(member_id="a", batches=bad).error == ErrorCode.invalid_request


def test_renew_rearms_the_lock_and_writes_nothing(rig: Rig) -> None:
    """41: RENEW on owned records -> a fresh full lock, no write; renew disabled ->
    INVALID_RECORD_STATE."""
    rig.fetch("a", max_records=1)
    rig.clock.advance(20_000)
    result = rig.ack("a", ack(0, 9, RENEW))
    assert (result.error, result.pending, result.renewed) == (None, None, 10)
    assert state_of(rig.sp, 0).lock_deadline_ms == 50_000
    assert rig.expire(15_000) == []  # the original lock would have gone at 30 s
    assert view(rig.sp) == [(0, 9, ACQ, 1, "a")]
    # Per-offset RENEW mixed with other types: only the non-RENEW offsets are written.
    result = rig.sp.acknowledge(member_id="a", batches=[AckBatch(0, 2, (RENEW, ACCEPT, RENEW))])
    assert result.pending is not None and result.renewed == 2
    assert batches(result.pending.write) == [(1, 1, ACK, 1)]
    rig.complete(result.pending)
    rig.set(renew_enabled=False)
    assert rig.ack("a", ack(3, 3, RENEW)).error == ErrorCode.invalid_record_state
    assert rig.ack("a", AckBatch(3, 4, (ACCEPT, RENEW))).error == ErrorCode.invalid_record_state
    assert state_of(rig.sp, 3).state is ACQ


def test_renew_of_someone_elses_record_is_invalid(rig: Rig) -> None:
    rig.fetch("a", max_records=1)
    assert rig.ack("b", ack(0, 9, RENEW)).error == ErrorCode.invalid_record_state


def test_write_failure_rolls_back_and_reports(rig: Rig) -> None:
    """43 (ack half): a failed write rolls the transition back to ACQUIRED."""
    rig.fetch("a", max_records=1)
    result = rig.sp.acknowledge(member_id="a", batches=[ack(0, 9)])
    assert result.pending is not None
    assert rig.sp.delivery_complete_count == 10  # rises when the transition starts
    completion = rig.complete(result.pending, fail=True)
    assert (completion.start_offset_moved, completion.writes) == (False, ())
    assert view(rig.sp) == [(0, 9, ACQ, 1, "a")]
    assert rig.sp.delivery_complete_count == 0  # falls on rollback
    assert rig.ack("a", ack(0, 9)).error is None  # the member may try again
    assert rig.sp.start_offset == 10


def test_pending_records_can_be_neither_acquired_nor_acknowledged(rig: Rig) -> None:
    """§6: a batch or offset with a pending write."""
    rig.fetch("a", max_records=1)
    result = rig.sp.acknowledge(member_id="a", batches=[ack(0, 9, RELEASE)])
    assert result.pending is not None
    assert rig.sp.next_fetch_offset() == 10
    assert rig.ack("a", ack(0, 0)).error == ErrorCode.invalid_record_state
    offset = 0  # even a read forced from 0 acquires nothing pending
    got = rig.sp.acquire(
        member_id="b", fetch_offset=offset, headers=rig.read(offset), max_records=5, batch_size=5
    )
    assert ranges(got) == [(10, 19, 1)]
    rig.complete(result.pending)
    assert rig.sp.next_fetch_offset() == 0


def test_acks_wholly_below_the_start_offset_succeed_silently(rig: Rig) -> None:
    rig.fetch("a", max_records=1)
    rig.ack("a", ack(0, 9))
    assert rig.sp.start_offset == 10
    result = rig.ack("a", ack(3, 5, REJECT))
    assert (result.error, result.pending) == (None, None)


def test_ack_spanning_batches_and_a_straddling_partial_one(rig: Rig) -> None:
    """One ack range over two cached batches; the second only partly covered: one
    write entry for the whole batch, one per offset for the split one."""
    rig.fetch("a", max_records=1)
    rig.fetch("a", max_records=1)
    result = rig.sp.acknowledge(member_id="a", batches=[ack(0, 11)])
    assert result.pending is not None
    assert batches(result.pending.write) == [(0, 9, ACK, 1), (10, 10, ACK, 1), (11, 11, ACK, 1)]
    rig.complete(result.pending)
    # Only whole batches below the SPSO leave the cache (§4.2).
    assert rig.sp.start_offset == 12
    assert view(rig.sp) == [(10, 11, ACK, 1, ""), (12, 19, ACQ, 1, "a")]


def test_per_offset_types_below_the_start_offset(rig: Rig) -> None:
    """Found by the state machine: below the SPSO each offset gets its own type, so a
    RENEW there leaves that offset held while its neighbours are archived."""
    rig.fetch("a", max_records=1)
    rig.sp.on_log_start_offset(log_start_offset=10)
    result = rig.ack("a", AckBatch(6, 8, (RELEASE, RENEW, RELEASE)))
    assert (result.error, result.pending) == (None, None)
    assert [state_of(rig.sp, o).state for o in (6, 7, 8)] == [ARC, ACQ, ARC]


def test_the_event_of_each_type_id_is_the_enum_tables() -> None:
    """`apply_plan` indexes `_EVENT_OF_TYPE` by the wire id instead of building the
    `AcknowledgeType` (`AckBatch.type_at`) and looking it up in `ACK_TYPE_EVENTS`."""
    mixed = AckBatch(5, 9, tuple(int(t) for t in AcknowledgeType))
    for offset in range(5, 10):
        type_id = mixed.types[offset - 5]
        assert _EVENT_OF_TYPE[type_id] is ACK_TYPE_EVENTS[mixed.type_at(offset)]


@pytest.mark.parametrize("state", list(RecordState))
@pytest.mark.parametrize("pending", [False, True])
def test_a_whole_batch_is_settled_as_its_offsets_would_be(
    state: RecordState, pending: bool
) -> None:
    """`InFlightBatch.is_settled`'s shortcut for an unsplit batch against the per-offset
    answer of the same batch once split."""
    backup = Pending(handle=1, state=ACQ, delivery_count=1, member_id="m", lock=None)
    batch = InFlightBatch(3, 6, InFlightState(state, 1, pending=backup if pending else None))
    whole = batch.is_settled()
    batch.split(LockTimers())
    assert whole == batch.is_settled() == (state.is_terminal and not pending)
