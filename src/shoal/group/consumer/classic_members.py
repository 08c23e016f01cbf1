"""Classic-protocol members of consumer groups: JoinGroup, SyncGroup, Heartbeat and
LeaveGroup served by a (non-empty) consumer group, as Kafka 4.2's
`classicGroup*ToConsumerGroup` do.

A consumer group reached by a classic request (after an online upgrade, or a
classic consumer joining a group that consumer-protocol members use) keeps its
classic members as ordinary consumer-group members carrying `ClassicMemberMetadata`
(session timeout, JoinGroup protocols). The server-side assignor assigns them:

- **JoinGroup** is answered at once (no join phase): a new dynamic member of v4+
  first gets MEMBER_ID_REQUIRED with a fresh id; then the join runs as a
  ConsumerGroupHeartbeat (`consumer_membership.heartbeat`) with the subscription
  read from the embedded consumer protocol and, for a known member, the partitions
  it says it owns; the answer carries the member epoch as generation, protocol type
  "consumer", the member's first protocol, no leader and no member list. Protocol
  type other than "consumer", or no protocol every classic member supports:
  INCONSISTENT_GROUP_PROTOCOL.
- **SyncGroup** returns the member's current assignment as a ConsumerProtocolAssignment
  (the version of its subscription); REBALANCE_IN_PROGRESS while the group epoch is
  ahead of the member (unless it is revoking).
- **Heartbeat** answers REBALANCE_IN_PROGRESS when the member must rejoin: the group
  epoch moved, it must revoke partitions, or partitions it waits for were released.
- **LeaveGroup** removes members (`migration.remove_members`: the group may downgrade).

Errors for members that are not classic members of the group: UNKNOWN_MEMBER_ID;
a wrong generation ILLEGAL_GENERATION; an instance id held by another member
FENCED_INSTANCE_ID. Each accepted request re-arms the member's session with its
own classic session timeout. As Kafka's join and sync timeouts, a member told to
rejoin must rejoin, and one that joined must sync, within its rebalance timeout, or
it is removed like an expired one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from shoal.group import records as r
from shoal.group.classic.state import (
    UNKNOWN_MEMBER_ID,
    JoinRequest,
    JoinResponse,
    LeaveResponse,
    LeavingMember,
    SyncRequest,
    SyncResponse,
    classic_result,
)
from shoal.group.classic.subscriptions import read_subscription, write_assignment
from shoal.group.consumer import membership as consumer_membership
from shoal.group.consumer import migration
from shoal.group.consumer.group import (
    MEMBER_STATE_UNRELEASED_PARTITIONS,
    MEMBER_STATE_UNREVOKED_PARTITIONS,
    ConsumerGroup,
    ConsumerGroupMember,
)
from shoal.group.results import GroupResult
from shoal.group.settings import ConsumerGroupSettings
from shoal.group.topic_image import TopicImage
from shoal.protocol.errors import ErrorCode

MEMBER_ID_REQUIRED_MIN_VERSION = 4


class ConsumerGroupsAccess(Protocol):
    """What the classic coordinator needs of the shard's consumer groups."""

    def consumer_group(self, group_id: str) -> ConsumerGroup | None: ...

    @property
    def topic_image(self) -> TopicImage: ...

    @property
    def consumer_settings(self) -> ConsumerGroupSettings: ...

    def arm_consumer_session(self, group_id: str, member_id: str, deadline_ms: int) -> None: ...

    def arm_rejoin_timeout(
        self, group_id: str, member_id: str, deadline_ms: int | None, *, replace: bool
    ) -> None: ...


def supports_protocols(
    group: ConsumerGroup, protocol_type: str, protocols: Sequence[tuple[str, bytes]]
) -> bool:
    """Kafka's supportsClassicProtocols: type "consumer" and a protocol every classic
    member supports (any, if none is classic)."""
    if protocol_type != migration.CONSUMER_PROTOCOL_TYPE or not protocols:
        return False
    wanted = {name for name, _ in protocols}
    for member in group.members.values():
        if member.classic is not None:
            wanted &= {p.name for p in member.classic.supported_protocols}
    return bool(wanted)


