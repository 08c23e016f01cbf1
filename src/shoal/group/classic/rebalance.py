"""The classic rebalance machinery every classic operation shares (sans-I/O).

`ClassicRebalancer` holds the classic groups of a shard (`groups`, live; `stored`,
the last GroupMetadata record of each) and the member session deadlines, and owns
how a rebalance moves: prepare it (answer parked SyncGroups), complete the join
(next generation, protocol vote, leader, every parked JoinGroup answered), remove a
member (its parked answers fail), and the GroupMetadata record of a generation.
JoinGroup is in `join`, the other operations and timers in `groups`, which
explains the state machine.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from shoal.config import BrokerConfig, broker_keys
from shoal.group import records as r
from shoal.group.classic.state import (
    COMPLETING_REBALANCE,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    ClassicGroup,
    ClassicMember,
    Completion,
    JoinedMember,
    JoinResponse,
    SyncResponse,
    classic_result,
)
from shoal.group.results import GroupResult
from shoal.protocol.errors import ErrorCode


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassicSettings:
    """Broker configs of classic groups, with Kafka's defaults (their keys'
    declarations, config/broker_keys.py)."""

    initial_rebalance_delay_ms: int = broker_keys.GROUP_INITIAL_REBALANCE_DELAY_MS.default
    min_session_timeout_ms: int = broker_keys.GROUP_MIN_SESSION_TIMEOUT_MS.default
    max_session_timeout_ms: int = broker_keys.GROUP_MAX_SESSION_TIMEOUT_MS.default
    max_size: int = broker_keys.GROUP_MAX_SIZE.default

    @classmethod
    def from_config(cls, config: BrokerConfig) -> ClassicSettings:
        """From the broker configs `group.initial.rebalance.delay.ms`,
        `group.{min,max}.session.timeout.ms` and `group.max.size`."""
        return cls(
            initial_rebalance_delay_ms=config.get(broker_keys.GROUP_INITIAL_REBALANCE_DELAY_MS),
            min_session_timeout_ms=config.get(broker_keys.GROUP_MIN_SESSION_TIMEOUT_MS),
            max_session_timeout_ms=config.get(broker_keys.GROUP_MAX_SESSION_TIMEOUT_MS),
            max_size=config.get(broker_keys.GROUP_MAX_SIZE),
        )


def _default_member_id(client_id: str) -> str:
    return f"{client_id}-{uuid.uuid4()}"


class ClassicRebalancer:
    """State and rebalance steps of the classic groups of one shard."""

    def __init__(
        self,
        *,
        settings: ClassicSettings | None = None,
        new_member_id: Callable[[str], str] = _default_member_id,
        wall_ms: Callable[[], int] = lambda: 0,
        monotonic_ms: Callable[[], int] = lambda: 0,
    ) -> None:
        self.settings = settings or ClassicSettings()
        self._wall_ms = wall_ms
        """Epoch time for GroupMetadata's CurrentStateTimestamp (the injected clock's)."""
        self._monotonic_ms = monotonic_ms
        """Timer time for groups a replayed record brings to life (a downgrade)."""
        self.new_member_id = new_member_id
        self.stored: dict[str, r.GroupMetadataValue] = {}
        self.groups: dict[str, ClassicGroup] = {}
        self._session_deadlines: dict[tuple[str, str], int] = {}
        self._loaded = False
        """Set by `on_loaded`: replay is live (not loading a partition)."""
        self._abandoned: list[Completion] = []
        """Answers owed to parked requests of groups replay removed or restarted."""

    def park_join(
        self, group: ClassicGroup, member: ClassicMember, *, now_ms: int
    ) -> GroupResult[JoinResponse | None]:
        """Mark `member` waiting for the join, start or advance the rebalance."""
        member.awaiting_join = True
        self._session_deadlines.pop((group.group_id, member.member_id), None)
        completions: list[Completion] = []
        if group.state != PREPARING_REBALANCE:
            completions.extend(self.prepare_rebalance(group, now_ms=now_ms))
        records, more = self.maybe_complete_join(group, now_ms=now_ms)
        completions.extend(more)
        own = [c for c in completions if c.member_id == member.member_id and c.join is not None]
        if own:
            others = tuple(c for c in completions if c not in own)
            return classic_result(records=records, response=own[0].join, completions=others)
        return classic_result(
            records=records, response=None, parked=member.member_id, completions=tuple(completions)
        )

    # ---- rebalance ------------------------------------------------------------------

    def prepare_rebalance(self, group: ClassicGroup, *, now_ms: int) -> list[Completion]:
        completions: list[Completion] = []
        if group.state == COMPLETING_REBALANCE:
            for member in group.members.values():
                if member.awaiting_sync:
                    member.awaiting_sync = False
                    completions.append(
                        Completion(
                            group_id=group.group_id,
                            member_id=member.member_id,
                            sync=SyncResponse(error=ErrorCode.rebalance_in_progress),
                        )
                    )
        timeout = group.max_rebalance_timeout_ms()
        if group.state == EMPTY:
            delay = min(self.settings.initial_rebalance_delay_ms, timeout)
            group.initial_delay_remaining_ms = max(timeout - delay, 0)
            group.rebalance_deadline_ms = now_ms + delay
            group.new_member_added = False
        else:
            group.initial_delay_remaining_ms = None
            group.rebalance_deadline_ms = now_ms + timeout
        group.state = PREPARING_REBALANCE
        return completions

    def maybe_complete_join(
        self, group: ClassicGroup, *, now_ms: int
    ) -> tuple[tuple[r.CoordinatorRecord, ...], list[Completion]]:
        if group.state != PREPARING_REBALANCE or group.initial_delay_remaining_ms is not None:
            return (), []
        all_joined = all(m.awaiting_join for m in group.members.values())
        if all_joined and not group.pending_members:
            return self.complete_join(group, now_ms=now_ms)
        return (), []

    def complete_join(
        self, group: ClassicGroup, *, now_ms: int
    ) -> tuple[tuple[r.CoordinatorRecord, ...], list[Completion]]:
        completions: list[Completion] = []
        for member in [m for m in group.members.values() if not m.awaiting_join]:
            completions.extend(self.remove_member(group, member.member_id))
        group.rebalance_deadline_ms = None
        group.initial_delay_remaining_ms = None
        group.generation += 1
        if group.is_empty:
            group.state = EMPTY
            group.protocol_name = None
            group.leader_id = None
            return (self.metadata_record(group, now_ms=now_ms),), completions
        group.protocol_name = group.select_protocol()
        group.state = COMPLETING_REBALANCE
        group.rebalance_deadline_ms = now_ms + group.max_rebalance_timeout_ms()
        if group.leader_id not in group.members:
            group.leader_id = next(iter(group.members))
        for member in group.members.values():
            member.awaiting_join = False
            member.assignment = b""
            self._session_deadlines[(group.group_id, member.member_id)] = (
                now_ms + member.session_timeout_ms
            )
            completions.append(
                Completion(
                    group_id=group.group_id,
                    member_id=member.member_id,
                    join=self.join_response(group, member),
                )
            )
        return (), completions

    def join_response(
        self, group: ClassicGroup, member: ClassicMember, *, skip_assignment: bool = False
    ) -> JoinResponse:
        is_leader = member.member_id == group.leader_id
        members: tuple[JoinedMember, ...] = ()
        if is_leader:
            members = tuple(
                JoinedMember(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    metadata=m.metadata(group.protocol_name),
                )
                for m in group.members.values()
            )
        return JoinResponse(
            generation_id=group.generation,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader_id or "",
            skip_assignment=skip_assignment,
            member_id=member.member_id,
            members=members,
        )

    def remove_member(self, group: ClassicGroup, member_id: str) -> list[Completion]:
        member = group.members.pop(member_id)
        self._session_deadlines.pop((group.group_id, member_id), None)
        if member.group_instance_id is not None:
            group.static_members.pop(member.group_instance_id, None)
        if group.leader_id == member_id:
            group.leader_id = next(iter(group.members), None)
        completions: list[Completion] = []
        if member.awaiting_join:
            completions.append(
                Completion(
                    group_id=group.group_id,
                    member_id=member_id,
                    join=JoinResponse(error=ErrorCode.unknown_member_id, member_id=member_id),
                )
            )
        if member.awaiting_sync:
            completions.append(
                Completion(
                    group_id=group.group_id,
                    member_id=member_id,
                    sync=SyncResponse(error=ErrorCode.unknown_member_id),
                )
            )
        return completions

    def after_removal(
        self, group: ClassicGroup, *, now_ms: int
    ) -> tuple[tuple[r.CoordinatorRecord, ...], list[Completion]]:
        """A member left or expired: rebalance a settled group, or maybe finish a join."""
        completions: list[Completion] = []
        if group.state in (STABLE, COMPLETING_REBALANCE):
            completions.extend(self.prepare_rebalance(group, now_ms=now_ms))
        records, more = self.maybe_complete_join(group, now_ms=now_ms)
        return records, completions + more

    def metadata_record(self, group: ClassicGroup, *, now_ms: int) -> r.CoordinatorRecord:
        del now_ms  # timers run on monotonic time; the record carries epoch time
        protocol = group.protocol_name
        return r.CoordinatorRecord(
            key=r.GroupMetadataKey(group_id=group.group_id),
            value=r.GroupMetadataValue(
                protocol_type=group.protocol_type or "",
                generation=group.generation,
                protocol=protocol,
                leader=group.leader_id,
                current_state_timestamp=self._wall_ms(),
                members=tuple(
                    r.MemberMetadata(
                        member_id=m.member_id,
                        group_instance_id=m.group_instance_id,
                        client_id=m.client_id,
                        client_host=m.client_host,
                        rebalance_timeout=m.rebalance_timeout_ms,
                        session_timeout=m.session_timeout_ms,
                        subscription=m.metadata(protocol),
                        assignment=m.assignment,
                    )
                    for m in group.members.values()
                ),
            ),
        )


def fenced_error(group: ClassicGroup, member_id: str, instance_id: str | None) -> ErrorCode | None:
    """FENCED_INSTANCE_ID when `instance_id` belongs to another member id."""
    if instance_id is None:
        return None
    current = group.static_members.get(instance_id)
    if current is not None and current != member_id:
        return ErrorCode.fenced_instance_id
    return None


def commit_member_error(
    group: ClassicGroup, member_id: str, instance_id: str | None, generation_id: int
) -> ErrorCode | None:
    """The member check of an offset commit to a live classic group (OffsetCommit
    and TxnOffsetCommit, as Kafka's `ClassicGroup.validateMember` then the generation):
    FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, in that order; else None."""
    fenced = fenced_error(group, member_id, instance_id)
    if fenced is not None:
        return fenced
    if member_id not in group.members:
        return ErrorCode.unknown_member_id
    if generation_id != group.generation:
        return ErrorCode.illegal_generation
    return None


def fence_waiters(group_id: str, member: ClassicMember) -> list[Completion]:
    out = []
    if member.awaiting_join:
        out.append(
            Completion(
                group_id=group_id,
                member_id=member.member_id,
                join=JoinResponse(error=ErrorCode.fenced_instance_id, member_id=member.member_id),
            )
        )
    if member.awaiting_sync:
        out.append(
            Completion(
                group_id=group_id,
                member_id=member.member_id,
                sync=SyncResponse(error=ErrorCode.fenced_instance_id),
            )
        )
    return out


def abandon_waiters(group_id: str, member: ClassicMember) -> list[Completion]:
    """REBALANCE_IN_PROGRESS for a member's parked JoinGroup and SyncGroup (its group
    became a consumer group: the member rejoins there)."""
    out = []
    if member.awaiting_join:
        out.append(
            Completion(
                group_id=group_id,
                member_id=member.member_id,
                join=JoinResponse(
                    error=ErrorCode.rebalance_in_progress, member_id=member.member_id
                ),
            )
        )
    if member.awaiting_sync:
        out.append(
            Completion(
                group_id=group_id,
                member_id=member.member_id,
                sync=SyncResponse(error=ErrorCode.rebalance_in_progress),
            )
        )
    return out


def join_error(error: ErrorCode, member_id: str) -> GroupResult[JoinResponse | None]:
    return classic_result(response=JoinResponse(error=error, member_id=member_id))


def sync_error(error: ErrorCode) -> GroupResult[SyncResponse | None]:
    return classic_result(response=SyncResponse(error=error))
