"""`shoal share-groups --browse`'s per-partition line under the table: the window's
offsets, the note when the broker had more entries than --max (or its own cap), and a
share-partition not in its leader's memory. No broker involved."""

from __future__ import annotations

from shoal.cli.share_group_browse import summary
from shoal.client.share_browse import BrowsedPartition


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
