"""What classic-group operations take and return, and the live state they work on.

Requests (`JoinRequest`, `SyncRequest`: one type from the handler down to whichever
group serves the member), responses (`JoinResponse`, `SyncResponse`, `LeaveResponse`,
described groups), `Completion` (the answer to a parked JoinGroup or SyncGroup),
`Park` (the effect of a request that waits), the classic reading of the one result
type (`classic_result`, `parked_member`, `completions_of`) and the live
`ClassicGroup` / `ClassicMember` that `classic.ClassicGroups` changes (see its
docstring).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from shoal.coordinator.result import CoordinatorResult
from shoal.group import records as r
from shoal.group.results import GroupResult
from shoal.protocol.errors import ErrorCode

EMPTY = "Empty"
PREPARING_REBALANCE = "PreparingRebalance"
COMPLETING_REBALANCE = "CompletingRebalance"
STABLE = "Stable"
DEAD = "Dead"
GROUP_TYPE_CLASSIC = "classic"
UNKNOWN_MEMBER_ID = ""
NO_GENERATION = -1

R = TypeVar("R")


# ---- requests -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinRequest:
    """A JoinGroup (11) as the coordinator reads it, whichever group serves it (a
    classic group, or a consumer group's classic member)."""

    group_id: str
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: Sequence[tuple[str, bytes]]
    session_timeout_ms: int
    rebalance_timeout_ms: int
    """The session timeout before JoinGroup v1 (the handler's reading)."""
    client_id: str
    client_host: str
    api_version: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncRequest:
    """A SyncGroup (14) as the coordinator reads it; `protocol_type` and
    `protocol_name` are None before v5, `assignments` the leader's (member id ->
    assignment; empty from a follower)."""

    group_id: str
    member_id: str
    generation_id: int
    group_instance_id: str | None
    protocol_type: str | None
    protocol_name: str | None
    assignments: Mapping[str, bytes]


# ---- responses ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinedMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinResponse:
    error: ErrorCode | None = None
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    member_id: str = UNKNOWN_MEMBER_ID
    members: tuple[JoinedMember, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class SyncResponse:
    error: ErrorCode | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True, kw_only=True)
class LeavingMember:
    member_id: str
    group_instance_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaveResponse:
    """`error` is top-level (no such group); `members` one error per leaving member."""

    error: ErrorCode | None = None
    members: tuple[tuple[LeavingMember, ErrorCode | None], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedClassicMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedClassicGroup:
    group_id: str
    state: str
    protocol_type: str
    protocol_data: str
    members: tuple[DescribedClassicMember, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Completion:
    """Answer the parked JoinGroup (`join`) or SyncGroup (`sync`) of a member."""

    group_id: str
    member_id: str
    join: JoinResponse | None = None
    sync: SyncResponse | None = None


@dataclass(frozen=True, slots=True)
class Park:
    """Effect: the request of `member_id` waits; a later result's `Completion` for
    the member answers it (the shell keeps the waiting request,
    server/services/classic_service.py)."""

    member_id: str


def classic_result(
    *,
    records: tuple[r.CoordinatorRecord, ...] = (),
    response: R,
    parked: str | None = None,
    completions: tuple[Completion, ...] = (),
) -> GroupResult[R]:
    """A classic operation's result in the one result type: the request of `parked`
    waits (a `Park` effect first, response None), then `completions` answer the
    parked requests of other members (`Completion` effects)."""
    effects: tuple[object, ...] = completions
    if parked is not None:
        effects = (Park(parked), *completions)
    return CoordinatorResult(records=records, response=response, effects=effects)


def parked_member(result: GroupResult[Any]) -> str | None:
    """The member whose request `result` parks (its `Park` effect), if any."""
    for effect in result.effects:
        if isinstance(effect, Park):
            return effect.member_id
    return None


def completions_of(result: GroupResult[Any]) -> tuple[Completion, ...]:
    """The parked requests `result` answers, in order."""
    return tuple(effect for effect in result.effects if isinstance(effect, Completion))


# ---- live state -----------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class ClassicMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]
    assignment: bytes = b""
    awaiting_join: bool = False
    awaiting_sync: bool = False

    def metadata(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""


@dataclass(slots=True, kw_only=True)
class ClassicGroup:
    group_id: str
    state: str = EMPTY
    protocol_type: str | None = None
    generation: int = 0
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, ClassicMember] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    pending_members: set[str] = field(default_factory=set)
    rebalance_deadline_ms: int | None = None
    initial_delay_remaining_ms: int | None = None
    """Set while the first join of an Empty group waits `initial_rebalance_delay_ms`."""
    new_member_added: bool = False

    @property
    def is_empty(self) -> bool:
        return not self.members

    def candidate_protocols(self) -> set[str]:
        names: set[str] | None = None
        for member in self.members.values():
            mine = {name for name, _ in member.protocols}
            names = mine if names is None else names & mine
        return names or set()

    def supports(self, protocol_type: str, protocols: Sequence[tuple[str, bytes]]) -> bool:
        if not protocol_type or not protocols:
            return False
        if self.is_empty:
            return True
        wanted = {name for name, _ in protocols}
        return self.protocol_type == protocol_type and bool(self.candidate_protocols() & wanted)

    def select_protocol(self) -> str:
        """Each member votes for its most preferred protocol all members support."""
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = next(name for name, _ in member.protocols if name in candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(sorted(votes), key=lambda name: votes[name])

    def max_rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)
