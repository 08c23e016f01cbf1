"""GroupService on a manual clock: effects reach the persister, the join reply carries
the partitions its in-process initialisation made, the timer driver expires
sessions, topic changes delete share state, and dynamic broker settings apply."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable

from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.coordinator import InMemoryRecordSink
from shoal.group import TopicMetadata
from shoal.group.records import CoordinatorRecord
from shoal.group.results import ShareGroupHeartbeatResponse
from shoal.protocol.errors import ErrorCode
from shoal.server.services.group_service import GroupService
from shoal.server.services.timers import TimerDriver
from shoal.share.persister import InMemoryPersister, SharePartitionKey

TOPIC = TopicMetadata(topic_id=uuid.UUID(int=0x76), name="t", partition_count=2)


class Fixture:
    def __init__(self, **overrides: object) -> None:
        self.clock = ManualClock()
        self.persister = InMemoryPersister()
        self.topics = [TOPIC]
        self.sink: InMemoryRecordSink[CoordinatorRecord] = InMemoryRecordSink()
        self.rearms = 0
        self.service = GroupService(
            clock=self.clock,
            config=BrokerConfig.from_raw(dict(overrides)),
            persister=self.persister,
            topic_source=lambda: list(self.topics),
            sinks=[self.sink],
            rearm=self.rearm,
        )
        self.timers: TimerDriver | None = None

    def rearm(self) -> None:
        self.rearms += 1
        if self.timers is not None:
            self.timers.rearm()

    def heartbeat(
        self, member_id: str, epoch: int, subscribed: list[str] | None = None
    ) -> ShareGroupHeartbeatResponse:
        return self.service.heartbeat(
            group_id="g",
            member_id=member_id,
            member_epoch=epoch,
            rack_id=None,
            subscribed_topic_names=subscribed,
            client_id="client",
            client_host="/127.0.0.1",
        )

    def summary(self, partition: int) -> tuple[int, int]:
        state = self.persister.read_summary(
            key=SharePartitionKey("g", TOPIC.topic_id, partition), leader_epoch=0
        )
        return state.state_epoch, state.start_offset


def run(fixture: Fixture, body: Callable[[], Awaitable[None]]) -> None:
    async def main() -> None:
        fixture.timers = TimerDriver(clock=fixture.clock)
        fixture.timers.add(*fixture.service.timer_sources())
        fixture.service.start()
        fixture.timers.start()
        try:
            await body()
        finally:
            await fixture.timers.stop()

    asyncio.run(main())


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_join_reply_carries_the_partitions_its_initialisation_made() -> None:
    """A deliberate difference from Kafka (module docstring of server/services/group_service.py):
    the join that starts the initialisation is answered after it completed, with the
    member's share of the now-initialised partitions; a member joining next gets its
    fair share in its own reply, and the first member learns its smaller share at its
    next heartbeat. No clock moves: nothing waits for a heartbeat interval."""
    f = Fixture()
    four = TopicMetadata(topic_id=uuid.UUID(int=0x77), name="four", partition_count=4)
    f.topics.append(four)
    f.service.topics_changed()

    async def body() -> None:
        start = f.clock.monotonic_ms()
        m1 = f.heartbeat("m1", 0, ["four"])
        assert m1.error is None
        assert m1.member_epoch == 2, "join (1), then the initialisation's bump (2)"
        assert m1.assignment is not None
        assert [(tp.topic_id, tuple(tp.partitions)) for tp in m1.assignment] == [
            (four.topic_id, (0, 1, 2, 3))
        ], "the only member gets every partition at once"
        state = f.persister.read_summary(
            key=SharePartitionKey("g", four.topic_id, 3), leader_epoch=0
        )
        assert (state.state_epoch, state.start_offset) == (1, -1), "StateEpoch = join epoch"
        m2 = f.heartbeat("m2", 0, ["four"])
        assert m2.member_epoch == 3
        assert m2.assignment is not None and len(m2.assignment[0].partitions) == 2
        again = f.heartbeat("m1", 2)
        assert again.member_epoch == 3
        assert again.assignment is not None
        assert sorted([*again.assignment[0].partitions, *m2.assignment[0].partitions]) == [
            0,
            1,
            2,
            3,
        ], "the two members split the four partitions"
        # The client heartbeats at the epoch it was given: nothing changes.
        steady = f.heartbeat("m1", 3)
        assert (steady.error, steady.member_epoch, steady.assignment) == (None, 3, None)
        assert f.clock.monotonic_ms() == start

    run(f, body)
    loaded = f.service.runtime.load_partition(0, enumerate(f.sink.records))
    assert loaded.durable_state().share_groups["g"].members["m1"].member_epoch == 3


def test_one_partition_is_shared_by_both_members_from_their_joins() -> None:
    """One partition, two members: each join reply carries it (share groups share
    partitions when members outnumber them)."""
    f = Fixture()
    one = TopicMetadata(topic_id=uuid.UUID(int=0x78), name="one", partition_count=1)
    f.topics.append(one)
    f.service.topics_changed()

    async def body() -> None:
        replies = [f.heartbeat("m1", 0, ["one"]), f.heartbeat("m2", 0, ["one"])]
        assert [
            [(tp.topic_id, tuple(tp.partitions)) for tp in reply.assignment or ()]
            for reply in replies
        ] == [[(one.topic_id, (0,))]] * 2

    run(f, body)


def test_four_members_forming_a_group_each_get_partitions_in_their_join_replies() -> None:
    """Four members join a new group on four partitions, one after another, with no
    clock movement: every join reply carries partitions (the first one all four, as
    the initialisation it started completed before the answer; each later one its
    share of the new target), and each member's next heartbeat at its epoch leaves
    the four with one partition each. Answering the first join before the
    initialisation left that member without partitions until its second heartbeat,
    a heartbeat interval (5 s by default) later."""
    f = Fixture()
    four = TopicMetadata(topic_id=uuid.UUID(int=0x79), name="four", partition_count=4)
    f.topics.append(four)
    f.service.topics_changed()

    def partitions(reply: ShareGroupHeartbeatResponse) -> tuple[int, ...]:
        assert reply.error is None, reply
        return tuple(p for tp in reply.assignment or () for p in tp.partitions)

    async def body() -> None:
        start = f.clock.monotonic_ms()
        joins = [f.heartbeat(f"m{i}", 0, ["four"]) for i in range(4)]
        assert partitions(joins[0]) == (0, 1, 2, 3), "the first member: every partition"
        assert all(partitions(reply) for reply in joins), [partitions(r) for r in joins]
        settled = [f.heartbeat(f"m{i}", joins[i].member_epoch) for i in range(4)]
        final = [
            partitions(r) if r.assignment is not None else partitions(j)
            for r, j in zip(settled, joins, strict=True)
        ]
        assert sorted(p for share in final for p in share) == [0, 1, 2, 3], final
        assert all(len(share) == 1 for share in final), final
        assert f.clock.monotonic_ms() == start

    run(f, body)


def test_failed_initialisation_answers_the_join_without_partitions() -> None:
    """When the persister refuses the initialisation, the epoch does not move and
    the join is answered as before (nothing assignable), with no second pass."""
    f = Fixture()

    def refuse(**_kwargs: object) -> ErrorCode:
        return ErrorCode.coordinator_not_available

    f.persister.initialize = refuse  # type: ignore[method-assign,assignment]

    async def body() -> None:
        response = f.heartbeat("m1", 0, ["t"])
        assert (response.error, response.member_epoch, response.assignment) == (None, 1, ())

    run(f, body)


def test_timer_source_is_the_shard_deadline_and_fires_expiry() -> None:
    """Sans-I/O: the source's deadline is the session deadline; firing it removes
    the silent member; every write re-arms."""
    f = Fixture()
    f.service.start()
    source, *_classic = f.service.timer_sources()
    before = f.rearms
    f.heartbeat("m1", 0, ["t"])
    assert f.rearms > before
    deadline = source.next_deadline_ms(f.clock.monotonic_ms())
    assert deadline == f.service.shard_of("g").session_deadline("g", "m1")
    assert deadline is not None
    f.clock.advance(deadline)
    source.fire(f.clock.monotonic_ms())
    group = f.service.shard_of("g").share_group("g")
    assert group is not None and group.members == {}


def test_timer_task_expires_silent_members() -> None:
    f = Fixture()

    async def body() -> None:
        f.heartbeat("m1", 0, ["t"])
        f.clock.advance(30_000)
        m2 = f.heartbeat("m2", 0, ["t"])
        assert m2.member_epoch == 3
        f.clock.advance(16_000)  # m1 silent for 46 s, m2 for 16 s
        await settle()
        # The loop sleeps on the real clock; a write re-arms it and it sees the deadline.
        f.service.topics_changed()
        await settle()
        group = f.service.shard_of("g").share_group("g")
        assert group is not None
        assert sorted(group.members) == ["m2"]
        assert group.group_epoch == 4
        response = f.heartbeat("m2", 3)
        assert response.member_epoch == 4
        assert response.assignment is not None
        assert response.assignment[0].partitions == (0, 1)

    run(f, body)


def test_deleted_topic_state_is_deleted() -> None:
    f = Fixture()

    async def body() -> None:
        f.heartbeat("m1", 0, ["t"])
        assert f.summary(0) == (1, -1)
        f.topics = []
        f.service.topics_changed()
        assert f.summary(0) == (0, -1), "deleted: reads as unknown"
        group = f.service.shard_of("g").share_group("g")
        assert group is not None and group.state_metadata.is_empty
        response = f.heartbeat("m1", group.members["m1"].member_epoch)
        assert response.error is None
        assert response.assignment == ()

    run(f, body)


def test_reconfigure_applies_the_new_heartbeat_interval() -> None:
    f = Fixture()

    async def body() -> None:
        assert f.heartbeat("m1", 0, ["t"]).heartbeat_interval_ms == 5_000
        f.service.reconfigure(
            BrokerConfig.from_raw(
                {
                    "group.share.min.heartbeat.interval.ms": "100",
                    "group.share.heartbeat.interval.ms": "700",
                }
            )
        )
        assert f.heartbeat("m1", 1).heartbeat_interval_ms == 700

    run(f, body)
