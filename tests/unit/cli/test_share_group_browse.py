"""`shoal share-groups --browse`'s per-partition line under the table: the window's
offsets, the note when the broker had more entries than --max (or its own cap), and a
share-partition not in its leader's memory. No broker involved."""

from __future__ import annotations

from shoal.cli.share_group_browse import holds_summary, summary
from shoal.client.share_browse import BrowsedHolds, BrowsedPartition


def _partition(*, loaded: bool = True, truncated: bool = False) -> BrowsedPartition:
    return BrowsedPartition(
        topic="t",
        partition=3,
        loaded=loaded,
        start_offset=10 if loaded else None,
        end_offset=14 if loaded else None,
        truncated=truncated,
        entries=(),
    )


def test_summary_gives_the_window_and_says_when_max_was_hit() -> None:
    assert summary(_partition()) == "t-3: start offset 10, end offset 14"
    assert summary(_partition(truncated=True)) == (
        "t-3: start offset 10, end offset 14 (more entries not shown: raise --max)"
    )
    assert summary(_partition(loaded=False)) == "t-3: not in the leader's memory (nothing acquired)"


def test_the_holds_line_says_what_key_order_and_scheduled_delivery_hold_back() -> None:
    assert holds_summary(BrowsedHolds()) == ""
    held = BrowsedHolds(
        blocked_keys=3,
        blocked_records=12,
        top_blocked_keys=((b"k1", 5), (b"k2", 4), (b"\xff", 3)),
        scheduled_records=40,
        next_due_ms=1_764_400_000_000,
        malformed_deliver_at=2,
    )
    assert holds_summary(held) == (
        "3 keys hold back 12 records (top: k1 5, k2 4, 0xff 3); "
        "40 records wait for their time, next due 2025-11-29T07:06:40.000Z; "
        "2 malformed shoal.deliver.at delivered at once"
    )
    one = BrowsedHolds(blocked_keys=1, blocked_records=1, top_blocked_keys=((b"k", 1),))
    assert holds_summary(one) == "1 key holds back 1 record (top: k 1)"
    waiting = BrowsedHolds(scheduled_records=1, next_due_ms=0)
    assert holds_summary(waiting) == (
        "1 record waits for its time, next due 1970-01-01T00:00:00.000Z"
    )
