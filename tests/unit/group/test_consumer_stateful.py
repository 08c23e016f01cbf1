"""A hypothesis state machine driving the shard like KIP-848 consumers.

Clients join (with a subscription), leave, heartbeat (reporting what they own, or
with a lost response: the reply is dropped and the client keeps its old epoch and
partitions), go silent until their session expires; topics grow. Invariants after
every step: no partition is owned by two members at once, neither in the
coordinator's view (assigned or pending revocation) nor in the clients' (what each
last received); a client owns only partitions the coordinator counts as its.
Eventually: once every live client heartbeats a few rounds, every partition of the
subscribed topics is owned by exactly one of them. At the end: replay equivalence.
"""

from __future__ import annotations

import uuid

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from shoal.group.consumer import membership as cm
from shoal.group.consumer.group import ConsumerGroup
from shoal.group.results import ShareGroupHeartbeatResponse
from shoal.protocol.errors import ErrorCode
from tests.unit.group.conftest import Harness

GROUP = "cg"
MEMBERS = ["m1", "m2", "m3", "m4"]
TOPICS = ["a", "b"]
Owned = dict[uuid.UUID, frozenset[int]]


class ConsumerGroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.h = Harness()
        self.partitions = {"a": 3, "b": 2}
        self.h.set_topics(**self.partitions)
        self.epochs: dict[str, int] = {}
        self.owned: dict[str, Owned] = {}
        self.subscriptions: dict[str, tuple[str, ...]] = {}

    def _beat(
        self, member: str, epoch: int, topics: tuple[str, ...] | None, owned: Owned | None
    ) -> ShareGroupHeartbeatResponse:
        request = cm.HeartbeatRequest(
            group_id=GROUP,
            member_id=member,
            member_epoch=epoch,
            rebalance_timeout_ms=30_000 if epoch == 0 else -1,
            subscribed_topic_names=topics,
            owned=owned,
        )
        result = self.h.shard.consumer_group_heartbeat(
            request=request, now_ms=self.h.clock.monotonic_ms()
        )
        return self.h.run(result).response

    def _heartbeat(self, member: str, *, lost: bool = False) -> None:
        response = self._beat(member, self.epochs[member], None, self.owned[member])
        if response.error is not None:
            # Fenced or expired: the client gives up everything and rejoins at
            # epoch 0 with the same member id, as librdkafka does.
            assert response.error in (ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id)
            del self.epochs[member], self.owned[member]
            self.join(member, set(self.subscriptions[member]))
            return
        if lost:
            return
        self.epochs[member] = response.member_epoch
        if response.assignment is not None:
            self.owned[member] = {
                tp.topic_id: frozenset(tp.partitions) for tp in response.assignment
            }

    @rule(member=st.sampled_from(MEMBERS), topics=st.sets(st.sampled_from(TOPICS), min_size=1))
    def join(self, member: str, topics: set[str]) -> None:
        if member in self.epochs:
            return
        subscription = tuple(sorted(topics))
        response = self._beat(member, 0, subscription, None)
        assert response.error is None, response
        self.subscriptions[member] = subscription
        self.epochs[member] = response.member_epoch
        assert response.assignment is not None
        self.owned[member] = {tp.topic_id: frozenset(tp.partitions) for tp in response.assignment}

    @precondition(lambda self: bool(self.epochs))
    @rule(data=st.data(), lost=st.booleans())
    def heartbeat(self, data: st.DataObject, lost: bool) -> None:
        member = data.draw(st.sampled_from(sorted(self.epochs)))
        self._heartbeat(member, lost=lost)

    @precondition(lambda self: bool(self.epochs))
    @rule(data=st.data())
    def leave(self, data: st.DataObject) -> None:
        member = data.draw(st.sampled_from(sorted(self.epochs)))
        response = self._beat(member, -1, None, None)
        assert response.error is None, response
        del self.epochs[member], self.owned[member]

    @rule(data=st.data())
    def expire_one(self, data: st.DataObject) -> None:
        """Time passes beyond the session timeout; all but one member heartbeat
        in between (the silent one is dropped by the coordinator, and so is a member
        that had to revoke and did not heartbeat again within its rebalance timeout)."""
        silent = data.draw(st.sampled_from(MEMBERS))
        self.h.clock.advance(30_000)
        for member in sorted(self.epochs):
            if member != silent:
                self._heartbeat(member)
        self.h.clock.advance(30_000)
        self.h.run(self.h.shard.expire_sessions(now_ms=self.h.clock.monotonic_ms()))
        group = self.h.shard.consumer_group(GROUP)
        if silent in self.epochs:
            assert group is None or silent not in group.members
        # The silent member, and any that sat on a revocation past its rebalance
        # timeout, are gone: their next heartbeat is refused and they rejoin.
        for member in sorted(self.epochs):
            if group is None or member not in group.members:
                del self.epochs[member], self.owned[member]

    @rule(topic=st.sampled_from(TOPICS))
    def grow(self, topic: str) -> None:
        if self.partitions[topic] < 6:
            self.partitions[topic] += 1
            self.h.set_topics(**self.partitions)

    @rule(window=st.integers(min_value=0, max_value=30), records_max=st.integers(1, 40))
    def maintain_log(self, window: int, records_max: int) -> None:
        self.h.maintain_log(window_records=window, records_max=records_max)

    @invariant()
    def no_partition_has_two_owners(self) -> None:
        group = self.h.shard.consumer_group(GROUP)
        seen: dict[tuple[uuid.UUID, int], str] = {}
        if group is not None:
            for member in group.members.values():
                for assignment in (member.assigned, member.revoking):
                    for topic_id, ps in assignment.items():
                        for p in ps:
                            assert (topic_id, p) not in seen, (topic_id, p, seen)
                            seen[(topic_id, p)] = member.member_id
        clients: set[tuple[uuid.UUID, int]] = set()
        for member, owned in self.owned.items():
            for topic_id, ps in owned.items():
                for p in ps:
                    assert (topic_id, p) not in clients
                    clients.add((topic_id, p))
                    assert seen.get((topic_id, p)) == member, (member, topic_id, p)

    def teardown(self) -> None:
        # Eventually: everyone heartbeats until the group is stable.
        for _ in range(8):
            for member in sorted(self.epochs):
                self._heartbeat(member)
        group = self.h.shard.consumer_group(GROUP)
        if self.epochs:
            assert isinstance(group, ConsumerGroup) and group.state == "Stable", group
            wanted = {
                (self.h.cluster[name].topic_id, p)
                for subscription in self.subscriptions.values()
                for name in subscription
                if any(name in self.subscriptions[m] for m in self.epochs)
                for p in range(self.partitions[name])
            }
            owned = [
                (topic_id, p)
                for owned_by in self.owned.values()
                for topic_id, ps in owned_by.items()
                for p in ps
            ]
            assert sorted(owned) == sorted(wanted)
        self.h.assert_replay_equivalent()


ConsumerGroupMachine.TestCase.settings = settings(
    max_examples=200, stateful_step_count=40, deadline=None
)
TestConsumerGroupMachine = ConsumerGroupMachine.TestCase
