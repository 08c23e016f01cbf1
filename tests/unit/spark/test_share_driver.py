"""The share source driver's bounds (share_driver.py), with a member that hands out one
record per ShareFetch (the real member is exercised against a broker in
tests/spark/test_share_group.py)."""

from __future__ import annotations

from collections.abc import Collection
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from shoal.client.ranges import Span
from shoal.spark.share_checkpoint import committed_offsets
from shoal.spark.share_driver import ACQUIRE_ROUNDS_MAX, ShareDriver
from shoal.spark.share_group import ACCEPT, MemberSettings
from shoal.spark.share_offsets import INITIAL_OFFSET, ShareOffset, Spans, TopicPartition
from tests.unit.spark.test_share_checkpoint import write_batch

TP = TopicPartition("t", 0)


class OneRecordAtATime:
    """Each acquire hands out the next offset; acknowledgements are recorded."""

    def __init__(self) -> None:
        self.settings = MemberSettings("localhost:9092", "g", ("t",))
        self.lock_duration_ms = 30_000
        self.next_offset = 0
        self.fetches = 0
        self.acks: list[tuple[int, Spans]] = []
        self.closed = False

    def acquire(
        self,
        *,
        records_max: int,
        wait_ms: int,
        skip: Collection[TopicPartition] = (),
        exact: bool = True,
    ) -> dict[TopicPartition, list[Span]]:
        self.fetches += 1
        offset, self.next_offset = self.next_offset, self.next_offset + 1
        return {TP: [Span(offset, offset, 1)]}

    def acknowledge(self, spans: Spans, ack_type: int) -> dict[TopicPartition, str]:
        self.acks.append((ack_type, spans))
        return {}

    def take_lost(self) -> dict[TopicPartition, Any]:
        return {}

    def close(self) -> None:
        self.closed = True


def test_one_latest_offset_makes_at_most_the_round_limit_of_fetches() -> None:
    member = OneRecordAtATime()
    driver = ShareDriver(member, acquire_wait_ms=0)  # type: ignore[arg-type]
    end = driver.latest_offset(INITIAL_OFFSET, records_max=1000)
    assert member.fetches == ACQUIRE_ROUNDS_MAX
    assert end is not None
    assert end.spans == {TP: (Span(0, ACQUIRE_ROUNDS_MAX - 1, 1),)}
    # the next trigger accepts that batch and plans the following records
    member.fetches = 0
    again = driver.latest_offset(end, records_max=5)
    assert member.acks == [(ACCEPT, {TP: (Span(0, ACQUIRE_ROUNDS_MAX - 1, 1),)})]
    assert again is not None and again.record_count == 5
    assert member.fetches == 5


def _driver(checkpoint: Path | None) -> tuple[OneRecordAtATime, ShareDriver]:
    member = OneRecordAtATime()
    committed = None if checkpoint is None else partial(committed_offsets, checkpoint)
    driver = ShareDriver(member, acquire_wait_ms=0, committed=committed)  # type: ignore[arg-type]
    return member, driver


def _plan(driver: ShareDriver, start: ShareOffset, records: int) -> ShareOffset:
    end = driver.latest_offset(start, records_max=records)
    assert end is not None
    return end


def test_stop_accepts_a_batch_spark_committed_after_the_last_trigger(tmp_path: Path) -> None:
    member, driver = _driver(tmp_path)
    end1 = _plan(driver, INITIAL_OFFSET, 2)
    write_batch(tmp_path, 0, end1, committed=True)
    driver.stop()
    assert member.acks == [(ACCEPT, {TP: (Span(0, 1, 1),)})]
    assert driver.status()["accepted"] == 2
    driver.stop()  # idempotent: nothing acknowledged twice
    assert len(member.acks) == 1


