"""ConsumerGroupHeartbeat (KIP-848): validation, join, reconciliation, leave, fencing.

Pure functions from a consumer group's replayed state plus a request to the records
that express the change and the response the member gets once they are written
(the shard owns the namespace, session timers and replay). As Kafka 4.2's
`GroupMetadataManager.consumerGroupHeartbeat`:

1. validate (INVALID_REQUEST / UNSUPPORTED_ASSIGNOR / INVALID_REGULAR_EXPRESSION);
2. epoch 0 joins (a known member id rejoining at 0 starts afresh: a fenced client
   has given up its partitions); epoch > 0 must be the member's epoch, or its
   previous one with owned partitions within its assignment (else
   FENCED_MEMBER_EPOCH); an unknown member id is UNKNOWN_MEMBER_ID; -1 leaves;
3. a new member, a changed subscription or a changed metadata hash of the subscribed
   topics bumps the group epoch, and the target assignment is recomputed by the
   server assignor (`uniform`: group/simple_assignor.py in exclusive mode; `range`:
   group/consumer/range_assignor.py);
4. `reconcile` moves the member towards its target incrementally: partitions it
   must lose are revoked first (the member keeps its epoch until it reports, in
   `TopicPartitions`, that it no longer owns them); partitions still owned by
   another member are withheld until released. A partition is therefore never
   owned by two members.

Records are written as Kafka does: member metadata (5), group epoch (3), target
members (7), target epoch (6), current assignment (8); leave/expiry: 8, 7, 5
tombstones per member, then 3.

(Slightly past 600 lines: join, reconciliation, static replacement and leave share
the record builders here; the assignors live in group/simple_assignor.py and range_assignor.py.)
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from shoal.coordinator.result import CoordinatorResult
from shoal.group import records as r
from shoal.group.consumer.group import (
    MEMBER_STATE_STABLE,
    MEMBER_STATE_UNRELEASED_PARTITIONS,
    MEMBER_STATE_UNREVOKED_PARTITIONS,
    ConsumerGroup,
    ConsumerGroupMember,
)
from shoal.group.consumer.range_assignor import range_assign
from shoal.group.results import GroupResult, absent_member_error, heartbeat_error
from shoal.group.results import ShareGroupHeartbeatResponse as HeartbeatResponse
from shoal.group.simple_assignor import TopicPartition, assign
from shoal.group.topic_image import (
    Assignment,
    TopicImage,
    metadata_hash,
    normalise,
    target_records,
    to_topic_partitions,
)
from shoal.protocol.errors import ErrorCode

JOIN_GROUP_MEMBER_EPOCH = 0
LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
MEMBER_ID_LENGTH_MAX = 36
"""As for share members: a client-generated UUID is 22 (base64) or 36 characters."""
SUBSCRIBED_TOPIC_REGEX_LENGTH_MAX = 1024
"""A regex longer than this is INVALID_REGULAR_EXPRESSION (no unbounded patterns)."""
ASSIGNOR_UNIFORM = "uniform"
ASSIGNOR_RANGE = "range"
ASSIGNORS = (ASSIGNOR_UNIFORM, ASSIGNOR_RANGE)

__all__ = ["HeartbeatRequest", "HeartbeatResponse", "heartbeat", "leave", "reconcile"]


@dataclass(frozen=True, slots=True, kw_only=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: tuple[str, ...] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None
    """The partitions the member reports it owns (null: not reported)."""
    client_id: str = ""
    client_host: str = ""
    classic: r.ClassicMemberMetadata | None = None
    """Set when a classic member's JoinGroup is served as this heartbeat
    (group/consumer/classic_members.py)."""


def validation_error(
    request: HeartbeatRequest, *, assignors: Iterable[str]
) -> tuple[ErrorCode, str] | None:
    """The error of a malformed request, else None."""
    invalid = ErrorCode.invalid_request
    if not request.group_id.strip():
        return invalid, "GroupId can't be empty."
    if request.member_epoch != JOIN_GROUP_MEMBER_EPOCH and not request.member_id.strip():
        return invalid, "MemberId can't be empty."
    if len(request.member_id) > MEMBER_ID_LENGTH_MAX:
        return invalid, f"MemberId can't be longer than {MEMBER_ID_LENGTH_MAX} characters."
    if request.instance_id is not None and not request.instance_id.strip():
        return invalid, "InstanceId can't be empty."
    if request.rack_id is not None and not request.rack_id.strip():
        return invalid, "RackId can't be empty."
    static_leave = request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH
    if request.member_epoch < -2 or (static_leave and request.instance_id is None):
        return invalid, "MemberEpoch is invalid."
    if request.member_epoch == JOIN_GROUP_MEMBER_EPOCH:
        if request.rebalance_timeout_ms <= 0:
            return invalid, "RebalanceTimeoutMs must be provided in first request."
        if request.owned:
            return invalid, "TopicPartitions must be empty when (re-)joining."
        if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
            return (
                invalid,
                "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.",
            )
    if request.server_assignor is not None and request.server_assignor not in set(assignors):
        return ErrorCode.unsupported_assignor, (
            f"ServerAssignor {request.server_assignor} is not supported. "
            f"Supported assignors: {', '.join(assignors)}."
        )
    regex = request.subscribed_topic_regex
    if regex and (len(regex) > SUBSCRIBED_TOPIC_REGEX_LENGTH_MAX or _compile(regex) is None):
        return (
            ErrorCode.invalid_regular_expression,
            f"SubscribedTopicRegex `{regex}` is not a valid regular expression.",
        )
    return None


def _compile(regex: str) -> re.Pattern[str] | None:
    try:
        return re.compile(regex)
    except re.error:
        return None


def subscribed_names(
    member: ConsumerGroupMember, resolved: Mapping[str, frozenset[str]]
) -> frozenset[str]:
    """The topic names the member subscribes to: its names and the topics its regex
    resolved to (`ConsumerGroup.resolved_regexes`; none until it is resolved), as
    Kafka's union."""
    if not member.subscribed_topic_regex:
        return member.subscribed_topic_names
    return member.subscribed_topic_names | resolved.get(member.subscribed_topic_regex, frozenset())


