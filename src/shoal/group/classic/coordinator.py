"""Classic groups and their committed offsets inside the group coordinator shard.

`ClassicCoordinator` owns the replay of record types 1 (OffsetCommit) and 2
(GroupMetadata) and the entry points of the classic APIs, applying the group-id
namespace first: one id is one group type. `share_type(group_id)` (given by the
shard) says whether an id is taken by a share or consumer group; then, as Kafka 4.2:

- JoinGroup to a share group answers INCONSISTENT_GROUP_PROTOCOL; to a non-empty
  consumer group it is served there, the member a classic member of the consumer
  group (group/consumer/classic_members.py), and so are its SyncGroup, Heartbeat and
  LeaveGroup; a JoinGroup to an empty consumer group replaces it by a classic group
  (its records tombstoned first), as Kafka 4.2;
- SyncGroup, Heartbeat and LeaveGroup on a share group answer UNKNOWN_MEMBER_ID (no
  such classic member);
- OffsetCommit, OffsetFetch and OffsetDelete answer GROUP_ID_NOT_FOUND, except
  that a consumer group (KIP-848) commits and fetches here: its member is checked by
  `consumer_commit_error` (member epoch as generation), its offsets are these;
- DescribeGroups (v0-5) describes it as Dead; DeleteGroups is the shard's.

Simple groups. As Kafka's OffsetMetadataManager.replay, an offset (committed or
pending in a transaction) replayed for an id no group holds makes a "simple" group:
Empty, no protocol type, no GroupMetadata record (`simple`, built by replay only). It
outlives its offsets: deleting them (OffsetDelete, a deleted topic, an aborted
transaction) leaves it Empty, listed, described and deletable, until DeleteGroups or
the next offsets cleanup pass (`expire_offsets`, Kafka's
GroupCoordinatorShard.cleanupGroupMetadata) writes its GroupMetadata tombstone, whose
replay forgets it. The cleanup pass deletes every Empty classic group left without
offsets the same way. After a restart, replaying the log's offset records brings a
simple group back as Kafka's does, for as long as its records are in the log.

TxnOffsetCommit (28) commits offsets pending their transaction's marker
(`txn_offsets`, group/txn_offsets.py: its own rules and records, type 1000);
OffsetFetch with `require_stable` answers UNSTABLE_OFFSET_COMMIT for them, offsets
retention keeps them, deleting a group, a topic or an offset drops them.

`upgrade` gives the shard the records converting a classic group when a
ConsumerGroupHeartbeat joins it (group/consumer/migration.py has the rules).

Rules are in `groups` (membership) and `committed_offsets` (offsets); results carry
records for the runtime to write and replay, as every shard operation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from shoal.coordinator.result import CoordinatorResult
from shoal.group import records as r
from shoal.group.classic.groups import (
    DEAD,
    GROUP_TYPE_CLASSIC,
    ClassicGroups,
    ClassicSettings,
)
from shoal.group.classic.state import (
    EMPTY,
    DescribedClassicGroup,
    JoinRequest,
    JoinResponse,
    LeaveResponse,
    LeavingMember,
    SyncRequest,
    SyncResponse,
    classic_result,
)
from shoal.group.committed_offsets import (
    CommitResult,
    CommittedOffset,
    CommittedOffsets,
    FetchedOffset,
    OffsetToCommit,
    refused,
)
from shoal.group.consumer import classic_members as consumer_classic
from shoal.group.consumer import membership as consumer_membership
from shoal.group.consumer import migration
from shoal.group.consumer.classic_members import ConsumerGroupsAccess
from shoal.group.consumer.group import GROUP_TYPE_CONSUMER, ConsumerGroup
from shoal.group.results import DeleteGroupResult, GroupResult, ListedGroup
from shoal.group.settings import ConsumerGroupSettings
from shoal.group.topic_image import TopicImage
from shoal.group.txn_offsets import PendingOffset, PendingTxnOffsets, txn_commit_error
from shoal.protocol.errors import ErrorCode


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassicDurableState:
    """What replay built: stored generations and committed offsets."""

    groups: dict[str, r.GroupMetadataValue]
    simple_groups: frozenset[str]
    offsets: dict[str, dict[tuple[str, int], CommittedOffset]]
    pending_txn_offsets: dict[tuple[str, int], dict[tuple[str, int], PendingOffset]]


class ClassicCoordinator:
    """See the module docstring."""

    def __init__(
        self,
        *,
        share_type: Callable[[str], str | None],
        settings: ClassicSettings | None = None,
        wall_ms: Callable[[], int] = lambda: 0,
        monotonic_ms: Callable[[], int] = lambda: 0,
        consumer_commit_error: Callable[[str, str, int], ErrorCode | None] | None = None,
        consumers: ConsumerGroupsAccess | None = None,
        consumer_subscriptions: Callable[[str], frozenset[str] | None] = lambda _group: None,
    ) -> None:
        self._share_type = share_type
        self._wall_ms = wall_ms
        self._consumers = consumers
        """The shard's consumer groups, for classic members of consumer groups."""
        self._consumer_commit_error = consumer_commit_error
        self._consumer_subscriptions = consumer_subscriptions
        """group -> the topics a consumer group's (KIP-848) members subscribe to, or
        None if the id is not a consumer group (the shard's)."""
        """(group, member id, member epoch) -> why a consumer group's member may not
        commit, or None (the shard's `consumer_commit_error`)."""
        self.groups = ClassicGroups(settings=settings, wall_ms=wall_ms, monotonic_ms=monotonic_ms)
        self.offsets = CommittedOffsets()
        self.txn_offsets = PendingTxnOffsets()
        self.simple: set[str] = set()
        """Durable: the simple groups (module docstring), made by replayed offsets,
        forgotten by a GroupMetadata record (a tombstone, or the group's first
        generation) or by a consumer or share group taking the id."""

    # ---- replay -----------------------------------------------------------------------

    def replay(self, record: r.CoordinatorRecord) -> bool:
        """Apply a record of type 1, 2 or 1000; False if it is of another type."""
        key = record.key
        if isinstance(key, r.OffsetCommitKey):
            assert record.value is None or isinstance(record.value, r.OffsetCommitValue)
            self.offsets.replay(key, record.value)
            self.txn_offsets.replayed_commit(key, record.value)
            if record.value is not None:
                self._note_simple(key.group_id)
            return True
        if isinstance(key, r.PendingTxnOffsetKey):
            assert record.value is None or isinstance(record.value, r.PendingTxnOffsetValue)
            self.txn_offsets.replay(key, record.value)
            if record.value is not None:
                self._note_simple(key.group_id)
            return True
        if isinstance(key, r.GroupMetadataKey):
            assert record.value is None or isinstance(record.value, r.GroupMetadataValue)
            self.simple.discard(key.group_id)
            self.groups.replay(key, record.value)
            return True
        return False

    def _note_simple(self, group_id: str) -> None:
        """An offset of `group_id` was replayed: a simple group if no group holds it."""
        if (
            group_id not in self.groups.groups
            and group_id not in self.groups.stored
            and self._share_type(group_id) is None
        ):
            self.simple.add(group_id)

    def forget_simple(self, group_id: str) -> None:
        """A consumer or share group's record took `group_id` (replay, the shard's)."""
        self.simple.discard(group_id)

    def on_loaded(self, *, now_ms: int) -> None:
        self.groups.on_loaded(now_ms=now_ms)

    def durable_state(self) -> ClassicDurableState:
        return ClassicDurableState(
            groups=dict(self.groups.stored),
            simple_groups=frozenset(self.simple),
            offsets=self.offsets.snapshot(),
            pending_txn_offsets=self.txn_offsets.snapshot(),
        )

    def has_members(self, group_id: str) -> bool:
        """A classic group with a membership, or a simple group (not only offsets of
        a group of another type)."""
        return (
            group_id in self.groups.groups
            or group_id in self.groups.stored
            or group_id in self.simple
        )

    def has_group(self, group_id: str) -> bool:
        return (
            group_id in self.groups.groups
            or group_id in self.groups.stored
            or group_id in self.simple
            or self.offsets.has_group(group_id)
            or self.txn_offsets.has_group(group_id)
        )

    def group_type(self, group_id: str) -> str | None:
        return GROUP_TYPE_CLASSIC if self.has_group(group_id) else None

    # ---- membership -----------------------------------------------------------------

    def join(self, request: JoinRequest, *, now_ms: int) -> GroupResult[JoinResponse | None]:
        group_id, member_id = request.group_id, request.member_id
        kind = self._share_type(group_id)
        consumer = self._consumer_group(group_id)
        replaced: tuple[r.CoordinatorRecord, ...] = ()
        if kind is not None and consumer is None:
            return classic_result(
                response=JoinResponse(
                    error=ErrorCode.inconsistent_group_protocol, member_id=member_id
                )
            )
        if consumer is not None and self._consumers is not None:
            error = self.groups.join_request_error(group_id, request.session_timeout_ms)
            if error is not None:
                return classic_result(response=JoinResponse(error=error, member_id=member_id))
            if not consumer.is_empty:
                return consumer_classic.join(
                    self._consumers,
                    consumer,
                    request,
                    new_member_id=self.groups.new_member_id,
                    now_ms=now_ms,
                )
            replaced = tuple(consumer_membership.group_tombstones(consumer))
        result = self.groups.join(request, now_ms=now_ms)
        if not replaced or group_id not in self.groups.groups:
            return result
        return CoordinatorResult(
            records=(*replaced, *result.records), response=result.response, effects=result.effects
        )

    def _consumer_group(self, group_id: str) -> ConsumerGroup | None:
        if self._consumers is None:
            return None
        return self._consumers.consumer_group(group_id)

    def upgrade(
        self, group_id: str, *, settings: ConsumerGroupSettings, image: TopicImage
    ) -> tuple[list[r.CoordinatorRecord], ConsumerGroup | None] | str:
        """A ConsumerGroupHeartbeat joins the classic group `group_id`: the records
        that replace it (empty) or convert it (group/consumer/migration.py) and the consumer
        group they make (None: a new one); or why it may not be converted."""
        group = self.groups.groups.get(group_id)
        if group is None or group.is_empty:
            return migration.replace_empty(group_id), None
        error = migration.upgrade_error(group, settings=settings)
        if error is not None:
            return error
        return migration.upgrade(group, image=image)

    def sync(self, request: SyncRequest, *, now_ms: int) -> GroupResult[SyncResponse | None]:
        consumer = self._consumer_group(request.group_id)
        if consumer is not None and self._consumers is not None:
            return classic_result(
                response=consumer_classic.sync(self._consumers, consumer, request, now_ms=now_ms)
            )
        if self._share_type(request.group_id) is not None:
            return classic_result(response=SyncResponse(error=ErrorCode.unknown_member_id))
        return self.groups.sync(request, now_ms=now_ms)

    def heartbeat(
        self,
        *,
        group_id: str,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
        now_ms: int,
    ) -> ErrorCode | None:
        consumer = self._consumer_group(group_id)
        if consumer is not None and self._consumers is not None:
            return consumer_classic.heartbeat(
                self._consumers,
                consumer,
                member_id=member_id,
                generation_id=generation_id,
                group_instance_id=group_instance_id,
                now_ms=now_ms,
            )
        if self._share_type(group_id) is not None:
            return ErrorCode.unknown_member_id
        return self.groups.heartbeat(
            group_id=group_id,
            member_id=member_id,
            generation_id=generation_id,
            group_instance_id=group_instance_id,
            now_ms=now_ms,
        )

    def leave(
        self, *, group_id: str, members: Sequence[LeavingMember], now_ms: int
    ) -> GroupResult[LeaveResponse]:
        consumer = self._consumer_group(group_id)
        if consumer is not None and self._consumers is not None:
            return consumer_classic.leave(
                self._consumers,
                consumer,
                members=members,
                classic_max_size=self.groups.settings.max_size,
                wall_ms=self._wall_ms(),
            )
        if self._share_type(group_id) is not None:
            return classic_result(response=LeaveResponse(error=ErrorCode.unknown_member_id))
        return self.groups.leave(group_id=group_id, members=members, now_ms=now_ms)

    def describe(self, group_ids: Iterable[str]) -> list[DescribedClassicGroup]:
        """DescribeGroups (15) v0-5: a share group, like an unknown id, is Dead; a
        simple group, or one with only committed (or pending transactional) offsets,
        is Empty."""
        described = []
        for group_id in group_ids:
            if self._share_type(group_id) is not None:
                described.append(
                    DescribedClassicGroup(
                        group_id=group_id,
                        state=DEAD,
                        protocol_type="",
                        protocol_data="",
                        members=(),
                    )
                )
            elif group_id not in self.groups.groups and (
                group_id in self.simple
                or self.offsets.has_group(group_id)
                or self.txn_offsets.has_group(group_id)
            ):
                described.append(
                    DescribedClassicGroup(
                        group_id=group_id,
                        state=EMPTY,
                        protocol_type="",
                        protocol_data="",
                        members=(),
                    )
                )
            else:
                described.append(self.groups.describe(group_id))
        return described

    # ---- offsets ----------------------------------------------------------------------

    def commit_offsets(
        self,
        *,
        group_id: str,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
        offsets: Sequence[OffsetToCommit],
        api_version: int,
        now_ms: int,
    ) -> CommitResult:
        """OffsetCommit (8)."""
        kind = self._share_type(group_id)
        if kind == GROUP_TYPE_CONSUMER and self._consumer_commit_error is not None:
            error = self._consumer_commit_error(group_id, member_id, generation_id)
            if error is None:
                return self.offsets.commit(
                    groups=self.groups,
                    group_id=group_id,
                    member_id="",
                    generation_id=-1,
                    group_instance_id=None,
                    offsets=offsets,
                    api_version=api_version,
                    now_ms=now_ms,
                )
            return refused(offsets, error)
        if kind is not None:
            return refused(offsets, ErrorCode.group_id_not_found)
        return self.offsets.commit(
            groups=self.groups,
            group_id=group_id,
            member_id=member_id,
            generation_id=generation_id,
            group_instance_id=group_instance_id,
            offsets=offsets,
            api_version=api_version,
            now_ms=now_ms,
        )

    def txn_commit_offsets(
        self,
        *,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
        offsets: Sequence[OffsetToCommit],
        now_ms: int,
    ) -> CommitResult:
        """TxnOffsetCommit (28): offsets pending the transaction's marker."""
        error = txn_commit_error(
            groups=self.groups,
            group_type=self._share_type(group_id),
            consumer_commit_error=self._consumer_commit_error,
            group_id=group_id,
            member_id=member_id,
            generation_id=generation_id,
            group_instance_id=group_instance_id,
        )
        if error is not None:
            return refused(offsets, error)
        return self.txn_offsets.commit(
            group_id=group_id,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            offsets=offsets,
            now_ms=now_ms,
        )

    def fetch_offsets(
        self,
        *,
        group_id: str,
        partitions: Sequence[tuple[str, int]] | None,
        require_stable: bool = False,
    ) -> tuple[ErrorCode | None, tuple[FetchedOffset, ...]]:
        """OffsetFetch (9) of one group: (group error, offsets). With
        `require_stable`, a partition with a pending transactional offset answers
        UNSTABLE_OFFSET_COMMIT (offset -1)."""
        if self._share_type(group_id) not in (None, GROUP_TYPE_CONSUMER):
            return ErrorCode.group_id_not_found, ()
        fetched = self.offsets.fetch(group_id=group_id, partitions=partitions)
        if require_stable:
            return None, self.txn_offsets.stable_only(group_id, fetched)
        return None, fetched

    def delete_offsets(
        self, *, group_id: str, partitions: Sequence[tuple[str, int]]
    ) -> tuple[ErrorCode | None, CommitResult]:
        """OffsetDelete (47) of a classic or consumer group (a share group's id:
        GROUP_ID_NOT_FOUND). As Kafka's OffsetMetadataManager.deleteOffsets, a
        partition's pending transactional offsets are dropped with it, whether or not
        it has a committed offset."""
        kind = self._share_type(group_id)
        if kind not in (None, GROUP_TYPE_CONSUMER):
            return ErrorCode.group_id_not_found, CommitResult(records=(), response=())
        error, result = self.offsets.delete(
            groups=self.groups,
            group_id=group_id,
            partitions=partitions,
            consumer_subscribed=self._consumer_subscriptions(group_id)
            if kind == GROUP_TYPE_CONSUMER
            else None,
        )
        cleared = [(a.topic, a.partition) for a in result.response if a.error is None]
        pending = self.txn_offsets.partition_tombstones(group_id, cleared)
        if pending:
            result = CommitResult(records=(*result.records, *pending), response=result.response)
        return error, result

    def expire_offsets(self, *, now_ms: int, retention_ms: int) -> tuple[r.CoordinatorRecord, ...]:
        """One offsets cleanup pass (Kafka's GroupCoordinatorShard.cleanupGroupMetadata):
        tombstones of offsets past `offsets.retention.minutes` (epoch `now_ms`), only
        in groups without members, counted from when the group emptied (a group with
        a protocol) or from the commit (a simple group); an Empty classic group left
        with no offsets and no pending transactional offsets is deleted too (its
        GroupMetadata tombstone), simple or not, whether its offsets expired now or
        were gone before. A consumer group (KIP-848) is Kafka's ConsumerGroup case: an
        offset expires from its commit unless a member subscribes to its topic; the
        shard deletes the group (`GroupCoordinatorShard.cleanup_group_metadata`)."""
        records: list[r.CoordinatorRecord] = []
        classic_ids = set(self.groups.group_ids()) | set(self.groups.stored) | self.simple
        for group_id in sorted(set(self.offsets.group_ids()) | classic_ids):
            subscribed = self._consumer_subscriptions(group_id)
            if subscribed is not None:
                records.extend(
                    self.offsets.expired(
                        group_id,
                        now_ms=now_ms,
                        retention_ms=retention_ms,
                        base_ms=None,
                        keep_topics=subscribed,
                        keep_partitions=self.txn_offsets.pending_partitions(group_id),
                    )
                )
                continue
            state = self.groups.state_of(group_id)
            if state not in (None, EMPTY):
                continue
            emptied = self.groups.empty_since_ms(group_id)
            expired = self.offsets.expired(
                group_id,
                now_ms=now_ms,
                retention_ms=retention_ms,
                base_ms=emptied,
                keep_partitions=self.txn_offsets.pending_partitions(group_id),
            )
            records.extend(expired)
            if len(expired) == self.offsets.count(group_id) and not (
                self.txn_offsets.has_group(group_id)
            ):
                records.append(self.groups.delete_record(group_id))
        return tuple(records)

    # ---- list and delete --------------------------------------------------------------

    def list_groups(
        self, *, states_filter: Iterable[str], types_filter: Iterable[str]
    ) -> list[ListedGroup]:
        """ListGroups rows of classic groups (type "classic")."""
        states = {s.lower() for s in states_filter}
        types = {t.lower() for t in types_filter}
        if types and GROUP_TYPE_CLASSIC not in types:
            return []
        ids = set(self.groups.group_ids()) | set(self.offsets.group_ids())
        ids |= self.txn_offsets.group_ids() | self.simple
        listed = []
        for group_id in sorted(ids):
            if self._share_type(group_id) is not None:
                continue  # offsets of a consumer group, listed by the shard
            state = self.groups.state_of(group_id) or EMPTY
            if states and state.lower() not in states:
                continue
            listed.append(
                ListedGroup(
                    group_id=group_id,
                    protocol_type=self.groups.protocol_type_of(group_id),
                    group_state=state,
                    group_type=GROUP_TYPE_CLASSIC,
                )
            )
        return listed

    def delete_groups(
        self, group_ids: Iterable[str]
    ) -> tuple[tuple[r.CoordinatorRecord, ...], list[DeleteGroupResult]]:
        """DeleteGroups of classic groups: only Empty ones (NON_EMPTY_GROUP), their
        metadata and offsets tombstoned."""
        records: list[r.CoordinatorRecord] = []
        results = []
        for group_id in group_ids:
            state = self.groups.state_of(group_id)
            if state not in (None, EMPTY):
                results.append(
                    DeleteGroupResult(group_id=group_id, error=ErrorCode.non_empty_group)
                )
                continue
            records.extend(self.offsets.delete_group_records(group_id))
            records.extend(self.txn_offsets.group_tombstones(group_id))
            records.append(self.groups.delete_record(group_id))
            results.append(DeleteGroupResult(group_id=group_id))
        return tuple(records), results
