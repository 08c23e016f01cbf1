"""The append linger (`LingeringRecordSink`) on a real partition log and the manual
clock: the writes of one linger become one batch written when it has passed, the
offsets it promised are the ones the log gives, the batch byte bound flushes early
and refuses a write too large alone, a failed flush is reported and loses only what
was staged, and the runtime replays staged records in order."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from shoal import limits
from shoal.clock import ManualClock
from shoal.coordinator import CoordinatorRuntime, RecordSinkError, RecordSinkUnavailable
from shoal.coordinator.append_linger import (
    BATCH_OVERHEAD_BYTES,
    RECORD_OVERHEAD_BYTES_MAX,
    Encoded,
    LingeringRecordSink,
    encoded_identity,
)
from shoal.coordinator.log_sink import CoordinatorBatchTooLarge, LogRecordSink, read_log
from shoal.log.partition import PartitionLog

BUFFER = 1 << 20


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def log(tmp_path: Path, clock: ManualClock) -> Iterator[PartitionLog]:
    opened = PartitionLog.open(
        directory=tmp_path / "__share_group_state-0", config={"retention.ms": -1}, clock=clock
    )
    yield opened
    opened.abandon()


class Flushes:
    """What the sink reported: each staging start and each flush outcome."""

    def __init__(self) -> None:
        self.staged = 0
        self.outcomes: list[RecordSinkError | None] = []

    def on_staged(self) -> None:
        self.staged += 1

    def on_flushed(self, failure: RecordSinkError | None) -> None:
        self.outcomes.append(failure)


def lingering(
    log: PartitionLog,
    clock: ManualClock,
    flushes: Flushes,
    *,
    linger_ms: int = 5,
    batch_bytes_max: int = limits.COORDINATOR_BATCH_BYTES_MAX,
) -> LingeringRecordSink[Encoded]:
    return LingeringRecordSink(
        log=log,
        encode=encoded_identity,
        clock=clock,
        linger_ms=linger_ms,
        batch_bytes_max=batch_bytes_max,
        on_staged=flushes.on_staged,
        on_flushed=flushes.on_flushed,
    )


def rec(n: int, value_bytes: int = 10) -> Encoded:
    return (f"k{n}".encode(), bytes([n % 256]) * value_bytes)


def batches(log: PartitionLog) -> list[tuple[int, int]]:
    """(base offset, record count) of every batch in the log."""
    headers = log.read(log.log_start_offset, max_bytes=BUFFER).headers
    return [(h.base_offset, h.next_offset - h.base_offset) for h in headers]


def read_back(log: PartitionLog) -> list[tuple[int, Encoded]]:
    return list(read_log(log, lambda key, value: (key, value), buffer_bytes=BUFFER))


def test_writes_within_the_linger_are_one_batch_written_when_it_has_passed(
    log: PartitionLog, clock: ManualClock
) -> None:
    flushes = Flushes()
    sink = lingering(log, clock, flushes, linger_ms=5)
    assert sink.append([rec(0), rec(1)]) == 0
    clock.advance(3)
    assert sink.append([rec(2)]) == 2  # the offset it will have once written
    assert flushes.staged == 1  # one batch started
    assert sink.deadline_ms == 5
    assert log.log_end_offset == 0, "nothing is written before the linger has passed"
    clock.advance(1)
    assert not sink.flush_due(clock.monotonic_ms())
    assert batches(log) == []
    clock.advance(1)
    assert sink.flush_due(clock.monotonic_ms())
    assert batches(log) == [(0, 3)]
    assert read_back(log) == [(0, rec(0)), (1, rec(1)), (2, rec(2))]
    assert flushes.outcomes == [None]
    assert (sink.appends_staged, sink.appends_written, sink.batches_written) == (2, 2, 1)
    assert sink.deadline_ms is None
    assert not sink.flush_due(clock.monotonic_ms() + 100), "nothing left to write"


def test_a_write_after_a_flush_starts_a_new_linger(log: PartitionLog, clock: ManualClock) -> None:
    flushes = Flushes()
    sink = lingering(log, clock, flushes, linger_ms=5)
    sink.append([rec(0)])
    clock.advance(5)
    sink.flush_due(clock.monotonic_ms())
    clock.advance(2)
    assert sink.append([rec(1)]) == 1
    assert sink.deadline_ms == 12
    assert flushes.staged == 2
    clock.advance(5)
    sink.flush_due(clock.monotonic_ms())
    assert batches(log) == [(0, 1), (1, 1)]


def test_linger_zero_is_due_at_once_and_batches_what_came_before_the_owner_looked(
    log: PartitionLog, clock: ManualClock
) -> None:
    flushes = Flushes()
    sink = lingering(log, clock, flushes, linger_ms=0)
    sink.append([rec(0)])
    sink.append([rec(1)])
    assert sink.deadline_ms == 0
    assert sink.flush_due(clock.monotonic_ms())
    assert batches(log) == [(0, 2)]


def test_the_staged_batch_never_exceeds_the_byte_bound(
    log: PartitionLog, clock: ManualClock
) -> None:
    """Room for exactly two records by the sink's upper-bound count: a third write
    flushes the first two (a full batch) and starts the next one."""
    per_record = len(rec(0)[0]) + len(rec(0)[1]) + RECORD_OVERHEAD_BYTES_MAX
    flushes = Flushes()
    sink = lingering(log, clock, flushes, batch_bytes_max=BATCH_OVERHEAD_BYTES + 2 * per_record + 1)
    sink.append([rec(0)])
    sink.append([rec(1)])
    assert batches(log) == []
    assert sink.append([rec(2)]) == 2
    assert batches(log) == [(0, 2)]
    assert flushes.outcomes == [None]
    assert sink.staged_records == 1
    clock.advance(5)
    sink.flush_due(clock.monotonic_ms())
    assert batches(log) == [(0, 2), (2, 1)]


def test_a_write_too_large_alone_is_refused_and_stages_nothing(
    log: PartitionLog, clock: ManualClock
) -> None:
    flushes = Flushes()
    sink = lingering(log, clock, flushes, batch_bytes_max=200)
    sink.append([rec(0)])
    with pytest.raises(CoordinatorBatchTooLarge):
        sink.append([rec(1, value_bytes=500)])
    assert sink.staged_records == 1
    assert sink.appends_staged == 1
    clock.advance(5)
    sink.flush_due(clock.monotonic_ms())
    assert read_back(log) == [(0, rec(0))]


def test_a_write_over_the_count_bound_that_fits_exactly_is_written_alone_at_once(
    log: PartitionLog, clock: ManualClock
) -> None:
    """The per-record bound overcounts; a write above it is checked exactly, and one
    that fits is written after what is staged, as a batch of its own."""
    exact = len(
        LogRecordSink(log=log, encode=encoded_identity, clock=clock).prepare([rec(1, 100)]).records
    )
    flushes = Flushes()
    sink = lingering(log, clock, flushes, batch_bytes_max=exact)
    sink.append([rec(0)])
    assert sink.append([rec(1, 100)]) == 1
    assert batches(log) == [(0, 1), (1, 1)]
    assert sink.appends_written == sink.appends_staged == 2


def test_a_failed_flush_is_reported_and_loses_only_the_staged_records(
    log: PartitionLog, clock: ManualClock
) -> None:
    flushes = Flushes()
    sink = lingering(log, clock, flushes)
    sink.append([rec(0)])
    clock.advance(5)
    sink.flush_due(clock.monotonic_ms())
    sink.append([rec(1)])
    log.close()  # as a storage error takes it offline
    clock.advance(5)
    assert sink.flush_due(clock.monotonic_ms())  # reported, not raised
    assert flushes.outcomes[0] is None
    assert isinstance(flushes.outcomes[1], RecordSinkUnavailable)
    assert sink.staged_records == 0
    assert sink.appends_written == sink.appends_staged


def test_a_failed_forced_flush_refuses_the_write_that_forced_it(
    log: PartitionLog, clock: ManualClock
) -> None:
    per_record = len(rec(0)[0]) + len(rec(0)[1]) + RECORD_OVERHEAD_BYTES_MAX
    flushes = Flushes()
    sink = lingering(log, clock, flushes, batch_bytes_max=BATCH_OVERHEAD_BYTES + per_record)
    sink.append([rec(0)])
    log.close()
    with pytest.raises(RecordSinkUnavailable):
        sink.append([rec(1)])
    assert sink.appends_staged == 1
    assert sink.staged_records == 0
    assert isinstance(flushes.outcomes[0], RecordSinkUnavailable)


class Recorder:
    def __init__(self) -> None:
        self.records: list[tuple[Encoded, int]] = []

    def replay(self, record: Encoded, offset: int = -1, /) -> None:
        self.records.append((record, offset))


class Write:
    def __init__(self, records: list[Encoded]) -> None:
        self.records = records
        self.response = "ok"
        self.effects: tuple[object, ...] = ()


def test_the_runtime_replays_staged_records_at_the_offsets_the_log_gives_them(
    log: PartitionLog, clock: ManualClock
) -> None:
    sink = lingering(log, clock, Flushes())
    runtime: CoordinatorRuntime[Recorder, Encoded] = CoordinatorRuntime(
        new_shard=lambda _p: Recorder(), sinks=[sink]
    )
    runtime.write(0, lambda _shard: Write([rec(0), rec(1)]))
    runtime.write(0, lambda _shard: Write([rec(2)]))
    clock.advance(5)
    sink.flush_due(clock.monotonic_ms())
    assert runtime.shard_at(0).records == [(record, offset) for offset, record in read_back(log)]
