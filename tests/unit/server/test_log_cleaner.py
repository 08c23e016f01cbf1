"""The log cleaner service's own logic (server/services/log_cleaner.py): which partition it
picks, its key map budget, its throttle, its threads, and how it lets go of a clean
whose partition was deleted or that shutdown interrupts.

The partition logs here are small stand-ins implementing the log's cleaning contract
(`clean_plan`, `CleanPlan.run`, `finish_clean`, `cleaner_progress`): the thing under
test is the scheduler, not compaction (tests/unit/log and tests/e2e/test_compaction.py
test that with real logs).
"""

from __future__ import annotations

import asyncio
import threading
import tracemalloc
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.log.api import LogError, TopicInfo
from shoal.log.key_map import KeyMap
from shoal.protocol.errors import ErrorCode
from shoal.server.services.log_cleaner import (
    KEY_MAP_ENTRY_BYTES,
    CleanerStopped,
    LogCleaner,
    Throttler,
    key_map_entries,
    reconfiguration_refusal,
)

COMPACT = {"cleanup.policy": ["compact"]}


@dataclass
class Progress:
    dirty_ratio: float
    dirty_bytes: int = 100
    compaction_delay_ms: int = 0


@dataclass
class Stats:
    first_dirty_offset: int = 0
    end_offset: int = 100
    bytes_read: int = 1000
    bytes_written: int = 250
    keys_mapped: int = 10
    discarded: str | None = None


class Plan:
    def __init__(self, log: FakeLog) -> None:
        self.log = log
        self.thread_name: str | None = None
        self.entries: int | None = None
        self.discarded = False

    def discard(self) -> None:
        self.discarded = True

    def run(self, *, key_map_entries: int, throttle: Callable[[int], None] | None) -> str:
        self.thread_name = threading.current_thread().name
        self.entries = key_map_entries
        self.log.running.set()
        while not self.log.release.wait(0.01):
            if throttle is not None:
                throttle(1)
        return f"result of {self.log.name}"


@dataclass
class FakeLog:
    name: str
    progress: Progress
    cleanable: bool = True
    running: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    finished: list[Any] = field(default_factory=list)
    plans: list[Plan] = field(default_factory=list)
    offline: bool = False
    stuck: bool = False

    def clean_plan(self, now_wall_ms: int) -> Plan | None:
        if self.offline:
            raise LogError(ErrorCode.kafka_storage_error, "offline")
        if not self.cleanable:
            return None
        plan = Plan(self)
        self.plans.append(plan)
        return plan

    def finish_clean(self, result: Any) -> Stats:
        self.finished.append(result)
        if self.stuck:  # the clean ends where it started: nothing mapped
            return Stats(first_dirty_offset=7, end_offset=7)
        self.cleanable = False
        return Stats()

    def cleaner_progress(self) -> Progress:
        return self.progress

    def compaction_delay_ms(self, now_wall_ms: int) -> int:
        return self.progress.compaction_delay_ms


class Logs:
    def __init__(self) -> None:
        self.infos: dict[str, TopicInfo] = {}
        self.logs: dict[tuple[str, int], FakeLog] = {}

    def add(self, name: str, *logs: FakeLog, configs: dict[str, Any] | None = None) -> None:
        self.infos[name] = TopicInfo(
            name, uuid.uuid4(), len(logs), dict(COMPACT if configs is None else configs)
        )
        for index, partition_log in enumerate(logs):
            self.logs[(name, index)] = partition_log

    def delete(self, name: str) -> None:
        info = self.infos.pop(name)
        for index in range(info.partitions):
            del self.logs[(name, index)]

    def topics(self) -> list[TopicInfo]:
        return list(self.infos.values())

    def partition(self, topic: str, index: int) -> FakeLog | None:
        return self.logs.get((topic, index))


def cleaner(logs: Logs, **config: Any) -> LogCleaner:
    broker_config = BrokerConfig.from_raw({k.replace("_", "."): v for k, v in config.items()})
    return LogCleaner(logs=logs, config=lambda: broker_config, clock=ManualClock())


