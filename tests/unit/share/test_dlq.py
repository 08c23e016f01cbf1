"""Dead-letter queues in the share-partition core (KIP-1191): ARCHIVING, the copy
effects, the start offset, and a reload after a crash. Manual clock throughout."""

from __future__ import annotations

from shoal.share.leader_settings import SharePartitionConfig
from shoal.share.persister import StateBatch
from shoal.share.states import REASON_DELIVERY_LIMIT, REASON_REJECTED, RecordState, reason_of_code
from shoal.share_coordinator.state import (
    DLQ_REASON_DELIVERY_LIMIT,
    DLQ_REASON_REJECTED,
    DLQ_REASON_UNKNOWN,
)
from tests.unit.share.support import (
    ACCEPT,
    REJECT,
    RELEASE,
    Rig,
    ack,
    batches,
    ranges,
    started,
    view,
)

ARCHIVING = RecordState.ARCHIVING
DLQ = {"dlq_topic": "dlq.orders"}


def copies(rig: Rig) -> list[tuple[int, int, int, str, bool]]:
    return [
        (c.first_offset, c.last_offset, c.delivery_count, c.reason, c.recovered)
        for c in rig.sp.dlq_copies()
    ]


def done(rig: Rig, first: int, last: int) -> bool:
    """Report the copies of first..last written; persist the write; SPSO moved?"""
    write, moved = rig.sp.dlq_done(first_offset=first, last_offset=last)
    assert write is not None
    assert rig.persister.write(write=write) is None
    rig.sp.check_invariants()
    return moved


def test_reject_goes_archiving_then_archived_after_the_copy() -> None:
    rig = started((0, 4), **DLQ)
    rig.fetch("a")
    rig.ack("a", ack(0, 4, ACCEPT, REJECT, ACCEPT, ACCEPT, ACCEPT))
    assert view(rig.sp)[1] == (1, 1, ARCHIVING, 1, "")
    # Persisted as ARCHIVING (state 3); the SPSO stops before it.
    assert rig.sp.start_offset == 1
    assert [(b.first_offset, b.delivery_state) for b in rig.durable().state_batches] == [
        (1, 3),
        (2, 2),
    ]
    assert rig.sp.has_dlq_work()
    assert copies(rig) == [(1, 1, 1, REASON_REJECTED, False)]
    assert copies(rig) == []  # handed out once
    assert rig.sp.start_offset == 1
    assert done(rig, 1, 1)
    assert rig.sp.start_offset == 5 and view(rig.sp) == []
    durable = rig.durable()
    assert durable.start_offset == 5 and durable.state_batches == ()
    assert not rig.sp.has_dlq_work()


def test_without_a_dlq_topic_nothing_changes() -> None:
    rig = started((0, 4))
    rig.fetch("a")
    rig.ack("a", ack(0, 4, REJECT))
    assert rig.sp.start_offset == 5
    assert not rig.sp.has_dlq_work() and copies(rig) == []


def test_delivery_limit_by_expiry_and_by_release() -> None:
    rig = started((0, 1), delivery_count_limit=2, **DLQ)
    rig.fetch("a")
    rig.ack("a", ack(0, 0, RELEASE))
    rig.expire(30_000)  # offset 1: count 1, AVAILABLE
    assert ranges(rig.fetch("b")) == [(0, 1, 2)]
    rig.ack("b", ack(0, 0, RELEASE))  # count 2 = limit: ARCHIVING, not AVAILABLE
    writes = rig.expire(30_000)
    assert [batches(w) for w in writes] == [[(1, 1, ARCHIVING, 2)]]
    assert view(rig.sp) == [(0, 1, ARCHIVING, 2, "")]
    assert copies(rig) == [(0, 1, 2, REASON_DELIVERY_LIMIT, False)]
    assert rig.fetch("c").acquired == ()  # nothing to deliver while archiving
    assert done(rig, 0, 1)
    assert rig.sp.start_offset == 2


def test_the_start_offset_never_passes_an_archiving_record() -> None:
    rig = started((0, 9), **DLQ)
    rig.fetch("a")
    rig.ack("a", ack(0, 9, ACCEPT, ACCEPT, REJECT, *([ACCEPT] * 7)))
    assert rig.sp.start_offset == 2
    assert rig.sp.delivery_complete_count == 7  # 3..9; ARCHIVING is not terminal
    (copy,) = rig.sp.dlq_copies()
    assert (copy.first_offset, copy.last_offset) == (2, 2)
    assert done(rig, 2, 2)
    assert rig.sp.start_offset == 10 and rig.sp.delivery_complete_count == 0


