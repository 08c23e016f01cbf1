"""JoinGroup (11) of classic groups (sans-I/O): who may join, new and known
members, MEMBER_ID_REQUIRED, static members replaced without a rebalance.

`ClassicJoins.join` validates the request, then adds or updates the member and
parks it for the rebalance (`rebalance`); `groups` explains the group
state machine.
"""

from __future__ import annotations

from shoal.group.classic.rebalance import (
    ClassicRebalancer,
    fence_waiters,
    fenced_error,
    join_error,
)
from shoal.group.classic.state import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    STABLE,
    UNKNOWN_MEMBER_ID,
    ClassicGroup,
    ClassicMember,
    JoinRequest,
    JoinResponse,
    classic_result,
    completions_of,
    parked_member,
)
from shoal.group.results import GroupResult
from shoal.protocol.errors import ErrorCode

SKIP_ASSIGNMENT_MIN_VERSION = 9
"""JoinGroup v9 (KIP-814) tells a rejoining static leader to skip the assignment;
before v9 it assigns, and its SyncGroup in a Stable group gets the stored assignment."""


class ClassicJoins(ClassicRebalancer):
    """JoinGroup over the rebalance machinery."""

    def join_request_error(self, group_id: str, session_timeout_ms: int) -> ErrorCode | None:
        """Why a JoinGroup may join no group at all: an empty group id
        (INVALID_GROUP_ID), a session timeout outside `group.min.session.timeout.ms`
        .. `group.max.session.timeout.ms` (INVALID_SESSION_TIMEOUT); else None. The
        same for a classic group and a consumer group's classic member."""
        lowest, highest = self.settings.min_session_timeout_ms, self.settings.max_session_timeout_ms
        if not group_id:
            return ErrorCode.invalid_group_id
        if not lowest <= session_timeout_ms <= highest:
            return ErrorCode.invalid_session_timeout
        return None

    def join(self, request: JoinRequest, *, now_ms: int) -> GroupResult[JoinResponse | None]:
        """JoinGroup (11). A v4+ new dynamic member first gets MEMBER_ID_REQUIRED."""
        member_id, protocol_type = request.member_id, request.protocol_type
        request_error = self.join_request_error(request.group_id, request.session_timeout_ms)
        if request_error is not None:
            return join_error(request_error, member_id)
        group = self.groups.get(request.group_id)
        if group is None:
            if member_id != UNKNOWN_MEMBER_ID:
                return join_error(ErrorCode.unknown_member_id, member_id)
            group = ClassicGroup(group_id=request.group_id)
        if not group.supports(protocol_type, request.protocols):
            return join_error(ErrorCode.inconsistent_group_protocol, member_id)
        self.groups.setdefault(request.group_id, group)
        member = ClassicMember(
            member_id=member_id,
            group_instance_id=request.group_instance_id,
            client_id=request.client_id,
            client_host=request.client_host,
            rebalance_timeout_ms=request.rebalance_timeout_ms,
            session_timeout_ms=request.session_timeout_ms,
            protocols=tuple(request.protocols),
        )
        if member_id == UNKNOWN_MEMBER_ID:
            return self._join_new_member(
                group, member, protocol_type, api_version=request.api_version, now_ms=now_ms
            )
        return self._join_known_member(group, member, protocol_type, now_ms=now_ms)

    def _join_new_member(
        self,
        group: ClassicGroup,
        member: ClassicMember,
        protocol_type: str,
        *,
        api_version: int,
        now_ms: int,
    ) -> GroupResult[JoinResponse | None]:
        instance_id = member.group_instance_id
        if instance_id is not None and instance_id in group.static_members:
            return self._replace_static_member(
                group, member, api_version=api_version, now_ms=now_ms
            )
        if len(group.members) + len(group.pending_members) >= self.settings.max_size:
            return join_error(ErrorCode.group_max_size_reached, UNKNOWN_MEMBER_ID)
        member.member_id = self.new_member_id(member.client_id)
        if instance_id is None and api_version >= 4:
            group.pending_members.add(member.member_id)
            self._session_deadlines[(group.group_id, member.member_id)] = (
                now_ms + member.session_timeout_ms
            )
            return join_error(ErrorCode.member_id_required, member.member_id)
        return self._add_member_and_rebalance(group, member, protocol_type, now_ms=now_ms)

    def _join_known_member(
        self, group: ClassicGroup, member: ClassicMember, protocol_type: str, *, now_ms: int
    ) -> GroupResult[JoinResponse | None]:
        member_id = member.member_id
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self._session_deadlines.pop((group.group_id, member_id), None)
            return self._add_member_and_rebalance(group, member, protocol_type, now_ms=now_ms)
        fenced = fenced_error(group, member_id, member.group_instance_id)
        if fenced is not None:
            return join_error(fenced, member_id)
        current = group.members.get(member_id)
        if current is None or group.state in (EMPTY, DEAD):
            return join_error(ErrorCode.unknown_member_id, member_id)
        unchanged = current.protocols == member.protocols
        if group.state == COMPLETING_REBALANCE and unchanged:
            return classic_result(response=self.join_response(group, current))
        if group.state == STABLE and unchanged and member_id != group.leader_id:
            return classic_result(response=self.join_response(group, current))
        current.protocols = member.protocols
        current.session_timeout_ms = member.session_timeout_ms
        current.rebalance_timeout_ms = member.rebalance_timeout_ms
        return self.park_join(group, current, now_ms=now_ms)

    def _add_member_and_rebalance(
        self, group: ClassicGroup, member: ClassicMember, protocol_type: str, *, now_ms: int
    ) -> GroupResult[JoinResponse | None]:
        group.members[member.member_id] = member
        if member.group_instance_id is not None:
            group.static_members[member.group_instance_id] = member.member_id
        if group.leader_id is None:
            group.leader_id = member.member_id
        if group.protocol_type is None:
            group.protocol_type = protocol_type
        group.new_member_added = True
        return self.park_join(group, member, now_ms=now_ms)

    def _replace_static_member(
        self, group: ClassicGroup, member: ClassicMember, *, api_version: int, now_ms: int
    ) -> GroupResult[JoinResponse | None]:
        instance_id = member.group_instance_id
        assert instance_id is not None
        old_id = group.static_members[instance_id]
        old = group.members.pop(old_id)
        self._session_deadlines.pop((group.group_id, old_id), None)
        completions = list(fence_waiters(group.group_id, old))
        new_id = self.new_member_id(member.client_id)
        member.member_id = new_id
        member.assignment = old.assignment
        group.members[new_id] = member
        group.static_members[instance_id] = new_id
        was_leader = group.leader_id == old_id
        if was_leader:
            group.leader_id = new_id
        # Kafka's rule: no rebalance while the protocol the group would select stays
        # the one it runs (member metadata, e.g. owned partitions, may differ).
        quiet = group.state == STABLE and group.select_protocol() == group.protocol_name
        if not quiet:
            result = self.park_join(group, member, now_ms=now_ms)
            return classic_result(
                records=result.records,
                response=result.response,
                parked=parked_member(result),
                completions=(*completions, *completions_of(result)),
            )
        self._session_deadlines[(group.group_id, new_id)] = now_ms + member.session_timeout_ms
        skip = was_leader and api_version >= SKIP_ASSIGNMENT_MIN_VERSION
        response = self.join_response(group, member, skip_assignment=skip)
        return classic_result(
            records=(self.metadata_record(group, now_ms=now_ms),),
            response=response,
            completions=tuple(completions),
        )
