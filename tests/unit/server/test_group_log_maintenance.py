"""`__consumer_offsets` stays bounded under steady commits: the group coordinator re-writes
keys that would pin its log and prunes what no live key needs, on the manual clock's
timer, and a coordinator reloaded from the pruned log (after a crash) has exactly the
same groups and offsets. Deleted topics lose their committed offsets."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from shoal.clock import ManualClock
from shoal.config import BrokerConfig, ConfigError
from shoal.coordinator import CoordinatorResult
from shoal.coordinator.log_sink import LogRecordSink, read_log
from shoal.coordinator.runtime import CoordinatorRuntime
from shoal.group import GroupCoordinatorShard, TopicMetadata
from shoal.group.committed_offsets import FetchedOffset, OffsetToCommit
from shoal.group.records import (
    CODEC,
    CoordinatorRecord,
    OffsetCommitKey,
    OffsetCommitValue,
)
from shoal.group.shard import DurableState
from shoal.log import fileio
from shoal.log.manager import LogManager
from shoal.log.partition import PartitionLog
from shoal.protocol.errors import ErrorCode
from shoal.server.services.group_persistence import GroupLogMaintenance, open_group_log
from shoal.server.services.group_service import GroupService
from shoal.server.services.timers import Schedule
from shoal.share.persister import InMemoryPersister
from tests.support.metadata import topic_catalog

INTERVAL_MS = 1_000
TOPIC = TopicMetadata(topic_id=uuid.UUID(int=0x99), name="orders", partition_count=100)


class Coordinator:
    """A group coordinator on a real `__consumer_offsets` in `data_dir`, with its
    maintenance timer on a manual clock, wired as the broker wires it."""

    def __init__(self, data_dir: Path, clock: ManualClock, **overrides: str) -> None:
        raw = {
            "offsets.topic.num.partitions": "2",
            "offsets.topic.segment.bytes": "16384",
            "offsets.topic.prune.interval.ms": str(INTERVAL_MS),
            **overrides,
        }
        self.config = BrokerConfig.from_raw(raw)
        self.clock = clock
        self.logs = LogManager.open(
            data_dir=data_dir,
            broker_config=self.config,
            clock=clock,
            catalog=topic_catalog(data_dir),
        )
        group_log = open_group_log(self.logs, self.config, clock)
        self.partitions: list[PartitionLog] = list(group_log.partitions)
        self.service = GroupService(
            clock=clock,
            config=self.config,
            persister=InMemoryPersister(),
            topic_source=lambda: [TOPIC],
            sinks=group_log.sinks,
            loader=group_log.loader,
        )
        self.service.load()
        self.service.start()
        self.rearms = 0
        self.maintenance = GroupLogMaintenance(
            runtime=self.service.runtime,
            partitions=self.partitions,
            config=lambda: self.config,
            remove_paths=fileio.remove_paths,
            rearm=self._rearm,
        )
        self.logs.events.on_appended(self.maintenance.appended)
        self.service.on_fired.append(self.maintenance.fired)
        self.schedule = Schedule()
        self.schedule.add(*self.service.timer_sources())
        self.schedule.next_deadline_ms(clock.monotonic_ms())  # arm, as the driver does

    def _rearm(self) -> None:
        self.rearms += 1

    def commit(self, group_id: str, offsets: dict[int, int]) -> None:
        answers = self.service.classic.commit_offsets(
            group_id=group_id,
            member_id="",
            generation_id=-1,
            group_instance_id=None,
            offsets=[
                OffsetToCommit(
                    topic=TOPIC.name, partition=p, offset=o, leader_epoch=-1, metadata="m"
                )
                for p, o in offsets.items()
            ],
            api_version=9,
        )
        assert all(answer.error is None for answer in answers), answers

    def fetch(self, group_id: str) -> tuple[FetchedOffset, ...]:
        error, offsets = self.service.classic.fetch_offsets(group_id=group_id, partitions=None)
        assert error is None
        return offsets

    def tick(self) -> list[str]:
        """Advance one maintenance interval and fire what is due."""
        self.clock.advance(INTERVAL_MS)
        return self.schedule.fire_due(self.clock.monotonic_ms())

    def home(self, group_id: str) -> PartitionLog:
        return self.partitions[self.service.runtime.partition_of(group_id)]

    def durable_state(self) -> list[DurableState]:
        """Every shard's durable state, by partition."""
        return [shard.durable_state() for shard in self.service.shards()]

    @staticmethod
    def retained(log: PartitionLog) -> int:
        return log.log_end_offset - log.log_start_offset


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def opened(tmp_path: Path, clock: ManualClock) -> Iterator[list[Coordinator]]:
    coordinators: list[Coordinator] = []
    yield coordinators
    for coordinator in coordinators:
        coordinator.logs.abandon()