def test_copies_wait_for_the_state_write_and_a_rollback_cancels_them() -> None:
    rig = started((0, 2), **DLQ)
    rig.fetch("a")
    result = rig.sp.acknowledge(member_id="a", batches=[ack(0, 2, REJECT)])
    assert result.pending is not None
    assert copies(rig) == []  # the ARCHIVING write is not done yet
    rig.complete(result.pending, fail=True)
    assert copies(rig) == [] and not rig.sp.has_dlq_work()
    assert view(rig.sp) == [(0, 2, RecordState.ACQUIRED, 1, "a")]
    rig.ack("a", ack(0, 2, REJECT))
    assert copies(rig) == [(0, 2, 1, REASON_REJECTED, False)]


def test_a_reload_hands_persisted_archiving_records_out_again() -> None:
    """A crash after the ARCHIVING write (copy written or not) reloads them as
    ARCHIVING, marked recovered so the shell dedupes; once done, never again."""
    rig = started((0, 5), delivery_count_limit=3, **DLQ)
    rig.fetch("a")
    rig.ack("a", ack(0, 5, REJECT, REJECT, ACCEPT, ACCEPT, ACCEPT, ACCEPT))
    assert copies(rig) == [(0, 1, 1, REASON_REJECTED, False)]
    # crash: the copy may or may not be on the DLQ topic; ARCHIVED was never written
    rig.load()
    assert view(rig.sp)[0] == (0, 1, ARCHIVING, 1, "")
    assert rig.sp.start_offset == 0
    assert copies(rig) == [(0, 1, 1, REASON_REJECTED, True)]
    assert done(rig, 0, 0)  # only part reported done before another crash
    rig.load()
    assert copies(rig) == [(1, 1, 1, REASON_REJECTED, True)]
    assert done(rig, 1, 1)
    rig.load()
    assert copies(rig) == [] and rig.sp.start_offset == 6


def test_a_reload_keeps_the_reason_of_a_record_rejected_at_the_limit() -> None:
    """Offset 0 is REJECTed and offset 1 RELEASEd on their last allowed delivery: both
    go ARCHIVING with delivery count 2 = the limit, for different reasons. The count
    cannot tell them apart after a reload (the inference older state gets reads both
    as the limit), so the reason is persisted with the state batch."""
    rig = started((0, 1), delivery_count_limit=2, **DLQ)
    rig.fetch("a")
    rig.expire(30_000)
    assert ranges(rig.fetch("a")) == [(0, 1, 2)]
    rig.ack("a", ack(0, 1, REJECT, RELEASE))
    expected = [(0, 0, 2, REASON_REJECTED, False), (1, 1, 2, REASON_DELIVERY_LIMIT, False)]
    assert copies(rig) == expected
    persisted = [
        (b.first_offset, b.delivery_state, b.dlq_reason) for b in rig.durable().state_batches
    ]
    assert persisted == [(0, 3, DLQ_REASON_REJECTED), (1, 3, DLQ_REASON_DELIVERY_LIMIT)]
    assert reason_of_code(DLQ_REASON_UNKNOWN, delivery_count=2, limit=2) == REASON_DELIVERY_LIMIT
    rig.load()
    assert copies(rig) == [(o, o, c, r, True) for o, _, c, r, _ in expected]


def test_a_reload_keeps_the_reason_after_the_limit_changed() -> None:
    rig = started((0, 0), delivery_count_limit=2, **DLQ)
    rig.fetch("a")
    rig.expire(30_000)
    rig.fetch("a")
    rig.expire(30_000)  # count 2 = limit: ARCHIVING
    rig.set(delivery_count_limit=5)
    rig.load()
    assert copies(rig) == [(0, 0, 2, REASON_DELIVERY_LIMIT, True)]


def test_archiving_state_written_without_a_reason_still_loads() -> None:
    """State from before the reason was persisted (reason 0) loads, with the reason
    inferred from the delivery count and the current limit."""
    rig = Rig(config=SharePartitionConfig(delivery_count_limit=3, dlq_topic="dlq.orders"))
    rig.produce((0, 9))
    rig.start(
        start_offset=0,
        state_batches=[StateBatch(0, 1, 3, 3), StateBatch(2, 2, 3, 1), StateBatch(3, 9, 0, 0)],
    )
    assert copies(rig) == [
        (0, 1, 3, REASON_DELIVERY_LIMIT, True),
        (2, 2, 1, REASON_REJECTED, True),
    ]


def test_removing_the_dlq_topic_leaves_archiving_records_to_finish() -> None:
    rig = started((0, 1), **DLQ)
    rig.fetch("a")
    rig.ack("a", ack(0, 1, REJECT))
    rig.set(dlq_topic="")
    assert copies(rig) == [(0, 1, 1, REASON_REJECTED, False)]  # the shell gives them up
    assert done(rig, 0, 1)
    rig.produce((2, 2))
    rig.fetch("a")
    rig.ack("a", ack(2, 2, REJECT))
    assert view(rig.sp) == [] and rig.sp.start_offset == 3  # straight to ARCHIVED
    assert not rig.sp.has_dlq_work()
