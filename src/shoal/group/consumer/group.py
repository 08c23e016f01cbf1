"""Consumer groups of the KIP-848 protocol: durable state and how records change it.

`ConsumerGroup` is what replaying record types 3, 5-8 and 16 builds: the group epoch
and metadata hash (3), the members' subscriptions (5), the target assignment epoch
(6) and each member's target (7), each member's current assignment with its epoch,
state and partitions pending revocation (8), and the topics each regex subscription
resolved to (16: resolved asynchronously, group/consumer/regex_refresh.py). `apply(group,
record)` is the only writer of types 5-8 and 16; type 3 creates and removes groups
in the shard.

Replay is lenient as a compacted log requires (see group/share/group.py): a value creates
what it refers to and a tombstone of something absent is a no-op.

Member states are Kafka's `MemberState` ids: STABLE (owns its target),
UNREVOKED_PARTITIONS (must give up `revoking` before it moves on) and
UNRELEASED_PARTITIONS (waits for partitions other members still own).
Invariant kept by `consumer_membership.reconcile`: no partition is in two members'
`assigned | revoking` at once.

A member with `classic` metadata speaks the classic protocol inside the consumer
group (after an online upgrade, or a classic JoinGroup to a non-empty consumer
group): group/consumer/classic_members.py serves it, group/consumer/migration.py converts groups.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from shoal.group import records as r
from shoal.group.simple_assignor import TopicPartition
from shoal.group.topic_image import Assignment, from_topic_partitions, to_topic_partitions

GROUP_TYPE_CONSUMER = "consumer"

MEMBER_STATE_STABLE = 0
MEMBER_STATE_UNREVOKED_PARTITIONS = 1
MEMBER_STATE_UNRELEASED_PARTITIONS = 2

STATE_EMPTY = "Empty"
STATE_ASSIGNING = "Assigning"
STATE_RECONCILING = "Reconciling"
STATE_STABLE = "Stable"


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupMember:
    """A member as persisted by records 5 (metadata) and 8 (current assignment)."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = 0
    state: int = MEMBER_STATE_STABLE
    assigned: Assignment = field(default_factory=dict)
    revoking: Assignment = field(default_factory=dict)
    classic: r.ClassicMemberMetadata | None = None
    """Set for a member that speaks the classic protocol (JoinGroup/SyncGroup/
    Heartbeat) in a consumer group: its session timeout and JoinGroup protocols."""

    @property
    def uses_classic(self) -> bool:
        return self.classic is not None

    def metadata_value(self) -> r.ConsumerGroupMemberMetadataValue:
        return r.ConsumerGroupMemberMetadataValue(
            instance_id=self.instance_id,
            rack_id=self.rack_id,
            client_id=self.client_id,
            client_host=self.client_host,
            subscribed_topic_names=tuple(sorted(self.subscribed_topic_names)),
            subscribed_topic_regex=self.subscribed_topic_regex,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            server_assignor=self.server_assignor,
            classic_member_metadata=self.classic,
        )

    def assignment_value(self) -> r.ConsumerGroupCurrentMemberAssignmentValue:
        return r.ConsumerGroupCurrentMemberAssignmentValue(
            member_epoch=self.member_epoch,
            previous_member_epoch=self.previous_member_epoch,
            state=self.state,
            assigned_partitions=to_topic_partitions(self.assigned),
            partitions_pending_revocation=to_topic_partitions(self.revoking),
        )


