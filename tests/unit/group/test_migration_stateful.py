"""A hypothesis state machine of a group upgraded from the classic protocol while
classic clients stay: two eager classic clients form a Stable classic group, a
consumer-protocol client converts it, then classic and consumer-protocol clients
join, heartbeat, rejoin when told, leave and go silent in any order (policy
`upgrade`: the group stays a consumer group; an anchor consumer member keeps it
non-empty).

Invariants after every step: no partition is owned twice in the coordinator's view
(assigned or pending revocation); what the clients hold (a classic client: its last
SyncGroup assignment until it is told to rebalance; a consumer client: its last
assignment) is disjoint and within what the coordinator counts as theirs.
Eventually every partition is held by exactly one client. At the end: replay
equivalence (the harness).
"""

from __future__ import annotations

import uuid

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from shoal.group.classic.subscriptions import read_assignment
from shoal.group.settings import ConsumerGroupSettings
from shoal.protocol.errors import ErrorCode
from tests.unit.group.conftest import Harness
from tests.unit.group.mixed_groups import Mixed

CLASSIC = ["k1", "k2", "k3"]
CONSUMERS = ["c2", "c3"]
ANCHOR = "c1"
REJOIN = (ErrorCode.rebalance_in_progress, ErrorCode.illegal_generation)
GONE = (ErrorCode.unknown_member_id, ErrorCode.fenced_instance_id)
Held = set[tuple[uuid.UUID, int]]


class MixedGroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.h = Harness()
        self.h.set_topics(t=4)
        self.m = Mixed(self.h)
        self.h.shard.update_consumer_settings(ConsumerGroupSettings(migration_policy="upgrade"))
        a, b = self.m.stable_classic_pair()
        self.classic: dict[str, tuple[str, int]] = {"k1": (a, 1), "k2": (b, 1)}
        """client -> (member id, generation) of classic clients in the group."""
        self.held: dict[str, Held] = {"k1": self._ids({0, 1}), "k2": self._ids({2, 3})}
        self.epochs: dict[str, int] = {}
        self._consumer_join(ANCHOR)

    def _ids(self, partitions: set[int]) -> Held:
        topic = self.h.cluster["t"].topic_id
        return {(topic, p) for p in partitions}

    # ---- consumer-protocol clients ------------------------------------------------

    def _consumer_join(self, client: str) -> None:
        response = self.m.beat(client, 0, ["t"])
        assert response.error is None, response
        self.epochs[client] = response.member_epoch
        self.held[client] = self._taken(response)

    def _taken(self, response: object) -> Held:
        assignment = getattr(response, "assignment", None)
        assert assignment is not None
        return {(tp.topic_id, p) for tp in assignment for p in tp.partitions}

    def _consumer_beat(self, client: str) -> None:
        owned: dict[uuid.UUID, frozenset[int]] = {}
        for topic, p in self.held[client]:
            owned[topic] = owned.get(topic, frozenset()) | {p}
        response = self.m.beat(client, self.epochs[client], owned=owned)
        if response.error is not None:
            assert response.error in (ErrorCode.fenced_member_epoch, ErrorCode.unknown_member_id)
            del self.epochs[client], self.held[client]
            self._consumer_join(client)
            return
        self.epochs[client] = response.member_epoch
        if response.assignment is not None:
            self.held[client] = self._taken(response)

    # ---- classic clients (eager: they give everything up before rejoining) --------

    def _classic_rejoin(self, client: str) -> None:
        self.held[client] = set()
        member_id = self.classic.pop(client, ("", 0))[0]
        for _ in range(3):
            joined = self.m.join(member_id, client=client, version=5)
            assert joined is not None, "a consumer group answers JoinGroup at once"
            if joined.error == ErrorCode.member_id_required:
                member_id = joined.member_id
                continue
            assert joined.error is None, joined
            generation = joined.generation_id
            synced = self.m.sync(joined.member_id, generation)
            assert synced is not None
            self.classic[client] = (joined.member_id, generation)
            if synced.error is None:
                names = read_assignment(synced.assignment) or {}
                topic = self.h.cluster["t"].topic_id
                self.held[client] = {(topic, p) for p in names.get("t", frozenset())}
            else:
                assert synced.error == ErrorCode.rebalance_in_progress, synced
            return

    def _classic_beat(self, client: str) -> None:
        if client not in self.classic:
            return
        member_id, generation = self.classic[client]
        error = self.m.heartbeat(member_id, generation)
        if error in REJOIN:
            self._classic_rejoin(client)
        elif error in GONE:
            del self.classic[client]
            self.held[client] = set()
            self._classic_rejoin(client)
        else:
            assert error is None, error

    # ---- rules ----------------------------------------------------------------------

    @rule(client=st.sampled_from(CLASSIC))
    def classic_heartbeat(self, client: str) -> None:
        if client in self.classic:
            self._classic_beat(client)
        else:
            self._classic_rejoin(client)

    @rule(client=st.sampled_from(CLASSIC))
    def classic_leave(self, client: str) -> None:
        if client not in self.classic:
            return
        member_id, _ = self.classic.pop(client)
        self.m.leave(member_id)
        self.held[client] = set()

    @rule(client=st.sampled_from([ANCHOR, *CONSUMERS]))
    def consumer_heartbeat(self, client: str) -> None:
        if client in self.epochs:
            self._consumer_beat(client)
        else:
            self._consumer_join(client)

    @rule(client=st.sampled_from(CONSUMERS))
    def consumer_leave(self, client: str) -> None:
        if client in self.epochs:
            assert self.m.beat(client, -1).error is None
            del self.epochs[client], self.held[client]

    @rule(silent=st.sampled_from([*CLASSIC, *CONSUMERS]))
    def expire_one(self, silent: str) -> None:
        """Time passes past the classic session (10 s) and the consumer one (45 s);
        everyone else heartbeats in between."""
        for _ in range(10):
            self.m.advance(5_000)
            for client in sorted(self.classic):
                if client != silent:
                    self._classic_beat(client)
            for client in sorted(self.epochs):
                if client != silent:
                    self._consumer_beat(client)
        group = self.m.consumer()
        if silent in self.classic and self.classic[silent][0] not in group.members:
            del self.classic[silent]
            self.held[silent] = set()
        if silent in self.epochs and silent not in group.members:
            del self.epochs[silent], self.held[silent]

    # ---- checks -----------------------------------------------------------------------

    def _member_of(self, client: str) -> str:
        return self.classic[client][0] if client in self.classic else client

    @invariant()
    def no_partition_has_two_owners(self) -> None:
        assert self.h.shard.group_type("g") == "consumer"
        group = self.m.consumer()
        seen: dict[tuple[uuid.UUID, int], str] = {}
        for member in group.members.values():
            for assignment in (member.assigned, member.revoking):
                for topic_id, ps in assignment.items():
                    for p in ps:
                        assert (topic_id, p) not in seen, (topic_id, p, seen)
                        seen[(topic_id, p)] = member.member_id
        clients: Held = set()
        for client, held in self.held.items():
            assert not held & clients, (client, held, clients)
            clients |= held
            for tp in held:
                assert seen.get(tp) == self._member_of(client), (client, tp, seen)

    def teardown(self) -> None:
        for _ in range(8):
            for client in CLASSIC:
                if client in self.classic:
                    self._classic_beat(client)
            for client in sorted(self.epochs):
                self._consumer_beat(client)
        group = self.m.consumer()
        assert group.state == "Stable", group
        held = sorted(tp for client_held in self.held.values() for tp in client_held)
        assert held == sorted(self._ids({0, 1, 2, 3}))
        self.h.assert_replay_equivalent()


MixedGroupMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None
)
TestMixedGroupMachine = MixedGroupMachine.TestCase
