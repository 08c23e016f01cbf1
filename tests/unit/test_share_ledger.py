"""The crash tests' share ledger (tests/support/share_ledger.py): which records the
consumers left unfinished, and how the soak's drain judges those the broker finished."""

from __future__ import annotations

from tests.support.share_ledger import DELIVERY_LIMIT, ShareLedger


def ledger() -> ShareLedger:
    return ShareLedger(
        done={1},
        unconfirmed={2},
        deliveries={
            1: [1],
            2: [1],
            3: list(range(1, DELIVERY_LIMIT + 1)),  # delivered at the limit, release cut
            4: list(range(1, DELIVERY_LIMIT)),  # seen up to limit - 1 only
            5: [1, 2],
            7: [1, 1, 2, 2],  # counts repeat after restarts
        },
    )


def test_unfinished_leaves_out_confirmed_unanswered_and_delivered_at_the_limit() -> None:
    assert ledger().unfinished(range(1, 8)) == {4, 5, 6, 7}


def test_leftovers_seen_at_limit_minus_one_are_archived_the_rest_lost() -> None:
    archived, lost = ledger().judge_leftovers({4, 5, 6, 7})
    assert archived == {4}
    assert lost == [5, 6, 7]


def test_nothing_left_nothing_judged() -> None:
    assert ledger().judge_leftovers(set()) == (set(), [])