def matching_topics(regex: str, image: TopicImage) -> frozenset[str]:
    """The existing topics `regex` matches in full (internal topics excluded): what
    a regex subscription resolves to (group/consumer/regex_refresh.py)."""
    pattern = _compile(regex)
    if pattern is None:
        return frozenset()
    return frozenset(
        topic.name
        for topic in image.topics()
        if not topic.name.startswith("__") and pattern.fullmatch(topic.name)
    )


def regex_tombstones(
    group_id: str, resolved: Iterable[str], still_subscribed: Iterable[str]
) -> list[r.CoordinatorRecord]:
    """Tombstones of the resolved regexes no member subscribes to any more (Kafka
    deletes a resolved regex with its last subscriber)."""
    keep = frozenset(still_subscribed)
    return [
        r.CoordinatorRecord(
            key=r.ConsumerGroupRegularExpressionKey(group_id=group_id, regular_expression=regex),
            value=None,
        )
        for regex in sorted(resolved)
        if regex not in keep
    ]


def fencing_error(member: ConsumerGroupMember, request: HeartbeatRequest) -> str | None:
    """FENCED_MEMBER_EPOCH's message, or None. The previous epoch is accepted when
    the member owns nothing beyond its assignment (its last answer may be lost)."""
    received = request.member_epoch
    if received == member.member_epoch:
        return None
    if received == member.previous_member_epoch and received < member.member_epoch:
        owned = request.owned or {}
        if all(
            partitions <= member.assigned.get(topic_id, frozenset())
            for topic_id, partitions in owned.items()
        ):
            return None
    return (
        f"The consumer group member has a member epoch ({received}) that does not match "
        f"the one known by the group coordinator ({member.member_epoch})."
    )