def open_coordinator(
    opened: list[Coordinator], tmp_path: Path, clock: ManualClock, **overrides: str
) -> Coordinator:
    coordinator = Coordinator(tmp_path / "data", clock, **overrides)
    opened.append(coordinator)
    return coordinator


def crash_and_reload(
    opened: list[Coordinator], tmp_path: Path, coordinator: Coordinator, **overrides: str
) -> Coordinator:
    """Drop the coordinator's files as a crash would, and load a new one from them."""
    opened.remove(coordinator)
    coordinator.logs.abandon()
    return open_coordinator(opened, tmp_path, coordinator.clock, **overrides)


def test_fifty_thousand_commits_over_100_partitions_stay_below_the_bound(
    opened: list[Coordinator], tmp_path: Path, clock: ManualClock
) -> None:
    window = 2_000
    c = open_coordinator(
        opened, tmp_path, clock, **{"offsets.topic.rewrite.window.records": str(window)}
    )
    c.commit("once", {0: 1, 1: 2, 2: 3})  # never again: its records must be re-written
    busy = c.home("busy")
    written = 0
    for round_ in range(500):
        c.commit("busy", {p: round_ for p in range(100)})
        written += 100
        if round_ % 10 == 9:  # a pass every 1000 commits
            assert "group-coordinator" in c.tick()
            live = c.service.shard_of("busy").log_keys.live_keys()
            # after a pass: no live key further than the window below the end, and
            # nothing below the lowest live key
            assert c.retained(busy) <= window + live, (round_, c.retained(busy))
    assert written == 50_000 and busy.log_end_offset >= written
    assert c.retained(busy) <= window + 103
    segments = sorted(busy.directory.glob("*.log"))
    assert sum(path.stat().st_size for path in segments) < 40 * 16_384  # not 50k records
    once = c.fetch("once")
    latest = c.fetch("busy")
    state = c.durable_state()

    again = crash_and_reload(opened, tmp_path, c)
    assert again.fetch("once") == once == c.fetch("once")
    assert [(o.partition, o.offset) for o in once] == [(0, 1), (1, 2), (2, 3)]
    assert again.fetch("busy") == latest
    assert [o.offset for o in latest] == [499] * 100
    assert again.durable_state() == state


def test_a_key_written_once_is_re_written_before_the_log_below_it_goes(
    opened: list[Coordinator], tmp_path: Path, clock: ManualClock
) -> None:
    c = open_coordinator(
        opened,
        tmp_path,
        clock,
        **{"offsets.topic.num.partitions": "1", "offsets.topic.rewrite.window.records": "50"},
    )
    log = c.partitions[0]
    c.commit("once", {7: 70})
    assert log.log_end_offset == 1
    for round_ in range(40):
        c.commit("busy", {0: round_})
    c.tick()  # 40 records behind the end: inside the window, nothing re-written
    assert log.log_end_offset == 41
    assert log.log_start_offset == 0  # "once" at offset 0 pins the log
    for round_ in range(40, 80):
        c.commit("busy", {0: round_})
    c.tick()  # now 80 behind: re-written at the end, and the log below goes
    assert log.log_end_offset == 82
    assert log.log_start_offset == 80  # busy's latest commit, then once's copy
    again = crash_and_reload(
        opened,
        tmp_path,
        c,
        **{"offsets.topic.num.partitions": "1", "offsets.topic.rewrite.window.records": "50"},
    )
    assert [(o.partition, o.offset) for o in again.fetch("once")] == [(7, 70)]
    assert [(o.partition, o.offset) for o in again.fetch("busy")] == [(0, 79)]


