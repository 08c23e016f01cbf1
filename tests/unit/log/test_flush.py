"""Flush plans: the fsync of the active segment handed to the caller to run anywhere."""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path

import pytest

from shoal import limits
from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.log.api import LogError
from shoal.log.flush import FlushPlan
from shoal.log.manager import LogManager
from shoal.log.partition import PartitionLog
from shoal.log.topics import prepare_partition_directory
from shoal.protocol.errors import ErrorCode
from tests.unit.log.batches import append, headers_of, make_batch
from tests.unit.log.conftest import LogOpener


def deferred_append(log: PartitionLog, batch: bytes) -> FlushPlan | None:
    return log.append(batch, headers_of(batch), leader_epoch=0, defer_flush=True).flush_plan


def is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def test_deferred_append_returns_the_fsync_instead_of_doing_it(
    open_log: LogOpener, fsync_calls: list[int]
) -> None:
    log = open_log(flush_messages=1)
    fsync_calls.clear()
    plan = deferred_append(log, make_batch(3))
    assert plan is not None and fsync_calls == []
    assert plan.end_offset == 3 and plan.covers.records == 3
    plan.run()
    assert len(fsync_calls) == 1
    assert plan.done and plan.error is None
    log.finish_flush(plan)
    assert fsync_calls[0] != log._segments[-1].fd  # through the plan's own duplicate
    assert plan.path == log.directory / "00000000000000000000.log"


def test_the_plan_closes_its_duplicate_and_runs_once(
    open_log: LogOpener, fsync_calls: list[int]
) -> None:
    log = open_log(flush_messages=1)
    plan = deferred_append(log, make_batch(1))
    assert plan is not None
    fsync_calls.clear()
    plan.run()
    plan.run()
    assert len(fsync_calls) == 1
    assert not is_open(fsync_calls[0])
    assert is_open(log._segments[-1].fd)  # the segment's own descriptor is untouched


def test_below_the_flush_policy_no_plan_is_made(open_log: LogOpener) -> None:
    log = open_log(flush_messages=10)
    assert deferred_append(log, make_batch(4)) is None
    assert deferred_append(log, make_batch(4, seed=1)) is None
    plan = deferred_append(log, make_batch(4, seed=2))
    assert plan is not None and plan.covers.records == 12
    plan.run()
    log.finish_flush(plan)
    assert log.flush_plan() is None  # nothing left unflushed


def test_a_plan_runs_on_another_thread_while_the_segment_rolls_and_is_deleted(
    open_log: LogOpener, clock: ManualClock
) -> None:
    log = open_log(flush_messages=1, segment_bytes=300, retention_ms=1)
    plan = deferred_append(log, make_batch(1, value_size=150))
    assert plan is not None
    later = deferred_append(log, make_batch(1, value_size=150, seed=1))  # rolls
    assert later is not None and len(log.segment_base_offsets()) == 2
    later.run()  # the later fsync lets the high watermark pass both (retention stops below it)
    log.finish_flush(later)
    log.enforce_retention(now_wall_ms=clock.wall_ms() + 10**9)
    assert log.segment_base_offsets()[0] > 0  # the planned segment is gone
    worker = threading.Thread(target=plan.run)
    worker.start()
    worker.join()
    assert plan.done and plan.error is None
    log.finish_flush(plan)


