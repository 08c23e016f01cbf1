"""A share-partition over a log the cleaner compacted (docs/design/compaction.md, "Gaps"):
records it released before the clean that the log no longer holds are archived as
compaction holes (§4.5) and never acquired again; an acquisition across the cleaned
range delivers the kept records only, and the removed offsets inside its span are
archived by the consumer's GAP acknowledgements (Kafka's share consumer sends them
for acquired offsets that have no record)."""

from __future__ import annotations

from pathlib import Path

from shoal.clock import ManualClock
from shoal.log.partition import PartitionLog
from shoal.protocol.record_batch import BatchHeader, iter_headers
from tests.unit.log.cleaning import clean, put
from tests.unit.share.support import (
    ACCEPT,
    ARC,
    GAP,
    RELEASE,
    Rig,
    ack,
    batches,
    ranges,
)


def _log_headers(log: PartitionLog) -> list[tuple[int, int]]:
    """(base, last offset) of every batch the log holds."""
    found: list[BatchHeader] = iter_headers(log.read(0, max_bytes=1 << 30).records)
    return [(h.base_offset, h.last_offset) for h in found]


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
    for i in range(6):  # d, e, d, e, ...: 16 and 17 hold the latest, 12..15 go
        put(log, clock, (b"de"[i % 2 : i % 2 + 1], b"w%d" % i))
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
    # the released records 0..5 are gone from the log: archived, never acquired again
    assert result.write is not None
    assert (0, 5, ARC, 1) in batches(result.write)
    acquired = {o for low, high, _count in ranges(result) for o in range(low, high + 1)}
    assert acquired.isdisjoint(range(9))
    # the records delivered are the kept ones only; offsets the cleaner removed inside
    # the acquired span have no record, and the consumer acknowledges them as GAP (as
    # Kafka's does), which archives them
    kept_offsets = {o for base, last in kept for o in range(base, last + 1)}
    delivered = {o for h in result.batches for o in range(h.base_offset, h.last_offset + 1)}
    assert delivered & acquired == kept_offsets & acquired
    holes = sorted(acquired - kept_offsets)
    assert holes, "the acquired span crosses offsets the cleaner removed"
    acks = [ack(offset, offset, GAP if offset in holes else ACCEPT) for offset in sorted(acquired)]
    acked = rig.ack("b", *acks)
    assert acked.pending is not None
    archived = {
        o for low, high, state, _ in batches(acked.pending.write) if state is ARC
        for o in range(low, high + 1)
    }  # fmt: skip
    assert archived == set(holes)
    assert rig.sp.start_offset == max(acquired) + 1
    log.abandon()


def _headers(log: PartitionLog) -> list[BatchHeader]:
    return iter_headers(log.read(0, max_bytes=1 << 30).records)