def test_the_filthiest_partition_is_taken_overdue_first() -> None:
    logs = Logs()
    dirty = FakeLog("dirty", Progress(dirty_ratio=0.9))
    overdue = FakeLog("overdue", Progress(dirty_ratio=0.2, compaction_delay_ms=5000))
    middling = FakeLog("middling", Progress(dirty_ratio=0.6))
    logs.add("a", dirty, middling)
    logs.add("b", overdue)
    service = cleaner(logs)
    order = []
    while (picked := service.grab()) is not None:
        order.append(picked[1].name)
    assert order == ["overdue", "dirty", "middling"]  # each then stays in progress
    assert service.state.max_compaction_delay_ms == 0  # nothing left to look at
    assert service.grab() is None


def test_the_state_of_the_last_look_is_kept_for_the_metrics() -> None:
    logs = Logs()
    logs.add("a", FakeLog("x", Progress(dirty_ratio=0.75, compaction_delay_ms=3000)))
    service = cleaner(logs)
    service.grab()
    assert service.state.max_dirty_ratio == 0.75
    assert service.state.max_compaction_delay_ms == 3000


def test_only_compacted_topics_are_looked_at_and_a_policy_change_applies() -> None:
    logs = Logs()
    deleting = FakeLog("deleting", Progress(dirty_ratio=0.9))
    logs.add("d", deleting, configs={"cleanup.policy": ["delete"]})
    service = cleaner(logs)
    assert service.grab() is None
    logs.infos["d"].configs["cleanup.policy"] = ["compact", "delete"]
    picked = service.grab()
    assert picked is not None and picked[1] is deleting


def test_the_broker_policy_applies_to_topics_without_their_own() -> None:
    logs = Logs()
    logs.add("plain", FakeLog("plain", Progress(dirty_ratio=0.9)), configs={})
    assert cleaner(logs).grab() is None
    assert cleaner(logs, log_cleanup_policy="compact").grab() is not None


def test_a_partition_with_nothing_cleanable_yields_to_the_next() -> None:
    logs = Logs()
    logs.add("a", FakeLog("young", Progress(dirty_ratio=0.9), cleanable=False))
    logs.add("b", FakeLog("ready", Progress(dirty_ratio=0.1)))
    picked = cleaner(logs).grab()
    assert picked is not None and picked[1].name == "ready"


def test_an_offline_partition_is_marked_uncleanable_and_skipped() -> None:
    logs = Logs()
    logs.add("a", FakeLog("broken", Progress(dirty_ratio=0.9), offline=True))
    service = cleaner(logs)
    assert service.grab() is None
    assert service.state.uncleanable == {("a", 0)}
    logs.logs[("a", 0)].offline = False
    assert service.grab() is None  # uncleanable stays so until its topic goes
    logs.delete("a")
    service.topics_changed()
    assert service.state.uncleanable == set()


def test_the_key_map_is_the_threads_share_of_the_dedupe_buffer() -> None:
    buffer_bytes = KEY_MAP_ENTRY_BYTES * 1000
    config = BrokerConfig.from_raw({"log.cleaner.dedupe.buffer.size": str(buffer_bytes)})
    assert key_map_entries(config, threads=1) == 900  # times the 0.9 load factor
    assert key_map_entries(config, threads=2) == 450
    tiny = BrokerConfig.from_raw({"log.cleaner.dedupe.buffer.size": "1"})
    assert key_map_entries(tiny, threads=4) == 1


def test_a_full_key_map_stays_within_the_dedupe_buffer() -> None:
    """The limit's memory: a key map filled to what 4 MiB of
    log.cleaner.dedupe.buffer.size allows takes no more than 4 MiB (tracemalloc)."""
    buffer_bytes = 4 * 1024 * 1024
    config = BrokerConfig.from_raw({"log.cleaner.dedupe.buffer.size": str(buffer_bytes)})
    entries = key_map_entries(config, threads=1)
    tracemalloc.start()
    try:
        key_map = KeyMap(entries)
        offset = 10**12  # offsets past the small-int cache, as in a long log
        while key_map.put(b"a key of some length %d" % offset, offset):
            offset += 1
        used, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(key_map) == entries
    assert used <= buffer_bytes


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> bool:
        self.slept.append(seconds)
        self.now += seconds
        return False