def heartbeat(
    *,
    group: ConsumerGroup | None,
    request: HeartbeatRequest,
    image: TopicImage,
    max_size: int,
    heartbeat_interval_ms: int,
    default_assignor: str,
) -> GroupResult[HeartbeatResponse]:
    """Join (epoch 0) or heartbeat (epoch > 0); validated by the caller, which also
    gave a joining member without id a fresh one."""
    assert request.member_epoch >= 0 and request.member_id
    joining = request.member_epoch == JOIN_GROUP_MEMBER_EPOCH
    if group is None:
        if not joining:
            return heartbeat_error(
                ErrorCode.unknown_member_id, f"Group {request.group_id} not found."
            )
        group = ConsumerGroup(group_id=request.group_id)
    replaced: list[r.CoordinatorRecord] = []
    if joining and request.instance_id is not None:
        static = _static_member(group, request)
        if static is not None:
            if static.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                return heartbeat_error(
                    ErrorCode.unreleased_instance_id,
                    f"Static member {static.member_id} with instance id "
                    f"{request.instance_id} is not released yet.",
                )
            replaced, group = _replace_static(group, static, request.member_id)
    old = group.members.get(request.member_id)
    if old is None:
        absent = absent_member_error(
            "consumer", request, joining=joining, size=len(group.members), max_size=max_size
        )
        if absent is not None:
            return absent
    elif not joining and (message := fencing_error(old, request)) is not None:
        return heartbeat_error(ErrorCode.fenced_member_epoch, message)

    before = old if old is not None else ConsumerGroupMember(member_id=request.member_id)
    if joining and old is not None and not replaced:
        before = replace(
            before,
            member_epoch=0,
            previous_member_epoch=0,
            state=MEMBER_STATE_STABLE,
            assigned={},
            revoking={},
        )
    member = _updated_metadata(before, request)
    records: list[r.CoordinatorRecord] = list(replaced)
    gid = group.group_id
    if replaced or old is None or member.metadata_value() != old.metadata_value():
        records.append(
            r.CoordinatorRecord(
                key=r.ConsumerGroupMemberMetadataKey(group_id=gid, member_id=member.member_id),
                value=member.metadata_value(),
            )
        )
    members = dict(group.members)
    members[member.member_id] = member
    resolved = group.resolved_regexes
    records.extend(
        regex_tombstones(
            gid,
            resolved,
            (m.subscribed_topic_regex for m in members.values() if m.subscribed_topic_regex),
        )
    )
    new_hash = metadata_hash(
        subscribed_topic_names=_all_names(members.values(), resolved), image=image
    )
    group_epoch = group.group_epoch
    subscription_changed = old is None or subscribed_names(member, resolved) != subscribed_names(
        old, resolved
    )
    if subscription_changed or new_hash != group.metadata_hash:
        group_epoch += 1
        records.append(epoch_record(gid, group_epoch, new_hash))

    targets: Mapping[str, Assignment] = group.target_assignment
    assignment_epoch = group.assignment_epoch
    if group_epoch > group.assignment_epoch:
        assignor = member.server_assignor or default_assignor
        target_records, targets = target_assignment(
            group_id=gid,
            members=members,
            current_target=group.target_assignment,
            image=image,
            resolved=resolved,
            assignor=assignor,
            assignment_epoch=group_epoch,
        )
        records.extend(target_records)
        assignment_epoch = group_epoch

    if replaced and group_epoch == group.assignment_epoch:
        records.append(
            _target_record(gid, member.member_id, group.target_assignment.get(member.member_id, {}))
        )
    owners = {tp: owner for tp, owner in group.owners().items() if owner != member.member_id}
    updated = reconcile(
        member,
        target=targets.get(member.member_id, {}),
        target_epoch=assignment_epoch,
        owned=request.owned,
        owned_by_others=owners.keys(),
    )
    if old is None or joining or updated.assignment_value() != old.assignment_value():
        records.append(
            r.CoordinatorRecord(
                key=r.ConsumerGroupCurrentMemberAssignmentKey(
                    group_id=gid, member_id=member.member_id
                ),
                value=updated.assignment_value(),
            )
        )
    send_assignment = (
        joining
        or old is None
        or updated.assigned != old.assigned
        or updated.member_epoch != request.member_epoch
        or (request.owned is not None and normalise(request.owned) != updated.assigned)
    )
    return CoordinatorResult(
        records=tuple(records),
        response=HeartbeatResponse(
            member_id=member.member_id,
            member_epoch=updated.member_epoch,
            heartbeat_interval_ms=heartbeat_interval_ms,
            assignment=to_topic_partitions(updated.assigned) if send_assignment else None,
        ),
    )