def join(
    access: ConsumerGroupsAccess,
    group: ConsumerGroup,
    join_request: JoinRequest,
    *,
    new_member_id: Callable[[str], str],
    now_ms: int,
) -> GroupResult[JoinResponse | None]:
    """JoinGroup (11) to a non-empty consumer group."""
    settings = access.consumer_settings
    group_instance_id, protocols = join_request.group_instance_id, join_request.protocols
    member_id = join_request.member_id
    unknown = member_id == UNKNOWN_MEMBER_ID
    if unknown:
        member_id = new_member_id(join_request.client_id)
    if len(group.members) >= settings.max_size and member_id not in group.members:
        return _join_error(ErrorCode.group_max_size_reached, member_id)
    if not supports_protocols(group, join_request.protocol_type, protocols):
        return _join_error(ErrorCode.inconsistent_group_protocol, member_id)
    if (
        unknown
        and group_instance_id is None
        and join_request.api_version >= MEMBER_ID_REQUIRED_MIN_VERSION
    ):
        return _join_error(ErrorCode.member_id_required, member_id)
    records: list[r.CoordinatorRecord] = []
    old = group.members.get(member_id)
    if group_instance_id is not None:
        static = _static_member(group, group_instance_id)
        if static is not None and static.member_id != member_id:
            if not unknown:
                return _join_error(ErrorCode.fenced_instance_id, member_id)
            # A restarted static member replaces its old id (its partitions go back
            # to the assignor; the old id can no longer commit or heartbeat).
            records.extend(
                consumer_membership.fence_records(
                    group=group, member_ids=[static.member_id], image=access.topic_image
                )
            )
            group = migration.replayed(group, records)
    if old is not None and old.classic is None:
        return _join_error(ErrorCode.unknown_member_id, member_id)
    subscription = read_subscription(protocols[0][1])
    if subscription is None:
        return _join_error(ErrorCode.inconsistent_group_protocol, member_id)
    image = access.topic_image
    request = consumer_membership.HeartbeatRequest(
        group_id=group.group_id,
        member_id=member_id,
        member_epoch=0 if old is None else old.member_epoch,
        instance_id=group_instance_id,
        rack_id=subscription.rack_id,
        rebalance_timeout_ms=join_request.rebalance_timeout_ms,
        subscribed_topic_names=subscription.topics,
        owned=None if old is None else migration.by_topic_id(subscription.owned, image),
        client_id=join_request.client_id,
        client_host=join_request.client_host,
        classic=migration.classic_metadata(join_request.session_timeout_ms, protocols),
    )
    result = consumer_membership.heartbeat(
        group=group,
        request=request,
        image=image,
        max_size=settings.max_size,
        heartbeat_interval_ms=settings.heartbeat_interval_ms,
        default_assignor=settings.assignors[0],
    )
    response = result.response
    if response.error is not None:
        return _join_error(response.error, member_id)
    access.arm_consumer_session(group.group_id, member_id, now_ms + join_request.session_timeout_ms)
    sync_deadline_ms = now_ms + join_request.rebalance_timeout_ms  # Kafka's sync timeout
    access.arm_rejoin_timeout(group.group_id, member_id, sync_deadline_ms, replace=True)
    return classic_result(
        records=(*records, *result.records),
        response=JoinResponse(
            generation_id=response.member_epoch,
            protocol_type=migration.CONSUMER_PROTOCOL_TYPE,
            protocol_name=protocols[0][0],
            leader="",
            member_id=member_id,
        ),
    )


def sync(
    access: ConsumerGroupsAccess, group: ConsumerGroup, request: SyncRequest, *, now_ms: int
) -> SyncResponse:
    """SyncGroup (14): the member's current assignment (the coordinator's, whatever
    `request.assignments` says)."""
    member_id, protocol_type, protocol_name = (
        request.member_id,
        request.protocol_type,
        request.protocol_name,
    )
    member, error = _classic_member(
        group, member_id, request.group_instance_id, request.generation_id
    )
    if member is None or member.classic is None:
        return SyncResponse(error=error)
    names = {p.name for p in member.classic.supported_protocols}
    if (protocol_type is not None and protocol_type != migration.CONSUMER_PROTOCOL_TYPE) or (
        protocol_name is not None and protocol_name not in names
    ):
        return SyncResponse(error=ErrorCode.inconsistent_group_protocol)
    if (
        group.group_epoch > member.member_epoch
        and member.state != MEMBER_STATE_UNREVOKED_PARTITIONS
    ):
        return SyncResponse(error=ErrorCode.rebalance_in_progress)
    access.arm_consumer_session(
        group.group_id, member_id, now_ms + member.classic.session_timeout_ms
    )
    access.arm_rejoin_timeout(group.group_id, member_id, None, replace=True)
    chosen = protocol_name or member.classic.supported_protocols[0].name
    metadata = next(p.metadata for p in member.classic.supported_protocols if p.name == chosen)
    subscription = read_subscription(metadata)
    assignment = write_assignment(
        migration.by_topic_name(member.assigned, access.topic_image),
        version=subscription.version if subscription is not None else 0,
    )
    return SyncResponse(
        protocol_type=migration.CONSUMER_PROTOCOL_TYPE, protocol_name=chosen, assignment=assignment
    )


