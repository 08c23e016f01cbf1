"""The coordinator runtime hosting one shard per partition, on the manual clock:
placement, loading by replay, the write order (append, replay, effects, answer), a
refused append touching nothing, timed writes (interval and shard deadline, with the
retry backoff), the append linger's marks and flushes (and the reload after a lost
batch), and pruning (what the shards need, what may be deleted now)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from shoal.clock import ManualClock
from shoal.coordinator import (
    CoordinatorResult,
    CoordinatorRuntime,
    InMemoryRecordSink,
    PartitionNotLoaded,
    Placement,
    RecordSinkError,
    RecordSinkFull,
    RecordSinkUnavailable,
    TimedWrite,
)
from shoal.coordinator.append_linger import LingeringRecordSink
from shoal.coordinator.log_sink import CoordinatorBatchTooLarge, read_log
from shoal.coordinator.placement import partition_for
from shoal.coordinator.runtime import TIMED_WRITE_RETRY_MS
from shoal.log.api import LogError
from shoal.log.partition import PartitionLog
from shoal.protocol.errors import ErrorCode

Record = tuple[str, int]
"""A toy record: (key, value); value 0 deletes the key."""


@dataclass
class Journal:
    """Everything that happened, in order, across shards and sinks."""

    seen: list[str] = field(default_factory=list)


class KeyShard:
    """State = the latest value per key; remembers each key's offset (for pruning)."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.values: dict[str, int] = {}
        self.offsets: dict[str, int] = {}
        self.end = 0
        self.deadline: int | None = None

    def replay(self, record: Record, offset: int = -1, /) -> None:
        key, value = record
        self.journal.seen.append(f"replay {key}={value}@{offset}")
        self.end = max(self.end, offset + 1)
        if key == "expired":
            self.deadline = None
        if value:
            self.values[key] = value
            self.offsets[key] = offset
        else:
            self.values.pop(key, None)
            self.offsets.pop(key, None)

    def put(self, key: str, value: int, *effects: object) -> CoordinatorResult[Record, str]:
        return CoordinatorResult(((key, value),), f"put {key}", tuple(effects))

    def prune_offset(self) -> int | None:
        return min(self.offsets.values(), default=self.end if self.end else None)


class JournalSink:
    """An in-memory sink (offsets = positions) that notes appends and can refuse."""

    def __init__(self, journal: Journal, name: str) -> None:
        self.journal = journal
        self.name = name
        self.records: list[Record] = []
        self.refuse = False

    def append(self, records: Sequence[Record], /) -> int:
        if self.refuse:
            self.journal.seen.append(f"{self.name} refused")
            raise RecordSinkFull("refused")
        self.journal.seen.append(f"{self.name} append {len(records)}")
        first = len(self.records)
        self.records.extend(records)
        return first


def hosting(
    partitions: int = 3,
) -> tuple[CoordinatorRuntime[KeyShard, Record], list[JournalSink], Journal]:
    journal = Journal()
    sinks = [JournalSink(journal, f"p{i}") for i in range(partitions)]
    runtime: CoordinatorRuntime[KeyShard, Record] = CoordinatorRuntime(
        new_shard=lambda _p: KeyShard(journal),
        sinks=sinks,
        name="toy",
        loader=lambda index: enumerate(sinks[index].records),
        prune_offset=KeyShard.prune_offset,
    )
    return runtime, sinks, journal


# ---- placement and loading -------------------------------------------------------------


def test_a_key_lives_on_the_partition_kafka_places_it_on() -> None:
    runtime, _, _ = hosting(partitions=7)
    for key in ("alpha", "txn-1", "", "groupé"):
        assert runtime.partition_of(key) == partition_for(key, 7)


