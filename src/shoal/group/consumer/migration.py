"""Online conversion between classic and consumer groups (KIP-848 upgrade/downgrade).

Kafka 4.2's rules, governed by `group.consumer.migration.policy` (DISABLED, UPGRADE,
DOWNGRADE, BIDIRECTIONAL; the default BIDIRECTIONAL):

- **Upgrade.** A ConsumerGroupHeartbeat joining (epoch 0) a classic group: an empty
  classic group is simply replaced (its GroupMetadata tombstoned, whatever the
  policy); a non-empty one is converted when the policy allows upgrades, the group
  uses the embedded consumer protocol (`protocol_type` "consumer") and it has no
  more members than `group.consumer.max.size`; otherwise GROUP_ID_NOT_FOUND ("Group
  g is not a consumer group"). The conversion writes the GroupMetadata tombstone,
  then the consumer group as Kafka's `createConsumerGroupRecords`: each member's
  metadata (5, with its ClassicMemberMetadata), the group epoch (3, the classic
  generation), each member's target (7, its classic assignment), the target epoch
  (6), each member's current assignment (8: Stable at the generation). The joining
  member's heartbeat then runs on that group (its records follow), bumping the
  epoch and recomputing the target; the classic members learn of it through
  REBALANCE_IN_PROGRESS on Heartbeat (group/consumer/classic_members.py).
- **Downgrade.** When members leave a consumer group (leave, session or revocation
  timeout) and every remaining member speaks the classic protocol, the policy
  allows downgrades and they are no more than `group.max.size`, the group becomes
  a classic group again: tombstones of every member (8, 7, 5), the target epoch (6)
  and the group (3), then a GroupMetadata record (generation = the group epoch,
  protocol chosen by the members' vote, each member's current assignment). Its
  replay materialises the classic group, which starts a rebalance.

Pure functions over replayed state; the shard and the classic coordinator call
them and write what they return.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable, Sequence

from shoal.group import records as r
from shoal.group.classic.state import ClassicGroup, ClassicMember
from shoal.group.classic.subscriptions import read_assignment, read_subscription, write_assignment
from shoal.group.consumer import membership as consumer_membership
from shoal.group.consumer.group import (
    MEMBER_STATE_STABLE,
    ConsumerGroup,
    ConsumerGroupMember,
)
from shoal.group.consumer.group import apply as apply_consumer
from shoal.group.settings import ConsumerGroupSettings
from shoal.group.topic_image import (
    Assignment,
    TopicImage,
    metadata_hash,
    normalise,
    to_topic_partitions,
)

CONSUMER_PROTOCOL_TYPE = "consumer"
log = logging.getLogger(__name__)


# ---- upgrade ------------------------------------------------------------------------


def upgrade_error(group: ClassicGroup, *, settings: ConsumerGroupSettings) -> str | None:
    """Why the non-empty classic `group` may not become a consumer group, or None."""
    prefix = f"Cannot upgrade classic group {group.group_id} to consumer group because"
    if not settings.upgrade_enabled:
        return f"{prefix} the online upgrade is disabled."
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return f"{prefix} the group does not use the consumer embedded protocol."
    if len(group.members) > settings.max_size:
        return f"{prefix} the group size exceeds the consumer group maximum size."
    return None


def upgrade(
    group: ClassicGroup, *, image: TopicImage
) -> tuple[list[r.CoordinatorRecord], ConsumerGroup] | str:
    """The records converting the non-empty classic `group` (GroupMetadata tombstone
    first) and the consumer group they replay to; or why its members' embedded
    protocol cannot be read."""
    generation = group.generation
    members: dict[str, ConsumerGroupMember] = {}
    for classic in group.members.values():
        member = _from_classic(classic, group.protocol_name, generation, image)
        if member is None:
            return (
                f"Cannot upgrade classic group {group.group_id} to consumer group because "
                "the embedded consumer protocol is malformed."
            )
        members[member.member_id] = member
    gid = group.group_id
    records: list[r.CoordinatorRecord] = [
        r.CoordinatorRecord(key=r.GroupMetadataKey(group_id=gid), value=None)
    ]
    for member in members.values():
        records.append(member_metadata_record(gid, member))
    names: set[str] = set()
    for member in members.values():
        names |= member.subscribed_topic_names
    hash_value = metadata_hash(subscribed_topic_names=names, image=image)
    records.append(consumer_membership.epoch_record(gid, generation, hash_value))
    for member in members.values():
        records.append(_target_record(gid, member.member_id, member.assigned))
    records.append(
        r.CoordinatorRecord(
            key=r.ConsumerGroupTargetAssignmentMetadataKey(group_id=gid),
            value=r.ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=generation),
        )
    )
    for member in members.values():
        records.append(
            r.CoordinatorRecord(
                key=r.ConsumerGroupCurrentMemberAssignmentKey(
                    group_id=gid, member_id=member.member_id
                ),
                value=member.assignment_value(),
            )
        )
    log.info(
        "group %s: converting the classic group (generation %d, members %s) to a consumer group",
        gid,
        generation,
        sorted(members),
    )
    return records, replayed(ConsumerGroup(group_id=gid), records)


def replace_empty(group_id: str) -> list[r.CoordinatorRecord]:
    """An empty classic group is replaced: its GroupMetadata tombstone."""
    return [r.CoordinatorRecord(key=r.GroupMetadataKey(group_id=group_id), value=None)]


def _from_classic(
    classic: ClassicMember, protocol: str | None, generation: int, image: TopicImage
) -> ConsumerGroupMember | None:
    subscription = read_subscription(classic.metadata(protocol))
    assigned_names = read_assignment(classic.assignment)
    if subscription is None or assigned_names is None:
        return None
    return ConsumerGroupMember(
        member_id=classic.member_id,
        instance_id=classic.group_instance_id,
        rack_id=subscription.rack_id,
        client_id=classic.client_id,
        client_host=classic.client_host,
        subscribed_topic_names=frozenset(subscription.topics),
        rebalance_timeout_ms=classic.rebalance_timeout_ms,
        member_epoch=generation,
        previous_member_epoch=generation,
        state=MEMBER_STATE_STABLE,
        assigned=by_topic_id(assigned_names, image),
        classic=classic_metadata(classic.session_timeout_ms, classic.protocols),
    )


def classic_metadata(
    session_timeout_ms: int, protocols: Iterable[tuple[str, bytes]]
) -> r.ClassicMemberMetadata:
    return r.ClassicMemberMetadata(
        session_timeout_ms=session_timeout_ms,
        supported_protocols=tuple(
            r.ClassicProtocol(name=name, metadata=metadata) for name, metadata in protocols
        ),
    )


def by_topic_id(partitions: dict[str, frozenset[int]], image: TopicImage) -> Assignment:
    """Topic name -> partitions as an `Assignment` (topics the image lacks dropped)."""
    assignment = {}
    for name, numbers in partitions.items():
        topic = image.by_name(name)
        if topic is not None:
            assignment[topic.topic_id] = frozenset(numbers)
    return normalise(assignment)


def by_topic_name(assignment: Assignment, image: TopicImage) -> dict[str, frozenset[int]]:
    names = {}
    for topic_id, numbers in assignment.items():
        topic = image.by_id(topic_id)
        if topic is not None:
            names[topic.name] = frozenset(numbers)
    return names


def replayed(group: ConsumerGroup, records: Iterable[r.CoordinatorRecord]) -> ConsumerGroup:
    """A copy of `group` with `records` applied as the shard's replay would (the
    view an operation works on before its records are written)."""
    view = copy.deepcopy(group)
    for record in records:
        key = record.key
        if isinstance(key, r.GroupMetadataKey):
            continue
        if isinstance(key, r.ConsumerGroupMetadataKey):
            if isinstance(record.value, r.ConsumerGroupMetadataValue):
                view.group_epoch = record.value.epoch
                view.metadata_hash = record.value.metadata_hash
            continue
        apply_consumer(view, record)
    return view


def member_metadata_record(group_id: str, member: ConsumerGroupMember) -> r.CoordinatorRecord:
    return r.CoordinatorRecord(
        key=r.ConsumerGroupMemberMetadataKey(group_id=group_id, member_id=member.member_id),
        value=member.metadata_value(),
    )


def _target_record(group_id: str, member_id: str, target: Assignment) -> r.CoordinatorRecord:
    return r.CoordinatorRecord(
        key=r.ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id),
        value=r.ConsumerGroupTargetAssignmentMemberValue(
            topic_partitions=to_topic_partitions(target)
        ),
    )


# ---- removal and downgrade ----------------------------------------------------------


def downgrade_allowed(
    group: ConsumerGroup,
    leaving: Iterable[str],
    *,
    settings: ConsumerGroupSettings,
    classic_max_size: int,
) -> bool:
    """Kafka's validateOnlineDowngrade: members remain, all speak the classic
    protocol, the policy allows downgrades and they fit a classic group."""
    gone = set(leaving)
    remaining = [m for mid, m in group.members.items() if mid not in gone]
    return (
        bool(remaining)
        and all(m.uses_classic for m in remaining)
        and settings.downgrade_enabled
        and len(remaining) <= classic_max_size
    )


def remove_members(
    group: ConsumerGroup,
    member_ids: Sequence[str],
    *,
    image: TopicImage,
    settings: ConsumerGroupSettings,
    classic_max_size: int,
    wall_ms: int,
) -> list[r.CoordinatorRecord]:
    """The records removing `member_ids` (leave or expiry): the group downgraded
    to a classic group when `downgrade_allowed`, else their tombstones and an
    epoch bump (`consumer_membership.fence_records`)."""
    if downgrade_allowed(group, member_ids, settings=settings, classic_max_size=classic_max_size):
        return downgrade(group, member_ids, image=image, wall_ms=wall_ms)
    return consumer_membership.fence_records(group=group, member_ids=member_ids, image=image)


def downgrade(
    group: ConsumerGroup, leaving: Iterable[str], *, image: TopicImage, wall_ms: int
) -> list[r.CoordinatorRecord]:
    """Every record of the consumer group tombstoned (members, then the target
    epoch, then the group), then the classic group's GroupMetadata."""
    gone = set(leaving)
    gid = group.group_id
    records = consumer_membership.regex_tombstones(gid, group.resolved_regexes, ())
    for member_id in sorted(group.members):
        records.extend(consumer_membership.member_tombstones(gid, member_id))
    for member_id in sorted(set(group.target_assignment) - set(group.members)):
        records.append(
            r.CoordinatorRecord(
                key=r.ConsumerGroupTargetAssignmentMemberKey(group_id=gid, member_id=member_id),
                value=None,
            )
        )
    records.append(
        r.CoordinatorRecord(
            key=r.ConsumerGroupTargetAssignmentMetadataKey(group_id=gid), value=None
        )
    )
    records.append(r.CoordinatorRecord(key=r.ConsumerGroupMetadataKey(group_id=gid), value=None))
    remaining = [m for mid, m in group.members.items() if mid not in gone]
    records.append(_group_metadata(group, remaining, image=image, wall_ms=wall_ms))
    log.info(
        "group %s: converting the consumer group (epoch %d, classic members %s) to a classic group",
        gid,
        group.group_epoch,
        sorted(m.member_id for m in remaining),
    )
    return records