def heartbeat(
    access: ConsumerGroupsAccess,
    group: ConsumerGroup,
    *,
    member_id: str,
    generation_id: int,
    group_instance_id: str | None,
    now_ms: int,
) -> ErrorCode | None:
    """Heartbeat (12): None, or REBALANCE_IN_PROGRESS when the member must rejoin."""
    member, error = _classic_member(group, member_id, group_instance_id, generation_id)
    if member is None or member.classic is None:
        return error
    access.arm_consumer_session(
        group.group_id, member_id, now_ms + member.classic.session_timeout_ms
    )
    if (
        member.member_epoch < group.group_epoch
        or member.state == MEMBER_STATE_UNREVOKED_PARTITIONS
        or (
            member.state == MEMBER_STATE_UNRELEASED_PARTITIONS
            and not _waiting_on_unreleased(group, member)
        )
    ):
        rejoin_deadline_ms = now_ms + member.rebalance_timeout_ms  # Kafka's join timeout
        access.arm_rejoin_timeout(group.group_id, member_id, rejoin_deadline_ms, replace=False)
        return ErrorCode.rebalance_in_progress
    return None


def leave(
    access: ConsumerGroupsAccess,
    group: ConsumerGroup,
    *,
    members: Sequence[LeavingMember],
    classic_max_size: int,
    wall_ms: int,
) -> GroupResult[LeaveResponse]:
    """LeaveGroup (13): remove the members (the group may downgrade)."""
    outcomes: list[tuple[LeavingMember, ErrorCode | None]] = []
    removed: list[str] = []
    for leaving in members:
        target: ConsumerGroupMember | None
        if leaving.group_instance_id is not None:
            target = _static_member(group, leaving.group_instance_id)
            if target is None:
                outcomes.append((leaving, ErrorCode.unknown_member_id))
                continue
            if leaving.member_id not in (UNKNOWN_MEMBER_ID, target.member_id):
                outcomes.append((leaving, ErrorCode.fenced_instance_id))
                continue
        else:
            target = group.members.get(leaving.member_id)
            if target is None or target.classic is None:
                outcomes.append((leaving, ErrorCode.unknown_member_id))
                continue
        outcomes.append((leaving, None))
        if target.member_id not in removed:
            removed.append(target.member_id)
    records: list[r.CoordinatorRecord] = []
    if removed:
        records = migration.remove_members(
            group,
            removed,
            image=access.topic_image,
            settings=access.consumer_settings,
            classic_max_size=classic_max_size,
            wall_ms=wall_ms,
        )
    return classic_result(records=tuple(records), response=LeaveResponse(members=tuple(outcomes)))


def _classic_member(
    group: ConsumerGroup, member_id: str, instance_id: str | None, generation_id: int
) -> tuple[ConsumerGroupMember | None, ErrorCode | None]:
    """The classic member a SyncGroup or Heartbeat names, or the error."""
    if instance_id is not None:
        member = _static_member(group, instance_id)
        if member is None:
            return None, ErrorCode.unknown_member_id
        if member.member_id != member_id:
            return None, ErrorCode.fenced_instance_id
    else:
        member = group.members.get(member_id)
    if member is None or member.classic is None:
        return None, ErrorCode.unknown_member_id
    if generation_id != member.member_epoch:
        return None, ErrorCode.illegal_generation
    return member, None


def _static_member(group: ConsumerGroup, instance_id: str) -> ConsumerGroupMember | None:
    for member in group.members.values():
        if member.instance_id == instance_id:
            return member
    return None


def _waiting_on_unreleased(group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
    """Whether a partition of the member's target is still owned by another member."""
    owners = group.owners()
    target = group.target_assignment.get(member.member_id, {})
    for topic_id, partitions in target.items():
        mine = member.assigned.get(topic_id, frozenset())
        for partition in partitions - mine:
            if owners.get((topic_id, partition), member.member_id) != member.member_id:
                return True
    return False


def _join_error(error: ErrorCode, member_id: str) -> GroupResult[JoinResponse | None]:
    return classic_result(response=JoinResponse(error=error, member_id=member_id))
