"""A hypothesis state machine driving the shard like a cluster of share consumers.

Random joins, heartbeats, subscription changes, leaves, time passing (session expiry
and initialisation retries), topic creation / growth / deletion / recreation,
persister answers (success or failure), group deletions, epoch resets and reloads.
Invariants after every step: the group epoch never decreases; member epoch <=
assignment epoch <= group epoch; a current target assignment holds only initialised
partitions of topics its member subscribes to, and covers every such partition when
the topic has subscribers. At the end: replay equivalence (full and compacted log).
"""

from __future__ import annotations

import uuid

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from shoal.group.results import DeleteShareState, InitializeShareState
from shoal.group.share.group import ShareGroup
from shoal.protocol.errors import ErrorCode
from tests.unit.group.conftest import Harness, compacted

GROUPS = ["g1", "g2"]
MEMBERS = ["m1", "m2", "m3", "m4"]
TOPICS = ["a", "b", "c"]
subscriptions = st.lists(st.sampled_from(TOPICS), min_size=1, max_size=3, unique=True)


class ShareGroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.h = Harness()
        self.h.set_topics(a=1, b=2)
        self.client_epochs: dict[tuple[str, str], int] = {}
        self.max_epochs: dict[str, int] = {}

    # ---- members ------------------------------------------------------------------

    @rule(group=st.sampled_from(GROUPS), member=st.sampled_from(MEMBERS), topics=subscriptions)
    def join(self, group: str, member: str, topics: list[str]) -> None:
        response = self.h.heartbeat(group, member, 0, topics)
        self._observe(group, member, response.error, response.member_epoch)

    @rule(
        group=st.sampled_from(GROUPS),
        member=st.sampled_from(MEMBERS),
        topics=st.none() | st.lists(st.sampled_from(TOPICS), max_size=3, unique=True),
    )
    def heartbeat(self, group: str, member: str, topics: list[str] | None) -> None:
        epoch = self.client_epochs.get((group, member))
        if epoch is None:
            return
        response = self.h.heartbeat(group, member, epoch, topics)
        self._observe(group, member, response.error, response.member_epoch)

    @rule(group=st.sampled_from(GROUPS), member=st.sampled_from(MEMBERS), ahead=st.booleans())
    def stale_heartbeat(self, group: str, member: str, ahead: bool) -> None:
        shard_group = self.h.shard.share_group(group)
        if shard_group is None or member not in shard_group.members:
            return
        current = shard_group.members[member]
        epoch = current.member_epoch + 1 if ahead else current.previous_member_epoch - 1
        if epoch <= 0:
            return
        assert self.h.heartbeat(group, member, epoch).error is ErrorCode.fenced_member_epoch

    @rule(group=st.sampled_from(GROUPS), member=st.sampled_from(MEMBERS))
    def leave(self, group: str, member: str) -> None:
        response = self.h.heartbeat(group, member, -1)
        self.client_epochs.pop((group, member), None)
        assert response.error in (None, ErrorCode.unknown_member_id, ErrorCode.group_id_not_found)

    def _observe(self, group: str, member: str, error: ErrorCode | None, epoch: int) -> None:
        if error is None:
            self.client_epochs[(group, member)] = epoch
        else:
            assert error in (ErrorCode.unknown_member_id, ErrorCode.fenced_member_epoch), error
            self.client_epochs.pop((group, member), None)

    # ---- time ---------------------------------------------------------------------

    @rule(ms=st.integers(min_value=0, max_value=40_000))
    def time_passes(self, ms: int) -> None:
        self.h.advance(ms)
        expired = self.h.run(self.h.shard.expire_sessions()).response.expired_members
        for key in expired:
            self.client_epochs.pop(key, None)
        self.h.run(self.h.shard.retry_initializations())
        deadline = self.h.shard.next_deadline()
        assert deadline is None or deadline > self.h.clock.monotonic_ms()

    # ---- topics -------------------------------------------------------------------

    @rule(topic=st.sampled_from(TOPICS))
    def grow_or_create(self, topic: str) -> None:
        counts = {name: t.partition_count for name, t in self.h.cluster.items()}
        counts[topic] = min(counts.get(topic, 0) + 1, 4)
        self.h.set_topics(**counts)

    @rule(topic=st.sampled_from(TOPICS))
    def delete_topic(self, topic: str) -> None:
        counts = {name: t.partition_count for name, t in self.h.cluster.items() if name != topic}
        self.h.set_topics(**counts)

    @rule(topic=st.sampled_from(TOPICS))
    def recreate_topic(self, topic: str) -> None:
        self.h.recreate_topic(topic, 2)

    # ---- the persister answers ------------------------------------------------------

    @precondition(lambda self: bool(self.h.effects))
    @rule(data=st.data(), success=st.sampled_from([True, True, True, False]))
    def persister_answers(self, data: st.DataObject, success: bool) -> None:
        index = data.draw(st.integers(min_value=0, max_value=len(self.h.effects) - 1))
        effect = self.h.effects.pop(index)
        if isinstance(effect, InitializeShareState):
            self.h.run(
                self.h.shard.complete_initialization(
                    group_id=effect.group_id,
                    topic_partitions=effect.partitions_by_topic(),
                    success=success,
                )
            )
        elif isinstance(effect, DeleteShareState) and effect.for_group_deletion:
            self.h.run(
                self.h.shard.complete_group_deletion(group_id=effect.group_id, success=success)
            )
        else:
            assert isinstance(effect, DeleteShareState)
            self.h.run(
                self.h.shard.complete_state_deletion(
                    group_id=effect.group_id,
                    topic_ids=[t.topic_id for t in effect.topics],
                    success=success,
                )
            )

    # ---- administration and restarts ------------------------------------------------

    @rule(group=st.sampled_from(GROUPS))
    def delete_group(self, group: str) -> None:
        result = self.h.run(self.h.shard.delete_groups(group_ids=[group]))
        [outcome] = result.response.results
        if outcome.error is None and not outcome.pending:
            self.max_epochs.pop(group, None)

    @rule(group=st.sampled_from(GROUPS))
    def reset_epoch(self, group: str) -> None:
        response = self.h.run(self.h.shard.reset_epoch(group_id=group)).response
        assert response.error in (None, ErrorCode.non_empty_group)

    @rule()
    def reload(self) -> None:
        shard = self.h.new_shard()
        for record in compacted(self.h.log):
            shard.replay(record)
        assert shard.durable_state() == self.h.shard.durable_state()
        self.h.shard = shard
        self.h.effects = []
        self.h.run(shard.on_topics_changed(topics=list(self.h.cluster.values())))
        self.h.run(shard.on_loaded())

    @rule(window=st.integers(min_value=0, max_value=30), records_max=st.integers(1, 40))
    def maintain_log(self, window: int, records_max: int) -> None:
        self.h.maintain_log(window_records=window, records_max=records_max)

    # ---- invariants ---------------------------------------------------------------

    @invariant()
    def epochs_are_ordered(self) -> None:
        for group_id in GROUPS:
            group = self.h.shard.share_group(group_id)
            if group is None:
                self.max_epochs.pop(group_id, None)
                continue
            assert group.group_epoch >= self.max_epochs.get(group_id, 0)
            self.max_epochs[group_id] = group.group_epoch
            assert group.assignment_epoch <= group.group_epoch
            for member in group.members.values():
                assert member.member_epoch <= group.assignment_epoch

    @invariant()
    def current_targets_are_initialised_subscribed_and_complete(self) -> None:
        for group_id in GROUPS:
            group = self.h.shard.share_group(group_id)
            if group is None or group.assignment_epoch != group.group_epoch:
                continue
            self._check_target(group)

    def _check_target(self, group: ShareGroup) -> None:
        assigned: set[tuple[uuid.UUID, int]] = set()
        for member_id, target in group.target_assignment.items():
            member = group.members[member_id]
            subscribed = {
                topic.topic_id
                for name in member.subscribed_topic_names
                if (topic := self.h.shard.topic_image.by_name(name)) is not None
            }
            for topic_id, partitions in target.items():
                assert topic_id in subscribed
                assert partitions <= group.state_metadata.initialized_partitions(topic_id)
                assigned |= {(topic_id, p) for p in partitions}
            if member.member_epoch == group.assignment_epoch:
                assert member.assigned_partitions == target
        assert set(group.target_assignment) == set(group.members)
        for name in group.subscribed_topic_names():
            topic = self.h.shard.topic_image.by_name(name)
            if topic is None:
                continue
            for p in group.state_metadata.initialized_partitions(topic.topic_id):
                assert (topic.topic_id, p) in assigned

    def teardown(self) -> None:
        self.h.assert_replay_equivalent()


ShareGroupMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=40, deadline=None
)
TestShareGroupMachine = ShareGroupMachine.TestCase