@dataclass(slots=True, kw_only=True)
class ConsumerGroup:
    """One consumer group's replayed state. Mutated only by `apply` (and the
    shard for record 3)."""

    group_id: str
    group_epoch: int = 0
    metadata_hash: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerGroupMember] = field(default_factory=dict)
    target_assignment: dict[str, Assignment] = field(default_factory=dict)
    resolved_regexes: dict[str, frozenset[str]] = field(default_factory=dict)
    """Each regex a member subscribes to -> the topic names it matched when last
    resolved (record 16). A regex not (yet) resolved contributes no topics."""

    def subscribed_regexes(self) -> frozenset[str]:
        return frozenset(
            m.subscribed_topic_regex for m in self.members.values() if m.subscribed_topic_regex
        )

    @property
    def is_empty(self) -> bool:
        return not self.members

    @property
    def state(self) -> str:
        """Kafka's ConsumerGroupState as ConsumerGroupDescribe and ListGroups show it."""
        if not self.members:
            return STATE_EMPTY
        if self.group_epoch > self.assignment_epoch:
            return STATE_ASSIGNING
        if any(
            m.state != MEMBER_STATE_STABLE or m.member_epoch != self.assignment_epoch
            for m in self.members.values()
        ):
            return STATE_RECONCILING
        return STATE_STABLE

    def owners(self) -> dict[TopicPartition, str]:
        """(topic id, partition) -> the member that owns it (assigned or revoking)."""
        owned: dict[TopicPartition, str] = {}
        for member in self.members.values():
            for assignment in (member.assigned, member.revoking):
                for topic_id, partitions in assignment.items():
                    for partition in partitions:
                        owned[(topic_id, partition)] = member.member_id
        return owned


def apply(group: ConsumerGroup, record: r.CoordinatorRecord) -> None:
    """Change `group` by one of its records of types 5-8 and 16."""
    key, value = record.key, record.value
    match key:
        case r.ConsumerGroupRegularExpressionKey(regular_expression=regex):
            if value is None:
                group.resolved_regexes.pop(regex, None)
            else:
                assert isinstance(value, r.ConsumerGroupRegularExpressionValue)
                group.resolved_regexes[regex] = frozenset(value.topics)
        case r.ConsumerGroupMemberMetadataKey(member_id=member_id):
            if value is None:
                group.members.pop(member_id, None)
                return
            assert isinstance(value, r.ConsumerGroupMemberMetadataValue)
            old = group.members.get(member_id, ConsumerGroupMember(member_id=member_id))
            group.members[member_id] = replace(
                old,
                instance_id=value.instance_id,
                rack_id=value.rack_id,
                client_id=value.client_id,
                client_host=value.client_host,
                subscribed_topic_names=frozenset(value.subscribed_topic_names),
                subscribed_topic_regex=value.subscribed_topic_regex,
                rebalance_timeout_ms=value.rebalance_timeout_ms,
                server_assignor=value.server_assignor,
                classic=value.classic_member_metadata,
            )
        case r.ConsumerGroupTargetAssignmentMetadataKey():
            if value is None:
                group.assignment_epoch = -1
            else:
                assert isinstance(value, r.ConsumerGroupTargetAssignmentMetadataValue)
                group.assignment_epoch = value.assignment_epoch
        case r.ConsumerGroupTargetAssignmentMemberKey(member_id=member_id):
            if value is None:
                group.target_assignment.pop(member_id, None)
            else:
                assert isinstance(value, r.ConsumerGroupTargetAssignmentMemberValue)
                group.target_assignment[member_id] = from_topic_partitions(value.topic_partitions)
        case r.ConsumerGroupCurrentMemberAssignmentKey(member_id=member_id):
            old_member = group.members.get(member_id)
            if value is None:
                if old_member is not None:
                    group.members[member_id] = replace(
                        old_member,
                        member_epoch=-1,
                        previous_member_epoch=-1,
                        state=MEMBER_STATE_STABLE,
                        assigned={},
                        revoking={},
                    )
                return
            assert isinstance(value, r.ConsumerGroupCurrentMemberAssignmentValue)
            base = old_member or ConsumerGroupMember(member_id=member_id)
            group.members[member_id] = replace(
                base,
                member_epoch=value.member_epoch,
                previous_member_epoch=value.previous_member_epoch,
                state=value.state,
                assigned=from_topic_partitions(value.assigned_partitions),
                revoking=from_topic_partitions(value.partitions_pending_revocation),
            )
        case _:
            raise AssertionError(f"not a consumer-group member record: {key!r}")