def test_deleted_groups_and_tombstoned_offsets_need_nothing(
    opened: list[Coordinator], tmp_path: Path, clock: ManualClock
) -> None:
    c = open_coordinator(opened, tmp_path, clock, **{"offsets.topic.num.partitions": "1"})
    log = c.partitions[0]
    c.commit("gone", {0: 5, 1: 6})
    c.service.topics_deleted([TOPIC.name])  # tombstones both offsets
    assert c.fetch("gone") == ()
    c.tick()
    # The simple group outlives its offsets until the cleanup pass (as Kafka): its
    # latest commit (offset 1) stays, so a reload brings the group back.
    assert (log.log_start_offset, log.log_end_offset) == (1, 4)
    again = crash_and_reload(opened, tmp_path, c, **{"offsets.topic.num.partitions": "1"})
    assert again.fetch("gone") == ()
    assert again.durable_state() == c.durable_state()
    assert again.service.shard_of("gone").classic.has_group("gone")
    again.service.classic.expire_offsets(0)  # the cleanup pass: its GroupMetadata tombstone
    again.tick()
    log = again.partitions[0]
    assert log.log_start_offset == log.log_end_offset == 5  # nothing live: all of it goes
    last = crash_and_reload(opened, tmp_path, again, **{"offsets.topic.num.partitions": "1"})
    assert not last.service.shard_of("gone").classic.has_group("gone")
    assert last.durable_state() == again.durable_state()


def test_deleting_a_topic_deletes_every_groups_offsets_of_it(
    opened: list[Coordinator], tmp_path: Path, clock: ManualClock
) -> None:
    c = open_coordinator(opened, tmp_path, clock)
    c.commit("a", {0: 1, 1: 1})
    c.commit("b", {0: 2})
    other = OffsetToCommit(topic="kept", partition=0, offset=9, leader_epoch=-1, metadata="")
    c.service.classic.commit_offsets(
        group_id="a",
        member_id="",
        generation_id=-1,
        group_instance_id=None,
        offsets=[other],
        api_version=9,
    )
    c.service.topics_deleted([TOPIC.name])
    assert [(o.topic, o.offset) for o in c.fetch("a")] == [("kept", 9)]
    assert c.fetch("b") == ()
    again = crash_and_reload(opened, tmp_path, c)
    assert [(o.topic, o.offset) for o in again.fetch("a")] == [("kept", 9)]
    assert again.fetch("b") == ()


def test_offsets_retention_is_driven_by_the_shells_timer_and_survives_a_reload(
    opened: list[Coordinator], tmp_path: Path, clock: ManualClock
) -> None:
    settings = {
        "offsets.retention.minutes": "1",
        "offsets.retention.check.interval.ms": str(INTERVAL_MS),
    }
    c = open_coordinator(opened, tmp_path, clock, **settings)
    c.commit("idle", {0: 4})
    for _ in range(59):
        c.tick()
    assert [o.offset for o in c.fetch("idle")] == [4]  # 59 s after the commit: kept
    c.tick()  # 60 s: past offsets.retention.minutes
    assert c.fetch("idle") == ()
    assert c.service.shard_of("idle").group_type("idle") is None  # no offsets, no members: gone
    again = crash_and_reload(opened, tmp_path, c, **settings)
    assert again.fetch("idle") == ()