def test_placement_keeps_at_most_its_bound_and_stays_correct() -> None:
    placement: Placement[str] = Placement(5, key_text=str.upper, kept=2)
    for key in ["a", "b", "c", "a", "d"]:
        assert placement.partition_of(key) == partition_for(key.upper(), 5)
        assert len(placement) <= 2
    unkept: Placement[str] = Placement(5, key_text=str)
    assert unkept.partition_of("a") == partition_for("a", 5) and len(unkept) == 0


def test_a_partition_loaded_from_its_log_equals_the_live_shard() -> None:
    runtime, _sinks, _ = hosting()
    for n, key in enumerate(["a", "b", "c", "d", "e", "a"]):
        runtime.write(runtime.partition_of(key), lambda shard, k=key, v=n + 1: shard.put(k, v))
    live = {p: dict(shard.values) for p, shard in runtime.shards()}
    for partition in range(runtime.partitions):
        before = runtime.shard_at(partition)
        loaded = runtime.load_partition(partition)  # through the loader
        assert loaded is runtime.shard_at(partition) and loaded is not before
        assert loaded.values == live[partition]


def test_an_unloaded_partition_answers_not_loaded() -> None:
    runtime, sinks, _ = hosting()
    runtime.unload(1)
    assert not runtime.hosted(1)
    with pytest.raises(PartitionNotLoaded):
        runtime.write(1, lambda shard: shard.put("k", 1))
    with pytest.raises(PartitionNotLoaded):
        runtime.read(1, lambda shard: shard.values)
    assert sinks[1].records == []
    assert [p for p, _ in runtime.shards()] == [0, 2]
    runtime.load_partition(1, [])
    assert runtime.write(1, lambda shard: shard.put("k", 1)).response == "put k"


# ---- the write path ---------------------------------------------------------------------


def test_a_write_appends_then_replays_then_hands_effects_then_answers() -> None:
    runtime, sinks, journal = hosting()
    handled: list[tuple[int, tuple[object, ...], dict[str, int]]] = []

    def on_effects(partition: int, effects: tuple[object, ...]) -> None:
        journal.seen.append(f"effects {effects}")
        handled.append((partition, effects, dict(runtime.shard_at(partition).values)))

    runtime.on_effects(on_effects)
    result = runtime.write(2, lambda shard: shard.put("k", 5, "wake"))
    journal.seen.append(f"answer {result.response}")
    assert journal.seen == ["p2 append 1", "replay k=5@0", "effects ('wake',)", "answer put k"]
    assert handled == [(2, ("wake",), {"k": 5})], "the handler sees the replayed state"
    assert result.effects == ("wake",) and sinks[2].records == [("k", 5)]


def test_a_refused_append_touches_nothing() -> None:
    runtime, sinks, journal = hosting()
    handled: list[object] = []
    runtime.on_effects(lambda _p, effects: handled.extend(effects))
    sinks[0].refuse = True
    with pytest.raises(RecordSinkFull):
        runtime.write(0, lambda shard: shard.put("k", 5, "wake"))
    assert journal.seen == ["p0 refused"]
    assert runtime.shard_at(0).values == {} and handled == []


def test_a_result_without_records_touches_no_sink_but_its_effects_are_handled() -> None:
    runtime, sinks, journal = hosting()
    handled: list[object] = []
    runtime.on_effects(lambda _p, effects: handled.extend(effects))
    result = runtime.write(0, lambda _shard: CoordinatorResult((), "nothing", ("resend",)))
    assert result.response == "nothing" and handled == ["resend"]
    assert journal.seen == [] and sinks[0].records == []


def test_write_all_skips_a_refusing_partition_and_read_all_visits_every_shard() -> None:
    runtime, sinks, _ = hosting()
    sinks[1].refuse = True
    written = runtime.write_all(lambda shard: shard.put("x", 1))
    assert [p for p, _ in written] == [0, 2]
    assert runtime.read_all(lambda shard: shard.values.get("x")) == [1, None, 1]


# ---- timed writes -----------------------------------------------------------------------


