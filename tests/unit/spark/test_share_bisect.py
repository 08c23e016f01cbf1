"""Splitting a batch that keeps failing (share_bisect.py, share_driver.py): the batch
sizes per delivery count, and a poison record among 2,000 played through the driver
against a model of a share group (acquire lowest available first, delivery counts,
archive at the limit, release of what a closed member held) and of Spark's restarts
(an uncommitted batch is replayed from the offset log, a task failure ends the query).
The stream is run end to end in tests/spark/test_share_stream.py."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from shoal.client.ranges import Span
from shoal.spark.share_bisect import batch_records_for
from shoal.spark.share_checkpoint import ReplayLog
from shoal.spark.share_driver import ShareDriver
from shoal.spark.share_group import ACCEPT, MemberSettings
from shoal.spark.share_offsets import INITIAL_OFFSET, ShareOffset, Spans, TopicPartition

TP = TopicPartition("t", 0)


@pytest.mark.parametrize(
    ("records_max", "limit", "sizes"),
    [
        (10_000, 5, [10_000, 1_000, 100, 10, 1, 1]),
        (2_000, 5, [2_000, 300, 45, 7, 1, 1]),
        (2, 2, [2, 1, 1]),
        (1, 10, [1, 1]),
        (1_000, 10, [1_000, 465, 216, 100, 47, 22, 10, 5, 3, 1]),
    ],
)
def test_batch_sizes_shrink_geometrically_to_one_at_the_last_delivery(
    records_max: int, limit: int, sizes: list[int]
) -> None:
    got = [
        batch_records_for(d, records_max=records_max, limit=limit) for d in range(1, 1 + len(sizes))
    ]
    assert got == sizes


@dataclass
class Record:
    count: int = 0
    state: str = "available"  # acquired, accepted, archived
    holder: int | None = None


@dataclass
class Group:
    """A one-partition share group as the driver sees it."""

    records: list[Record]
    limit: int
    members: int = 0
    log_batch_records: int = 128
    """Batch-optimized acquisition hands out whole log batches of this many records."""

    def release(self, record: Record) -> None:
        record.holder = None
        record.state = "archived" if record.count >= self.limit else "available"


@dataclass
class Member:
    group: Group
    number: int
    settings: MemberSettings = field(default_factory=lambda: MemberSettings("x:1", "g", ("t",)))
    lock_duration_ms: int = 30_000

    def acquire(
        self,
        *,
        records_max: int,
        wait_ms: int,
        skip: Collection[TopicPartition] = (),
        exact: bool = True,
    ) -> dict[TopicPartition, list[Span]]:
        spans: list[Span] = []
        size = self.group.log_batch_records
        for offset, record in enumerate(self.group.records):
            if len(spans) >= records_max and (exact or offset % size == 0):
                break  # batch-optimized: up to the end of the log batch
            if record.state == "available":
                record.state, record.holder = "acquired", self.number
                record.count += 1
                spans.append(Span(offset, offset, record.count))
        return {TP: spans} if spans else {}

    def acknowledge(self, spans: Spans, ack_type: int) -> dict[TopicPartition, str]:
        for span in spans.get(TP, ()):
            for offset in range(span.first, span.last + 1):
                record = self.group.records[offset]
                assert record.state == "acquired" and record.holder == self.number, offset
                if ack_type == ACCEPT:
                    record.state, record.holder = "accepted", None
                else:
                    self.group.release(record)
        return {}

    def take_lost(self) -> dict[TopicPartition, tuple[Span, ...]]:
        return {}

    def close(self) -> None:
        for record in self.group.records:
            if record.state == "acquired" and record.holder == self.number:
                self.group.release(record)


def test_one_poison_record_among_2000_is_archived_alone(tmp_path: Path) -> None:
    poison, total, limit, batch = 1234, 2000, 5, 2000
    group = Group([Record() for _ in range(total)], limit)
    offsets: list[ShareOffset] = []  # Spark's offset log; commits: the first `committed`
    committed = 0
    processed: list[int] = []
    runs = batches = 0
    while runs < 20:
        runs += 1
        group.members += 1
        member = Member(group, group.members)
        driver = ShareDriver(
            member,  # type: ignore[arg-type]
            acquire_wait_ms=0,
            replay_log=ReplayLog(tmp_path, "g"),
            records_per_batch=batch,
            delivery_count_limit=limit,
        )
        failed = False
        while not failed:
            if committed < len(offsets):  # Spark replays the uncommitted batch
                end = offsets[committed]
            else:
                start = offsets[-1] if offsets else INITIAL_OFFSET
                planned = driver.latest_offset(start, records_max=batch)
                if planned is None:
                    break
                offsets.append(planned)
                end = planned
            read = [
                o
                for span in driver.batch(end).get(TP, ())
                for o in range(span.first, span.last + 1)
            ]
            batches += 1
            failed = poison in read
            if not failed:
                processed.extend(read)
                committed += 1
        driver.stop()
        if not failed:
            break
    states = [r.state for r in group.records]
    assert states[poison] == "archived"
    assert [o for o, s in enumerate(states) if s != "accepted"] == [poison]
    assert sorted(processed) == [o for o in range(total) if o != poison]  # each once
    assert runs == limit + 1  # one failure per delivery of the poison record
    assert batches < 40, batches  # about 30: the bisect costs batches, not records
    assert json_arch(offsets) == 1


def json_arch(offsets: list[ShareOffset]) -> int:
    return offsets[-1].archived
