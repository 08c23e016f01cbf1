"""What the group coordinator's operations return: records, a response, effects.

Every operation returns a `GroupResult[Response]`: the one coordinator result type
(`shoal.coordinator.CoordinatorResult`, coordinator/result.py) over the group
coordinator's records. The caller (the coordinator runtime):

1. appends `records` to `__consumer_offsets` and replays each into the shard;
2. performs the `effects` against the share coordinator (the persister) and reports
   each outcome back to the shard (`complete_initialization`,
   `complete_state_deletion`, `complete_group_deletion`);
3. sends `response`.

Effects are requests to the outside world, never performed here:
`InitializeShareState` mirrors an InitializeShareGroupState request (StateEpoch =
group epoch; StartOffset -1 = resolve by `share.auto.offset.reset`, 0 = from the
start of the partition); `DeleteShareState` mirrors a DeleteShareGroupState request.

Errors are Kafka error codes (`ErrorCode`, kio's enum re-exported by
`shoal.protocol.errors`), which the wire layer encodes as they are.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Protocol, TypeAlias, TypeVar

from shoal.coordinator.result import CoordinatorResult
from shoal.group.records import CoordinatorRecord, TopicPartitions
from shoal.protocol.errors import ErrorCode

# ---- effects ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class InitializePartition:
    partition: int
    start_offset: int


@dataclass(frozen=True, slots=True, kw_only=True)
class InitializeTopic:
    topic_id: uuid.UUID
    topic_name: str
    partitions: tuple[InitializePartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class InitializeShareState:
    """Initialise these share-partitions, then call `complete_initialization`."""

    group_id: str
    state_epoch: int
    topics: tuple[InitializeTopic, ...]

    def partitions_by_topic(self) -> dict[uuid.UUID, tuple[int, ...]]:
        return {t.topic_id: tuple(p.partition for p in t.partitions) for t in self.topics}


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteTopic:
    topic_id: uuid.UUID
    topic_name: str
    partitions: tuple[int, ...] | None
    """None only for a topic found deleting after a reload whose topic no longer
    exists: delete every partition the persister holds for (group, topic)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteShareState:
    """Delete these share-partitions' state, then call `complete_state_deletion`
    (or `complete_group_deletion` when `for_group_deletion`)."""

    group_id: str
    topics: tuple[DeleteTopic, ...]
    for_group_deletion: bool = False


Effect = InitializeShareState | DeleteShareState

R = TypeVar("R")

GroupResult: TypeAlias = CoordinatorResult[CoordinatorRecord, R]
"""What every group coordinator operation returns: records to write (then replay),
the response, and effects to perform (`Effect`s; a classic operation's are
`classic_state.Park` and `classic_state.Completion`)."""


# ---- responses ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ShareGroupHeartbeatResponse:
    """ShareGroupHeartbeat (76) response fields; `assignment` None = unchanged."""

    error: ErrorCode | None = None
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: tuple[TopicPartitions, ...] | None = None


def heartbeat_error(
    error: ErrorCode, message: str | None = None, *, member_id: str | None = None
) -> GroupResult[ShareGroupHeartbeatResponse]:
    """A share or consumer group heartbeat refused with `error` (and its message):
    no records."""
    return CoordinatorResult(
        records=(),
        response=ShareGroupHeartbeatResponse(
            error=error, error_message=message, member_id=member_id
        ),
    )


class MemberHeartbeat(Protocol):
    """What `absent_member_error` reads of a share or consumer group heartbeat."""

    @property
    def group_id(self) -> str: ...
    @property
    def member_id(self) -> str: ...


def absent_member_error(
    kind: str, request: MemberHeartbeat, *, joining: bool, size: int, max_size: int
) -> GroupResult[ShareGroupHeartbeatResponse] | None:
    """A heartbeat of a member the `kind` ("share", "consumer") group of `size`
    members does not have: UNKNOWN_MEMBER_ID unless it is `joining` (epoch 0),
    GROUP_MAX_SIZE_REACHED if the group is full; else None (it may join)."""
    if not joining:
        return heartbeat_error(
            ErrorCode.unknown_member_id,
            f"Member {request.member_id} is not a member of group {request.group_id}.",
        )
    if size >= max_size:
        return heartbeat_error(
            ErrorCode.group_max_size_reached,
            f"The {kind} group has reached its maximum capacity of {max_size} members.",
        )
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedTopicPartitions:
    topic_id: uuid.UUID
    topic_name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedMember:
    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: tuple[DescribedTopicPartitions, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedGroup:
    """One group of a ShareGroupDescribe (77) response."""

    group_id: str
    error: ErrorCode | None = None
    error_message: str | None = None
    group_state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[DescribedMember, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ListedGroup:
    """One group of a ListGroups response."""

    group_id: str
    protocol_type: str
    group_state: str
    group_type: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteGroupResult:
    """`pending`: the group's state is being deleted (a `DeleteShareState` effect
    with `for_group_deletion`); its final result comes from
    `complete_group_deletion`."""

    group_id: str
    error: ErrorCode | None = None
    pending: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteGroupsResponse:
    results: tuple[DeleteGroupResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupEpochResponse:
    """Answer of `reset_epoch`, `complete_initialization`, `complete_*_deletion`."""

    group_id: str
    error: ErrorCode | None = None
    group_epoch: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetPartitionResult:
    """One partition of an AlterShareGroupOffsets (91) answer. `error` is the
    coordinator's own, or the code of the persister's error when its initialisation
    failed."""

    partition: int
    error: ErrorCode | None = None
    error_message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterOffsetsTopic:
    topic_name: str
    topic_id: uuid.UUID | None
    """None for a topic the cluster does not have."""
    partitions: tuple[OffsetPartitionResult, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AlterOffsetsResponse:
    """AlterShareGroupOffsets (91): a group-level error, else one row per requested
    topic (request order, duplicates merged) and the group epoch after the reset."""

    error: ErrorCode | None = None
    error_message: str | None = None
    group_epoch: int = 0
    topics: tuple[AlterOffsetsTopic, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteOffsetsTopic:
    """One topic of a DeleteShareGroupOffsets (92) answer (`error` as in
    `OffsetPartitionResult`)."""

    topic_name: str
    topic_id: uuid.UUID | None
    error: ErrorCode | None = None
    error_message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DeleteOffsetsResponse:
    """DeleteShareGroupOffsets (92): a group-level error, else one row per requested
    topic (request order, duplicates merged)."""

    error: ErrorCode | None = None
    error_message: str | None = None
    topics: tuple[DeleteOffsetsTopic, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedOffsetsPartition:
    """One partition of a DescribeShareGroupOffsets (90) answer: the share
    coordinator's summary, and the lag (-1 unless both the start offset and the
    delivery-complete count are known)."""

    partition: int
    start_offset: int = -1
    leader_epoch: int = 0
    lag: int = -1
    error: ErrorCode | None = None
    error_message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedOffsetsTopic:
    topic_name: str
    topic_id: uuid.UUID | None
    """None for a topic the cluster does not have."""
    partitions: tuple[DescribedOffsetsPartition, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupsChanged:
    """Answer of timer and metadata operations: the groups whose epoch moved and
    the members removed."""

    bumped_groups: tuple[str, ...] = ()
    expired_members: tuple[tuple[str, str], ...] = ()
