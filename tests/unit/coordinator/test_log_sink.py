"""Coordinator records on a real partition log: one batch per append, read back after a
reopen with their offsets, a torn tail loses only the torn batch, the batch size
bound (`limits.COORDINATOR_BATCH_BYTES_MAX`) refuses an append whole, and the routed
sink spreads an append over partitions."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from shoal import limits
from shoal.clock import ManualClock
from shoal.coordinator import (
    NO_OFFSET,
    CoordinatorRuntime,
    RecordSinkError,
    RecordSinkFull,
    RecordSinkUnavailable,
)
from shoal.coordinator.log_sink import (
    CoordinatorBatchTooLarge,
    CoordinatorLogCorrupt,
    LogRecordSink,
    read_log,
)
from shoal.group import records as r
from shoal.group.share.membership import epoch_record
from shoal.log.api import LogError
from shoal.log.partition import PartitionLog
from shoal.protocol.record_batch import iter_headers
from shoal.sim.disk import Disk
from tests.support.batches import Record, build_batch

Opener = Callable[..., PartitionLog]
BUFFER = 1 << 20


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def open_log(tmp_path: Path, clock: ManualClock) -> Iterator[Opener]:
    """open_log(index=0) opens `__consumer_offsets-<index>` under tmp_path."""
    opened: list[PartitionLog] = []

    def opener(index: int = 0) -> PartitionLog:
        log = PartitionLog.open(
            directory=tmp_path / f"__consumer_offsets-{index}",
            config={"retention.ms": -1},
            clock=clock,
        )
        opened.append(log)
        return log

    yield opener
    for log in opened:
        log.abandon()


def epoch(group: str, value: int) -> r.CoordinatorRecord:
    return epoch_record(group, value, value * 31)


def member(group: str, member_id: str) -> r.CoordinatorRecord:
    return r.CoordinatorRecord(
        key=r.ShareGroupMemberMetadataKey(group_id=group, member_id=member_id),
        value=r.ShareGroupMemberMetadataValue(
            rack_id=None, client_id="c", client_host="/127.0.0.1", subscribed_topic_names=("t",)
        ),
    )


def sink_on(
    log: PartitionLog, clock: ManualClock, **kwargs: int
) -> LogRecordSink[r.CoordinatorRecord]:
    return LogRecordSink(log=log, encode=r.CODEC.encode, clock=clock, **kwargs)


def read_back(
    log: PartitionLog, *, buffer_bytes: int = BUFFER
) -> list[tuple[int, r.CoordinatorRecord]]:
    return list(read_log(log, r.CODEC.decode, buffer_bytes=buffer_bytes))


def batch_count(log: PartitionLog) -> int:
    return len(log.read(log.log_start_offset, max_bytes=BUFFER).headers)


# ---- LogRecordSink ------------------------------------------------------------------


def test_each_append_is_one_batch_at_the_log_end(open_log: Opener, clock: ManualClock) -> None:
    log = open_log()
    sink = sink_on(log, clock)
    first = [epoch("g", 1), member("g", "a"), member("g", "b")]
    second = [r.CoordinatorRecord(key=r.ShareGroupMetadataKey(group_id="g"), value=None)]
    assert sink.append(first) == 0
    clock.advance(5)
    assert sink.append(second) == 3
    assert log.log_end_offset == 4
    headers = log.read(0, max_bytes=BUFFER).headers
    assert [(h.base_offset, h.records_count) for h in headers] == [(0, 3), (3, 1)]
    assert all(h.producer_id == -1 and h.compression == 0 and not h.is_control for h in headers)
    assert [h.max_timestamp for h in headers] == [clock.wall_ms() - 5, clock.wall_ms()]


def test_a_sync_sink_fsyncs_every_append_before_returning(
    open_log: Opener, clock: ManualClock, tmp_path: Path
) -> None:
    """`sync=True` (the transaction coordinator's sink): nothing a returned append
    wrote is left to the page cache, under a log whose own policy never fsyncs; a
    plain sink leaves it there (what a power loss may drop)."""
    disk = Disk(tmp_path)
    with disk.installed():
        plain = sink_on(open_log(0), clock)
        synced = LogRecordSink(log=open_log(1), encode=r.CODEC.encode, clock=clock, sync=True)
        disk.settle()
        plain.append([epoch("g", 1)])
        assert disk.unflushed_bytes() > 0
        disk.settle()
        synced.append([epoch("g", 1), member("g", "a")])
        synced.append([epoch("g", 2)])
        assert disk.unflushed_bytes() == 0
    assert [record for _, record in read_back(synced.log)][-1] == epoch("g", 2)


def test_records_read_back_after_reopen_with_their_offsets(
    open_log: Opener, clock: ManualClock
) -> None:
    log = open_log()
    sink = sink_on(log, clock)
    written = [epoch("g", 1), member("g", "a"), epoch("h", 2)]
    tombstone = r.CoordinatorRecord(
        key=r.ShareGroupMemberMetadataKey(group_id="g", member_id="a"), value=None
    )
    sink.append(written)
    sink.append([tombstone])
    log.close()
    reopened = open_log()
    expected = list(enumerate([*written, tombstone]))
    assert read_back(reopened) == expected
    # A read buffer smaller than a batch still returns whole batches.
    assert read_back(reopened, buffer_bytes=1) == expected


def test_a_batch_past_the_prebuilt_record_offsets_reads_back_in_order(
    open_log: Opener, clock: ManualClock
) -> None:
    """The record offsets inside a batch are prebuilt up to a bound (log_sink's
    `_OFFSETS_KEPT`); a longer batch builds the rest and reads back the same."""
    log = open_log()
    sink = sink_on(log, clock)
    written = [member("g", f"m{i}") for i in range(150)]
    assert sink.append(written) == 0
    assert sink.append([epoch("g", 1)]) == 150
    assert read_back(log) == list(enumerate([*written, epoch("g", 1)]))


def test_torn_tail_keeps_complete_batches_only(
    open_log: Opener, clock: ManualClock, tmp_path: Path
) -> None:
    log = open_log()
    sink = sink_on(log, clock)
    sink.append([epoch("g", 1), member("g", "a")])
    sink.append([epoch("g", 2), member("g", "b"), member("g", "c")])
    segment = tmp_path / "__consumer_offsets-0" / f"{0:020d}.log"
    first_batch_size = log.read(0, max_bytes=BUFFER).headers[0].size
    log.abandon()  # a crash: no clean-shutdown marker, the tail is checked on open
    with segment.open("r+b") as f:
        f.truncate(first_batch_size + 30)  # the second batch is cut mid-way
    reopened = open_log()
    assert read_back(reopened) == [(0, epoch("g", 1)), (1, member("g", "a"))]
    assert sink_on(reopened, clock).append([epoch("g", 3)]) == 2
    assert read_back(reopened)[-1] == (2, epoch("g", 3))


def test_batch_above_the_named_bound_is_refused_whole(open_log: Opener, clock: ManualClock) -> None:
    log = open_log()
    sink = sink_on(log, clock)
    names = tuple(f"{i:0>249}" for i in range(limits.COORDINATOR_BATCH_BYTES_MAX // 249))
    huge = r.CoordinatorRecord(
        key=r.ShareGroupMemberMetadataKey(group_id="g", member_id="m"),
        value=r.ShareGroupMemberMetadataValue(
            rack_id=None, client_id="c", client_host="h", subscribed_topic_names=names
        ),
    )
    with pytest.raises(CoordinatorBatchTooLarge, match="COORDINATOR_BATCH_BYTES_MAX"):
        sink.append([epoch("g", 1), huge])
    assert log.log_end_offset == 0
    assert sink.append([epoch("g", 1)]) == 0  # the sink is still usable


def test_too_large_is_a_full_sink_so_the_runtime_replays_nothing(
    open_log: Opener, clock: ManualClock
) -> None:
    class Replayed:
        def __init__(self) -> None:
            self.records: list[tuple[int, r.CoordinatorRecord]] = []

        def replay(self, record: r.CoordinatorRecord, offset: int = NO_OFFSET, /) -> None:
            self.records.append((offset, record))

    class Result:
        def __init__(self, *records: r.CoordinatorRecord) -> None:
            self.records = records
            self.response = "done"
            self.effects: tuple[object, ...] = ()

    log = open_log()
    runtime = CoordinatorRuntime(
        new_shard=lambda _p: Replayed(), sinks=[sink_on(log, clock, batch_bytes_max=200)]
    )
    assert (
        runtime.write(0, lambda _shard: Result(epoch("g", 1), member("g", "a"))).response == "done"
    )
    assert runtime.shard_at(0).records == [(0, epoch("g", 1)), (1, member("g", "a"))]
    with pytest.raises(RecordSinkFull, match="above the bound of 200 bytes"):
        runtime.write(0, lambda _shard: Result(*[member("g", f"m{i}") for i in range(10)]))
    assert len(runtime.shard_at(0).records) == 2 and log.log_end_offset == 2
    loaded = runtime.load_partition(0, read_back(log))
    assert loaded.records == [(0, epoch("g", 1)), (1, member("g", "a"))]


def test_a_failed_storage_write_is_a_sink_error_with_nothing_written(
    open_log: Opener, clock: ManualClock
) -> None:
    """A log that cannot take the append (here closed, as after a storage error took
    it offline) makes the sink raise RecordSinkUnavailable, a RecordSinkError the
    handlers answer with COORDINATOR_NOT_AVAILABLE, never the log's own LogError."""
    log = open_log()
    sink = sink_on(log, clock)
    assert sink.append([epoch("g", 1)]) == 0
    log.close()
    with pytest.raises(
        RecordSinkUnavailable, match="__consumer_offsets-0: append failed"
    ) as caught:
        sink.append([epoch("g", 2)])
    assert isinstance(caught.value, RecordSinkError)
    assert isinstance(caught.value.__cause__, LogError)


# ---- read_log -------------------------------------------------------------------------


def test_control_batches_are_skipped(open_log: Opener, clock: ManualClock) -> None:
    log = open_log()
    sink_on(log, clock).append([epoch("g", 1)])
    control = build_batch(
        [Record(key=b"\x00\x00\x00\x01", value=b"\x00\x00\x00\x00\x00\x00")], control=True
    )
    log.append(control, iter_headers(control), leader_epoch=0)
    sink_on(log, clock).append([epoch("g", 2)])
    assert read_back(log) == [(0, epoch("g", 1)), (2, epoch("g", 2))]


def test_records_below_a_log_start_inside_a_batch_are_skipped(
    open_log: Opener, clock: ManualClock
) -> None:
    log = open_log()
    sink = sink_on(log, clock)
    sink.append([epoch("g", 1), epoch("g", 2), epoch("g", 3)])
    sink.append([epoch("g", 4)])
    log.delete_records_before(2)
    assert read_back(log) == [(2, epoch("g", 3)), (3, epoch("g", 4))]


def test_unknown_record_type_is_logged_and_skipped(
    open_log: Opener, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    log = open_log()
    legacy_commit_key = b"\x00\x00" + b"\x00\x01g"  # Kafka's legacy type 0: not read by Shoal
    raw = LogRecordSink(log=log, encode=lambda kv: kv, clock=clock)
    raw.append(
        [
            r.CODEC.encode(epoch("g", 1)),
            (legacy_commit_key, b"\x00\x03"),
            r.CODEC.encode(epoch("g", 2)),
        ]
    )
    with caplog.at_level(logging.WARNING, logger="shoal.coordinator.log_sink"):
        assert read_back(log) == [(0, epoch("g", 1)), (2, epoch("g", 2))]
    assert "__consumer_offsets-0 offset 1" in caplog.text
    assert "record type 0" in caplog.text


def test_undecodable_record_raises_with_partition_and_offset(
    open_log: Opener, clock: ManualClock
) -> None:
    log = open_log()
    raw = LogRecordSink(log=log, encode=lambda kv: kv, clock=clock)
    key, value = r.CODEC.encode(epoch("g", 1))
    assert value is not None
    raw.append([(key, value), (key, value[:-2])])
    records = read_log(log, r.CODEC.decode, buffer_bytes=BUFFER)
    assert next(records) == (0, epoch("g", 1))
    with pytest.raises(CoordinatorLogCorrupt, match="__consumer_offsets-0 at offset 1") as info:
        next(records)
    assert info.value.partition == "__consumer_offsets-0" and info.value.offset == 1


def test_compressed_batch_is_refused_not_misread(open_log: Opener, clock: ManualClock) -> None:
    log = open_log()
    key, value = r.CODEC.encode(epoch("g", 1))
    batch = build_batch([Record(key=key, value=value)], compression=1)
    log.append(batch, iter_headers(batch), leader_epoch=0)
    with pytest.raises(CoordinatorLogCorrupt, match="compressed batch"):
        read_back(log)


def test_empty_log_reads_nothing(open_log: Opener) -> None:
    assert read_back(open_log()) == []
