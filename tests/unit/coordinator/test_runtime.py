"""The coordinator runtime: records are written and replayed before the response,
`load` replays through the same path (replay equivalence), and the in-memory sink is
bounded by `limits.COORDINATOR_RECORDS_IN_MEMORY_MAX`."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from shoal import limits
from shoal.clock import ManualClock
from shoal.coordinator import CoordinatorRuntime, InMemoryRecordSink, RecordSinkFull
from shoal.coordinator.runtime import NO_OFFSET, record_offsets
from shoal.group import GroupCoordinatorShard, TopicMetadata
from shoal.group.records import CoordinatorRecord
from shoal.group.results import InitializeShareState

# ---- a toy shard that logs what happens, in order ----------------------------------


@dataclass
class Events:
    seen: list[str] = field(default_factory=list)


class CountingShard:
    """State = the sum of replayed integers."""

    def __init__(self, events: Events) -> None:
        self.events = events
        self.total = 0

    def replay(self, record: int, offset: int = -1, /) -> None:
        self.events.seen.append(f"replay {record}")
        self.total += record


class LoggingSink:
    def __init__(self, events: Events, *, refuse: bool = False) -> None:
        self.events = events
        self.refuse = refuse
        self.records: list[int] = []

    def append(self, records: Sequence[int], /) -> int:
        if self.refuse:
            self.events.seen.append("refused")
            raise RecordSinkFull("no room")
        self.events.seen.append(f"append {list(records)}")
        first = len(self.records)
        self.records.extend(records)
        return first


@dataclass(frozen=True)
class Result:
    """A write result whose response notes when it is read."""

    records: tuple[int, ...]
    events: Events
    effects: tuple[object, ...] = ()

    @property
    def response(self) -> str:
        self.events.seen.append("response")
        return "ok"


def counting_runtime(
    *, refuse: bool = False
) -> tuple[CoordinatorRuntime[CountingShard, int], LoggingSink, Events]:
    events = Events()
    sink = LoggingSink(events, refuse=refuse)
    runtime: CoordinatorRuntime[CountingShard, int] = CoordinatorRuntime(
        new_shard=lambda _p: CountingShard(events), sinks=[sink]
    )
    return runtime, sink, events


def test_apply_writes_then_replays_then_answers() -> None:
    runtime, sink, events = counting_runtime()
    assert runtime.write(0, lambda _shard: Result((1, 2, 3), events)).response == "ok"
    assert events.seen == ["append [1, 2, 3]", "replay 1", "replay 2", "replay 3", "response"]
    assert runtime.shard_at(0).total == 6
    assert sink.records == [1, 2, 3]


def test_a_result_without_records_touches_neither_sink_nor_shard() -> None:
    runtime, sink, events = counting_runtime()
    assert runtime.write(0, lambda _shard: Result((), events)).response == "ok"
    assert events.seen == ["response"]
    assert sink.records == [] and runtime.shard_at(0).total == 0


def test_a_refused_append_replays_nothing_and_answers_nothing() -> None:
    runtime, _, events = counting_runtime(refuse=True)
    with pytest.raises(RecordSinkFull):
        runtime.write(0, lambda _shard: Result((5,), events))
    assert events.seen == ["refused"]
    assert runtime.shard_at(0).total == 0


class OffsetShard:
    def __init__(self) -> None:
        self.replayed: list[tuple[int, int]] = []

    def replay(self, record: int, offset: int = NO_OFFSET, /) -> None:
        self.replayed.append((record, offset))


@pytest.mark.parametrize("appended", [7, NO_OFFSET, [3, 0, 9]])
def test_each_record_is_replayed_at_the_offset_the_sink_gave(appended: int | list[int]) -> None:
    """The first offset (the usual log sink), none, or one per record (a routed sink):
    `apply` replays as `record_offsets` (the reference) says."""

    class FixedSink:
        def append(self, records: Sequence[int], /) -> int | list[int]:
            return appended

    runtime: CoordinatorRuntime[OffsetShard, int] = CoordinatorRuntime(
        new_shard=lambda _p: OffsetShard(), sinks=[FixedSink()]
    )
    runtime.write(0, lambda _shard: Result((10, 11, 12), Events()))
    expected = list(zip((10, 11, 12), record_offsets(appended, 3), strict=True))
    assert runtime.shard_at(0).replayed == expected


def test_load_replays_into_a_fresh_shard() -> None:
    runtime, sink, events = counting_runtime()
    runtime.write(0, lambda _shard: Result((4, 5), events))
    live = runtime.shard_at(0)
    loaded = runtime.load_partition(0, enumerate(sink.records))
    assert loaded is runtime.shard_at(0) and loaded is not live
    assert loaded.total == live.total == 9
    assert sink.records == [4, 5], "loading appends nothing"


# ---- the group coordinator shard through the runtime ---------------------------------

TOPIC = TopicMetadata(topic_id=uuid.UUID(int=0x932), name="t", partition_count=3)


def group_runtime(
    sink: InMemoryRecordSink[CoordinatorRecord],
) -> CoordinatorRuntime[GroupCoordinatorShard, CoordinatorRecord]:
    clock = ManualClock()
    return CoordinatorRuntime(new_shard=lambda _p: GroupCoordinatorShard(clock=clock), sinks=[sink])


def join(
    runtime: CoordinatorRuntime[GroupCoordinatorShard, CoordinatorRecord], member_id: str
) -> int:
    """Join, and complete any initialisation the join asks for, as the service does."""
    result = runtime.shard_at(0).share_group_heartbeat(
        group_id="g",
        member_id=member_id,
        member_epoch=0,
        rack_id=None,
        subscribed_topic_names=["t"],
        client_id="c",
        client_host="/127.0.0.1",
    )
    response = runtime.write(0, lambda _shard: result).response
    assert response.error is None, response
    for effect in result.effects:
        assert isinstance(effect, InitializeShareState)
        done = runtime.shard_at(0).complete_initialization(
            group_id=effect.group_id,
            topic_partitions=effect.partitions_by_topic(),
            success=True,
        )
        runtime.write(0, lambda _shard, result=done: result)
    return response.member_epoch


def test_group_shard_state_is_visible_when_the_response_is() -> None:
    sink: InMemoryRecordSink[CoordinatorRecord] = InMemoryRecordSink()
    runtime = group_runtime(sink)
    runtime.write(0, lambda shard: shard.on_topics_changed(topics=[TOPIC]))
    epoch = join(runtime, "m1")
    group = runtime.shard_at(0).share_group("g")
    assert group is not None and group.members["m1"].member_epoch == epoch
    assert len(sink) > 0


def test_load_of_the_sink_equals_the_live_group_shard() -> None:
    """Replay equivalence: a shard loaded from everything written equals the live one."""
    sink: InMemoryRecordSink[CoordinatorRecord] = InMemoryRecordSink()
    runtime = group_runtime(sink)
    runtime.write(0, lambda shard: shard.on_topics_changed(topics=[TOPIC]))
    join(runtime, "m1")
    join(runtime, "m2")
    assert runtime.shard_at(0).initialized_partitions("g") == {TOPIC.topic_id: (0, 1, 2)}
    leave = runtime.shard_at(0).share_group_heartbeat(
        group_id="g",
        member_id="m1",
        member_epoch=-1,
        rack_id=None,
        subscribed_topic_names=None,
        client_id="c",
        client_host="/127.0.0.1",
    )
    assert runtime.write(0, lambda _shard: leave).response.member_epoch == -1
    live = runtime.shard_at(0).durable_state()
    loaded = runtime.load_partition(0, enumerate(sink.records))
    assert loaded.durable_state() == live


def test_in_memory_sink_is_bounded() -> None:
    assert InMemoryRecordSink[int]().records_max == limits.COORDINATOR_RECORDS_IN_MEMORY_MAX
    sink: InMemoryRecordSink[int] = InMemoryRecordSink(records_max=3)
    sink.append([1, 2])
    with pytest.raises(RecordSinkFull, match="bound of 3"):
        sink.append([3, 4])
    assert sink.records == (1, 2), "a refused append stores nothing"
    sink.append([3])
    assert sink.records == (1, 2, 3)
    with pytest.raises(RecordSinkFull):
        sink.append([4])


def test_a_full_sink_leaves_the_group_shard_unchanged() -> None:
    sink: InMemoryRecordSink[CoordinatorRecord] = InMemoryRecordSink(records_max=1)
    runtime = group_runtime(sink)
    runtime.write(0, lambda shard: shard.on_topics_changed(topics=[TOPIC]))  # no groups: no records
    before = runtime.shard_at(0).durable_state()
    with pytest.raises(RecordSinkFull):
        join(runtime, "m1")
    assert runtime.shard_at(0).durable_state() == before
    assert runtime.shard_at(0).share_group("g") is None
    assert len(sink) == 0