def test_stop_accepts_only_what_was_not_accepted_yet(tmp_path: Path) -> None:
    member, driver = _driver(tmp_path)
    end1 = _plan(driver, INITIAL_OFFSET, 2)
    end2 = _plan(driver, end1, 3)  # the trigger of batch 2 accepted batch 1
    write_batch(tmp_path, 0, end1, committed=True)
    write_batch(tmp_path, 1, end2, committed=True)
    driver.stop()
    assert member.acks == [(ACCEPT, {TP: (Span(0, 1, 1),)}), (ACCEPT, {TP: (Span(2, 4, 1),)})]


def test_stop_accepts_a_committed_replay_whose_offset_names_other_delivery_counts(
    tmp_path: Path,
) -> None:
    """A restarted query replays batch 1 of an earlier run, whose offset JSON holds
    [0-0 count 1] and [1-1 count 2]; the replay re-acquires 0-1 at new counts. Once
    Spark commits it, stop ACCEPTs those records (else the group delivers them again)."""
    member, driver = _driver(tmp_path)
    end1 = ShareOffset(seq=1, spans={TP: (Span(0, 0, 1), Span(1, 1, 2))})
    assert driver.batch(end1) == {TP: (Span(0, 1, 1),)}
    write_batch(tmp_path, 0, end1, committed=True)
    driver.stop()
    assert member.acks == [(ACCEPT, {TP: (Span(0, 1, 1),)})]


def test_stop_leaves_an_uncommitted_batch_to_the_group(tmp_path: Path) -> None:
    member, driver = _driver(tmp_path)
    end1 = _plan(driver, INITIAL_OFFSET, 2)
    write_batch(tmp_path, 0, end1, committed=False)  # Spark stopped inside batch 1
    driver.stop()
    assert member.acks == []
    assert member.closed  # closing the session hands its records back


def test_another_querys_checkpoint_accepts_nothing(tmp_path: Path) -> None:
    member, driver = _driver(tmp_path)
    _plan(driver, INITIAL_OFFSET, 2)
    other = ShareOffset(seq=1, spans={TP: (Span(100, 101, 1),)})  # same seq, other records
    write_batch(tmp_path, 0, other, committed=True)
    driver.stop()
    assert member.acks == []


def test_without_the_checkpoint_stop_accepts_nothing() -> None:
    member, driver = _driver(None)
    _plan(driver, INITIAL_OFFSET, 2)
    driver.stop()
    assert member.acks == []


def test_an_unreadable_checkpoint_is_logged_and_the_member_still_leaves(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    member, driver = _driver(tmp_path)
    _plan(driver, INITIAL_OFFSET, 2)
    (tmp_path / "commits").write_text("a file where Spark keeps a directory")
    driver.stop()
    assert member.acks == []
    assert member.closed
    assert "checkpoint could not be read" in caplog.text


class WaitsRecorded(OneRecordAtATime):
    """Records each acquisition's wait; the partition ends at offset 3."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[int] = []

    def acquire(self, *, records_max: int, wait_ms: int, **kwargs: Any) -> Any:
        self.waits.append(wait_ms)
        return super().acquire(records_max=records_max, wait_ms=wait_ms, **kwargs)

    def end_offsets(self) -> dict[TopicPartition, int]:
        return {TP: 3}


def test_an_available_now_run_waits_only_until_its_first_records() -> None:
    member = WaitsRecorded()
    driver = ShareDriver(member, acquire_wait_ms=500)  # type: ignore[arg-type]
    driver.bound()
    end = driver.latest_offset(INITIAL_OFFSET, records_max=10)
    assert end is not None and end.spans == {TP: (Span(0, 2, 1),)}
    assert member.waits == [500, 0, 0, 0]  # offset 3 is beyond the bound: released
    member.waits.clear()
    assert driver.latest_offset(end, records_max=10) is None  # the last trigger: no wait
    assert member.waits == [0]


def test_a_live_stream_waits_for_records_at_every_trigger() -> None:
    member = WaitsRecorded()
    driver = ShareDriver(member, acquire_wait_ms=500)  # type: ignore[arg-type]
    end = driver.latest_offset(INITIAL_OFFSET, records_max=2)
    assert end is not None and member.waits == [500, 0]
    member.waits.clear()
    driver.latest_offset(end, records_max=2)
    assert member.waits == [500, 0]
