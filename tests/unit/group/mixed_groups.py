"""`Mixed`: the unit harness's shard driven by classic requests as well as
consumer-protocol heartbeats, for the migration tests (test_migration*.py)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from shoal.group.classic.state import (
    STABLE,
    JoinRequest,
    JoinResponse,
    LeavingMember,
    SyncRequest,
    SyncResponse,
    classic_result,
    completions_of,
)
from shoal.group.classic.subscriptions import read_assignment, write_assignment
from shoal.group.consumer import membership as cm
from shoal.group.consumer.group import ConsumerGroup
from shoal.group.results import GroupResult, ShareGroupHeartbeatResponse
from shoal.protocol.errors import ErrorCode
from tests.support.classic_groups import consumer_subscription
from tests.unit.group.conftest import Harness

SESSION_MS = 10_000
REBALANCE_MS = 30_000
DELAY_MS = 3_000
C = "consumer-c"


class Mixed:
    """The harness's shard driven with classic requests too: their records are
    written and replayed like the rest, parked answers collected."""

    def __init__(self, harness: Harness) -> None:
        self.h = harness
        harness.run(harness.shard.on_loaded(now_ms=0))
        counter = iter(range(1, 1000))
        harness.shard.classic.groups.new_member_id = lambda client: f"{client}-{next(counter)}"
        self.joins: dict[str, JoinResponse] = {}
        self.syncs: dict[str, SyncResponse] = {}

    @property
    def now(self) -> int:
        return self.h.clock.monotonic_ms()

    def apply(self, result: GroupResult[Any]) -> Any:
        for record in result.records:
            self.h.write(record)
        for c in [*completions_of(result), *self.h.shard.classic.groups.take_abandoned()]:
            if c.join is not None:
                self.joins[c.member_id] = c.join
            if c.sync is not None:
                self.syncs[c.member_id] = c.sync
        return result.response

    def join(
        self,
        member_id: str = "",
        *,
        client: str = "k",
        topics: Collection[str] = ("t",),
        owned: dict[str, list[int]] | None = None,
        version: int = 5,
        protocol_type: str = "consumer",
        instance: str | None = None,
    ) -> JoinResponse | None:
        return self.apply(  # type: ignore[no-any-return]
            self.h.shard.classic.join(
                JoinRequest(
                    group_id="g",
                    member_id=member_id,
                    group_instance_id=instance,
                    protocol_type=protocol_type,
                    protocols=(("range", consumer_subscription(list(topics), owned)),),
                    session_timeout_ms=SESSION_MS,
                    rebalance_timeout_ms=REBALANCE_MS,
                    client_id=client,
                    client_host="/127.0.0.1",
                    api_version=version,
                ),
                now_ms=self.now,
            )
        )

    def sync(
        self, member_id: str, generation: int, assignments: dict[str, bytes] | None = None
    ) -> SyncResponse | None:
        return self.apply(  # type: ignore[no-any-return]
            self.h.shard.classic.sync(
                SyncRequest(
                    group_id="g",
                    member_id=member_id,
                    generation_id=generation,
                    group_instance_id=None,
                    protocol_type="consumer",
                    protocol_name="range",
                    assignments=assignments or {},
                ),
                now_ms=self.now,
            )
        )

    def heartbeat(
        self, member_id: str, generation: int, *, instance: str | None = None
    ) -> ErrorCode | None:
        return self.h.shard.classic.heartbeat(  # type: ignore[no-any-return]
            group_id="g",
            member_id=member_id,
            generation_id=generation,
            group_instance_id=instance,
            now_ms=self.now,
        )

    def leave(self, member_id: str) -> Any:
        return self.apply(
            self.h.shard.classic.leave(
                group_id="g",
                members=[LeavingMember(member_id=member_id, group_instance_id=None)],
                now_ms=self.now,
            )
        )

    def advance(self, ms: int) -> None:
        self.h.advance(ms)
        self.apply(self.h.shard.classic.groups.expire(now_ms=self.now))
        self.h.run(self.h.shard.expire_sessions(now_ms=self.now))

    def beat(
        self, member: str, epoch: int, topics: Collection[str] | None = None, **kw: Any
    ) -> ShareGroupHeartbeatResponse:
        request = cm.HeartbeatRequest(
            group_id="g",
            member_id=member,
            member_epoch=epoch,
            rebalance_timeout_ms=REBALANCE_MS if epoch == 0 else -1,
            subscribed_topic_names=tuple(topics) if topics is not None else None,
            client_id="rdkafka",
            client_host="/127.0.0.1",
            **kw,
        )
        response = self.h.run(
            self.h.shard.consumer_group_heartbeat(request=request, now_ms=self.now)
        ).response
        self.apply(classic_result(response=None))  # collect answers owed to parked requests
        return response

    def stable_classic_pair(self) -> tuple[str, str]:
        """Two classic members (a leads) Stable at generation 1, a owning t-0,1 and
        b owning t-2,3 (range assignments as a client leader sends them)."""
        assert self.join(client="a", version=3) is None
        assert self.join(client="b", version=3) is None
        self.advance(DELAY_MS)
        self.advance(DELAY_MS)
        a, b = "a-1", "b-2"
        assert self.joins[a].generation_id == 1 and self.joins[a].leader == a
        assert self.sync(b, 1) is None
        self.sync(
            a,
            1,
            {
                a: write_assignment({"t": [0, 1]}, version=1),
                b: write_assignment({"t": [2, 3]}, version=1),
            },
        )
        assert self.h.shard.classic.groups.state_of("g") == STABLE
        assert read_assignment(self.syncs[b].assignment) == {"t": frozenset({2, 3})}
        return a, b

    def keep_alive(self, member_id: str) -> None:
        """A classic member of the consumer group heartbeats; told to, it rejoins
        (eager: owning nothing) and syncs, as librdkafka does."""
        group = self.h.shard.consumer_group("g")
        if group is None or member_id not in group.members:
            return
        if self.heartbeat(member_id, group.members[member_id].member_epoch) is None:
            return
        joined = self.join(member_id)
        if joined is not None and joined.error is None:
            self.sync(member_id, joined.generation_id)

    def keep_consumer_alive(self, member_id: str) -> None:
        """A consumer-protocol member heartbeats, reporting what it may keep."""
        member = self.consumer().members[member_id]
        self.beat(member_id, member.member_epoch, owned=dict(member.assigned))

    def consumer(self) -> ConsumerGroup:
        group = self.h.shard.consumer_group("g")
        assert group is not None
        return group