def test_an_interval_timed_write_runs_on_every_partition_as_a_write() -> None:
    runtime, sinks, _ = hosting()
    handled: list[tuple[int, tuple[object, ...]]] = []
    runtime.on_effects(lambda p, effects: handled.append((p, effects)))
    runtime.add_timed(
        TimedWrite(
            "tick",
            operation=lambda shard, now: shard.put("tick", now, f"ticked {now}"),
            interval_ms=lambda: 100,
        )
    )
    assert runtime.next_deadline(1_000) == 1_100, "first due one interval after asked"
    assert runtime.fire(1_099).names == []
    fired = runtime.fire(1_100)
    assert fired.names == ["tick"] and fired.prune == {}
    assert [s.records for s in sinks] == [[("tick", 1_100)]] * 3
    assert handled == [(p, ("ticked 1100",)) for p in range(3)]
    assert runtime.next_deadline(1_100) == 1_200


def test_due_now_runs_an_interval_timed_write_at_the_next_fire_then_the_interval_restarts() -> None:
    runtime, sinks, _ = hosting(partitions=2)
    runs: list[int] = []

    def tick(shard: KeyShard, now: int) -> CoordinatorResult[Record, str]:
        runs.append(now)
        if len(runs) == 1:
            runtime.due_now("tick")  # asked while it runs: answered by this run
        return shard.put("tick", now)

    runtime.add_timed(TimedWrite("tick", operation=tick, interval_ms=lambda: 100))
    assert runtime.next_deadline(1_000) == 1_100
    runtime.due_now("tick")
    assert runtime.next_deadline(1_010) == 1_010, "due at once"
    assert runtime.fire(1_010).names == ["tick"]
    assert runs == [1_010, 1_010] and [s.records for s in sinks] == [[("tick", 1_010)]] * 2
    assert runtime.next_deadline(1_010) == 1_110, "the interval restarts from the run"
    assert runtime.fire(1_100).names == []


def test_a_timed_re_write_goes_in_appends_halved_while_too_large() -> None:
    journal = Journal()

    class SmallBatches(JournalSink):
        def append(self, records: Sequence[Record], /) -> int:
            if len(records) > 3:
                self.journal.seen.append(f"{self.name} too large {len(records)}")
                raise CoordinatorBatchTooLarge("too large")
            return super().append(records)

    sink = SmallBatches(journal, "p0")
    runtime: CoordinatorRuntime[KeyShard, Record] = CoordinatorRuntime(
        new_shard=lambda _p: KeyShard(journal), sinks=[sink]
    )
    starts: list[int] = []
    records = tuple((f"k{i}", 1) for i in range(10))
    runtime.add_timed(
        TimedWrite(
            "rewrite",
            operation=lambda _shard, _now: CoordinatorResult(records, len(records)),
            interval_ms=lambda: 10,
            records_per_append=8,
            start=starts.append,
        )
    )
    runtime.next_deadline(0)
    assert runtime.fire(10).names == ["rewrite"] and starts == [10]
    appends = [line for line in journal.seen if " append " in line or "too large" in line]
    assert appends == [
        "p0 too large 8",
        "p0 too large 4",
        "p0 append 2",
        "p0 append 2",
        "p0 too large 4",
        "p0 append 2",
        "p0 append 2",
        "p0 append 2",
    ]
    assert sink.records == list(records) and runtime.shard_at(0).values == dict(records)