def test_the_throttle_sleeps_the_excess_over_the_rate() -> None:
    clock = FakeTime()
    throttle = Throttler(lambda: 1000.0, now_s=lambda: clock.now, sleep_s=clock.sleep)
    throttle(200)  # within the first window and its 300 bytes: not measured yet
    clock.now = 0.5
    throttle(1800)  # 2000 bytes in 0.5 s at 1000 B/s: 1.5 s too early
    assert clock.slept == [pytest.approx(1.5)]
    clock.now += 1.0
    throttle(900)  # 900 bytes in 1 s: under the rate
    assert len(clock.slept) == 1


def test_a_burst_is_throttled_before_its_window_ends() -> None:
    clock = FakeTime()
    throttle = Throttler(lambda: 1000.0, now_s=lambda: clock.now, sleep_s=clock.sleep)
    clock.now = 0.01
    throttle(5000)  # five seconds' worth within 10 ms
    assert clock.slept == [pytest.approx(4.99)]


def test_the_throttle_follows_a_rate_change_and_infinity_is_no_limit() -> None:
    clock = FakeTime()
    rate = [float("1.7976931348623157e308")]
    throttle = Throttler(lambda: rate[0], now_s=lambda: clock.now, sleep_s=clock.sleep)
    clock.now = 1.0
    throttle(10**12)
    assert clock.slept == []
    rate[0] = 100.0
    clock.now = 2.0
    throttle(300)  # 300 bytes in the 2 s window since the start at 100 B/s: 1 s early
    assert clock.slept == [pytest.approx(1.0)]


def test_the_throttle_raises_once_stopped_even_mid_sleep() -> None:
    throttle = Throttler(lambda: 1.0, check_interval_s=0.0)
    stopper = threading.Timer(0.05, throttle.stop)
    stopper.start()
    with pytest.raises(CleanerStopped):
        throttle(10_000)  # would sleep about 10,000 s
    with pytest.raises(CleanerStopped):
        throttle(1)


async def _until(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.005)

    await asyncio.wait_for(poll(), timeout_s)


def test_a_clean_runs_in_the_cleaners_own_thread_and_is_finished_on_the_loop() -> None:
    logs = Logs()
    partition_log = FakeLog("x", Progress(dirty_ratio=0.9))
    logs.add("t", partition_log)
    service = cleaner(logs, log_cleaner_backoff_ms="10")

    async def scenario() -> None:
        service.start()
        await asyncio.to_thread(partition_log.running.wait, 10)
        partition_log.release.set()
        await _until(lambda: bool(partition_log.finished))
        await service.close(timeout_s=10)

    asyncio.run(scenario())
    (plan,) = partition_log.plans
    assert plan.thread_name is not None and plan.thread_name.startswith("shoal-cleaner-0")
    assert plan.entries == key_map_entries(BrokerConfig.from_raw({}), threads=1)
    assert partition_log.finished == ["result of x"]
    assert service.state.cleaned_bytes == {("t", 0): 1000}
    assert service.state.last_cleans[0].bytes_written == 250


def test_a_clean_of_a_deleted_partition_is_not_finished() -> None:
    logs = Logs()
    partition_log = FakeLog("x", Progress(dirty_ratio=0.9))
    logs.add("t", partition_log)
    service = cleaner(logs, log_cleaner_backoff_ms="10")

    async def scenario() -> None:
        service.start()
        await asyncio.to_thread(partition_log.running.wait, 10)
        logs.delete("t")
        logs.add("t", FakeLog("recreated", Progress(dirty_ratio=0.0), cleanable=False))
        service.topics_changed()
        partition_log.release.set()
        await asyncio.sleep(0.2)
        await service.close(timeout_s=10)

    asyncio.run(scenario())
    assert partition_log.plans and partition_log.finished == []
    assert logs.logs[("t", 0)].finished == []