def _static_member(group: ConsumerGroup, request: HeartbeatRequest) -> ConsumerGroupMember | None:
    """Another member of the group with the request's instance id."""
    for member in group.members.values():
        if member.instance_id == request.instance_id and member.member_id != request.member_id:
            return member
    return None


def _replace_static(
    group: ConsumerGroup, static: ConsumerGroupMember, member_id: str
) -> tuple[list[r.CoordinatorRecord], ConsumerGroup]:
    """A static member rejoining under a new member id after leaving with epoch -2:
    the old id's records are tombstoned and the new id takes over its assignment,
    target and epoch (the one before it left), without a group epoch bump. Returns
    the tombstones and a view of the group with the member renamed."""
    gid = group.group_id
    tombstones = [
        r.CoordinatorRecord(
            key=r.ConsumerGroupCurrentMemberAssignmentKey(group_id=gid, member_id=static.member_id),
            value=None,
        ),
        r.CoordinatorRecord(
            key=r.ConsumerGroupTargetAssignmentMemberKey(group_id=gid, member_id=static.member_id),
            value=None,
        ),
        r.CoordinatorRecord(
            key=r.ConsumerGroupMemberMetadataKey(group_id=gid, member_id=static.member_id),
            value=None,
        ),
    ]
    members = {mid: m for mid, m in group.members.items() if mid != static.member_id}
    members[member_id] = replace(
        static, member_id=member_id, member_epoch=static.previous_member_epoch
    )
    targets = {mid: t for mid, t in group.target_assignment.items() if mid != static.member_id}
    targets[member_id] = group.target_assignment.get(static.member_id, {})
    view = ConsumerGroup(
        group_id=gid,
        group_epoch=group.group_epoch,
        metadata_hash=group.metadata_hash,
        assignment_epoch=group.assignment_epoch,
        members=members,
        target_assignment=targets,
    )
    return tombstones, view


def _target_record(group_id: str, member_id: str, target: Assignment | None) -> r.CoordinatorRecord:
    """A member's target assignment record; None: its tombstone."""
    return r.CoordinatorRecord(
        key=r.ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id),
        value=None
        if target is None
        else r.ConsumerGroupTargetAssignmentMemberValue(
            topic_partitions=to_topic_partitions(target)
        ),
    )


def _updated_metadata(
    member: ConsumerGroupMember, request: HeartbeatRequest
) -> ConsumerGroupMember:
    names, regex = member.subscribed_topic_names, member.subscribed_topic_regex
    if request.subscribed_topic_names is not None:
        names = frozenset(request.subscribed_topic_names)
    if request.subscribed_topic_regex is not None:
        regex = request.subscribed_topic_regex or None  # "" clears it
    return replace(
        member,
        instance_id=request.instance_id if request.instance_id is not None else member.instance_id,
        rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
        client_id=request.client_id,
        client_host=request.client_host,
        subscribed_topic_names=names,
        subscribed_topic_regex=regex,
        rebalance_timeout_ms=(
            request.rebalance_timeout_ms
            if request.rebalance_timeout_ms > 0
            else member.rebalance_timeout_ms
        ),
        server_assignor=(
            request.server_assignor
            if request.server_assignor is not None
            else member.server_assignor
        ),
        classic=request.classic if request.classic is not None else member.classic,
    )


