"""ShareGroupHeartbeat: validation, join, heartbeat, leave and fencing.

Pure functions from a group's replayed state (never changed here) plus a request
to the records that express the change and the response the member gets once
those records are written. The shard owns the group-id namespace, timers and
replay; this module owns the heartbeat rules (docs/design/coordinators.md §1):

- validation (INVALID_REQUEST), then epoch 0 = join or rejoin (a known member id
  keeps its epoch and assignment), epoch > 0 = heartbeat (unknown group / member,
  fencing with the previous epoch accepted), epoch -1 = leave;
- a changed subscription or rack, a new member, or a changed metadata hash bumps
  the group epoch; subscribed partitions without state are sent for
  initialisation; a group epoch ahead of the assignment epoch recomputes the whole
  target assignment; the member moves straight to its target.

Records are ordered as Kafka writes them: member metadata (10), group epoch (11),
state-partition metadata (15), target members (13), target epoch (12), current
assignment (14). Leave/expiry: 14, 13, 10 tombstones per member, then 11.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from shoal.coordinator.result import CoordinatorResult
from shoal.group import records as r
from shoal.group.results import (
    Effect,
    GroupResult,
    ShareGroupHeartbeatResponse,
    absent_member_error,
    heartbeat_error,
)
from shoal.group.share import lifecycle
from shoal.group.share.group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    ShareGroup,
    ShareGroupMember,
    StatePartitionMetadata,
)
from shoal.group.simple_assignor import assign
from shoal.group.topic_image import (
    Assignment,
    TopicImage,
    metadata_hash,
    target_records,
    to_topic_partitions,
)
from shoal.protocol.errors import ErrorCode

MEMBER_ID_LENGTH_MAX = 36
"""Member ids are client-generated (librdkafka: a 22-character base64 UUID) and
accepted verbatim; longer ones are refused with INVALID_REQUEST (as ShareFetch)."""

JOIN_GROUP_MEMBER_EPOCH = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None
    subscribed_topic_names: tuple[str, ...] | None
    client_id: str
    client_host: str


def _blank(value: str) -> bool:
    """Kafka treats whitespace-only strings as empty."""
    return value.strip() == ""


def validation_error(request: HeartbeatRequest) -> str | None:
    """The INVALID_REQUEST message for a malformed request, else None."""
    if _blank(request.group_id):
        return "GroupId can't be empty."
    if _blank(request.member_id):
        return "MemberId can't be empty."
    if len(request.member_id) > MEMBER_ID_LENGTH_MAX:
        return f"MemberId can't be longer than {MEMBER_ID_LENGTH_MAX} characters."
    if request.rack_id is not None and _blank(request.rack_id):
        return "RackId can't be empty."
    if request.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
        if not request.subscribed_topic_names:
            return "SubscribedTopicNames must be set in first request."
    elif request.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
        return "MemberEpoch is invalid."
    return None


def fencing_error(member: ShareGroupMember, received_epoch: int) -> str | None:
    """FENCED_MEMBER_EPOCH message, or None if the epoch is the member's current
    or previous one (its last response may have been lost)."""
    if received_epoch > member.member_epoch:
        return (
            f"The share group member has a greater member epoch ({received_epoch}) than "
            f"the one known by the group coordinator ({member.member_epoch})."
        )
    if received_epoch < member.member_epoch and received_epoch != member.previous_member_epoch:
        return (
            f"The share group member has a smaller member epoch ({received_epoch}) than "
            f"the one known by the group coordinator ({member.member_epoch}), and it does "
            f"not match the previous member epoch ({member.previous_member_epoch})."
        )
    return None


def heartbeat(
    *,
    group: ShareGroup | None,
    request: HeartbeatRequest,
    image: TopicImage,
    max_size: int,
    heartbeat_interval_ms: int,
    may_initialize: bool,
) -> GroupResult[ShareGroupHeartbeatResponse]:
    """Join (epoch 0) or heartbeat (epoch > 0). `group` is None if the id is free;
    validation and the namespace check have been done by the caller."""
    assert request.member_epoch >= 0
    joining = request.member_epoch == JOIN_GROUP_MEMBER_EPOCH
    if group is None:
        if not joining:
            return heartbeat_error(
                ErrorCode.group_id_not_found, f"Group {request.group_id} not found."
            )
        group = ShareGroup(group_id=request.group_id)
    old = group.members.get(request.member_id)
    if old is None:
        absent = absent_member_error(
            "share", request, joining=joining, size=len(group.members), max_size=max_size
        )
        if absent is not None:
            return absent
    elif not joining and (message := fencing_error(old, request.member_epoch)) is not None:
        return heartbeat_error(ErrorCode.fenced_member_epoch, message)

    before = old if old is not None else ShareGroupMember(member_id=request.member_id)
    member = replace(
        before,
        rack_id=request.rack_id if request.rack_id is not None else before.rack_id,
        subscribed_topic_names=(
            frozenset(request.subscribed_topic_names)
            if request.subscribed_topic_names is not None
            else before.subscribed_topic_names
        ),
        client_id=request.client_id,
        client_host=request.client_host,
    )
    records: list[r.CoordinatorRecord] = []
    if old is None or member.metadata_value() != old.metadata_value():
        records.append(
            r.CoordinatorRecord(
                key=r.ShareGroupMemberMetadataKey(
                    group_id=group.group_id, member_id=member.member_id
                ),
                value=member.metadata_value(),
            )
        )
    subscription_changed = old is None or (
        member.subscribed_topic_names != old.subscribed_topic_names or member.rack_id != old.rack_id
    )
    members = dict(group.members)
    members[member.member_id] = member
    subscribed = _subscribed_names(members.values())
    new_hash = metadata_hash(subscribed_topic_names=subscribed, image=image)

    group_epoch = group.group_epoch
    if subscription_changed or new_hash != group.metadata_hash:
        group_epoch += 1
        records.append(epoch_record(group.group_id, group_epoch, new_hash))

    effects: list[Effect] = []
    if may_initialize:
        records_15, effect = initialize(
            group_id=group.group_id,
            metadata=group.state_metadata,
            subscribed_topic_names=subscribed,
            image=image,
            state_epoch=group_epoch,
        )
        records.extend(records_15)
        effects.extend(effect)

    assignment_epoch = group.assignment_epoch
    target: Assignment = group.target_assignment.get(member.member_id, {})
    if group_epoch > group.assignment_epoch:
        target_records, new_target = target_assignment(
            group_id=group.group_id,
            members=members,
            current_target=group.target_assignment,
            metadata=group.state_metadata,
            image=image,
            assignment_epoch=group_epoch,
        )
        records.extend(target_records)
        assignment_epoch = group_epoch
        target = new_target[member.member_id]

    if (
        old is None
        or member.member_epoch != assignment_epoch
        or member.assigned_partitions != target
    ):
        records.append(
            current_assignment_record(
                group.group_id,
                member.member_id,
                member_epoch=assignment_epoch,
                previous_member_epoch=member.member_epoch,
                assigned=target,
            )
        )
    previous_assigned = old.assigned_partitions if old is not None else None
    send_assignment = (
        joining
        or request.subscribed_topic_names is not None
        or previous_assigned != target
        or request.member_epoch != assignment_epoch
    )
    response = ShareGroupHeartbeatResponse(
        member_id=member.member_id,
        member_epoch=assignment_epoch,
        heartbeat_interval_ms=heartbeat_interval_ms,
        assignment=to_topic_partitions(target) if send_assignment else None,
    )
    return CoordinatorResult(records=tuple(records), response=response, effects=tuple(effects))


def leave(
    *, group: ShareGroup, member_id: str, image: TopicImage, heartbeat_interval_ms: int
) -> GroupResult[ShareGroupHeartbeatResponse]:
    """Epoch -1: remove the member and bump the group epoch. Its in-flight records
    are released by its share session ending, not here."""
    if member_id not in group.members:
        return heartbeat_error(
            ErrorCode.unknown_member_id,
            f"Member {member_id} is not a member of group {group.group_id}.",
        )
    return CoordinatorResult(
        records=tuple(fence_records(group=group, member_ids=[member_id], image=image)),
        response=ShareGroupHeartbeatResponse(
            member_id=member_id,
            member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
            heartbeat_interval_ms=heartbeat_interval_ms,
        ),
    )


def fence_records(
    *, group: ShareGroup, member_ids: Iterable[str], image: TopicImage
) -> list[r.CoordinatorRecord]:
    """Tombstones removing members (current assignment, target, metadata), then
    one group-epoch bump with the metadata hash of those who remain."""
    removed = sorted(set(member_ids))
    assert removed and all(m in group.members for m in removed), removed
    records: list[r.CoordinatorRecord] = []
    for member_id in removed:
        gid = group.group_id
        records.append(
            r.CoordinatorRecord(
                key=r.ShareGroupCurrentMemberAssignmentKey(group_id=gid, member_id=member_id),
                value=None,
            )
        )
        records.append(
            r.CoordinatorRecord(
                key=r.ShareGroupTargetAssignmentMemberKey(group_id=gid, member_id=member_id),
                value=None,
            )
        )
        records.append(
            r.CoordinatorRecord(
                key=r.ShareGroupMemberMetadataKey(group_id=gid, member_id=member_id), value=None
            )
        )
    remaining = [m for mid, m in group.members.items() if mid not in removed]
    new_hash = metadata_hash(subscribed_topic_names=_subscribed_names(remaining), image=image)
    records.append(epoch_record(group.group_id, group.group_epoch + 1, new_hash))
    return records


def initialize(
    *,
    group_id: str,
    metadata: StatePartitionMetadata,
    subscribed_topic_names: Iterable[str],
    image: TopicImage,
    state_epoch: int,
) -> tuple[list[r.CoordinatorRecord], list[Effect]]:
    """Record 15 marking subscribed partitions without state as initializing, and
    the InitializeShareState effect for them (empty lists if nothing is needed)."""
    pending = lifecycle.initialization_needed(
        metadata=metadata, subscribed_topic_names=subscribed_topic_names, image=image
    )
    if not pending:
        return [], []
    new_metadata = lifecycle.add_initializing(metadata, pending)
    return (
        [state_metadata_record(group_id, new_metadata)],
        [lifecycle.initialize_effect(group_id=group_id, state_epoch=state_epoch, pending=pending)],
    )


def target_assignment(
    *,
    group_id: str,
    members: Mapping[str, ShareGroupMember],
    current_target: Mapping[str, Assignment],
    metadata: StatePartitionMetadata,
    image: TopicImage,
    assignment_epoch: int,
) -> tuple[list[r.CoordinatorRecord], dict[str, Assignment]]:
    """Recompute every member's target from initialised subscribed partitions.
    Writes a target record for each member whose target changed or is new, then
    the assignment epoch."""
    subscriptions: dict[str, set[uuid.UUID]] = {}
    assignable: dict[uuid.UUID, frozenset[int]] = {}
    for member_id, member in members.items():
        topic_ids: set[uuid.UUID] = set()
        for name in member.subscribed_topic_names:
            topic = image.by_name(name)
            if topic is None:
                continue
            topic_ids.add(topic.topic_id)
            if topic.topic_id not in assignable:
                assignable[topic.topic_id] = frozenset(
                    p
                    for p in metadata.initialized_partitions(topic.topic_id)
                    if p < topic.partition_count
                )
        subscriptions[member_id] = topic_ids
    new_target: dict[str, Assignment] = dict(
        assign(subscriptions=subscriptions, current=current_target, assignable=assignable)
    )
    records = target_records(
        members=members,
        current_target=current_target,
        new_target=new_target,
        member_record=lambda member_id, assigned: r.CoordinatorRecord(
            key=r.ShareGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id),
            value=None
            if assigned is None
            else r.ShareGroupTargetAssignmentMemberValue(
                topic_partitions=to_topic_partitions(assigned)
            ),
        ),
        epoch_record=r.CoordinatorRecord(
            key=r.ShareGroupTargetAssignmentMetadataKey(group_id=group_id),
            value=r.ShareGroupTargetAssignmentMetadataValue(assignment_epoch=assignment_epoch),
        ),
    )
    return records, new_target


def epoch_record(group_id: str, epoch: int, hash_value: int) -> r.CoordinatorRecord:
    return r.CoordinatorRecord(
        key=r.ShareGroupMetadataKey(group_id=group_id),
        value=r.ShareGroupMetadataValue(epoch=epoch, metadata_hash=hash_value),
    )


def state_metadata_record(group_id: str, metadata: StatePartitionMetadata) -> r.CoordinatorRecord:
    return r.CoordinatorRecord(
        key=r.ShareGroupStatePartitionMetadataKey(group_id=group_id), value=metadata.to_value()
    )


def current_assignment_record(
    group_id: str,
    member_id: str,
    *,
    member_epoch: int,
    previous_member_epoch: int,
    assigned: Assignment,
) -> r.CoordinatorRecord:
    return r.CoordinatorRecord(
        key=r.ShareGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id),
        value=r.ShareGroupCurrentMemberAssignmentValue(
            member_epoch=member_epoch,
            previous_member_epoch=previous_member_epoch,
            state=r.MEMBER_STATE_STABLE,
            assigned_partitions=to_topic_partitions(assigned),
        ),
    )


def _subscribed_names(members: Iterable[ShareGroupMember]) -> frozenset[str]:
    names: set[str] = set()
    for member in members:
        names |= member.subscribed_topic_names
    return frozenset(names)


def group_tombstones(group: ShareGroup) -> list[r.CoordinatorRecord]:
    """Every record of an empty group, tombstoned; ShareGroupMetadata last."""
    assert group.is_empty, group.group_id
    gid = group.group_id
    records = [
        r.CoordinatorRecord(
            key=r.ShareGroupTargetAssignmentMemberKey(group_id=gid, member_id=member_id), value=None
        )
        for member_id in sorted(group.target_assignment)
    ]
    records.append(
        r.CoordinatorRecord(key=r.ShareGroupTargetAssignmentMetadataKey(group_id=gid), value=None)
    )
    records.append(
        r.CoordinatorRecord(key=r.ShareGroupStatePartitionMetadataKey(group_id=gid), value=None)
    )
    records.append(r.CoordinatorRecord(key=r.ShareGroupMetadataKey(group_id=gid), value=None))
    return records