def test_shutdown_abandons_a_clean_in_flight() -> None:
    logs = Logs()
    partition_log = FakeLog("x", Progress(dirty_ratio=0.9))
    logs.add("t", partition_log)
    service = cleaner(logs)

    async def scenario() -> None:
        service.start()
        await asyncio.to_thread(partition_log.running.wait, 10)
        await asyncio.wait_for(service.close(timeout_s=10), 5)  # the plan never released

    asyncio.run(scenario())
    assert partition_log.finished == []
    assert service.threads == 0


def test_disabled_cleaner_starts_no_thread() -> None:
    logs = Logs()
    partition_log = FakeLog("x", Progress(dirty_ratio=0.9))
    logs.add("t", partition_log)
    service = cleaner(logs, log_cleaner_enable="false")

    async def scenario() -> None:
        service.start()
        await asyncio.sleep(0.05)
        await service.close(timeout_s=1)

    asyncio.run(scenario())
    assert partition_log.plans == []


def test_the_thread_count_follows_a_dynamic_change() -> None:
    logs = Logs()
    slow = [FakeLog(f"p{i}", Progress(dirty_ratio=0.9)) for i in range(3)]
    logs.add("t", *slow)
    config = [BrokerConfig.from_raw({"log.cleaner.backoff.ms": "10"})]
    service = LogCleaner(logs=logs, config=lambda: config[0], clock=ManualClock())

    async def scenario() -> list[int]:
        service.start()
        await _until(lambda: sum(p.running.is_set() for p in slow) == 1)
        counts = [service.threads]
        config[0] = BrokerConfig.from_raw(
            {"log.cleaner.backoff.ms": "10", "log.cleaner.threads": "3"}
        )
        service.reconfigure(config[0])
        await _until(lambda: all(p.running.is_set() for p in slow))
        counts.append(service.threads)
        config[0] = BrokerConfig.from_raw(
            {"log.cleaner.backoff.ms": "10", "log.cleaner.threads": "1"}
        )
        service.reconfigure(config[0])
        for partition_log in slow:
            partition_log.release.set()
        await _until(lambda: service.threads == 1)
        counts.append(service.threads)
        await service.close(timeout_s=10)
        return counts

    assert asyncio.run(scenario()) == [1, 3, 1]
    assert all(p.finished for p in slow)


def test_a_clean_without_progress_backs_off_instead_of_spinning() -> None:
    logs = Logs()
    stuck = FakeLog("stuck", Progress(dirty_ratio=0.9), stuck=True)
    stuck.release.set()
    logs.add("t", stuck)
    clock = ManualClock()
    config = BrokerConfig.from_raw({"log.cleaner.backoff.ms": "60000"})
    service = LogCleaner(logs=logs, config=lambda: config, clock=clock)

    async def scenario() -> None:
        service.start()
        await _until(lambda: len(stuck.finished) == 1)
        await asyncio.sleep(0.2)  # a spinning worker would clean it again and again
        assert len(stuck.finished) == 1
        clock.advance(60_000)
        assert service.grab() is not None  # the backoff over, it is taken again
        await service.close(timeout_s=10)

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("running", "wanted", "refused"),
    [(1, 2, None), (1, 3, "more than double the current value 1"), (4, 1, "less than half"),
     (4, 2, None), (2, 0, "at least 1"), (3, 3, None)],
)  # fmt: skip
def test_the_thread_count_changes_by_at_most_a_factor_of_two(
    running: int, wanted: int, refused: str | None
) -> None:
    current = BrokerConfig.from_raw({"log.cleaner.threads": str(running)})
    new = BrokerConfig.from_raw({"log.cleaner.threads": str(wanted)})
    refusal = reconfiguration_refusal(current, new)
    if refused is None:
        assert refusal is None
    else:
        assert refusal is not None and refused in refusal