def reconcile(
    member: ConsumerGroupMember,
    *,
    target: Assignment,
    target_epoch: int,
    owned: Assignment | None,
    owned_by_others: Iterable[TopicPartition],
) -> ConsumerGroupMember:
    """The member's next current assignment (Kafka's CurrentAssignmentBuilder).

    UNREVOKED_PARTITIONS stays until the member reports owned partitions without
    any pending revocation; STABLE at the target epoch stays; otherwise the next
    step is computed: revoke what is no longer targeted (epoch kept), else take
    the targeted partitions nobody else owns (epoch moves to the target's)."""
    if member.state == MEMBER_STATE_UNREVOKED_PARTITIONS:
        if owned is None or _overlaps(owned, member.revoking):
            return member
    elif (
        member.state == MEMBER_STATE_STABLE
        and member.member_epoch == target_epoch
        and member.assigned == normalise(target)
    ):
        return member
    current = member.assigned
    kept = _intersection(current, target)
    to_revoke = _difference(current, target)
    if to_revoke:
        return replace(
            member, state=MEMBER_STATE_UNREVOKED_PARTITIONS, assigned=kept, revoking=to_revoke
        )
    others = set(owned_by_others)
    wanted = _difference(target, current)
    free = {t: frozenset(p for p in ps if (t, p) not in others) for t, ps in wanted.items()}
    assigned = normalise(
        {t: kept.get(t, frozenset()) | free.get(t, frozenset()) for t in {*kept, *free}}
    )
    unreleased = _difference(wanted, free)
    return replace(
        member,
        state=MEMBER_STATE_UNRELEASED_PARTITIONS if unreleased else MEMBER_STATE_STABLE,
        member_epoch=target_epoch,
        previous_member_epoch=(
            member.member_epoch
            if member.member_epoch != target_epoch
            else member.previous_member_epoch
        ),
        assigned=assigned,
        revoking={},
    )


def _overlaps(a: Assignment, b: Assignment) -> bool:
    return any(a.get(t, frozenset()) & ps for t, ps in b.items())


def _intersection(a: Assignment, b: Assignment) -> dict[uuid.UUID, frozenset[int]]:
    return normalise({t: ps & b.get(t, frozenset()) for t, ps in a.items()})


def _difference(a: Assignment, b: Assignment) -> dict[uuid.UUID, frozenset[int]]:
    return normalise({t: ps - b.get(t, frozenset()) for t, ps in a.items()})


def target_assignment(
    *,
    group_id: str,
    members: Mapping[str, ConsumerGroupMember],
    current_target: Mapping[str, Assignment],
    image: TopicImage,
    resolved: Mapping[str, frozenset[str]],
    assignor: str,
    assignment_epoch: int,
) -> tuple[list[r.CoordinatorRecord], dict[str, Assignment]]:
    """Every member's new target; records for changed targets, then the epoch."""
    subscriptions: dict[str, set[uuid.UUID]] = {}
    assignable: dict[uuid.UUID, frozenset[int]] = {}
    for member_id, member in members.items():
        topic_ids: set[uuid.UUID] = set()
        for name in subscribed_names(member, resolved):
            topic = image.by_name(name)
            if topic is None:
                continue
            topic_ids.add(topic.topic_id)
            assignable[topic.topic_id] = frozenset(range(topic.partition_count))
        subscriptions[member_id] = topic_ids
    if assignor == ASSIGNOR_RANGE:
        new_target = range_assign(subscriptions=subscriptions, assignable=assignable)
    else:
        new_target = dict(
            assign(
                subscriptions=subscriptions,
                current=current_target,
                assignable=assignable,
                exclusive=True,
            )
        )
    records = target_records(
        members=members,
        current_target=current_target,
        new_target=new_target,
        member_record=lambda member_id, assigned: _target_record(group_id, member_id, assigned),
        epoch_record=r.CoordinatorRecord(
            key=r.ConsumerGroupTargetAssignmentMetadataKey(group_id=group_id),
            value=r.ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=assignment_epoch),
        ),
    )
    return records, new_target