def test_a_shard_deadline_is_a_timed_write_and_a_refusal_backs_off() -> None:
    runtime, sinks, _ = hosting()

    def expire(_shard: KeyShard, now: int) -> CoordinatorResult[Record, int]:
        return CoordinatorResult((("expired", now),), 1)

    runtime.add_timed(TimedWrite("expire", operation=expire, deadline_ms=lambda s: s.deadline))
    assert runtime.next_deadline(0) is None
    runtime.shard_at(1).deadline = 50
    runtime.shard_at(2).deadline = 55
    assert runtime.next_deadline(0) == 50
    sinks[1].refuse = True
    assert runtime.fire(60).names == ["expire"]
    assert sinks[1].records == [] and sinks[2].records == [("expired", 60)]
    assert runtime.shard_at(2).deadline is None, "its deadline moved by replay"
    assert runtime.shard_at(1).deadline == 50, "refused: the shard still needs it"
    assert runtime.next_deadline(60) == 60 + TIMED_WRITE_RETRY_MS, "backed off, not busy"
    sinks[1].refuse = False
    runtime.fire(60 + TIMED_WRITE_RETRY_MS)
    assert sinks[1].records == [("expired", 60 + TIMED_WRITE_RETRY_MS)]
    assert sinks[2].records == [("expired", 60)]
    assert runtime.next_deadline(2_000) is None


def test_a_maintenance_pass_reports_what_each_partition_may_delete() -> None:
    runtime, sinks, _ = hosting(partitions=2)
    for value, key in enumerate(["a", "b", "a", "b", "a"], start=1):
        runtime.write(0, lambda shard, k=key, v=value: shard.put(k, v))
    runtime.write(1, lambda shard: shard.put("z", 1))
    runtime.write(1, lambda shard: shard.put("z", 0))

    def rewrite_oldest(shard: KeyShard, _now: int) -> CoordinatorResult[Record, int]:
        if not shard.offsets:
            return CoordinatorResult((), 0)
        oldest = min(shard.offsets, key=shard.offsets.__getitem__)
        return CoordinatorResult(((oldest, shard.values[oldest]),), 1)

    runtime.add_timed(
        TimedWrite("maintain", operation=rewrite_oldest, interval_ms=lambda: 10, then_prune=True)
    )
    runtime.next_deadline(0)
    fired = runtime.fire(10)
    # partition 0: b's latest (offset 3) is re-written at 5; a's latest is at 4, so
    # nothing below 4 is needed; partition 1 holds only a deleted key: all of it goes
    assert sinks[0].records[-1] == ("b", 4)
    assert fired.prune == {0: 4, 1: 2} == runtime.prune_offsets()


# ---- the append linger ------------------------------------------------------------------


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def logs(tmp_path: Path, clock: ManualClock) -> Iterator[list[PartitionLog]]:
    opened = [
        PartitionLog.open(directory=tmp_path / f"toy-{i}", config={"retention.ms": -1}, clock=clock)
        for i in range(2)
    ]
    yield opened
    for log in opened:
        log.abandon()


def encode(record: Record) -> tuple[bytes, bytes | None]:
    return record[0].encode(), str(record[1]).encode()


def decode(key: bytes, value: bytes | None) -> Record:
    assert value is not None
    return key.decode(), int(value)


def test_linger_marks_flushes_and_pruning_waits_for_the_log(
    logs: list[PartitionLog], clock: ManualClock
) -> None:
    journal = Journal()
    sinks = [LingeringRecordSink(log=log, encode=encode, clock=clock, linger_ms=5) for log in logs]
    runtime: CoordinatorRuntime[KeyShard, Record] = CoordinatorRuntime(
        new_shard=lambda _p: KeyShard(journal),
        sinks=sinks,
        loader=lambda i: read_log(logs[i], decode, buffer_bytes=1 << 16),
        prune_offset=KeyShard.prune_offset,
    )
    flushed: list[tuple[int, RecordSinkError | None]] = []
    runtime.on_flushed(lambda p, failure: flushed.append((p, failure)))
    mark = runtime.appends_staged()
    runtime.write(1, lambda shard: shard.put("a", 1))
    runtime.write(1, lambda shard: shard.put("a", 2))
    assert runtime.appends_staged() == mark + 2
    assert runtime.unwritten() == [1] and runtime.staged(1) and not runtime.staged(0)
    assert runtime.shard_at(1).values == {"a": 2}, "replayed at once, ahead of the log"
    assert logs[1].log_end_offset == 0
    assert runtime.prune_offsets() == {1: 1} and runtime.prunable() == {}
    assert runtime.flush_deadline() == clock.monotonic_ms() + 5
    assert runtime.flush_due(clock.monotonic_ms() + 4) == 0
    assert runtime.flush_due(clock.monotonic_ms() + 5) == 1
    assert flushed == [(1, None)] and runtime.unwritten() == [] and logs[1].log_end_offset == 2
    assert runtime.prunable() == {1: 1}
    assert runtime.flush_deadline() is None


