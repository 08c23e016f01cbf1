"""Classic consumer groups: JoinGroup, SyncGroup, Heartbeat, LeaveGroup (sans-I/O).

Theory of operation (Kafka 4.2's classic group coordinator, rule for rule where it
matters to clients). A group moves through

    Empty -> PreparingRebalance -> CompletingRebalance -> Stable
      ^              ^   |                  |               |
      +--------------+---+------------------+---------------+

- *PreparingRebalance* collects JoinGroups. A group that was Empty waits
  `group.initial.rebalance.delay.ms`, extended by that delay (at most up to the
  largest rebalance timeout) while new members keep arriving; otherwise the join
  completes as soon as every known member rejoined, or at the rebalance timeout,
  when members that did not rejoin are removed.
- Completing the join starts the next generation: a protocol supported by every
  member is chosen by vote, a leader kept or elected, and every waiting JoinGroup
  answered (the leader's answer carries the members' metadata). A join that ends
  with no members bumps the generation of the now Empty group.
- *CompletingRebalance* waits for the leader's SyncGroup: its assignments are
  stored, the group becomes *Stable* and every waiting SyncGroup is answered. If it
  does not come within the rebalance timeout, members that sent no SyncGroup are
  removed and the group rebalances.
- A member that leaves or misses its session timeout is removed; a Stable or
  CompletingRebalance group then rebalances.
- Static members (`group.instance.id`) keep their place across restarts: a rejoin
  with an unknown member id replaces the old id (the old one is fenced with
  FENCED_INSTANCE_ID), and in a Stable group whose protocols did not change no
  rebalance happens.

Answers that must wait (a JoinGroup until the join completes, a follower's
SyncGroup until the leader's) are not answered by the operation: its result says
`parked=<member id>` and later results carry `completions` (member -> answer) that
the server shell delivers after writing the result's records.

State. As in Kafka, a rebalance in progress is memory only: what is durable is the
last stored generation, a `GroupMetadata` record (type 2) written when the leader's
assignment is stored, when a join leaves the group empty, and when a static member
is replaced. `replay` keeps those records (`stored`); `on_loaded` rebuilds the live
groups from them (Stable with their members, or Empty) and arms every member's
session. Timers (session, pending member, rebalance) are soft state, as Kafka's.

No I/O, no clock: every operation takes `now_ms` (monotonic, for timers); records'
epoch timestamps come from the injected `wall_ms`, member ids from `new_member_id`.

Responses and the live group state are in `classic_state`. (Past 600 lines: the
four operations and the timers share one state machine and its helpers; splitting
them would scatter it over several files.)
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from shoal.group import records as r
from shoal.group.classic_state import (
    EMPTY,
    UNKNOWN_MEMBER_ID,
    ClassicGroup,
    ClassicMember,
    ClassicResult,
    Completion,
    DescribedClassicGroup,
    DescribedClassicMember,
    JoinedMember,
    JoinResponse,
    LeaveResponse,
    LeavingMember,
    SyncResponse,
)
from shoal.group.subscriptions import subscribed_topics
from shoal.protocol.errors import ErrorCode

PREPARING_REBALANCE = "PreparingRebalance"
COMPLETING_REBALANCE = "CompletingRebalance"
STABLE = "Stable"
DEAD = "Dead"
GROUP_TYPE_CLASSIC = "classic"
SKIP_ASSIGNMENT_MIN_VERSION = 9
"""JoinGroup v9 (KIP-814) tells a rejoining static leader to skip the assignment;
before v9 it assigns, and its SyncGroup in a Stable group gets the stored assignment."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassicSettings:
    """Broker configs of classic groups, with Kafka's defaults."""

    initial_rebalance_delay_ms: int = 3_000
    min_session_timeout_ms: int = 6_000
    max_session_timeout_ms: int = 1_800_000
    max_size: int = 2_147_483_647

    @classmethod
    def from_values(cls, get_int: Callable[[str], int]) -> ClassicSettings:
        """From the broker configs `group.initial.rebalance.delay.ms`,
        `group.{min,max}.session.timeout.ms` and `group.max.size`."""
        return cls(
            initial_rebalance_delay_ms=get_int("group.initial.rebalance.delay.ms"),
            min_session_timeout_ms=get_int("group.min.session.timeout.ms"),
            max_session_timeout_ms=get_int("group.max.session.timeout.ms"),
            max_size=get_int("group.max.size"),
        )


