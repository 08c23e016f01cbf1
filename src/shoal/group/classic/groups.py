"""Classic consumer groups: SyncGroup, Heartbeat, LeaveGroup, timers (sans-I/O).

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
SyncGroup until the leader's) are not answered by the operation: its result carries
a `Park(member id)` effect and later results carry `Completion` effects (member ->
answer) that the server shell delivers after writing the result's records
(`classic_state.classic_result`).

State. As in Kafka, a rebalance in progress is memory only: what is durable is the
last stored generation, a `GroupMetadata` record (type 2) written when the leader's
assignment is stored, when a join leaves the group empty, and when a static member
is replaced. `replay` keeps those records (`stored`); `on_loaded` rebuilds the live
groups from them (Stable with their members, or Empty) and arms every member's
session. Timers (session, pending member, rebalance) are soft state, as Kafka's.
Conversions to and from consumer groups (group/consumer/migration.py) act through replay: a
GroupMetadata tombstone removes the live group (its parked requests are owed
REBALANCE_IN_PROGRESS, `take_abandoned`), and a stored generation with members for a
group not live after loading (a downgrade) brings it to life in a rebalance.

No I/O, no clock: every operation takes `now_ms` (monotonic, for timers); records'
epoch timestamps come from the injected `wall_ms`, member ids from `new_member_id`,
and a group that replay brings to life takes its timers from `monotonic_ms`.

Modules: the responses and the live group state are in `state`; the
rebalance steps every operation shares (and the settings) in `rebalance`;
JoinGroup in `join`; SyncGroup, Heartbeat, LeaveGroup, timers, replay and
reads here (`ClassicGroups`, the class the coordinator uses).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from shoal.group import records as r
from shoal.group.classic.join import SKIP_ASSIGNMENT_MIN_VERSION, ClassicJoins
from shoal.group.classic.rebalance import (
    ClassicSettings,
    abandon_waiters,
    commit_member_error,
    fenced_error,
    sync_error,
)
from shoal.group.classic.state import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    GROUP_TYPE_CLASSIC,
    PREPARING_REBALANCE,
    STABLE,
    UNKNOWN_MEMBER_ID,
    ClassicGroup,
    ClassicMember,
    Completion,
    DescribedClassicGroup,
    DescribedClassicMember,
    LeaveResponse,
    LeavingMember,
    SyncRequest,
    SyncResponse,
    classic_result,
)
from shoal.group.classic.subscriptions import subscribed_topics
from shoal.group.results import GroupResult
from shoal.protocol.errors import ErrorCode

__all__ = [
    "COMPLETING_REBALANCE",
    "DEAD",
    "GROUP_TYPE_CLASSIC",
    "PREPARING_REBALANCE",
    "SKIP_ASSIGNMENT_MIN_VERSION",
    "STABLE",
    "ClassicGroups",
    "ClassicSettings",
    "commit_member_error",
    "fenced_error",
]


class ClassicGroups(ClassicJoins):
    """The classic groups of one coordinator shard. See the module docstring."""

    # ---- replay and load --------------------------------------------------------------

    def replay(self, key: r.GroupMetadataKey, value: r.GroupMetadataValue | None) -> None:
        """Keep the last stored generation. A tombstone forgets the group: its live
        state too (an upgrade to a consumer group tombstones a group with members,
        whose parked JoinGroup/SyncGroup then get REBALANCE_IN_PROGRESS, see
        `take_abandoned`). After loading, a generation with members for a group not
        live (a consumer group downgraded) brings it to life and starts a rebalance."""
        group_id = key.group_id
        if value is None:
            self.stored.pop(group_id, None)
            group = self.groups.pop(group_id, None)
            if group is not None:
                for member_id in list(group.members):
                    self._session_deadlines.pop((group_id, member_id), None)
                    self._abandoned.extend(abandon_waiters(group_id, group.members[member_id]))
                for member_id in group.pending_members:
                    self._session_deadlines.pop((group_id, member_id), None)
            return
        self.stored[group_id] = value
        if self._loaded and group_id not in self.groups and value.members:
            now_ms = self._monotonic_ms()
            group = self._materialise(group_id, value, now_ms=now_ms)
            self._abandoned.extend(self.prepare_rebalance(group, now_ms=now_ms))

    def take_abandoned(self) -> list[Completion]:
        """The answers owed to parked requests of groups replay removed."""
        abandoned, self._abandoned = self._abandoned, []
        return abandoned

    def on_loaded(self, *, now_ms: int) -> None:
        """Rebuild the live groups from their stored generation; arm every session."""
        self._loaded = True
        for group_id, value in sorted(self.stored.items()):
            if group_id not in self.groups:
                self._materialise(group_id, value, now_ms=now_ms)

    def _materialise(
        self, group_id: str, value: r.GroupMetadataValue, *, now_ms: int
    ) -> ClassicGroup:
        """The live group of a stored generation (Stable with its members, or Empty),
        every member's session armed."""
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
            self._session_deadlines[(group_id, stored.member_id)] = now_ms + stored.session_timeout
        self.groups[group_id] = group
        return group

    # ---- SyncGroup --------------------------------------------------------------------

    def sync(self, request: SyncRequest, *, now_ms: int) -> GroupResult[SyncResponse | None]:
        """SyncGroup (14): the leader's assignments make the group Stable."""
        group_id, member_id = request.group_id, request.member_id
        group_instance_id, generation_id = request.group_instance_id, request.generation_id
        protocol_type, protocol_name = request.protocol_type, request.protocol_name
        group = self.groups.get(group_id)
        if group is None or member_id not in group.members:
            fenced = None if group is None else fenced_error(group, member_id, group_instance_id)
            return sync_error(fenced or ErrorCode.unknown_member_id)
        fenced = fenced_error(group, member_id, group_instance_id)
        if fenced is not None:
            return sync_error(fenced)
        if generation_id != group.generation:
            return sync_error(ErrorCode.illegal_generation)
        if (protocol_type is not None and protocol_type != group.protocol_type) or (
            protocol_name is not None and protocol_name != group.protocol_name
        ):
            return sync_error(ErrorCode.inconsistent_group_protocol)
        if group.state == PREPARING_REBALANCE:
            return sync_error(ErrorCode.rebalance_in_progress)
        member = group.members[member_id]
        self._session_deadlines[(group_id, member_id)] = now_ms + member.session_timeout_ms
        if group.state == STABLE:
            return classic_result(response=self._sync_response(group, member))
        member.awaiting_sync = True
        if member_id != group.leader_id:
            return classic_result(response=None, parked=member_id)
        for other in group.members.values():
            other.assignment = request.assignments.get(other.member_id, b"")
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
        return classic_result(
            records=(self.metadata_record(group, now_ms=now_ms),),
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
    ) -> GroupResult[LeaveResponse]:
        """LeaveGroup (13): remove members (batch since v3); the group rebalances."""
        group = self.groups.get(group_id)
        if group is None:
            return classic_result(response=LeaveResponse(error=ErrorCode.unknown_member_id))
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
                completions.extend(self.remove_member(group, target))
        records: tuple[r.CoordinatorRecord, ...] = ()
        if removed:
            records, more = self.after_removal(group, now_ms=now_ms)
            completions.extend(more)
        return classic_result(
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

    def expire(self, *, now_ms: int) -> GroupResult[tuple[tuple[str, str], ...]]:
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
                completions.extend(self.remove_member(group, member_id))
            else:
                continue
            expired.append((group_id, member_id))
            touched.add(group_id)
        for group_id in sorted(touched):
            more_records, more = self.after_removal(self.groups[group_id], now_ms=now_ms)
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
            more_records, more = self.complete_join(group, now_ms=now_ms)
            records.extend(more_records)
            completions.extend(more)
        return classic_result(
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
            completions.extend(self.remove_member(group, member.member_id))
        records, more = self.after_removal(group, now_ms=now_ms)
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