def test_a_lost_batch_reloads_the_partition_from_its_log(
    logs: list[PartitionLog], clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = Journal()
    sinks = [LingeringRecordSink(log=log, encode=encode, clock=clock, linger_ms=5) for log in logs]
    runtime: CoordinatorRuntime[KeyShard, Record] = CoordinatorRuntime(
        new_shard=lambda _p: KeyShard(journal),
        sinks=sinks,
        loader=lambda i: read_log(logs[i], decode, buffer_bytes=1 << 16),
    )
    flushed: list[tuple[int, RecordSinkError | None]] = []
    runtime.on_flushed(lambda p, failure: flushed.append((p, failure)))
    runtime.write(0, lambda shard: shard.put("a", 1))
    runtime.flush_all()
    runtime.write(0, lambda shard: shard.put("a", 2))
    assert runtime.shard_at(0).values == {"a": 2}

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise LogError(ErrorCode.kafka_storage_error, "injected")

    monkeypatch.setattr(logs[0], "append", refuse)
    runtime.flush_all()
    assert [p for p, _ in flushed] == [0, 0]
    assert flushed[0][1] is None and isinstance(flushed[1][1], RecordSinkUnavailable)
    assert runtime.shard_at(0).values == {"a": 1}, "rebuilt from what the log holds"


def test_a_one_partition_runtime_writes_and_loads_back() -> None:
    journal = Journal()
    sink: InMemoryRecordSink[Record] = InMemoryRecordSink()
    runtime: CoordinatorRuntime[KeyShard, Record] = CoordinatorRuntime(
        new_shard=lambda _p: KeyShard(journal), sinks=[sink]
    )
    assert runtime.partitions == 1
    assert runtime.write(0, lambda shard: shard.put("k", 3)).response == "put k"
    assert runtime.load_partition(0, enumerate(sink.records)).values == {"k": 3}


def test_append_then_replay_appended_splits_a_write_around_the_hosts_durability_wait() -> None:
    journal = Journal()
    sinks = [JournalSink(journal, f"p{i}") for i in range(2)]
    runtime: CoordinatorRuntime[KeyShard, Record] = CoordinatorRuntime(
        new_shard=lambda _p: KeyShard(journal), sinks=sinks
    )
    records = runtime.read(1, lambda shard: shard.put("k", 3)).records
    appended = runtime.append(1, records)
    assert sinks[1].records == list(records), "appended through the partition's sink"
    assert runtime.shard_at(1).values == {}, "nothing replayed before the host says so"
    runtime.replay_appended(1, records, appended)
    assert runtime.shard_at(1).values == {"k": 3}
    assert runtime.shard_at(0).values == {}
    runtime.unload(1)
    with pytest.raises(PartitionNotLoaded):
        runtime.append(1, records)
    with pytest.raises(PartitionNotLoaded):
        runtime.replay_appended(1, records, appended)


def test_new_shard_is_told_its_partition_at_hosting_and_at_every_load() -> None:
    built: list[int] = []
    journal = Journal()

    def new_shard(partition: int) -> KeyShard:
        built.append(partition)
        return KeyShard(journal)

    runtime: CoordinatorRuntime[KeyShard, Record] = CoordinatorRuntime(
        new_shard=new_shard, sinks=[JournalSink(journal, f"p{i}") for i in range(3)]
    )
    runtime.load_partition(2, [])
    assert built == [0, 1, 2, 2]
