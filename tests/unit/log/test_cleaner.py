"""The log cleaner (log/cleaner.py, log/clean_swap.py, docs/design/compaction.md): when a
compacted log is cleaned, what a clean keeps, and the log after it (gaps, reads,
timestamps, recovery). Each rule is Kafka's LogCleaner's; the clock is manual."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from shoal.clock import ManualClock
from shoal.log.clean_batch import DELETE_HORIZON_MASK
from shoal.log.clean_swap import CLEANER_CHECKPOINT_FILE
from shoal.log.key_map import ENTRY_BYTES, KeyMap
from shoal.log.partition import PartitionLog
from shoal.log.transactions import ControlType
from shoal.protocol.compression import Codec
from shoal.protocol.record_batch import encode_batch, iter_headers
from shoal.protocol.records import record_timestamps
from tests.support.batches import COMPRESSION_GZIP
from tests.unit.log.batches import headers_of
from tests.unit.log.cleaning import COMPACT, append_batch, clean, keyed, latest, put, read_all
from tests.unit.log.conftest import LogOpener

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS


def _overwrite(log: PartitionLog, clock: ManualClock, rounds: int, keys: int = 3) -> None:
    for i in range(rounds):
        put(log, clock, (b"k%d" % (i % keys), b"v%d" % i))


def _roll(log: PartitionLog, clock: ManualClock, *, key: bytes = b"filler") -> None:
    """Append until a new segment starts, so everything before it is sealed."""
    segments = len(log.segment_base_offsets())
    while len(log.segment_base_offsets()) == segments:
        put(log, clock, (key, b"x"))


def test_a_clean_keeps_the_latest_record_of_each_key_at_its_offset(
    open_log: LogOpener, clock: ManualClock, log_dir: Path
) -> None:
    log = open_log(segment_bytes=300, cleanup_policy=COMPACT)
    _overwrite(log, clock, 30)
    before = latest(log)
    end = log.log_end_offset
    stats = clean(log, clock)
    records = read_all(log)
    # k0..k2's last values are at 27, 28, 29; 28 and 29 are in the active segment
    assert [(r.offset, r.key, r.value) for r in records] == [
        (25, b"k1", b"v25"),
        (26, b"k2", b"v26"),
        (27, b"k0", b"v27"),
        (28, b"k1", b"v28"),
        (29, b"k2", b"v29"),
    ]
    assert latest(log) == before
    assert log.log_end_offset == end
    assert log.log_start_offset == 0  # cleaning never moves the log start offset
    assert stats.end_offset == 28 and stats.records_read == 28 and stats.records_retained == 3
    assert stats.records_removed == 25 and stats.discarded is None
    assert (log_dir / CLEANER_CHECKPOINT_FILE).read_text() == "1\n28\n"
    assert log.size_bytes == sum(p.stat().st_size for p in log_dir.glob("*.log"))
    assert not [p for p in log_dir.iterdir() if p.name.endswith((".cleaned", ".swap", ".deleted"))]
    log.close()
    reopened = open_log(segment_bytes=300, cleanup_policy=COMPACT)
    assert [(r.offset, r.value) for r in read_all(reopened)] == [
        (r.offset, r.value) for r in records
    ]
    progress = reopened.cleaner_progress()
    assert progress.first_dirty_offset == 28 and progress.dirty_bytes == 0
    assert reopened.clean_plan(clock.wall_ms()) is None


def test_only_compacted_logs_are_cleaned(open_log: LogOpener, clock: ManualClock) -> None:
    log = open_log(segment_bytes=300, cleanup_policy=["delete"])
    _overwrite(log, clock, 30)
    assert log.clean_plan(clock.wall_ms()) is None
    log.update_config({"segment.bytes": 300, "cleanup.policy": ["compact", "delete"]})
    assert log.clean_plan(clock.wall_ms()) is not None


def test_the_dirty_ratio_must_exceed_min_cleanable_dirty_ratio(
    open_log: LogOpener, clock: ManualClock
) -> None:
    log = open_log(segment_bytes=300, cleanup_policy=COMPACT, min_cleanable_dirty_ratio=0.5)
    _overwrite(log, clock, 30)
    clean(log, clock)
    # clean part: the cleaned segments; dirty: what comes after, until it outweighs them
    progress = log.cleaner_progress()
    assert progress.dirty_bytes == 0 and progress.dirty_ratio == 0.0
    while log.cleaner_progress().dirty_ratio <= 0.5:
        assert log.clean_plan(clock.wall_ms()) is None
        put(log, clock, (b"k0", b"again"))
    progress = log.cleaner_progress()
    assert progress.dirty_ratio == progress.dirty_bytes / progress.cleanable_bytes > 0.5
    assert progress.cleanable_bytes == progress.clean_bytes + progress.dirty_bytes
    assert log.clean_plan(clock.wall_ms()) is not None


def test_min_compaction_lag_keeps_young_segments_dirty(
    open_log: LogOpener, clock: ManualClock
) -> None:
    log = open_log(segment_bytes=300, cleanup_policy=COMPACT, min_compaction_lag_ms=HOUR_MS)
    _overwrite(log, clock, 12)
    assert log.clean_plan(clock.wall_ms()) is None  # every sealed segment is too young
    clock.advance(HOUR_MS + 1)
    _overwrite(log, clock, 12)
    plan = log.clean_plan(clock.wall_ms())
    assert plan is not None
    # the range ends at the first segment whose newest record is younger than the lag
    assert all(s.max_timestamp <= clock.wall_ms() - HOUR_MS for s in plan.sources)
    assert 0 < plan.first_uncleanable_offset <= 12
    plan.discard()


def test_max_compaction_lag_cleans_below_the_dirty_ratio(
    open_log: LogOpener, clock: ManualClock
) -> None:
    config = {
        "segment_bytes": 300,
        "cleanup_policy": COMPACT,
        "min_cleanable_dirty_ratio": 0.99,
    }
    log = open_log(**config)
    _overwrite(log, clock, 30)
    clean(log, clock)
    put(log, clock, (b"k0", b"late"))
    _roll(log, clock)
    assert 0 < log.cleaner_progress().dirty_ratio < 0.99
    assert log.clean_plan(clock.wall_ms()) is None
    log.update_config({**_keys(config), "max.compaction.lag.ms": DAY_MS})
    assert log.clean_plan(clock.wall_ms()) is None  # not overdue yet
    clock.advance(DAY_MS + 1)
    assert log.clean_plan(clock.wall_ms()) is not None


def _keys(config: dict[str, object]) -> dict[str, object]:
    return {key.replace("_", "."): value for key, value in config.items()}


def test_the_active_segment_and_open_transactions_are_never_cleaned(
    open_log: LogOpener, clock: ManualClock
) -> None:
    log = open_log(segment_bytes=300, cleanup_policy=COMPACT)
    _overwrite(log, clock, 6)
    txn_start = append_batch(
        log,
        keyed(
            clock,
            (b"k0", b"txn"),
            producer_id=5,
            producer_epoch=0,
            base_sequence=0,
            transactional=True,
        ),
    )
    _overwrite(log, clock, 12)
    assert log.last_stable_offset == txn_start
    plan = log.clean_plan(clock.wall_ms())
    assert plan is not None
    assert plan.first_uncleanable_offset <= txn_start
    assert all(s.next_offset <= txn_start for s in plan.sources)
    result = plan.run(key_map_entries=100)
    log.finish_clean(result)
    assert result.end_offset <= txn_start
    active = log.segment_base_offsets()[-1]
    log.append_control(
        producer_id=5, producer_epoch=0, control=ControlType.COMMIT, coordinator_epoch=0,
        timestamp_ms=clock.wall_ms(),
    )  # fmt: skip
    plan = log.clean_plan(clock.wall_ms())
    assert plan is not None
    assert plan.first_uncleanable_offset == active or plan.first_uncleanable_offset <= active
    assert all(s.base_offset < log.segment_base_offsets()[-1] for s in plan.sources)
    plan.discard()


def test_tombstones_stay_until_delete_retention_after_the_clean_that_saw_them(
    open_log: LogOpener, clock: ManualClock, log_dir: Path
) -> None:
    log = open_log(
        segment_bytes=300, cleanup_policy=COMPACT, min_cleanable_dirty_ratio=0.0,
        delete_retention_ms=HOUR_MS,
    )  # fmt: skip
    put(log, clock, (b"gone", b"value"))
    put(log, clock, (b"gone", None))
    _overwrite(log, clock, 6)
    _roll(log, clock)
    first_clean_ms = clock.wall_ms()
    stats = clean(log, clock)
    assert stats.tombstones_removed == 0
    tombstone = [r for r in read_all(log) if r.key == b"gone"]
    assert [(r.offset, r.value) for r in tombstone] == [(1, None)]
    # the batch carries the delete horizon in its base timestamp, flagged (KIP-534)
    raw = log.read(1, max_bytes=1 << 20).records
    header = iter_headers(raw)[0]
    assert header.base_offset == 1
    assert header.attributes & DELETE_HORIZON_MASK
    assert header.base_timestamp == first_clean_ms + HOUR_MS
    # younger than the horizon: a later clean keeps it
    clock.advance(HOUR_MS - 1)
    put(log, clock, (b"k0", b"more"))
    _roll(log, clock, key=b"filler2")
    clean(log, clock)
    assert [r.offset for r in read_all(log) if r.key == b"gone"] == [1]
    # past the horizon: removed
    clock.advance(2)
    put(log, clock, (b"k1", b"more"))
    _roll(log, clock, key=b"filler3")
    stats = clean(log, clock)
    assert [r for r in read_all(log) if r.key == b"gone"] == []
    assert stats.tombstones_removed == 1
    del log_dir


def test_a_tombstones_timestamp_survives_its_delete_horizon(
    open_log: LogOpener, clock: ManualClock
) -> None:
    log = open_log(segment_bytes=300, cleanup_policy=COMPACT, min_cleanable_dirty_ratio=0.0)
    written_at = clock.wall_ms()
    append_batch(log, keyed(clock, (b"a", b"1"), (b"b", None), (b"c", b"3")))
    _roll(log, clock)
    clock.advance(5000)
    clean(log, clock)
    records = [r for r in read_all(log) if r.key in (b"a", b"b", b"c")]
    assert [(r.key, r.timestamp) for r in records] == [
        (b"a", written_at),
        (b"b", written_at + 1),
        (b"c", written_at + 2),
    ]


def test_records_without_a_key_are_removed(open_log: LogOpener, clock: ManualClock) -> None:
    log = open_log(segment_bytes=300, cleanup_policy=COMPACT)
    put(log, clock, (None, b"no key"))
    put(log, clock, (b"k", b"keyed"))
    _roll(log, clock)
    stats = clean(log, clock)
    assert [r.value for r in read_all(log) if r.key != b"filler"] == [b"keyed"]
    assert stats.invalid_records == 1


def test_aborted_records_go_and_their_marker_goes_after_delete_retention(
    open_log: LogOpener, clock: ManualClock
) -> None:
    log = open_log(
        segment_bytes=400, cleanup_policy=COMPACT, min_cleanable_dirty_ratio=0.0,
        delete_retention_ms=HOUR_MS,
    )  # fmt: skip
    pid = 9
    for seq in range(2):
        append_batch(
            log,
            keyed(clock, (b"t%d" % seq, b"aborted"), producer_id=pid, producer_epoch=0,
                  base_sequence=seq, transactional=True),
        )  # fmt: skip
    marker = log.append_control(
        producer_id=pid, producer_epoch=0, control=ControlType.ABORT, coordinator_epoch=0,
        timestamp_ms=clock.wall_ms(),
    )  # fmt: skip
    # the producer writes on, so neither its aborted batches nor the marker are its
    # last batch (which a clean keeps, at least as an empty header)
    append_batch(
        log, keyed(clock, (b"p", b"after"), producer_id=pid, producer_epoch=0, base_sequence=2)
    )
    put(log, clock, (b"plain", b"kept"))
    _roll(log, clock)
    assert log.aborted_transactions(0, marker + 1)
    clean(log, clock)
    keys = [r.key for r in read_all(log)]
    assert b"t0" not in keys and b"t1" not in keys and b"plain" in keys
    headers = iter_headers(log.read(0, max_bytes=1 << 20).records)
    # the marker stays while the transaction's batches were seen this pass, and the
    # cleaned segment's aborted index still names it
    assert any(h.is_control and h.base_offset == marker for h in headers)
    assert [t.last_offset for t in log.aborted_transactions(0, log.log_end_offset)] == [marker]
    # the next clean sees no batch of the transaction: the marker gets a delete horizon
    put(log, clock, (b"plain", b"again"))
    _roll(log, clock, key=b"filler2")
    clean(log, clock)
    headers = iter_headers(log.read(0, max_bytes=1 << 20).records)
    marker_header = next(h for h in headers if h.base_offset == marker)
    assert marker_header.attributes & DELETE_HORIZON_MASK
    assert log.aborted_transactions(0, log.log_end_offset) == []
    # after the horizon the marker goes
    clock.advance(HOUR_MS + 1)
    put(log, clock, (b"plain", b"third"))
    _roll(log, clock, key=b"filler3")
    clean(log, clock)
    headers = iter_headers(log.read(0, max_bytes=1 << 20).records)
    assert not [h for h in headers if h.base_offset == marker]
    assert [r.value for r in read_all(log) if r.key == b"p"] == [b"after"]


def test_an_aborted_producers_last_batch_keeps_its_marker(
    open_log: LogOpener, clock: ManualClock
) -> None:
    """Kafka: the producer's last batch stays (emptied) for its sequence; the marker
    of its aborted transaction stays while that batch does."""
    log = open_log(
        segment_bytes=400, cleanup_policy=COMPACT, min_cleanable_dirty_ratio=0.0,
        delete_retention_ms=HOUR_MS,
    )  # fmt: skip
    append_batch(
        log,
        keyed(clock, (b"t", b"aborted"), producer_id=8, producer_epoch=0, base_sequence=0,
              transactional=True),
    )  # fmt: skip
    marker = log.append_control(
        producer_id=8, producer_epoch=0, control=ControlType.ABORT, coordinator_epoch=0,
        timestamp_ms=clock.wall_ms(),
    )  # fmt: skip
    _roll(log, clock)
    for round_ in range(2):
        clock.advance(HOUR_MS + 1)
        clean(log, clock)
        put(log, clock, (b"more", b"%d" % round_))
        _roll(log, clock, key=b"filler%d" % round_)
    headers = iter_headers(log.read(0, max_bytes=1 << 20).records)
    assert [(h.base_offset, h.records_count) for h in headers[:2]] == [(0, 0), (marker, 1)]
    assert [t.last_offset for t in log.aborted_transactions(0, log.log_end_offset)] == [marker]


def test_a_committed_transactions_marker_goes_once_its_records_are_gone(
    open_log: LogOpener, clock: ManualClock
) -> None:
    log = open_log(
        segment_bytes=400, cleanup_policy=COMPACT, min_cleanable_dirty_ratio=0.0,
        delete_retention_ms=HOUR_MS,
    )  # fmt: skip
    append_batch(
        log,
        keyed(clock, (b"k", b"in txn"), producer_id=3, producer_epoch=0, base_sequence=0,
              transactional=True),
    )  # fmt: skip
    marker = log.append_control(
        producer_id=3, producer_epoch=1, control=ControlType.COMMIT, coordinator_epoch=0,
        timestamp_ms=clock.wall_ms(),
    )  # fmt: skip
    # a new epoch's batch becomes the producer's last: the marker is not retained for it
    append_batch(
        log, keyed(clock, (b"other", b"x"), producer_id=3, producer_epoch=1, base_sequence=0)
    )
    put(log, clock, (b"k", b"newer"))
    _roll(log, clock)
    clean(log, clock)  # the committed record goes (superseded): the marker stays this pass
    headers = iter_headers(log.read(0, max_bytes=1 << 20).records)
    assert any(h.base_offset == marker for h in headers)
    put(log, clock, (b"k", b"newest"))
    _roll(log, clock, key=b"filler2")
    clean(log, clock)  # no record of its transaction left: it gets a delete horizon
    clock.advance(HOUR_MS + 1)
    put(log, clock, (b"k", b"last"))
    _roll(log, clock, key=b"filler3")
    clean(log, clock)
    headers = iter_headers(log.read(0, max_bytes=1 << 20).records)
    assert not any(h.base_offset == marker for h in headers)


def test_a_producers_last_batch_is_kept_and_its_state_survives_a_restart(
    open_log: LogOpener, clock: ManualClock, log_dir: Path
) -> None:
    config = {"segment_bytes": 300, "cleanup_policy": COMPACT, "min_cleanable_dirty_ratio": 0.0}
    log = open_log(**config)
    for seq in range(3):
        append_batch(
            log,
            keyed(clock, (b"p", b"v%d" % seq), producer_id=4, producer_epoch=2, base_sequence=seq),
        )
    for i in range(4):
        put(log, clock, (b"p", b"plain %d" % i))  # supersede every record of producer 4
    _roll(log, clock)
    state_before = [(e.producer_id, e.epoch, e.batches[-1]) for e in log.producers()]
    clean(log, clock)
    headers = iter_headers(log.read(0, max_bytes=1 << 20).records)
    mine = [h for h in headers if h.producer_id == 4]
    # only the last batch stays, emptied: records count 0, its sequence range intact
    assert [
        (h.base_offset, h.records_count, h.base_sequence, h.last_offset_delta) for h in mine
    ] == [(2, 0, 2, 0)]
    # a timestamp search passes over the emptied batch to the next one with a record
    assert log.offset_for_timestamp(clock.wall_ms()) == (6, clock.wall_ms())
    log.close()
    for snapshot in log_dir.glob("*.snapshot"):
        snapshot.unlink()  # recovery must rebuild the state from the cleaned log alone
    reopened = open_log(**config)
    assert [(e.producer_id, e.epoch, e.batches[-1]) for e in reopened.producers()] == state_before
    # the producer's next batch is in sequence; a replay of the last one is a duplicate
    retry = keyed(clock, (b"p", b"v2"), producer_id=4, producer_epoch=2, base_sequence=2)
    assert reopened.append(retry, headers_of(retry), leader_epoch=0).duplicate
    append_batch(
        reopened, keyed(clock, (b"p", b"v3"), producer_id=4, producer_epoch=2, base_sequence=3)
    )


def test_a_full_key_map_ends_the_cleaned_range_early(
    open_log: LogOpener, clock: ManualClock
) -> None:
    log = open_log(segment_bytes=300, cleanup_policy=COMPACT, min_cleanable_dirty_ratio=0.0)
    for round_ in range(3):
        for key in range(6):
            put(log, clock, (b"k%d" % key, b"r%d" % round_))
    _roll(log, clock)
    before = latest(log)
    first = clean(log, clock, entries=2)
    assert first.key_map_full and first.keys_mapped == 2
    # keys k0, k1 mapped at offsets 0, 1; the map refused k2: the range ends at offset 1
    assert first.end_offset == 2
    assert latest(log) == before
    offsets = [r.offset for r in read_all(log)]
    assert offsets == sorted(set(offsets))
    # the next cleans carry on from there until the dirty range is done
    while log.clean_plan(clock.wall_ms()) is not None:
        stats = clean(log, clock, entries=2)
        assert stats.end_offset > first.end_offset
        first = stats
    assert latest(log) == before
    kept = [(r.key, r.value) for r in read_all(log) if r.key != b"filler"]
    assert sorted(kept) == sorted((b"k%d" % k, b"r2") for k in range(6))


def test_a_batch_with_more_keys_than_the_key_map_is_cleaned_one_batch_a_clean(
    open_log: LogOpener, clock: ManualClock
) -> None:
    """The first batch of the dirty range is mapped whole past the bound, so a clean
    always makes progress: batches of six new keys each, with room for two keys,
    end as the latest values after a clean per batch."""
    log = open_log(segment_bytes=300, cleanup_policy=COMPACT, min_cleanable_dirty_ratio=0.0)
    for round_, keys in enumerate((range(6), range(6, 12), range(6))):
        put(log, clock, *((b"k%d" % key, b"r%d" % round_) for key in keys))
    _roll(log, clock)
    before = latest(log)
    first = clean(log, clock, entries=2)
    assert first.keys_mapped == 6 and first.key_map_full
    assert first.end_offset == 6  # the first batch, whole; the next did not fit
    cleans = 1
    while log.clean_plan(clock.wall_ms()) is not None and cleans < 10:
        stats = clean(log, clock, entries=2)
        assert stats.end_offset > first.end_offset
        first, cleans = stats, cleans + 1
    assert cleans >= 3
    assert latest(log) == before
    kept = [(r.key, r.value) for r in read_all(log) if r.key != b"filler"]
    assert sorted(kept) == sorted(
        [(b"k%d" % k, b"r2") for k in range(6)] + [(b"k%d" % k, b"r1") for k in range(6, 12)]
    )


def test_key_map_bound_and_entry_size() -> None:
    assert ENTRY_BYTES == 24
    key_map = KeyMap(2)
    assert key_map.put(b"a", 1) and key_map.put(b"b", 2) and key_map.put(b"a", 3)
    assert not key_map.put(b"c", 4)
    assert (key_map.get(b"a"), key_map.get(b"b"), key_map.get(b"c")) == (3, 2, -1)
    assert len(key_map) == 2 and key_map.full
    assert key_map.put(b"c", 5, overflow=True) and key_map.get(b"c") == 5
    assert len(key_map) == 3


def test_reads_timestamps_and_delete_records_step_over_gaps(
    open_log: LogOpener, clock: ManualClock
) -> None:
    log = open_log(segment_bytes=300, cleanup_policy=COMPACT, index_interval_bytes=1)
    times = {}
    for i in range(30):
        times[i] = clock.wall_ms()
        put(log, clock, (b"k%d" % (i % 3), b"v%d" % i))
        clock.advance(10)
    clean(log, clock)
    offsets = [r.offset for r in read_all(log)]
    assert offsets[0] == 25
    # a fetch inside a gap answers from the next batch, in any segment
    for gap in (0, 5, 13, 24):
        assert next(r.offset for r in read_all(log, gap)) == 25
    # every segment locates offsets in its gaps on the batch after them
    for segment_base in log.segment_base_offsets()[:-1]:
        assert log.read(segment_base, max_bytes=1).records
    # ListOffsets by timestamp: the first retained batch at or after the time
    found = log.offset_for_timestamp(times[3])
    assert found is not None and found[0] == 25
    assert log.offset_for_timestamp(times[26]) == (26, times[26])
    # DeleteRecords into a gap moves the log start there; reads start at the next batch
    assert log.delete_records_before(20) == 20
    assert next(r.offset for r in read_all(log)) == 25


def test_compact_and_delete_together(open_log: LogOpener, clock: ManualClock) -> None:
    log = open_log(segment_bytes=300, cleanup_policy=["compact", "delete"], retention_ms=HOUR_MS)
    for i in range(15):
        put(log, clock, (b"old%d" % (i % 5), b"v%d" % i))
    clock.advance(2 * HOUR_MS)
    _overwrite(log, clock, 15)
    stats = clean(log, clock)
    # the cleaner kept the last old record of each key; retention then takes them
    assert [r.key for r in read_all(log)][:5] == [b"old%d" % k for k in range(5)]
    start = log.log_start_offset
    freed = log.enforce_retention(now_wall_ms=clock.wall_ms())
    assert freed > 0 and log.log_start_offset > start
    assert latest(log) == {b"k0": b"v12", b"k1": b"v13", b"k2": b"v14"}
    assert log.cleaner_progress().first_dirty_offset == max(stats.end_offset, log.log_start_offset)


def test_a_result_whose_segments_left_the_log_is_discarded(
    open_log: LogOpener, clock: ManualClock, log_dir: Path
) -> None:
    log = open_log(segment_bytes=300, cleanup_policy=["compact", "delete"])
    _overwrite(log, clock, 30)
    plan = log.clean_plan(clock.wall_ms())
    assert plan is not None
    result = plan.run(key_map_entries=100)
    log.delete_records_before(10)  # deletes the first segments meanwhile
    records = [(r.offset, r.value) for r in read_all(log)]
    stats = log.finish_clean(result)
    assert stats.discarded is not None
    assert [(r.offset, r.value) for r in read_all(log)] == records
    assert not [p for p in log_dir.iterdir() if p.name.endswith((".cleaned", ".swap"))]
    assert log.cleaner_progress().last_clean == stats


def test_compressed_batches_are_copied_whole_or_rebuilt_with_the_kept_records(
    open_log: LogOpener, clock: ManualClock
) -> None:
    log = open_log(segment_bytes=2000, cleanup_policy=COMPACT)
    whole = keyed(clock, (b"a", b"1"), (b"b", b"2"), compression=COMPRESSION_GZIP)
    partial = keyed(clock, (b"c", b"old"), (b"d", b"4"), compression=COMPRESSION_GZIP)
    append_batch(log, whole)
    append_batch(log, partial)
    put(log, clock, (b"c", b"new"))
    _roll(log, clock)
    stored_whole = log.read(0, max_bytes=1 << 20).records[: len(whole)]
    clean(log, clock)
    data = log.read(0, max_bytes=1 << 20).records
    assert data[: len(whole)] == stored_whole  # every record kept: the same bytes
    assert [(r.offset, r.key, r.value) for r in read_all(log)][:4] == [
        (0, b"a", b"1"),
        (1, b"b", b"2"),
        (3, b"d", b"4"),
        (4, b"c", b"new"),
    ]
    rebuilt = iter_headers(data)[1]
    assert (rebuilt.base_offset, rebuilt.last_offset_delta, rebuilt.records_count) == (2, 1, 1)
    assert rebuilt.compression == COMPRESSION_GZIP  # rebuilt with its own codec


@pytest.mark.parametrize("codec", list(Codec))
def test_a_rebuilt_batch_keeps_its_codec(
    open_log: LogOpener, clock: ManualClock, codec: Codec
) -> None:
    log = open_log(segment_bytes=2000, cleanup_policy=COMPACT)
    pairs = [(b"k%d" % i, b"value %d" % i * 20) for i in range(8)]
    append_batch(log, encode_batch(pairs, timestamp_ms=clock.wall_ms(), codec=codec))
    put(log, clock, (b"k3", b"newer"))
    _roll(log, clock)
    clean(log, clock)
    rebuilt = iter_headers(log.read(0, max_bytes=1 << 20).records)[0]
    assert rebuilt.compression == codec
    assert (rebuilt.records_count, rebuilt.last_offset_delta) == (7, 7)
    read = log.read(0, max_bytes=1 << 20)
    first = read.headers[0]
    offsets = [o for o, _ in record_timestamps(read.records, first)]
    assert offsets == [0, 1, 2, 4, 5, 6, 7]


def test_throttle_hears_every_byte_read_and_written(
    open_log: LogOpener, clock: ManualClock
) -> None:
    log = open_log(segment_bytes=300, cleanup_policy=COMPACT)
    _overwrite(log, clock, 30)
    plan = log.clean_plan(clock.wall_ms())
    assert plan is not None
    heard: list[int] = []
    result = plan.run(key_map_entries=100, throttle=heard.append)
    stats = log.finish_clean(result)
    assert sum(heard) == stats.bytes_read + stats.bytes_written
    assert stats.bytes_written > 0


def test_a_failed_run_swaps_nothing(open_log: LogOpener, clock: ManualClock, log_dir: Path) -> None:
    log = open_log(segment_bytes=300, cleanup_policy=COMPACT)
    _overwrite(log, clock, 30)
    records = [(r.offset, r.value) for r in read_all(log)]
    plan = log.clean_plan(clock.wall_ms())
    assert plan is not None
    # corrupt the records of a batch the plan will decode
    first = sorted(log_dir.glob("*.log"))[0]
    data = bytearray(first.read_bytes())
    struct.pack_into(">b", data, 61, 100)  # the first record's length varint: too long
    first.write_bytes(bytes(data))
    result = plan.run(key_map_entries=100)
    assert result.error is not None
    stats = log.finish_clean(result)
    assert stats.discarded
    first.write_bytes(first.read_bytes())
    assert len(read_all(log)) == len(records)
    assert not [p for p in log_dir.iterdir() if p.name.endswith((".cleaned", ".swap"))]


@pytest.mark.parametrize("codec", [COMPRESSION_GZIP])
def test_tombstones_in_compressed_batches(
    open_log: LogOpener, clock: ManualClock, codec: int
) -> None:
    log = open_log(segment_bytes=2000, cleanup_policy=COMPACT, min_cleanable_dirty_ratio=0.0)
    append_batch(log, keyed(clock, (b"a", b"1"), (b"b", None), compression=codec))
    _roll(log, clock)
    clean(log, clock)
    assert [(r.key, r.value) for r in read_all(log)][:2] == [(b"a", b"1"), (b"b", None)]


def test_a_producers_last_marker_is_emptied_not_removed_and_recovery_skips_it(
    open_log: LogOpener, clock: ManualClock, caplog: pytest.LogCaptureFixture, log_dir: Path
) -> None:
    """An abort that bumped the epoch leaves the marker as the producer's last entry:
    past its horizon the clean empties it (records count 0) rather than removing it,
    and recovery passes over the emptied marker quietly (Kafka's producer state does)."""
    config = {
        "segment_bytes": 400,
        "cleanup_policy": COMPACT,
        "min_cleanable_dirty_ratio": 0.0,
        "delete_retention_ms": HOUR_MS,
    }
    log = open_log(**config)
    batch = keyed(
        clock, (b"t", b"x"), producer_id=11, producer_epoch=0, base_sequence=0, transactional=True
    )
    append_batch(log, batch)
    marker = log.append_control(
        producer_id=11, producer_epoch=1, control=ControlType.ABORT, coordinator_epoch=0,
        timestamp_ms=clock.wall_ms(),
    )  # fmt: skip
    _roll(log, clock)
    for round_ in range(3):
        clean(log, clock)
        clock.advance(HOUR_MS + 1)
        put(log, clock, (b"more", b"%d" % round_))
        _roll(log, clock, key=b"filler%d" % round_)
    headers = iter_headers(log.read(0, max_bytes=1 << 20).records)
    assert [(h.base_offset, h.records_count, h.is_control) for h in headers[:1]] == [
        (marker, 0, True)
    ]
    assert [(e.producer_id, e.epoch) for e in log.producers()] == [(11, 1)]
    log.close()
    for snapshot in log_dir.glob("*.snapshot"):
        snapshot.unlink()  # the replay must pass over the emptied marker
    with caplog.at_level("WARNING"):
        reopened = open_log(**config)
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
    # nothing left in the log names the producer (as in Kafka, whose rebuilt producer
    # state skips an empty control batch)
    assert reopened.producers() == []


def test_a_cleaned_segment_never_exceeds_segment_bytes(
    open_log: LogOpener, clock: ManualClock, log_dir: Path
) -> None:
    """Setting delete horizons re-encodes timestamp deltas, which grows batches of
    tombstones: the rewrite starts another segment rather than pass segment.bytes."""
    config = {"segment_bytes": 1000, "cleanup_policy": COMPACT, "min_cleanable_dirty_ratio": 0.0}
    log = open_log(**config)
    for batch_number in range(12):
        pairs = [(b"key-%02d-%d" % (batch_number, i), None) for i in range(10)]
        append_batch(log, keyed(clock, *pairs))
    _roll(log, clock)

    def tombstones(log: PartitionLog) -> list[tuple[int, bytes | None]]:
        return [(r.offset, r.key) for r in read_all(log) if r.key != b"filler"]

    before = tombstones(log)
    stats = clean(log, clock)
    assert stats.segments_written > stats.segments_replaced
    sizes = [p.stat().st_size for p in sorted(log_dir.glob("*.log"))]
    assert max(sizes) <= 1000
    assert tombstones(log) == before
    log.close()
    reopened = open_log(**config)
    assert tombstones(reopened) == before


def test_replaced_files_can_be_left_for_the_caller_to_remove(
    open_log: LogOpener, clock: ManualClock, log_dir: Path
) -> None:
    log = open_log(segment_bytes=300, cleanup_policy=COMPACT)
    _overwrite(log, clock, 30)
    plan = log.clean_plan(clock.wall_ms())
    assert plan is not None
    stats = log.finish_clean(plan.run(key_map_entries=100), defer_delete=True)
    paths = log.take_deleted_paths()
    assert stats.segments_replaced == len([p for p in paths if p.name.endswith(".log.deleted")])
    assert all(p.exists() for p in paths)
    assert latest(log) == {b"k0": b"v27", b"k1": b"v28", b"k2": b"v29"}


def test_a_result_finished_after_the_log_closed_is_discarded(
    open_log: LogOpener, clock: ManualClock, log_dir: Path
) -> None:
    log = open_log(segment_bytes=300, cleanup_policy=COMPACT)
    _overwrite(log, clock, 30)
    plan = log.clean_plan(clock.wall_ms())
    assert plan is not None
    result = plan.run(key_map_entries=100)
    log.close()
    assert log.clean_plan(clock.wall_ms()) is None
    assert log.finish_clean(result).discarded
    assert not [p for p in log_dir.iterdir() if p.name.endswith((".cleaned", ".swap"))]
    assert len(read_all(open_log(segment_bytes=300, cleanup_policy=COMPACT))) == 30


def test_small_cleaned_segments_are_rewritten_together(
    open_log: LogOpener, clock: ManualClock, log_dir: Path
) -> None:
    """Kafka's groupSegmentsBySize: consecutive segments whose sizes add up to at most
    segment.bytes become one segment, named after the first."""
    log = open_log(segment_bytes=300, cleanup_policy=COMPACT, min_cleanable_dirty_ratio=0.0)
    _overwrite(log, clock, 30)
    clean(log, clock)  # seven segments, six of them empty now
    before = log.segment_base_offsets()
    put(log, clock, (b"k0", b"newest"))
    _roll(log, clock)
    stats = clean(log, clock)
    after = log.segment_base_offsets()
    assert stats.segments_replaced > stats.segments_written
    assert after[0] == before[0] and len(after) < len(before)
    assert max(p.stat().st_size for p in log_dir.glob("*.log")) <= 300
    assert latest(log)[b"k0"] == b"newest"