def _default_member_id(client_id: str) -> str:
    return f"{client_id}-{uuid.uuid4()}"


class ClassicGroups:
    """The classic groups of one coordinator shard. See the module docstring."""

    def __init__(
        self,
        *,
        settings: ClassicSettings | None = None,
        new_member_id: Callable[[str], str] = _default_member_id,
        wall_ms: Callable[[], int] = lambda: 0,
    ) -> None:
        self.settings = settings or ClassicSettings()
        self._wall_ms = wall_ms
        """Epoch time for GroupMetadata's CurrentStateTimestamp (the injected clock's)."""
        self._new_member_id = new_member_id
        self.stored: dict[str, r.GroupMetadataValue] = {}
        self.groups: dict[str, ClassicGroup] = {}
        self._session_deadlines: dict[tuple[str, str], int] = {}

    # ---- replay and load --------------------------------------------------------------

    def replay(self, key: r.GroupMetadataKey, value: r.GroupMetadataValue | None) -> None:
        """Keep the last stored generation (a tombstone forgets the group)."""
        if value is None:
            self.stored.pop(key.group_id, None)
            group = self.groups.get(key.group_id)
            if group is not None and group.is_empty:
                del self.groups[key.group_id]
            return
        self.stored[key.group_id] = value

    def on_loaded(self, *, now_ms: int) -> None:
        """Rebuild the live groups from their stored generation; arm every session."""
        for group_id, value in sorted(self.stored.items()):
            if group_id in self.groups:
                continue
            group = ClassicGroup(
                group_id=group_id,
                state=STABLE if value.members else EMPTY,
                protocol_type=value.protocol_type or None,
                generation=value.generation,
                protocol_name=value.protocol,
                leader_id=value.leader,
            )
            for stored in value.members:
                protocols = ((value.protocol, stored.subscription),) if value.protocol else ()
                group.members[stored.member_id] = ClassicMember(
                    member_id=stored.member_id,
                    group_instance_id=stored.group_instance_id,
                    client_id=stored.client_id,
                    client_host=stored.client_host,
                    rebalance_timeout_ms=stored.rebalance_timeout,
                    session_timeout_ms=stored.session_timeout,
                    protocols=protocols,
                    assignment=stored.assignment,
                )
                if stored.group_instance_id is not None:
                    group.static_members[stored.group_instance_id] = stored.member_id
                self._session_deadlines[(group_id, stored.member_id)] = (
                    now_ms + stored.session_timeout
                )
            self.groups[group_id] = group

    # ---- JoinGroup --------------------------------------------------------------------

    def join(
        self,
        *,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str,
        protocols: Sequence[tuple[str, bytes]],
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        client_id: str,
        client_host: str,
        api_version: int,
        now_ms: int,
    ) -> ClassicResult[JoinResponse | None]:
        """JoinGroup (11). A v4+ new dynamic member first gets MEMBER_ID_REQUIRED."""
        settings = self.settings
        if not group_id:
            return _join_error(ErrorCode.invalid_group_id, member_id)
        if (
            not settings.min_session_timeout_ms
            <= session_timeout_ms
            <= (settings.max_session_timeout_ms)
        ):
            return _join_error(ErrorCode.invalid_session_timeout, member_id)
        group = self.groups.get(group_id)
        if group is None:
            if member_id != UNKNOWN_MEMBER_ID:
                return _join_error(ErrorCode.unknown_member_id, member_id)
            group = ClassicGroup(group_id=group_id)
        if not group.supports(protocol_type, protocols):
            return _join_error(ErrorCode.inconsistent_group_protocol, member_id)
        self.groups.setdefault(group_id, group)
        member = ClassicMember(
            member_id=member_id,
            group_instance_id=group_instance_id,
            client_id=client_id,
            client_host=client_host,
            rebalance_timeout_ms=rebalance_timeout_ms,
            session_timeout_ms=session_timeout_ms,
            protocols=tuple(protocols),
        )
        if member_id == UNKNOWN_MEMBER_ID:
            return self._join_new_member(
                group, member, protocol_type, api_version=api_version, now_ms=now_ms
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
    ) -> ClassicResult[JoinResponse | None]:
        instance_id = member.group_instance_id
        if instance_id is not None and instance_id in group.static_members:
            return self._replace_static_member(
                group, member, api_version=api_version, now_ms=now_ms
            )
        if len(group.members) + len(group.pending_members) >= self.settings.max_size:
            return _join_error(ErrorCode.group_max_size_reached, UNKNOWN_MEMBER_ID)
        member.member_id = self._new_member_id(member.client_id)
        if instance_id is None and api_version >= 4:
            group.pending_members.add(member.member_id)
            self._session_deadlines[(group.group_id, member.member_id)] = (
                now_ms + member.session_timeout_ms
            )
            return _join_error(ErrorCode.member_id_required, member.member_id)
        return self._add_member_and_rebalance(group, member, protocol_type, now_ms=now_ms)

    def _join_known_member(
        self, group: ClassicGroup, member: ClassicMember, protocol_type: str, *, now_ms: int
    ) -> ClassicResult[JoinResponse | None]:
        member_id = member.member_id
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self._session_deadlines.pop((group.group_id, member_id), None)
            return self._add_member_and_rebalance(group, member, protocol_type, now_ms=now_ms)
        fenced = fenced_error(group, member_id, member.group_instance_id)
        if fenced is not None:
            return _join_error(fenced, member_id)
        current = group.members.get(member_id)
        if current is None or group.state in (EMPTY, DEAD):
            return _join_error(ErrorCode.unknown_member_id, member_id)
        unchanged = current.protocols == member.protocols
        if group.state == COMPLETING_REBALANCE and unchanged:
            return ClassicResult(response=self._join_response(group, current))
        if group.state == STABLE and unchanged and member_id != group.leader_id:
            return ClassicResult(response=self._join_response(group, current))
        current.protocols = member.protocols
        current.session_timeout_ms = member.session_timeout_ms
        current.rebalance_timeout_ms = member.rebalance_timeout_ms
        return self._park_join(group, current, now_ms=now_ms)

    def _add_member_and_rebalance(
        self, group: ClassicGroup, member: ClassicMember, protocol_type: str, *, now_ms: int
    ) -> ClassicResult[JoinResponse | None]:
        group.members[member.member_id] = member
        if member.group_instance_id is not None:
            group.static_members[member.group_instance_id] = member.member_id
        if group.leader_id is None:
            group.leader_id = member.member_id
        if group.protocol_type is None:
            group.protocol_type = protocol_type
        group.new_member_added = True
        return self._park_join(group, member, now_ms=now_ms)

    def _park_join(
        self, group: ClassicGroup, member: ClassicMember, *, now_ms: int
    ) -> ClassicResult[JoinResponse | None]:
        """Mark `member` waiting for the join, start or advance the rebalance."""
        member.awaiting_join = True
        self._session_deadlines.pop((group.group_id, member.member_id), None)
        completions: list[Completion] = []
        if group.state != PREPARING_REBALANCE:
            completions.extend(self._prepare_rebalance(group, now_ms=now_ms))
        records, more = self._maybe_complete_join(group, now_ms=now_ms)
        completions.extend(more)
        own = [c for c in completions if c.member_id == member.member_id and c.join is not None]
        if own:
            others = tuple(c for c in completions if c not in own)
            return ClassicResult(records=records, response=own[0].join, completions=others)
        return ClassicResult(
            records=records, response=None, parked=member.member_id, completions=tuple(completions)
        )

    def _replace_static_member(
        self, group: ClassicGroup, member: ClassicMember, *, api_version: int, now_ms: int
    ) -> ClassicResult[JoinResponse | None]:
        instance_id = member.group_instance_id
        assert instance_id is not None
        old_id = group.static_members[instance_id]
        old = group.members.pop(old_id)
        self._session_deadlines.pop((group.group_id, old_id), None)
        completions = list(_fence_waiters(group.group_id, old))
        new_id = self._new_member_id(member.client_id)
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
            result = self._park_join(group, member, now_ms=now_ms)
            return ClassicResult(
                records=result.records,
                response=result.response,
                parked=result.parked,
                completions=(*completions, *result.completions),
            )
        self._session_deadlines[(group.group_id, new_id)] = now_ms + member.session_timeout_ms
        skip = was_leader and api_version >= SKIP_ASSIGNMENT_MIN_VERSION
        response = self._join_response(group, member, skip_assignment=skip)
        return ClassicResult(
            records=(self._metadata_record(group, now_ms=now_ms),),
            response=response,
            completions=tuple(completions),
        )

    # ---- rebalance ------------------------------------------------------------------

    def _prepare_rebalance(self, group: ClassicGroup, *, now_ms: int) -> list[Completion]:
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

    def _maybe_complete_join(
        self, group: ClassicGroup, *, now_ms: int
    ) -> tuple[tuple[r.CoordinatorRecord, ...], list[Completion]]:
        if group.state != PREPARING_REBALANCE or group.initial_delay_remaining_ms is not None:
            return (), []
        all_joined = all(m.awaiting_join for m in group.members.values())
        if all_joined and not group.pending_members:
            return self._complete_join(group, now_ms=now_ms)
        return (), []

    def _complete_join(
        self, group: ClassicGroup, *, now_ms: int
    ) -> tuple[tuple[r.CoordinatorRecord, ...], list[Completion]]:
        completions: list[Completion] = []
        for member in [m for m in group.members.values() if not m.awaiting_join]:
            completions.extend(self._remove_member(group, member.member_id))
        group.rebalance_deadline_ms = None
        group.initial_delay_remaining_ms = None
        group.generation += 1
        if group.is_empty:
            group.state = EMPTY
            group.protocol_name = None
            group.leader_id = None
            return (self._metadata_record(group, now_ms=now_ms),), completions
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
                    join=self._join_response(group, member),
                )
            )
        return (), completions

    def _join_response(
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

    def _remove_member(self, group: ClassicGroup, member_id: str) -> list[Completion]:
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

    def _after_removal(
        self, group: ClassicGroup, *, now_ms: int
    ) -> tuple[tuple[r.CoordinatorRecord, ...], list[Completion]]:
        """A member left or expired: rebalance a settled group, or maybe finish a join."""
        completions: list[Completion] = []
        if group.state in (STABLE, COMPLETING_REBALANCE):
            completions.extend(self._prepare_rebalance(group, now_ms=now_ms))
        records, more = self._maybe_complete_join(group, now_ms=now_ms)
        return records, completions + more

    def _metadata_record(self, group: ClassicGroup, *, now_ms: int) -> r.CoordinatorRecord:
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

    # ---- SyncGroup --------------------------------------------------------------------

    def sync(
        self,
        *,
        group_id: str,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: Mapping[str, bytes],
        now_ms: int,
    ) -> ClassicResult[SyncResponse | None]:
        """SyncGroup (14): the leader's assignments make the group Stable."""
        group = self.groups.get(group_id)
        if group is None or member_id not in group.members:
            fenced = None if group is None else fenced_error(group, member_id, group_instance_id)
            return _sync_error(fenced or ErrorCode.unknown_member_id)
        fenced = fenced_error(group, member_id, group_instance_id)
        if fenced is not None:
            return _sync_error(fenced)
        if generation_id != group.generation:
            return _sync_error(ErrorCode.illegal_generation)
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol_name is not None and protocol_name != group.protocol_name
        ):
            return _sync_error(ErrorCode.inconsistent_group_protocol)
        if group.state == PREPARING_REBALANCE:
            return _sync_error(ErrorCode.rebalance_in_progress)
        member = group.members[member_id]
        self._session_deadlines[(group_id, member_id)] = now_ms + member.session_timeout_ms
        if group.state == STABLE:
            return ClassicResult(response=self._sync_response(group, member))
        member.awaiting_sync = True
        if member_id != group.leader_id:
            return ClassicResult(response=None, parked=member_id)
        for other in group.members.values():
            other.assignment = assignments.get(other.member_id, b"")
        group.state = STABLE
        group.rebalance_deadline_ms = None
        completions = []
        for other in group.members.values():
            if other.awaiting_sync and other.member_id != member_id:
                completions.append(
                    Completion(
                        group_id=group_id,
                        member_id=other.member_id,
                        sync=self._sync_response(group, other),
                    )
                )
            other.awaiting_sync = False
        return ClassicResult(
            records=(self._metadata_record(group, now_ms=now_ms),),
            response=self._sync_response(group, member),
            completions=tuple(completions),
        )

    def _sync_response(self, group: ClassicGroup, member: ClassicMember) -> SyncResponse:
        return SyncResponse(
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            assignment=member.assignment,
        )

    # ---- Heartbeat and LeaveGroup -----------------------------------------------------

    def heartbeat(
        self,
        *,
        group_id: str,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
        now_ms: int,
    ) -> ErrorCode | None:
        """Heartbeat (12): refreshes the session; None = NONE."""
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.unknown_member_id
        fenced = fenced_error(group, member_id, group_instance_id)
        if fenced is not None:
            return fenced
        member = group.members.get(member_id)
        if member is None or group.state == EMPTY:
            return ErrorCode.unknown_member_id
        if generation_id != group.generation:
            return ErrorCode.illegal_generation
        if not member.awaiting_join:
            self._session_deadlines[(group_id, member_id)] = now_ms + member.session_timeout_ms
        if group.state == PREPARING_REBALANCE:
            return ErrorCode.rebalance_in_progress
        return None

    def leave(
        self, *, group_id: str, members: Sequence[LeavingMember], now_ms: int
    ) -> ClassicResult[LeaveResponse]:
        """LeaveGroup (13): remove members (batch since v3); the group rebalances."""
        group = self.groups.get(group_id)
        if group is None:
            return ClassicResult(response=LeaveResponse(error=ErrorCode.unknown_member_id))
        outcomes: list[tuple[LeavingMember, ErrorCode | None]] = []
        completions: list[Completion] = []
        removed = False
        for leaving in members:
            error, target = self._leaving_target(group, leaving)
            outcomes.append((leaving, error))
            if target is None:
                continue
            removed = True
            if target in group.pending_members:
                group.pending_members.discard(target)
                self._session_deadlines.pop((group_id, target), None)
            else:
                completions.extend(self._remove_member(group, target))
        records: tuple[r.CoordinatorRecord, ...] = ()
        if removed:
            records, more = self._after_removal(group, now_ms=now_ms)
            completions.extend(more)
        return ClassicResult(
            records=records,
            response=LeaveResponse(members=tuple(outcomes)),
            completions=tuple(completions),
        )

    def _leaving_target(
        self, group: ClassicGroup, leaving: LeavingMember
    ) -> tuple[ErrorCode | None, str | None]:
        if leaving.group_instance_id is not None:
            current = group.static_members.get(leaving.group_instance_id)
            if current is None:
                return ErrorCode.unknown_member_id, None
            if leaving.member_id not in (UNKNOWN_MEMBER_ID, current):
                return ErrorCode.fenced_instance_id, None
            return None, current
        if leaving.member_id in group.pending_members or leaving.member_id in group.members:
            return None, leaving.member_id
        return ErrorCode.unknown_member_id, None

    # ---- timers ---------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        deadlines = list(self._session_deadlines.values())
        deadlines.extend(
            g.rebalance_deadline_ms
            for g in self.groups.values()
            if g.rebalance_deadline_ms is not None
        )
        return min(deadlines) if deadlines else None

    def expire(self, *, now_ms: int) -> ClassicResult[tuple[tuple[str, str], ...]]:
        """Fire due timers: expired sessions (and pending members) are removed, due
        rebalances complete (or extend the initial delay). Response: who expired."""
        records: list[r.CoordinatorRecord] = []
        completions: list[Completion] = []
        expired: list[tuple[str, str]] = []
        due = sorted(k for k, deadline in self._session_deadlines.items() if deadline <= now_ms)
        touched: set[str] = set()
        for group_id, member_id in due:
            del self._session_deadlines[(group_id, member_id)]
            group = self.groups.get(group_id)
            if group is None:
                continue
            if member_id in group.pending_members:
                group.pending_members.discard(member_id)
            elif member_id in group.members:
                completions.extend(self._remove_member(group, member_id))
            else:
                continue
            expired.append((group_id, member_id))
            touched.add(group_id)
        for group_id in sorted(touched):
            more_records, more = self._after_removal(self.groups[group_id], now_ms=now_ms)
            records.extend(more_records)
            completions.extend(more)
        for group in list(self.groups.values()):
            deadline = group.rebalance_deadline_ms
            if deadline is None or deadline > now_ms:
                continue
            if group.state == COMPLETING_REBALANCE:
                more_records, more = self._sync_timed_out(group, now_ms=now_ms)
                records.extend(more_records)
                completions.extend(more)
                continue
            if group.state != PREPARING_REBALANCE:
                continue
            remaining = group.initial_delay_remaining_ms
            if remaining is not None and group.new_member_added and remaining > 0:
                delay = min(self.settings.initial_rebalance_delay_ms, remaining)
                group.initial_delay_remaining_ms = remaining - delay
                group.rebalance_deadline_ms = now_ms + delay
                group.new_member_added = False
                continue
            more_records, more = self._complete_join(group, now_ms=now_ms)
            records.extend(more_records)
            completions.extend(more)
        return ClassicResult(
            records=tuple(records), response=tuple(expired), completions=tuple(completions)
        )

    def _sync_timed_out(
        self, group: ClassicGroup, *, now_ms: int
    ) -> tuple[tuple[r.CoordinatorRecord, ...], list[Completion]]:
        """The leader's SyncGroup did not come within the rebalance timeout: members
        that sent no SyncGroup are removed and the group rebalances (Kafka's sync
        timeout)."""
        group.rebalance_deadline_ms = None
        completions: list[Completion] = []
        for member in [m for m in group.members.values() if not m.awaiting_sync]:
            completions.extend(self._remove_member(group, member.member_id))
        records, more = self._after_removal(group, now_ms=now_ms)
        return records, completions + more

    # ---- reads and deletion ---------------------------------------------------------

    def describe(self, group_id: str) -> DescribedClassicGroup:
        """DescribeGroups (15): an unknown id is Dead with no members."""
        group = self.groups.get(group_id)
        if group is None:
            return DescribedClassicGroup(
                group_id=group_id, state=DEAD, protocol_type="", protocol_data="", members=()
            )
        stable = group.state == STABLE
        return DescribedClassicGroup(
            group_id=group_id,
            state=group.state,
            protocol_type=group.protocol_type or "",
            protocol_data=(group.protocol_name or "") if stable else "",
            members=tuple(
                DescribedClassicMember(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    metadata=m.metadata(group.protocol_name) if stable else b"",
                    assignment=m.assignment if stable else b"",
                )
                for m in group.members.values()
            ),
        )

    def empty_since_ms(self, group_id: str) -> int | None:
        """Epoch ms of the stored generation of an Empty group (when it emptied)."""
        group = self.groups.get(group_id)
        stored = self.stored.get(group_id)
        if group is not None and not group.is_empty:
            return None
        return None if stored is None else stored.current_state_timestamp

    def state_of(self, group_id: str) -> str | None:
        group = self.groups.get(group_id)
        return None if group is None else group.state

    def protocol_type_of(self, group_id: str) -> str:
        group = self.groups.get(group_id)
        return "" if group is None or group.protocol_type is None else group.protocol_type

    def subscribed_topics(self, group_id: str) -> frozenset[str] | None:
        """Topics the members of a group using the consumer protocol subscribe to
        (None: not a consumer-protocol group with members)."""
        group = self.groups.get(group_id)
        if group is None or group.is_empty or group.protocol_type != "consumer":
            return None
        return subscribed_topics(m.metadata(group.protocol_name) for m in group.members.values())

    def delete_record(self, group_id: str) -> r.CoordinatorRecord:
        """The tombstone of a group's metadata (the caller checked it is empty)."""
        group = self.groups.get(group_id)
        assert group is None or group.is_empty, f"deleting classic group {group_id} with members"
        self.groups.pop(group_id, None)
        return r.CoordinatorRecord(key=r.GroupMetadataKey(group_id=group_id), value=None)

    def group_ids(self) -> Iterable[str]:
        return self.groups.keys()


def fenced_error(group: ClassicGroup, member_id: str, instance_id: str | None) -> ErrorCode | None:
    """FENCED_INSTANCE_ID when `instance_id` belongs to another member id."""
    if instance_id is None:
        return None
    current = group.static_members.get(instance_id)
    if current is not None and current != member_id:
        return ErrorCode.fenced_instance_id
    return None


def _fence_waiters(group_id: str, member: ClassicMember) -> list[Completion]:
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


def _join_error(error: ErrorCode, member_id: str) -> ClassicResult[JoinResponse | None]:
    return ClassicResult(response=JoinResponse(error=error, member_id=member_id))


def _sync_error(error: ErrorCode) -> ClassicResult[SyncResponse | None]:
    return ClassicResult(response=SyncResponse(error=error))