def test_a_re_write_too_big_for_one_batch_is_split_until_each_part_fits(
    opened: list[Coordinator], tmp_path: Path, clock: ManualClock
) -> None:
    c = open_coordinator(opened, tmp_path, clock, **{"offsets.topic.num.partitions": "1"})
    log = c.partitions[0]
    small = LogRecordSink(log=log, encode=CODEC.encode, clock=clock, batch_bytes_max=4_000)
    runtime: CoordinatorRuntime[GroupCoordinatorShard, CoordinatorRecord] = CoordinatorRuntime(
        new_shard=lambda _p: GroupCoordinatorShard(clock=clock),
        sinks=[small],
        prune_offset=GroupCoordinatorShard.prune_offset,
    )

    def commit(group: str, partition: int) -> None:  # one commit each: every batch fits
        key = OffsetCommitKey(group_id=group, topic="t", partition=partition)
        value = OffsetCommitValue(offset=1, leader_epoch=-1, metadata="m" * 200, commit_timestamp=0)
        record = CoordinatorRecord(key=key, value=value)
        runtime.write(0, lambda _shard: CoordinatorResult(records=(record,), response=None))

    for partition in range(60):
        commit("g", partition)
    for _ in range(60):  # pushes g's 60 keys out of the window (0 + 61 live keys)
        commit("other", 0)
    state = runtime.shard_at(0).durable_state()
    maintenance = GroupLogMaintenance(
        runtime=runtime,
        partitions=[log],
        config=lambda: BrokerConfig.from_raw({"offsets.topic.rewrite.window.records": "0"}),
    )
    assert maintenance.run(0) == (60, 1)  # 60 x ~260 bytes: far above one 4000-byte batch
    assert (log.log_start_offset, log.log_end_offset) == (119, 180)  # other's, then g's
    batches = log.read(120, max_bytes=1 << 20).headers
    # halved until each part fits (60 -> 30 -> 15), not one batch per record
    assert [batch.records_count for batch in batches] == [15, 15, 15, 15]
    assert runtime.shard_at(0).durable_state() == state
    reloaded = runtime.load_partition(0, read_log(log, CODEC.decode, buffer_bytes=1 << 20))
    assert reloaded.durable_state() == state


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("offsets.topic.prune.interval.ms", "0", "below the minimum 1"),
        ("offsets.topic.rewrite.window.records", "-1", "below the minimum 0"),
    ],
)
def test_log_bound_configs_out_of_bounds_are_refused_by_name(
    key: str, value: str, problem: str
) -> None:
    with pytest.raises(ConfigError, match=problem) as info:
        BrokerConfig.from_raw({key: value})
    assert info.value.key == key
    defaults = BrokerConfig.from_raw({})
    assert defaults.get_int("offsets.topic.prune.interval.ms") == 30_000
    assert defaults.get_int("offsets.topic.rewrite.window.records") == 10_000


def test_a_window_of_appended_records_makes_the_pass_due_at_once(
    opened: list[Coordinator], tmp_path: Path, clock: ManualClock
) -> None:
    c = open_coordinator(
        opened,
        tmp_path,
        clock,
        **{"offsets.topic.num.partitions": "1", "offsets.topic.rewrite.window.records": "100"},
    )
    log = c.partitions[0]
    now = clock.monotonic_ms()
    for n in range(99):
        c.commit("busy", {0: n})
    assert c.rearms == 0
    assert c.schedule.next_deadline_ms(now) == now + INTERVAL_MS  # not yet: 99 < 100
    c.commit("busy", {0: 99})
    assert c.rearms == 1 and c.schedule.next_deadline_ms(now) == now  # due now
    assert c.schedule.fire_due(now) == ["group-coordinator"]
    assert (log.log_start_offset, log.log_end_offset) == (99, 100)
    assert c.schedule.next_deadline_ms(now) == now + INTERVAL_MS  # the count starts again
    c.tick()  # the periodic pass still runs (nothing more to prune)
    assert log.log_start_offset == 99


def test_more_live_keys_than_the_window_are_re_written_once_not_in_a_loop(
    opened: list[Coordinator], tmp_path: Path, clock: ManualClock
) -> None:
    c = open_coordinator(
        opened,
        tmp_path,
        clock,
        **{"offsets.topic.num.partitions": "1", "offsets.topic.rewrite.window.records": "10"},
    )
    log = c.partitions[0]
    c.commit("once", {p: p for p in range(50)})  # 50 live keys, five windows' worth
    for n in range(100):
        c.commit("busy", {0: n})
    now = clock.monotonic_ms()
    assert c.schedule.next_deadline_ms(now) == now  # 150 appended: due
    assert c.maintenance.run(now) == (50, 1)  # the 50 old keys, once
    assert (log.log_start_offset, log.log_end_offset) == (149, 200)
    assert c.schedule.next_deadline_ms(now) > now  # its own re-writes do not count
    assert c.maintenance.run(now) == (0, 0)  # and nothing is stale again right after
    again = crash_and_reload(
        opened,
        tmp_path,
        c,
        **{"offsets.topic.num.partitions": "1", "offsets.topic.rewrite.window.records": "10"},
    )
    assert [o.offset for o in again.fetch("once")] == list(range(50))