def leave(
    *, group: ConsumerGroup, member_id: str, member_epoch: int, image: TopicImage
) -> GroupResult[HeartbeatResponse]:
    """Epoch -1: remove the member, bump the epoch. Epoch -2 (a static member):
    keep it, its partitions reserved, at epoch -2 until a member with its instance
    id replaces it or its session expires."""
    member = group.members.get(member_id)
    if member is None:
        return heartbeat_error(
            ErrorCode.unknown_member_id,
            f"Member {member_id} is not a member of group {group.group_id}.",
        )
    if member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        gone = replace(
            member,
            member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH,
            previous_member_epoch=member.member_epoch,
        )
        return CoordinatorResult(
            records=(
                r.CoordinatorRecord(
                    key=r.ConsumerGroupCurrentMemberAssignmentKey(
                        group_id=group.group_id, member_id=member_id
                    ),
                    value=gone.assignment_value(),
                ),
            ),
            response=HeartbeatResponse(member_id=member_id, member_epoch=member_epoch),
        )
    return CoordinatorResult(
        records=tuple(fence_records(group=group, member_ids=[member_id], image=image)),
        response=HeartbeatResponse(member_id=member_id, member_epoch=member_epoch),
    )


def fence_records(
    *, group: ConsumerGroup, member_ids: Iterable[str], image: TopicImage
) -> list[r.CoordinatorRecord]:
    """Tombstones (current assignment, target, metadata) per member, then one
    group-epoch bump with the hash of those who remain."""
    removed = sorted(set(member_ids))
    assert removed and all(m in group.members for m in removed), removed
    gid = group.group_id
    records: list[r.CoordinatorRecord] = []
    for member_id in removed:
        records.extend(member_tombstones(gid, member_id))
    remaining = [m for mid, m in group.members.items() if mid not in removed]
    records.extend(
        regex_tombstones(
            gid,
            group.resolved_regexes,
            (m.subscribed_topic_regex for m in remaining if m.subscribed_topic_regex),
        )
    )
    new_hash = metadata_hash(
        subscribed_topic_names=_all_names(remaining, group.resolved_regexes), image=image
    )
    records.append(epoch_record(gid, group.group_epoch + 1, new_hash))
    return records


def epoch_record(group_id: str, epoch: int, hash_value: int) -> r.CoordinatorRecord:
    return r.CoordinatorRecord(
        key=r.ConsumerGroupMetadataKey(group_id=group_id),
        value=r.ConsumerGroupMetadataValue(epoch=epoch, metadata_hash=hash_value),
    )


def _all_names(
    members: Iterable[ConsumerGroupMember], resolved: Mapping[str, frozenset[str]]
) -> frozenset[str]:
    names: set[str] = set()
    for member in members:
        names |= subscribed_names(member, resolved)
    return frozenset(names)


def all_subscribed_names(
    members: Iterable[ConsumerGroupMember], resolved: Mapping[str, frozenset[str]]
) -> frozenset[str]:
    """Every topic the members subscribe to, by name or through a resolved regex."""
    return _all_names(members, resolved)


def group_tombstones(group: ConsumerGroup) -> list[r.CoordinatorRecord]:
    """Every record of an empty group, tombstoned; ConsumerGroupMetadata last."""
    assert group.is_empty, group.group_id
    gid = group.group_id
    records = regex_tombstones(gid, group.resolved_regexes, ())
    records += [
        r.CoordinatorRecord(
            key=r.ConsumerGroupTargetAssignmentMemberKey(group_id=gid, member_id=member_id),
            value=None,
        )
        for member_id in sorted(group.target_assignment)
    ]
    records.append(
        r.CoordinatorRecord(
            key=r.ConsumerGroupTargetAssignmentMetadataKey(group_id=gid), value=None
        )
    )
    records.append(r.CoordinatorRecord(key=r.ConsumerGroupMetadataKey(group_id=gid), value=None))
    return records


def member_tombstones(group_id: str, member_id: str) -> tuple[r.CoordinatorRecord, ...]:
    """The tombstones that remove a consumer-group member: its current assignment, its
    target assignment, then its metadata (Kafka's order)."""
    return tuple(
        r.CoordinatorRecord(key=key, value=None)
        for key in (
            r.ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id),
            r.ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id),
            r.ConsumerGroupMemberMetadataKey(group_id=group_id, member_id=member_id),
        )
    )
