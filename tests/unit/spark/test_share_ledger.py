"""The share source driver's bookkeeping (share_ledger.py): where every acquired record
is, and what is acknowledged when."""

from __future__ import annotations

from shoal.client.ranges import Span
from shoal.spark.share_ledger import ShareLedger, split_at, take
from shoal.spark.share_offsets import TopicPartition

A0 = TopicPartition("a", 0)
A1 = TopicPartition("a", 1)


def test_split_at_and_take() -> None:
    assert split_at([Span(0, 9, 1)], 5) == ([Span(0, 4, 1)], [Span(5, 9, 1)])
    assert split_at([Span(0, 9, 1)], 0) == ([], [Span(0, 9, 1)])
    assert take([Span(0, 2, 1), Span(5, 9, 2)], 5) == (
        [Span(0, 2, 1), Span(5, 6, 2)],
        [Span(7, 9, 2)],
    )


def test_plan_takes_up_to_the_limit_and_keeps_the_rest_pending() -> None:
    ledger = ShareLedger()
    admission = ledger.admit({A0: [Span(0, 99, 1)]})
    assert admission.pending == 100
    assert ledger.plan(seq=1, records_max=30) == {A0: (Span(0, 29, 1),)}
    assert ledger.pending_count == 70
    assert ledger.plan(seq=2, records_max=100) == {A0: (Span(30, 99, 1),)}
    assert ledger.plan(seq=3, records_max=100) == {}
    assert ledger.planned(3) is None


def test_partitions_take_turns_when_the_limit_is_short() -> None:
    ledger = ShareLedger()
    ledger.admit({A0: [Span(0, 9, 1)], A1: [Span(0, 9, 1)]})
    first = ledger.plan(seq=2, records_max=5)
    second = ledger.plan(seq=3, records_max=5)
    assert set(first) != set(second)


def test_settle_accepts_each_planned_batch_once() -> None:
    ledger = ShareLedger()
    ledger.admit({A0: [Span(0, 9, 1)]})
    ledger.plan(seq=1, records_max=4)
    ledger.plan(seq=2, records_max=4)
    assert ledger.settle(1) == {A0: (Span(0, 3, 1),)}
    assert ledger.settle(1) == {}
    assert ledger.settle(5) == {A0: (Span(4, 7, 1),)}
    assert ledger.settled_seq == 5
    assert ledger.held() == {A0: (Span(8, 9, 1),)}


def test_records_a_committed_batch_delivered_are_accepted_when_handed_back() -> None:
    ledger = ShareLedger()
    ledger.remember_delivered({A0: (Span(10, 19, 1),)})
    admission = ledger.admit({A0: [Span(10, 24, 2)]})
    assert admission.accept == {A0: (Span(10, 19, 2),)}
    assert admission.pending == 5
    assert ledger.plan(seq=4, records_max=100) == {A0: (Span(20, 24, 2),)}


def test_available_now_bound_releases_what_lies_beyond() -> None:
    ledger = ShareLedger()
    ledger.admit({A0: [Span(0, 9, 1)]})
    assert ledger.bound({A0: 6}) == {A0: (Span(6, 9, 1),)}
    assert ledger.bounded
    assert ledger.exhausted == {A0}
    admission = ledger.admit({A0: [Span(10, 12, 1)], A1: [Span(0, 1, 1)]})
    assert admission.release == {A0: (Span(10, 12, 1),), A1: (Span(0, 1, 1),)}
    assert admission.pending == 0
    assert ledger.plan(seq=1, records_max=100) == {A0: (Span(0, 5, 1),)}


def test_reclaim_replays_what_the_group_handed_back_with_new_counts() -> None:
    ledger = ShareLedger()
    replayed = {A0: (Span(0, 9, 1),)}
    ledger.admit({A0: [Span(0, 3, 2), Span(5, 14, 2)]})  # offset 4 archived meanwhile
    assert ledger.missing(replayed) == 1
    batch = ledger.reclaim(seq=3, spans=replayed)
    assert batch == {A0: (Span(0, 3, 2), Span(5, 9, 2))}
    assert ledger.planned(3) == batch
    assert ledger.pending_count == 5
    assert ledger.settle(3) == batch


def test_a_record_handed_out_again_leaves_its_old_batch() -> None:
    ledger = ShareLedger()
    ledger.admit({A0: [Span(0, 9, 1)]})
    ledger.plan(seq=1, records_max=10)
    admission = ledger.admit({A0: [Span(5, 9, 2)]})  # lock expired, acquired again
    assert admission.relocked == 5
    assert ledger.settle(1) == {A0: (Span(0, 4, 1),)}
    assert ledger.plan(seq=2, records_max=10) == {A0: (Span(5, 9, 2),)}


def test_forget_drops_lost_records_everywhere() -> None:
    ledger = ShareLedger()
    ledger.admit({A0: [Span(0, 9, 1)]})
    ledger.plan(seq=1, records_max=5)
    ledger.forget({A0: (Span(3, 7, 1),)})
    assert ledger.held() == {A0: (Span(0, 2, 1), Span(8, 9, 1))}
    assert ledger.release_pending() == {A0: (Span(8, 9, 1),)}
    assert ledger.pending_count == 0


def test_plan_caps_a_batch_by_the_highest_delivery_count_in_it() -> None:
    ledger = ShareLedger()
    ledger.admit({A0: [Span(0, 4, 1), Span(5, 9, 3), Span(10, 19, 1)]})
    limit_for = {1: 100, 2: 10, 3: 3}.__getitem__
    # 0-4 fit (count 1), then a count-3 record caps the batch at 3: already past it
    assert ledger.plan(seq=1, records_max=100, limit_for=limit_for) == {A0: (Span(0, 4, 1),)}
    assert ledger.plan(seq=2, records_max=100, limit_for=limit_for) == {A0: (Span(5, 7, 3),)}
    third = ledger.plan(seq=3, records_max=100, limit_for=limit_for)
    assert third == {A0: (Span(8, 9, 3), Span(10, 10, 1))}  # 3 records, a count-3 among them
    assert ledger.plan(seq=4, records_max=100, limit_for=limit_for) == {A0: (Span(11, 19, 1),)}
    assert ledger.pending_delivery_count_max() == 0


def test_a_split_replay_reads_the_lowest_records_and_leaves_the_rest_pending() -> None:
    ledger = ShareLedger()
    failed = {A0: (Span(0, 9, 1),), A1: (Span(0, 9, 1),)}
    ledger.admit({A0: [Span(0, 9, 2)], A1: [Span(0, 9, 2)]})
    batch = ledger.reclaim(seq=5, spans=failed, records_max=12)
    assert batch == {A0: (Span(0, 9, 2),), A1: (Span(0, 1, 2),)}
    assert ledger.pending_count == 8
    assert ledger.pending_delivery_count_max() == 2
    assert ledger.settle(5) == batch
