"""A share-partition over a log the cleaner compacted (docs/compaction.md, "Gaps"):
offsets the cleaner removed are never acquired again; records it released before the
clean that the log no longer holds are archived as compaction holes (§4.5)."""

from __future__ import annotations

from pathlib import Path

from shoal.clock import ManualClock
from shoal.log.partition import PartitionLog
from shoal.protocol.record_batch import BatchHeader, iter_headers
from tests.unit.log.cleaning import clean, put
from tests.unit.share.support import ARC, RELEASE, Rig, ack, batches, ranges


def _log_headers(log: PartitionLog) -> list[tuple[int, int]]:
    """(base, last offset) of every batch the log holds below its active segment."""
    active = log.segment_base_offsets()[-1]
    found: list[BatchHeader] = iter_headers(log.read(0, max_bytes=1 << 30).records)
    return [(h.base_offset, h.last_offset) for h in found if h.base_offset < active]


def test_acquiring_across_a_cleaned_range_gets_the_kept_records_and_archives_holes(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    log = PartitionLog.open(
        directory=tmp_path / "t-0",
        config={"cleanup.policy": ["compact"], "segment.bytes": 250},
        clock=clock,
    )
    for i in range(12):  # a, b, c, a, b, c, ...: offsets 9, 10, 11 hold the latest
        put(log, clock, (b"abc"[i % 3 : i % 3 + 1], b"v%d" % i))
    for _ in range(4):
        put(log, clock, (b"filler", b"x"))
    rig = Rig()
    rig.log[:] = _headers(log)
    rig.start(reset_offset=0)
    first = rig.fetch("a", max_records=6)  # single-record batches 0..5
    assert ranges(first) == [(0, 5, 1)]
    rig.ack("a", ack(0, 5, RELEASE))

    clean(log, clock)
    kept = _log_headers(log)
    assert kept[0][0] >= 9  # 0..8 superseded and removed
    rig.log[:] = _headers(log)

    result = rig.fetch("b", max_records=100)
    acquired = [(low, high) for low, high, _count in ranges(result)]
    # the released records 0..5 are gone from the log: archived, never acquired again
    assert result.write is not None
    assert (0, 5, ARC, 1) in batches(result.write)
    offsets = {o for low, high in acquired for o in range(low, high + 1)}
    assert offsets.isdisjoint(range(9))
    kept_offsets = {o for base, last in kept for o in range(base, last + 1)}
    assert kept_offsets <= offsets
    log.abandon()


def _headers(log: PartitionLog) -> list[BatchHeader]:
    return iter_headers(log.read(0, max_bytes=1 << 30).records)