def _group_metadata(
    group: ConsumerGroup,
    remaining: Sequence[ConsumerGroupMember],
    *,
    image: TopicImage,
    wall_ms: int,
) -> r.CoordinatorRecord:
    vote = ClassicGroup(group_id=group.group_id)
    for member in remaining:
        assert member.classic is not None, member.member_id
        vote.members[member.member_id] = ClassicMember(
            member_id=member.member_id,
            group_instance_id=member.instance_id,
            client_id=member.client_id,
            client_host=member.client_host,
            rebalance_timeout_ms=member.rebalance_timeout_ms,
            session_timeout_ms=member.classic.session_timeout_ms,
            protocols=tuple((p.name, p.metadata) for p in member.classic.supported_protocols),
        )
    protocol = vote.select_protocol()
    stored = []
    for member in remaining:
        classic = vote.members[member.member_id]
        subscription = classic.metadata(protocol)
        parsed = read_subscription(subscription)
        version = parsed.version if parsed is not None else 0
        stored.append(
            r.MemberMetadata(
                member_id=member.member_id,
                group_instance_id=member.instance_id,
                client_id=member.client_id,
                client_host=member.client_host,
                rebalance_timeout=member.rebalance_timeout_ms,
                session_timeout=classic.session_timeout_ms,
                subscription=subscription,
                assignment=write_assignment(by_topic_name(member.assigned, image), version=version),
            )
        )
    return r.CoordinatorRecord(
        key=r.GroupMetadataKey(group_id=group.group_id),
        value=r.GroupMetadataValue(
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            generation=group.group_epoch,
            protocol=protocol,
            leader=remaining[0].member_id,
            current_state_timestamp=wall_ms,
            members=tuple(stored),
        ),
    )
