"""SharePartition.record_counts (read by the metrics at each scrape) agrees with the
views `in_flight` builds, for whole and split batches."""

from __future__ import annotations

from collections import Counter

from shoal.share.partition import SharePartition
from shoal.share.states import RecordState
from tests.unit.share.support import REJECT, RELEASE, ack, started


def _from_views(sp: SharePartition) -> tuple[dict[RecordState, int], int]:
    counts: Counter[RecordState] = Counter()
    views = sp.in_flight()
    for v in views:
        counts[v.state] += v.last_offset - v.first_offset + 1
    return dict(counts), len(views)


def test_counts_match_the_views_of_whole_and_split_batches() -> None:
    rig = started((0, 9), (10, 19), (20, 29))
    rig.fetch("a")
    assert rig.sp.record_counts() == _from_views(rig.sp)
    assert rig.sp.record_counts()[0] == {RecordState.ACQUIRED: 30}
    assert rig.ack("a", ack(0, 1), ack(2, 2, RELEASE), ack(3, 3, REJECT)).error is None
    counts, entries = rig.sp.record_counts()
    assert (counts, entries) == _from_views(rig.sp)
    assert entries > 1  # the acknowledged batch was split per offset
    assert sum(counts.values()) == sum(
        len(range(v.first_offset, v.last_offset + 1)) for v in rig.sp.in_flight()
    )
    assert counts.get(RecordState.AVAILABLE) == 1
    assert counts.get(RecordState.ARCHIVED) == 1