def test_pending_transactional_offsets_survive_pruning_and_a_crash(
    opened: list[Coordinator], tmp_path: Path, clock: ManualClock
) -> None:
    """TxnOffsetCommit's pending offsets are records like any other: re-written and
    kept by pruning, reloaded after a crash, then settled by the marker."""
    c = open_coordinator(
        opened,
        tmp_path,
        clock,
        **{"offsets.topic.num.partitions": "1", "offsets.topic.rewrite.window.records": "50"},
    )
    c.commit("tx", {0: 1})
    answers = c.service.classic.txn_commit_offsets(
        group_id="tx",
        producer_id=7,
        producer_epoch=0,
        member_id="",
        generation_id=-1,
        group_instance_id=None,
        offsets=[
            OffsetToCommit(
                topic=TOPIC.name, partition=p, offset=10 + p, leader_epoch=-1, metadata=""
            )
            for p in (0, 1)
        ],
    )
    assert [a.error for a in answers] == [None, None]
    for round_ in range(80):
        c.commit("busy", {0: round_})
    c.tick()
    log = c.partitions[0]
    assert log.log_start_offset > 0  # the first records are gone, re-written above
    c = crash_and_reload(
        opened,
        tmp_path,
        c,
        **{"offsets.topic.num.partitions": "1", "offsets.topic.rewrite.window.records": "50"},
    )
    error, fetched = c.service.classic.fetch_offsets(
        group_id="tx", partitions=[(TOPIC.name, 0), (TOPIC.name, 1)], require_stable=True
    )
    assert error is None
    assert [(f.offset, f.error) for f in fetched] == [(-1, ErrorCode.unstable_offset_commit)] * 2
    assert [(o.partition, o.offset) for o in c.fetch("tx")] == [(0, 1)]
    marker = c.service.complete_transaction(
        offsets_partition=0, producer_id=7, producer_epoch=0, commit=True
    )
    asyncio.run(marker)
    assert [(o.partition, o.offset) for o in c.fetch("tx")] == [(0, 10), (1, 11)]
    state = c.durable_state()
    again = crash_and_reload(
        opened,
        tmp_path,
        c,
        **{"offsets.topic.num.partitions": "1", "offsets.topic.rewrite.window.records": "50"},
    )
    assert again.durable_state() == state
    assert [(o.partition, o.offset) for o in again.fetch("tx")] == [(0, 10), (1, 11)]


def test_the_marker_goes_to_the_groups_offsets_partition(
    opened: list[Coordinator], tmp_path: Path, clock: ManualClock
) -> None:
    c = open_coordinator(opened, tmp_path, clock, **{"offsets.topic.num.partitions": "4"})
    groups = {c.service.offsets_partition(f"g{i}"): f"g{i}" for i in range(40)}
    assert sorted(groups) == [0, 1, 2, 3]
    for partition, group_id in groups.items():
        assert c.home(group_id) is c.partitions[partition]
        answers = c.service.classic.txn_commit_offsets(
            group_id=group_id,
            producer_id=7,
            producer_epoch=0,
            member_id="",
            generation_id=-1,
            group_instance_id=None,
            offsets=[
                OffsetToCommit(
                    topic=TOPIC.name, partition=0, offset=5, leader_epoch=-1, metadata=""
                )
            ],
        )
        assert [a.error for a in answers] == [None]
    before = [log.log_end_offset for log in c.partitions]
    asyncio.run(
        c.service.complete_transaction(
            offsets_partition=2, producer_id=7, producer_epoch=0, commit=False
        )
    )
    after = [log.log_end_offset for log in c.partitions]
    assert [a - b for a, b in zip(after, before, strict=True)] == [0, 0, 1, 0]  # one tombstone
    pending = {key for shard in c.service.shards() for key in shard.classic.txn_offsets.snapshot()}
    assert pending == {(groups[p], 7) for p in (0, 1, 3)}