def test_a_failed_fsync_in_a_plan_takes_the_partition_offline(
    open_log: LogOpener, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = open_log(flush_messages=1)
    plan = deferred_append(log, make_batch(1))
    assert plan is not None

    def failing_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", failing_fsync)
        plan.run()  # never raises
    assert isinstance(plan.error, OSError)
    with pytest.raises(LogError) as info:
        log.finish_flush(plan)
    assert info.value.code == ErrorCode.kafka_storage_error
    assert "Input/output error" in str(info.value)
    with pytest.raises(LogError, match="offline"):
        log.read(0, max_bytes=100)


def test_finishing_a_plan_never_run_discards_it_and_counts_its_records_again(
    open_log: LogOpener, clock: ManualClock, fsync_calls: list[int]
) -> None:
    log = open_log(flush_ms=1000)
    log.append(make_batch(2), headers_of(make_batch(2)), leader_epoch=0)
    clock.advance(1000)
    plan = log.flush_plan_if_due(now_ms=clock.monotonic_ms())
    assert plan is not None and plan.covers.since_ms == 0
    assert log.flush_plan_if_due(now_ms=clock.monotonic_ms()) is None  # taken by the plan
    fsync_calls.clear()
    log.finish_flush(plan)  # e.g. the waiting request was cancelled before it ran
    assert fsync_calls == []
    assert plan.discard() is False  # already closed
    again = log.flush_plan_if_due(now_ms=clock.monotonic_ms())
    assert again is not None and again.covers.records == 2 and again.covers.since_ms == 0
    again.run()
    log.finish_flush(again)


def test_the_default_append_still_fsyncs_in_place(
    open_log: LogOpener, fsync_calls: list[int]
) -> None:
    log = open_log(flush_messages=1)
    fsync_calls.clear()
    result = log.append(make_batch(1), headers_of(make_batch(1)), leader_epoch=0)
    assert result.flush_plan is None and len(fsync_calls) == 1


def test_no_plan_from_a_closed_log(open_log: LogOpener) -> None:
    log = open_log(flush_messages=1)
    log.abandon()
    assert log.flush_plan() is None


def test_manager_hands_out_the_plans_flush_ms_asks_for(
    tmp_path: Path, clock: ManualClock, fsync_calls: list[int]
) -> None:
    manager = LogManager.open(data_dir=tmp_path, broker_config=BrokerConfig.load(), clock=clock)
    try:
        manager.create_topic("t", partitions=3, configs={"flush.ms": "10"})
        for index in (0, 2):
            log = manager.partition("t", index)
            assert log is not None
            log.append(make_batch(1), headers_of(make_batch(1)), leader_epoch=0)
        assert manager.flush_plans_due(now_ms=clock.monotonic_ms() + 9) == []
        plans = manager.flush_plans_due(now_ms=clock.monotonic_ms() + 10)
        assert sorted(log.directory.name for log, _ in plans) == ["t-0", "t-2"]
        fsync_calls.clear()
        for log, plan in plans:
            plan.run()
            manager.finish_flush(log, plan)
        assert len(fsync_calls) == 2
        assert manager.flush_plans_due(now_ms=clock.monotonic_ms() + 10**6) == []
    finally:
        manager.close()


def test_a_flush_is_due_once_unflushed_bytes_pass_the_limit(
    open_log: LogOpener, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "LOG_UNFLUSHED_BYTES_MAX", 1000)
    log = open_log()  # default policy: flush.ms and flush.messages never come due
    batch = make_batch(1, value_size=400)
    log.append(batch, headers_of(batch), leader_epoch=0)
    assert log.flush_plan_if_due(now_ms=clock.monotonic_ms()) is None
    log.append(batch, headers_of(batch), leader_epoch=0)
    assert log.flush_plan_if_due(now_ms=clock.monotonic_ms()) is None
    log.append(batch, headers_of(batch), leader_epoch=0)
    plan = log.flush_plan_if_due(now_ms=clock.monotonic_ms())
    assert plan is not None and plan.covers.size_bytes == 3 * len(batch) >= 1000
    plan.run()
    log.finish_flush(plan)
    assert log.flush_plan_if_due(now_ms=clock.monotonic_ms()) is None


def test_a_partition_made_without_its_directory_fsync_has_its_first_flush_do_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An internal topic's partitions are made at start without a directory fsync
    # (log/topics.py): their first flush makes the segment's entry durable with the
    # records, as Kafka's LocalLog.flush does for a new segment, in the plan (off the
    # loop); later flushes fsync the file only.
    directory = tmp_path / "t-0"
    assert prepare_partition_directory(directory, uuid.uuid4(), sync=False)
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    segment = str(directory / "00000000000000000000.log")
    log = PartitionLog.open(
        directory=directory, config={}, clock=ManualClock(), directory_durable=False
    )
    assert synced == []  # neither making nor opening an empty partition fsyncs
    append(log, make_batch(1))
    plan = log.flush_plan()
    assert plan is not None and plan.directory == directory and synced == []
    plan.run()  # on any thread: the file, then the directory
    log.finish_flush(plan)
    assert synced == [segment, str(directory)]
    append(log, make_batch(1, seed=1))
    log.flush()
    assert synced[2:] == [segment]
    log.abandon()
    # a plan that never ran leaves the directory to the next one
    synced.clear()
    reopened = PartitionLog.open(
        directory=directory, config={}, clock=ManualClock(), directory_durable=False
    )
    append(reopened, make_batch(1, seed=2))
    unrun = reopened.flush_plan()
    assert unrun is not None
    reopened.finish_flush(unrun)
    reopened.flush()
    assert synced == [segment, str(directory)]
    reopened.abandon()
    # a partition made with `sync` is opened durable: its flushes fsync the file only
    other = tmp_path / "t-1"
    assert prepare_partition_directory(other, uuid.uuid4(), sync=True)
    synced.clear()
    durable = PartitionLog.open(directory=other, config={}, clock=ManualClock())
    append(durable, make_batch(1))
    durable.flush()
    assert synced[-1:] == [str(other / "00000000000000000000.log")]
    durable.abandon()
