"""`PartitionLog.compaction_delay_ms` (Kafka's LogCleanerManager.maxCompactionDelay):
how far past max.compaction.lag.ms a compacted log's oldest dirty sealed segment is;
the cleaner service takes such logs first and reports the largest delay."""

from __future__ import annotations

from pathlib import Path

from shoal.clock import ManualClock
from tests.unit.log.cleaning import COMPACT, clean, put
from tests.unit.log.conftest import LogOpener

DAY_MS = 24 * 3_600_000


def test_the_delay_counts_from_the_oldest_dirty_sealed_segment(
    open_log: LogOpener, clock: ManualClock
) -> None:
    log = open_log(segment_bytes=300, cleanup_policy=COMPACT, max_compaction_lag_ms=DAY_MS)
    first_ms = clock.wall_ms()
    for i in range(20):
        put(log, clock, (b"k%d" % (i % 3), b"v%d" % i))
    assert len(log.segment_base_offsets()) > 2
    assert log.compaction_delay_ms(clock.wall_ms()) == 0  # not a day old yet
    clock.advance(DAY_MS + 5_000)
    now_ms = clock.wall_ms()
    # the first batch of the oldest dirty sealed segment was written at first_ms
    assert log.compaction_delay_ms(now_ms) == now_ms - DAY_MS - first_ms
    clean(log, clock)
    assert log.compaction_delay_ms(clock.wall_ms()) == 0  # nothing sealed is dirty now


def test_no_delay_without_compaction_or_a_lag(
    open_log: LogOpener, clock: ManualClock, tmp_path: Path
) -> None:
    deleting = open_log(tmp_path / "deleting", segment_bytes=300, max_compaction_lag_ms=1)
    unbounded = open_log(tmp_path / "unbounded", segment_bytes=300, cleanup_policy=COMPACT)
    for log in (deleting, unbounded):
        for i in range(20):
            put(log, clock, (b"k%d" % (i % 3), b"v%d" % i))
    clock.advance(10 * DAY_MS)
    assert deleting.compaction_delay_ms(clock.wall_ms()) == 0
    assert unbounded.compaction_delay_ms(clock.wall_ms()) == 0
