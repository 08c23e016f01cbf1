"""Records whose fsync the flush policy called for are unreadable until it is done
(log/partition.py, docs/design/disk-io.md): the high watermark stays below a deferred
policy flush until `finish_flush`, as Kafka's does below the flush inside
`UnifiedLog.append`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shoal.clock import ManualClock
from shoal.log.api import LogError
from shoal.log.events import LogEvents
from shoal.log.flush import FlushPlan
from shoal.log.partition import PartitionLog
from shoal.protocol.errors import ErrorCode
from tests.unit.log.batches import headers_of, make_batch


class Opened:
    """A partition log with an appended-event recorder."""

    def __init__(self, log_dir: Path, clock: ManualClock, **config: object) -> None:
        events = LogEvents()
        self.announced = 0
        events.on_appended(lambda _t, _p: self._heard())
        settings = {key.replace("_", "."): value for key, value in config.items()}
        self.log = PartitionLog.open(
            directory=log_dir, config=settings, clock=clock, events=events.for_partition("t", 0)
        )

    def _heard(self) -> None:
        self.announced += 1

    def append(self, batch: bytes) -> FlushPlan | None:
        result = self.log.append(batch, headers_of(batch), leader_epoch=0, defer_flush=True)
        return result.flush_plan

    def readable(self, offset: int = 0) -> tuple[int, int]:
        """(records returned from `offset`, high watermark of the read)."""
        read = self.log.read(offset, max_bytes=1 << 20)
        return sum(h.records_count for h in read.headers), read.high_watermark


@pytest.fixture
def opened(log_dir: Path, clock: ManualClock) -> Opened:
    return Opened(log_dir, clock, flush_messages=1)


def test_a_deferred_policy_flush_holds_the_high_watermark_until_finished(
    opened: Opened,
) -> None:
    log = opened.log
    plan = opened.append(make_batch(3))
    assert plan is not None
    assert log.log_end_offset == 3
    assert log.high_watermark == 0 and log.last_stable_offset == 0
    assert opened.readable() == (0, 0)
    assert opened.announced == 0  # nothing readable yet: parked readers stay parked
    plan.run()
    assert log.high_watermark == 0  # fsynced, but not yet taken back on the owner
    log.finish_flush(plan)
    assert log.high_watermark == 3 and log.last_stable_offset == 3
    assert opened.readable() == (3, 3)
    assert opened.announced == 1


def test_a_read_inside_the_held_range_is_empty_not_out_of_range(opened: Opened) -> None:
    first = opened.append(make_batch(2))
    assert first is not None
    first.run()
    opened.log.finish_flush(first)
    held = opened.append(make_batch(2, seed=1))
    assert held is not None
    assert opened.readable(0) == (2, 2)  # the records below the hold only
    assert opened.readable(3) == (0, 2)
    with pytest.raises(LogError) as info:
        opened.log.read(5, max_bytes=100)
    assert info.value.code == ErrorCode.offset_out_of_range


def test_a_later_fsync_releases_the_earlier_plans_it_covers(opened: Opened) -> None:
    log = opened.log
    first = opened.append(make_batch(1))
    second = opened.append(make_batch(1, seed=1))
    third = opened.append(make_batch(1, seed=2))
    assert first is not None and second is not None and third is not None
    assert log.high_watermark == 0
    second.run()
    log.finish_flush(second)  # its fsync covers the first plan's bytes too
    assert log.high_watermark == 2 and opened.announced == 1
    first.run()
    log.finish_flush(first)  # already released: nothing moves, nothing announced
    assert log.high_watermark == 2 and opened.announced == 1
    third.run()
    log.finish_flush(third)
    assert log.high_watermark == 3 and opened.announced == 2


def test_a_failed_fsync_never_exposes_the_records(
    opened: Opened, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = opened.append(make_batch(1))
    assert plan is not None

    def failing_fsync(fd: int) -> None:
        raise OSError(5, "Input/output error")

    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", failing_fsync)
        plan.run()
    with pytest.raises(LogError):
        opened.log.finish_flush(plan)
    assert opened.log.high_watermark == 0 and opened.announced == 0
    with pytest.raises(LogError, match="offline"):
        opened.log.read(0, max_bytes=100)


def test_a_plan_never_run_keeps_its_records_held_until_a_later_flush(opened: Opened) -> None:
    log = opened.log
    plan = opened.append(make_batch(2))
    assert plan is not None
    log.finish_flush(plan)  # never ran (its worker was dropped): nothing is on disk
    assert log.high_watermark == 0 and opened.announced == 0
    log.flush()
    assert log.high_watermark == 2 and opened.announced == 1


def test_an_in_place_flush_releases_the_held_records(opened: Opened) -> None:
    plan = opened.append(make_batch(2))
    assert plan is not None
    batch = make_batch(1, seed=1)  # fsynced in place (as a marker is): everything written
    opened.log.append(batch, headers_of(batch), leader_epoch=0)
    assert opened.log.high_watermark == 3 and opened.announced == 1
    plan.run()
    opened.log.finish_flush(plan)
    assert opened.log.high_watermark == 3 and opened.announced == 1


def test_without_a_policy_flush_appends_are_readable_at_once(
    log_dir: Path, clock: ManualClock
) -> None:
    opened = Opened(log_dir, clock)  # the default: the page cache, no fsync per append
    assert opened.append(make_batch(2)) is None
    assert opened.log.high_watermark == 2 and opened.readable() == (2, 2)
    assert opened.announced == 1


def test_an_in_place_policy_flush_is_readable_at_once(log_dir: Path, clock: ManualClock) -> None:
    opened = Opened(log_dir, clock, flush_messages=1)
    batch = make_batch(2)
    result = opened.log.append(batch, headers_of(batch), leader_epoch=0)  # fsync inside
    assert result.flush_plan is None
    assert opened.log.high_watermark == 2 and opened.announced == 1
