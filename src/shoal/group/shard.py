"""The group coordinator shard: share-group membership, assignment and lifecycle.

Theory of operation. The shard is an event-sourced state machine over the records
of `records.py` (one `__consumer_offsets` partition's worth of groups). Every write
operation returns a `CoordinatorResult` (records, response, effects) and changes no
group state; the caller appends the records, calls `replay` for each, performs the
effects, then sends the response. Loading after a restart replays the same records
through the same `replay`, then calls `on_loaded`.

State the shard holds:

- *durable* (built only by `replay`): the share groups (`ShareGroup`) and the ids
  taken by other group types (the namespace shared with consumer and classic
  groups). `durable_state()` exposes it for comparison.
- *classic groups and committed offsets* (`self.classic`, group/classic/coordinator.py):
  record types 1, 2 and 1000 (pending transactional offsets, group/txn_offsets.py,
  settled by `complete_transaction`) are replayed there; the classic APIs are its
  operations, and a classic group id counts as taken for share operations.
- *log bookkeeping* (`log_keys`, group/log_bound.py): where each live key's latest
  record is in its `__consumer_offsets` partition, from the offsets `replay` is
  given; `rewrite_old_records` and `prune_offsets` keep the log bounded.
- *soft* (never persisted, like Kafka's coordinator timers): the topic image given
  by `on_topics_changed`, each member's session deadline, each group's
  initialisation-retry deadline, the groups whose deletion is in progress, and
  each consumer group's regex refresh bookkeeping (group/consumer/regex_refresh.py).
  Operations arm and cancel these timers as Kafka's do; `next_deadline()` tells the
  runtime when to call `expire_sessions` / `retry_initializations` /
  `refresh_regexes`, and a firing timer is an ordinary write that re-validates
  before changing anything.

No I/O, no wall clock, no randomness: time is the `now_ms` given to an operation,
or the injected clock's `monotonic_ms()` when omitted.

(Past 600 lines because it is one entry point per operation of the shard; each
delegates its rules to `share/`'s `membership`, `lifecycle`, `offsets` or `queries`.)
"""

from __future__ import annotations

import copy
import uuid
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from shoal.clock import Clock
from shoal.coordinator.result import CoordinatorResult
from shoal.coordinator.runtime import NO_OFFSET
from shoal.group import records as r
from shoal.group.classic.coordinator import ClassicCoordinator, ClassicDurableState
from shoal.group.classic.groups import ClassicSettings
from shoal.group.consumer import membership as consumer_membership
from shoal.group.consumer import migration, regex_refresh
from shoal.group.consumer.group import (
    GROUP_TYPE_CONSUMER,
    MEMBER_STATE_UNREVOKED_PARTITIONS,
    ConsumerGroup,
    ConsumerGroupMember,
)
from shoal.group.consumer.group import apply as apply_consumer
from shoal.group.log_bound import GroupLogKeys
from shoal.group.results import (
    AlterOffsetsResponse,
    DeleteGroupResult,
    DeleteGroupsResponse,
    DeleteOffsetsResponse,
    DescribedGroup,
    Effect,
    GroupEpochResponse,
    GroupResult,
    GroupsChanged,
    ListedGroup,
    ShareGroupHeartbeatResponse,
    heartbeat_error,
)
from shoal.group.settings import (
    ConsumerGroupSettings,
    GroupConfigSource,
    GroupSettings,
    ShareGroupSettings,
)
from shoal.group.share import lifecycle, membership, offsets, queries
from shoal.group.share.group import (
    LEAVE_GROUP_MEMBER_EPOCH,
    STATE_DEAD,
    ShareGroup,
    StatePartitionMetadata,
    apply,
)
from shoal.group.topic_image import TopicImage, TopicMetadata, metadata_hash
from shoal.protocol.errors import ErrorCode


@dataclass(frozen=True, slots=True, kw_only=True)
class DurableState:
    """Everything `replay` builds; equal for a live shard and one that replayed
    its records."""

    share_groups: dict[str, ShareGroup]
    other_groups: dict[str, str]
    classic: ClassicDurableState | None = None
    consumer_groups: dict[str, ConsumerGroup] | None = None


class GroupCoordinatorShard:
    """The groups of one `__consumer_offsets` partition. See the module docstring."""

    def __init__(
        self,
        *,
        clock: Clock,
        settings: ShareGroupSettings | None = None,
        group_configs: GroupConfigSource = None,
        classic_settings: ClassicSettings | None = None,
        consumer_settings: ConsumerGroupSettings | None = None,
    ) -> None:
        self._clock = clock
        self.log_keys = GroupLogKeys()
        """Where each live key's latest record is in the shard's `__consumer_offsets`
        partition (group/log_bound.py): what pruning and re-writing read."""
        self._group_configs = group_configs
        self._settings = GroupSettings(
            broker=settings or ShareGroupSettings(), group_configs=group_configs
        )
        self._groups: dict[str, ShareGroup] = {}
        self._other_groups: dict[str, str] = {}
        self._consumer_groups: dict[str, ConsumerGroup] = {}
        self._consumer_settings = consumer_settings or ConsumerGroupSettings()
        self._consumer_deadlines: dict[tuple[str, str], int] = {}
        self._revocation_deadlines: dict[tuple[str, str], int] = {}
        """Soft: when a consumer member told to revoke partitions is fenced unless it
        has (its rebalance timeout, armed when it enters UNREVOKED_PARTITIONS)."""
        self._rejoin_deadlines: dict[tuple[str, str], int] = {}
        """Soft: when a classic member of a consumer group is fenced unless it rejoins
        (told to) or syncs (after joining), as Kafka's join and sync timeouts."""
        self.classic = ClassicCoordinator(
            share_type=self._share_type,
            settings=classic_settings,
            wall_ms=clock.wall_ms,
            monotonic_ms=clock.monotonic_ms,
            consumer_commit_error=self.consumer_commit_error,
            consumers=self,
            consumer_subscriptions=self._consumer_subscriptions,
        )
        """Classic groups and committed offsets (record types 1 and 2)."""
        self._image = TopicImage()
        self._topics_version = 0
        """Soft: bumped whenever topics appear (regex refreshes compare it)."""
        self._regex_state: dict[str, regex_refresh.RegexRefreshState] = {}
        """Soft: each consumer group's regex refresh bookkeeping
        (group/consumer/regex_refresh.py)."""
        self._session_deadlines: dict[tuple[str, str], int] = {}
        self._init_retry_deadlines: dict[str, int] = {}
        self._deleting_groups: set[str] = set()
        self._simple_anchors: dict[str, int] = {}
        """Log bookkeeping: each simple group's (group/classic/coordinator.py) latest
        offset record's offset in its partition. A simple group left without offsets
        has no live key, so `prune_offsets` keeps its log from there (its replay
        brings the group back) until the group is deleted: at the latest, the next
        offsets cleanup pass."""

    # ---- replay ---------------------------------------------------------------------

    def replay(self, record: r.CoordinatorRecord, offset: int = NO_OFFSET, /) -> None:
        """Apply one record: the only way group state changes. `offset` is its offset
        in its group's `__consumer_offsets` partition (`log_keys` notes it)."""
        self.log_keys.replayed(record, offset)
        if self.classic.replay(record):
            self._note_simple_anchor(record, offset)
            return
        key = record.key
        if isinstance(key, r.ConsumerGroupMetadataKey):
            self._replay_consumer_epoch(key.group_id, record.value)
            return
        if isinstance(
            key,
            r.ConsumerGroupMemberMetadataKey
            | r.ConsumerGroupTargetAssignmentMetadataKey
            | r.ConsumerGroupTargetAssignmentMemberKey
            | r.ConsumerGroupCurrentMemberAssignmentKey
            | r.ConsumerGroupRegularExpressionKey,
        ):
            consumer = self._consumer_groups.get(key.group_id)
            if consumer is None:
                if record.value is None:
                    return
                consumer = self._consumer_groups[key.group_id] = ConsumerGroup(
                    group_id=key.group_id
                )
                self._other_groups[key.group_id] = GROUP_TYPE_CONSUMER
                self.classic.forget_simple(key.group_id)
            apply_consumer(consumer, record)
            if isinstance(key, r.ConsumerGroupMemberMetadataKey) and record.value is None:
                self._consumer_deadlines.pop((key.group_id, key.member_id), None)
                self._rejoin_deadlines.pop((key.group_id, key.member_id), None)
            if isinstance(key, r.ConsumerGroupCurrentMemberAssignmentKey):
                self._arm_revocation(consumer, key.member_id)
            return
        group_id = key.group_id
        assert group_id not in self._other_groups, f"{group_id} is a {self.group_type(group_id)}"
        group = self._groups.get(group_id)
        if isinstance(key, r.ShareGroupMetadataKey):
            if record.value is None:
                assert group is None or group.is_empty, f"deleting {group_id} with members"
                self._groups.pop(group_id, None)
                self._deleting_groups.discard(group_id)
                self._init_retry_deadlines.pop(group_id, None)
                return
            assert isinstance(record.value, r.ShareGroupMetadataValue)
            group = self._group_for_value(group_id)
            group.group_epoch = record.value.epoch
            group.metadata_hash = record.value.metadata_hash
            return
        if group is None:
            if record.value is None:
                return  # a tombstone of a group already gone (compacted log)
            group = self._group_for_value(group_id)
        apply(group, record)
        if isinstance(key, r.ShareGroupMemberMetadataKey) and record.value is None:
            self._session_deadlines.pop((group_id, key.member_id), None)

    def _note_simple_anchor(self, record: r.CoordinatorRecord, offset: int) -> None:
        group_id = record.key.group_id
        if group_id not in self.classic.simple:
            self._simple_anchors.pop(group_id, None)
        elif record.value is not None and isinstance(
            record.key, r.OffsetCommitKey | r.PendingTxnOffsetKey
        ):
            self._simple_anchors[group_id] = offset

    def _consumer_subscriptions(self, group_id: str) -> frozenset[str] | None:
        """Topics the members of consumer group `group_id` subscribe to (None: not a
        consumer group), for offsets retention."""
        group = self._consumer_groups.get(group_id)
        if group is None:
            return None
        return frozenset().union(
            *(
                consumer_membership.subscribed_names(member, group.resolved_regexes)
                for member in group.members.values()
            )
        )

    def _arm_revocation(self, group: ConsumerGroup, member_id: str) -> None:
        member = group.members.get(member_id)
        key = (group.group_id, member_id)
        if member is None or member.state != MEMBER_STATE_UNREVOKED_PARTITIONS:
            self._revocation_deadlines.pop(key, None)
        elif key not in self._revocation_deadlines:
            timeout = member.rebalance_timeout_ms
            if timeout <= 0:
                timeout = self._settings.consumer_session_timeout_ms(
                    group.group_id, self._consumer_settings
                )
            self._revocation_deadlines[key] = self._clock.monotonic_ms() + timeout

    def _replay_consumer_epoch(self, group_id: str, value: r.RecordValue | None) -> None:
        if value is None:
            group = self._consumer_groups.pop(group_id, None)
            assert group is None or group.is_empty, f"deleting {group_id} with members"
            self._other_groups.pop(group_id, None)
            self._regex_state.pop(group_id, None)
            return
        assert group_id not in self._groups, f"{group_id} is a share group"
        assert isinstance(value, r.ConsumerGroupMetadataValue)
        self._other_groups[group_id] = GROUP_TYPE_CONSUMER
        self.classic.forget_simple(group_id)
        group = self._consumer_groups.setdefault(group_id, ConsumerGroup(group_id=group_id))
        group.group_epoch = value.epoch
        group.metadata_hash = value.metadata_hash

    def _group_for_value(self, group_id: str) -> ShareGroup:
        group = self._groups.get(group_id)
        if group is None:
            group = self._groups[group_id] = ShareGroup(group_id=group_id)
            self.classic.forget_simple(group_id)
        return group

    def durable_state(self) -> DurableState:
        """A snapshot (deep copy) of the replayed state, for comparisons."""
        return DurableState(
            share_groups=copy.deepcopy(self._groups),
            other_groups=dict(self._other_groups),
            classic=self.classic.durable_state(),
            consumer_groups=copy.deepcopy(self._consumer_groups),
        )

    def on_loaded(self, *, now_ms: int | None = None) -> GroupResult[None]:
        """After replaying a loaded partition: give every member a full session
        (as Kafka's onLoaded), re-issue the initialisations and deletions that were
        in progress (as Kafka's onElected), and settle offset resets a restart
        interrupted (`lifecycle.interrupted_resets`)."""
        now = self._now(now_ms)
        self.classic.on_loaded(now_ms=now)
        records: list[r.CoordinatorRecord] = []
        effects: list[Effect] = []
        for group_id, consumer in self._consumer_groups.items():
            for member_id, member in consumer.members.items():
                timeout = self._settings.consumer_session_timeout_ms(
                    group_id, self._consumer_settings
                )
                if member.classic is not None:
                    timeout = member.classic.session_timeout_ms
                self._consumer_deadlines[(group_id, member_id)] = now + timeout
        for group_id, group in sorted(self._groups.items()):
            timeout = self._settings.session_timeout_ms(group_id)
            for member_id in group.members:
                self._session_deadlines[(group_id, member_id)] = now + timeout
            metadata = group.state_metadata
            settled = lifecycle.interrupted_resets(metadata)
            if settled != metadata:
                records.append(membership.state_metadata_record(group_id, settled))
            pending = lifecycle.pending_from_initializing(metadata)
            if pending:
                effects.append(
                    lifecycle.initialize_effect(
                        group_id=group_id, state_epoch=group.group_epoch, pending=pending
                    )
                )
            if metadata.deleting:
                effects.append(self._retry_deletion_effect(group_id, metadata))
        return CoordinatorResult(records=tuple(records), response=None, effects=tuple(effects))

    def update_settings(self, settings: ShareGroupSettings) -> None:
        """Adopt new broker-level settings (the dynamic `group.share.*` configs).
        Soft state: they apply from the next operation (the next heartbeat re-arms a
        member's session with the new timeout); armed deadlines are kept."""
        self._settings = GroupSettings(broker=settings, group_configs=self._group_configs)

    # ---- heartbeat ------------------------------------------------------------------

    def share_group_heartbeat(
        self,
        *,
        group_id: str,
        member_id: str,
        member_epoch: int,
        rack_id: str | None,
        subscribed_topic_names: Collection[str] | None,
        client_id: str,
        client_host: str,
        now_ms: int | None = None,
    ) -> GroupResult[ShareGroupHeartbeatResponse]:
        """ShareGroupHeartbeat (76): join at epoch 0, heartbeat at the member's
        epoch, leave at -1. Arms the member's session timer when accepted."""
        now = self._now(now_ms)
        request = membership.HeartbeatRequest(
            group_id=group_id,
            member_id=member_id,
            member_epoch=member_epoch,
            rack_id=rack_id,
            subscribed_topic_names=(
                tuple(subscribed_topic_names) if subscribed_topic_names is not None else None
            ),
            client_id=client_id,
            client_host=client_host,
        )
        message = membership.validation_error(request)
        if message is not None:
            return heartbeat_error(ErrorCode.invalid_request, message)
        if group_id in self._other_groups or self.classic.has_group(group_id):
            return heartbeat_error(
                ErrorCode.group_id_not_found, f"Group {group_id} is not a share group."
            )
        group = self._groups.get(group_id)
        interval = self._settings.heartbeat_interval_ms(group_id)
        if member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            if group is None:
                return heartbeat_error(ErrorCode.group_id_not_found, f"Group {group_id} not found.")
            result = membership.leave(
                group=group, member_id=member_id, image=self._image, heartbeat_interval_ms=interval
            )
            if result.response.error is None:
                self._session_deadlines.pop((group_id, member_id), None)
            return result
        retry_at = self._init_retry_deadlines.get(group_id)
        result = membership.heartbeat(
            group=group,
            request=request,
            image=self._image,
            max_size=self._settings.broker.max_size,
            heartbeat_interval_ms=interval,
            may_initialize=retry_at is None or retry_at <= now,
        )
        if result.response.error is None:
            if retry_at is not None and retry_at <= now:
                del self._init_retry_deadlines[group_id]
            deadline = now + self._settings.session_timeout_ms(group_id)
            self._session_deadlines[(group_id, member_id)] = deadline
        return result

    def update_consumer_settings(self, settings: ConsumerGroupSettings) -> None:
        """Adopt new `group.consumer.*` settings from the next operation on."""
        self._consumer_settings = settings

    @property
    def consumer_settings(self) -> ConsumerGroupSettings:
        return self._consumer_settings

    def arm_consumer_session(self, group_id: str, member_id: str, deadline_ms: int) -> None:
        """(Re)arm a consumer-group member's session (classic members' requests)."""
        self._consumer_deadlines[(group_id, member_id)] = deadline_ms

    def arm_rejoin_timeout(
        self, group_id: str, member_id: str, deadline_ms: int | None, *, replace: bool
    ) -> None:
        """A classic member's join or sync timeout: set (`replace`, or only if none is
        armed) or cancelled (None)."""
        key = (group_id, member_id)
        if deadline_ms is None:
            self._rejoin_deadlines.pop(key, None)
        elif replace or key not in self._rejoin_deadlines:
            self._rejoin_deadlines[key] = deadline_ms

    def consumer_group_heartbeat(
        self, *, request: consumer_membership.HeartbeatRequest, now_ms: int | None = None
    ) -> GroupResult[consumer_membership.HeartbeatResponse]:
        """ConsumerGroupHeartbeat (68): join at epoch 0 (with a member id: v0 callers
        generate one first), heartbeat at the member's epoch, leave at -1 / -2.
        Arms the member's session timer when accepted."""
        now = self._now(now_ms)
        settings = self._consumer_settings
        error = consumer_membership.validation_error(request, assignors=settings.assignors)
        if error is not None:
            return heartbeat_error(*error)
        group_id, member_id = request.group_id, request.member_id
        not_consumer = f"Group {group_id} is not a consumer group."
        group = self._consumer_groups.get(group_id)
        upgrade: list[r.CoordinatorRecord] = []
        if group_id in self._groups:
            return heartbeat_error(ErrorCode.group_id_not_found, not_consumer)
        if group is None and self.classic.has_members(group_id):
            if request.member_epoch != consumer_membership.JOIN_GROUP_MEMBER_EPOCH:
                return heartbeat_error(ErrorCode.group_id_not_found, not_consumer)
            converted = self.classic.upgrade(group_id, settings=settings, image=self._image)
            if isinstance(converted, str):
                return heartbeat_error(ErrorCode.group_id_not_found, converted)
            upgrade, group = converted
        if request.member_epoch < 0:
            if group is None:
                return heartbeat_error(ErrorCode.unknown_member_id, f"Group {group_id} not found.")
            result = consumer_membership.leave(
                group=group,
                member_id=member_id,
                member_epoch=request.member_epoch,
                image=self._image,
            )
            static_leave = (
                request.member_epoch == consumer_membership.LEAVE_GROUP_STATIC_MEMBER_EPOCH
            )
            if result.response.error is None and not static_leave:
                self._consumer_deadlines.pop((group_id, member_id), None)
                removal = self._remove_consumer_members(group, [member_id])  # maybe a downgrade
                result = CoordinatorResult(records=tuple(removal), response=result.response)
            return result
        result = consumer_membership.heartbeat(
            group=group,
            request=request,
            image=self._image,
            max_size=settings.max_size,
            heartbeat_interval_ms=self._settings.consumer_heartbeat_interval_ms(group_id, settings),
            default_assignor=settings.assignors[0],
        )
        if result.response.error is None:
            session_timeout_ms = self._settings.consumer_session_timeout_ms(group_id, settings)
            self._consumer_deadlines[(group_id, member_id)] = now + session_timeout_ms
            self._maybe_schedule_regex_refresh(group, request, now)
        if upgrade and result.response.error is None:
            for other_id, other in (group.members if group is not None else {}).items():
                if other.classic is not None:  # Kafka: sessions of the converted members
                    timeout = other.classic.session_timeout_ms
                    self._consumer_deadlines[(group_id, other_id)] = now + timeout
            result = CoordinatorResult(
                records=(*upgrade, *result.records), response=result.response
            )
        return result

    def _maybe_schedule_regex_refresh(
        self,
        group: ConsumerGroup | None,
        request: consumer_membership.HeartbeatRequest,
        now: int,
    ) -> None:
        """After an accepted heartbeat: schedule the group's regex refresh if Kafka
        would (group/consumer/regex_refresh.py); it runs as its own write (`refresh_regexes`)."""
        before = group if group is not None else ConsumerGroup(group_id=request.group_id)
        old = before.members.get(request.member_id)
        regex = request.subscribed_topic_regex
        base = old or ConsumerGroupMember(member_id=request.member_id)
        new = base if regex is None else replace(base, subscribed_topic_regex=regex or None)
        state = self._regex_state.setdefault(request.group_id, regex_refresh.RegexRefreshState())
        if regex_refresh.refresh_needed(
            before,
            old,
            new,
            state=state,
            now_ms=now,
            topics_version=self._topics_version,
            refresh_interval_ms=self._consumer_settings.regex_refresh_interval_ms,
        ):
            state.scheduled = True
            state.due_ms = now

    def refresh_regexes(self, *, now_ms: int | None = None) -> GroupResult[GroupsChanged]:
        """Run the scheduled regex refreshes due at `now_ms`: each group's regexes
        resolved against the current topics (record 16), its epoch bumped if their
        topics changed (group/consumer/regex_refresh.py)."""
        now = self._now(now_ms)
        records: list[r.CoordinatorRecord] = []
        bumped: list[str] = []
        for group_id, state in sorted(self._regex_state.items()):
            if not state.scheduled or state.due_ms > now:
                continue
            state.scheduled = False
            state.last_refresh_ms = now
            state.topics_version = self._topics_version
            group = self._consumer_groups.get(group_id)
            if group is None or group.is_empty:
                continue
            refreshed = regex_refresh.refresh_records(
                group,
                image=self._image,
                topics_version=self._topics_version,
                wall_ms=self._clock.wall_ms(),
            )
            if any(isinstance(rec.key, r.ConsumerGroupMetadataKey) for rec in refreshed):
                bumped.append(group_id)
            records.extend(refreshed)
        return CoordinatorResult(
            records=tuple(records), response=GroupsChanged(bumped_groups=tuple(bumped))
        )

    def _remove_consumer_members(
        self, group: ConsumerGroup, member_ids: Sequence[str]
    ) -> list[r.CoordinatorRecord]:
        """Members leave or expire: fenced, or the group downgraded
        (group/consumer/migration.py)."""
        return migration.remove_members(
            group,
            member_ids,
            image=self._image,
            settings=self._consumer_settings,
            classic_max_size=self.classic.groups.settings.max_size,
            wall_ms=self._clock.wall_ms(),
        )

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        """The replayed state of a consumer group (read-only by convention)."""
        return self._consumer_groups.get(group_id)

    def consumer_group_describe(
        self, *, group_ids: Iterable[str]
    ) -> list[tuple[str, ConsumerGroup | None, str | None]]:
        """ConsumerGroupDescribe (69), read-only: per id (id, group or None, error
        message when None: unknown, or taken by another group type), and the
        assignor it uses is `consumer_default_assignor` unless a member names one."""
        described: list[tuple[str, ConsumerGroup | None, str | None]] = []
        for group_id in group_ids:
            group = self._consumer_groups.get(group_id)
            if group is not None:
                described.append((group_id, group, None))
            elif self.group_type(group_id) is not None:
                described.append((group_id, None, f"Group {group_id} is not a consumer group."))
            else:
                described.append((group_id, None, f"Group {group_id} not found."))
        return described

    def delete_consumer_groups(
        self, *, group_ids: Iterable[str]
    ) -> GroupResult[DeleteGroupsResponse]:
        """DeleteGroups of consumer groups: only empty ones (NON_EMPTY_GROUP), their
        committed offsets, target records and ConsumerGroupMetadata (last) tombstoned."""
        records: list[r.CoordinatorRecord] = []
        results: list[DeleteGroupResult] = []
        for group_id in group_ids:
            group = self._consumer_groups.get(group_id)
            if group is None:
                results.append(
                    DeleteGroupResult(group_id=group_id, error=ErrorCode.group_id_not_found)
                )
                continue
            if not group.is_empty:
                results.append(
                    DeleteGroupResult(group_id=group_id, error=ErrorCode.non_empty_group)
                )
                continue
            records.extend(self.classic.offsets.delete_group_records(group_id))
            records.extend(self.classic.txn_offsets.group_tombstones(group_id))
            records.extend(consumer_membership.group_tombstones(group))
            results.append(DeleteGroupResult(group_id=group_id))
        return CoordinatorResult(
            records=tuple(records), response=DeleteGroupsResponse(results=tuple(results))
        )

    @property
    def consumer_default_assignor(self) -> str:
        return self._consumer_settings.assignors[0]

    def consumer_commit_error(
        self, group_id: str, member_id: str, member_epoch: int
    ) -> ErrorCode | None:
        """Whether a consumer-group OffsetCommit may write: an admin commit (epoch < 0,
        no member id) only to an empty group; a member only at its current epoch
        (STALE_MEMBER_EPOCH otherwise, as Kafka 4.2)."""
        group = self._consumer_groups.get(group_id)
        if group is None:
            return ErrorCode.group_id_not_found
        if member_epoch < 0 and not member_id:
            return None if group.is_empty else ErrorCode.unknown_member_id
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.unknown_member_id
        if member_epoch != member.member_epoch:
            # A classic member's generation is its epoch: Kafka answers as classic.
            classic = member.classic is not None
            return ErrorCode.illegal_generation if classic else ErrorCode.stale_member_epoch
        return None

    # ---- timers ---------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        """The earliest armed timer (session expiry or initialisation retry)."""
        deadlines = [
            *self._session_deadlines.values(),
            *self._init_retry_deadlines.values(),
            *self._consumer_deadlines.values(),
            *self._revocation_deadlines.values(),
            *self._rejoin_deadlines.values(),
            *(s.due_ms for s in self._regex_state.values() if s.scheduled),
        ]
        return min(deadlines) if deadlines else None

    def expire_sessions(self, *, now_ms: int | None = None) -> GroupResult[GroupsChanged]:
        """Remove members whose session deadline has passed: their records, then one
        epoch bump per group. Reassignment follows at the others' next heartbeat."""
        now = self._now(now_ms)
        due = sorted(key for key, deadline in self._session_deadlines.items() if deadline <= now)
        by_group: dict[str, list[str]] = {}
        for group_id, member_id in due:
            del self._session_deadlines[(group_id, member_id)]
            group = self._groups.get(group_id)
            if group is not None and member_id in group.members:
                by_group.setdefault(group_id, []).append(member_id)
        records: list[r.CoordinatorRecord] = []
        for group_id, member_ids in sorted(by_group.items()):
            group = self._groups[group_id]
            records.extend(
                membership.fence_records(group=group, member_ids=member_ids, image=self._image)
            )
        consumer_due = sorted(
            {k for k, deadline in self._consumer_deadlines.items() if deadline <= now}
            | {k for k, deadline in self._revocation_deadlines.items() if deadline <= now}
            | {k for k, deadline in self._rejoin_deadlines.items() if deadline <= now}
        )
        consumer_by_group: dict[str, list[str]] = {}
        for group_id, member_id in consumer_due:
            self._consumer_deadlines.pop((group_id, member_id), None)
            self._revocation_deadlines.pop((group_id, member_id), None)
            self._rejoin_deadlines.pop((group_id, member_id), None)
            consumer = self._consumer_groups.get(group_id)
            if consumer is not None and member_id in consumer.members:
                consumer_by_group.setdefault(group_id, []).append(member_id)
        for group_id, member_ids in sorted(consumer_by_group.items()):
            records.extend(
                self._remove_consumer_members(self._consumer_groups[group_id], member_ids)
            )
        expired = tuple(
            (g, m)
            for groups in (by_group, consumer_by_group)
            for g, ms in sorted(groups.items())
            for m in ms
        )
        return CoordinatorResult(
            records=tuple(records),
            response=GroupsChanged(
                bumped_groups=tuple(sorted({*by_group, *consumer_by_group})),
                expired_members=expired,
            ),
        )

    def retry_initializations(self, *, now_ms: int | None = None) -> GroupResult[GroupsChanged]:
        """Re-send initialisations that failed at least
        `group.share.initialize.retry.interval.ms` ago."""
        now = self._now(now_ms)
        records: list[r.CoordinatorRecord] = []
        effects: list[Effect] = []
        for group_id, deadline in sorted(self._init_retry_deadlines.items()):
            if deadline > now:
                continue
            del self._init_retry_deadlines[group_id]
            group = self._groups.get(group_id)
            if group is None:
                continue
            more_records, more_effects = membership.initialize(
                group_id=group_id,
                metadata=group.state_metadata,
                subscribed_topic_names=group.subscribed_topic_names(),
                image=self._image,
                state_epoch=group.group_epoch,
            )
            records.extend(more_records)
            effects.extend(more_effects)
        return CoordinatorResult(
            records=tuple(records), response=GroupsChanged(), effects=tuple(effects)
        )

    # ---- topic metadata and share-partition state -------------------------------------

    def on_topics_changed(
        self, *, topics: Iterable[TopicMetadata], now_ms: int | None = None
    ) -> GroupResult[GroupsChanged]:
        """Take the cluster's current topics. Groups whose subscribed topics appeared,
        vanished, were recreated or grew get an epoch bump; deleted topics with
        state move to deleting (and their state is sent for deletion); new
        partitions of subscribed topics are sent for initialisation."""
        now = self._now(now_ms)
        topics = list(topics)
        if regex_refresh.new_topic_names(self._image, (t.name for t in topics)):
            self._topics_version += 1
        self._image = TopicImage(topics)
        records: list[r.CoordinatorRecord] = []
        effects: list[Effect] = []
        bumped: list[str] = []
        for group_id, group in sorted(self._groups.items()):
            metadata = group.state_metadata
            vanished = lifecycle.vanished_topics(metadata, self._image)
            if vanished:
                metadata, deletes = lifecycle.move_to_deleting(metadata, vanished, self._image)
                effects.append(lifecycle.delete_effect(group_id=group_id, topics=deletes))
            subscribed = group.subscribed_topic_names()
            new_hash = metadata_hash(subscribed_topic_names=subscribed, image=self._image)
            epoch = group.group_epoch
            if new_hash != group.metadata_hash:
                epoch += 1
                bumped.append(group_id)
                records.append(membership.epoch_record(group_id, epoch, new_hash))
            retry_at = self._init_retry_deadlines.get(group_id)
            if retry_at is None or retry_at <= now:
                pending = lifecycle.initialization_needed(
                    metadata=metadata, subscribed_topic_names=subscribed, image=self._image
                )
                if pending:
                    metadata = lifecycle.add_initializing(metadata, pending)
                    effects.append(
                        lifecycle.initialize_effect(
                            group_id=group_id, state_epoch=epoch, pending=pending
                        )
                    )
            if metadata != group.state_metadata:
                records.append(membership.state_metadata_record(group_id, metadata))
        return CoordinatorResult(
            records=tuple(records),
            response=GroupsChanged(bumped_groups=tuple(bumped)),
            effects=tuple(effects),
        )

    def complete_initialization(
        self,
        *,
        group_id: str,
        topic_partitions: Mapping[uuid.UUID, Iterable[int]],
        success: bool,
        now_ms: int | None = None,
    ) -> GroupResult[GroupEpochResponse]:
        """The outcome of an `InitializeShareState` effect. Success: the partitions
        become initialized and the group epoch is bumped, so the next heartbeat
        assigns them. Failure: they are forgotten and retried after
        `group.share.initialize.retry.interval.ms`."""
        now = self._now(now_ms)
        group = self._groups.get(group_id)
        if group is None:
            return self._epoch_response(group_id, ErrorCode.group_id_not_found)
        if not success:
            metadata = lifecycle.remove_initializing(group.state_metadata, topic_partitions)
            retry = now + self._settings.broker.initialize_retry_interval_ms
            self._init_retry_deadlines[group_id] = retry
            records = (
                [membership.state_metadata_record(group_id, metadata)]
                if metadata != group.state_metadata
                else []
            )
            return CoordinatorResult(
                records=tuple(records),
                response=GroupEpochResponse(group_id=group_id, group_epoch=group.group_epoch),
            )
        metadata, moved = lifecycle.mark_initialized(group.state_metadata, topic_partitions)
        if not moved:
            return self._epoch_response(group_id, None, group.group_epoch)
        epoch = group.group_epoch + 1
        return CoordinatorResult(
            records=(
                membership.state_metadata_record(group_id, metadata),
                membership.epoch_record(group_id, epoch, group.metadata_hash),
            ),
            response=GroupEpochResponse(group_id=group_id, group_epoch=epoch),
        )

    def complete_state_deletion(
        self, *, group_id: str, topic_ids: Iterable[uuid.UUID], success: bool
    ) -> GroupResult[GroupEpochResponse]:
        """The outcome of a `DeleteShareState` effect (not for group deletion):
        on success the topics leave `deleting`; on failure they stay, and are sent
        again by the next `on_loaded` or DeleteGroups."""
        group = self._groups.get(group_id)
        if group is None:
            return self._epoch_response(group_id, ErrorCode.group_id_not_found)
        metadata = group.state_metadata
        if success:
            metadata = lifecycle.remove_deleting(metadata, topic_ids)
        records = (
            (membership.state_metadata_record(group_id, metadata),)
            if metadata != group.state_metadata
            else ()
        )
        return CoordinatorResult(
            records=records,
            response=GroupEpochResponse(
                group_id=group_id,
                error=None if success else ErrorCode.unknown_server_error,
                group_epoch=group.group_epoch,
            ),
        )

    def initialized_partitions(self, group_id: str) -> dict[uuid.UUID, tuple[int, ...]]:
        """Topic id -> initialised partitions of a share group ({} if unknown)."""
        group = self._groups.get(group_id)
        if group is None:
            return {}
        return {
            topic_id: tuple(sorted(entry.partitions))
            for topic_id, entry in sorted(group.state_metadata.initialized.items())
        }

    def offsets_to_describe(
        self, *, group_id: str, topics: Sequence[tuple[str, Sequence[int]]] | None
    ) -> list[tuple[str, uuid.UUID | None, tuple[int, ...]]]:
        """What DescribeShareGroupOffsets (90) answers for: (topic name, topic id or
        None for a topic the cluster does not have, partitions). `topics` None =
        every initialised partition of the group, by topic name; else the request's
        topics in order."""
        image = self._image
        if topics is None:
            wanted = []
            for topic_id, initialized in self.initialized_partitions(group_id).items():
                topic = image.by_id(topic_id)
                if topic is not None:
                    wanted.append((topic.name, topic_id, initialized))
            return sorted(wanted, key=lambda item: item[0])
        described: list[tuple[str, uuid.UUID | None, tuple[int, ...]]] = []
        for name, partitions in topics:
            topic = image.by_name(name)
            described.append((name, None if topic is None else topic.topic_id, tuple(partitions)))
        return described

    # ---- the log's bound ----------------------------------------------------------------

    def rewrite_old_records(self, *, window_records: int, records_max: int) -> GroupResult[int]:
        """Re-append the latest records of groups with a live key more than
        `window_records` below the partition's end (group/log_bound.py), so the log
        below can be pruned; replaying them changes no state. Response: how many."""
        records = self.log_keys.rewrite_records(
            window_records=window_records, records_max=records_max
        )
        return CoordinatorResult(records=records, response=len(records))

    def prune_offset(self) -> int | None:
        """The offset below which the shard's `__consumer_offsets` partition is not
        needed to rebuild it (None: unknown, keep it all): below its live keys'
        records and below the latest offset record of each simple group left without
        offsets (whose replay makes the group, `_simple_anchors`)."""
        offset = self.log_keys.prune_offset()
        unknown = False
        for group_id, anchor in list(self._simple_anchors.items()):
            if group_id not in self.classic.simple:
                del self._simple_anchors[group_id]
                continue
            if self.classic.offsets.count(group_id) or self.classic.txn_offsets.has_group(group_id):
                continue  # its live offset keys hold the log
            if anchor == NO_OFFSET:
                unknown = True
            elif offset is not None:
                offset = min(offset, anchor)
        return None if unknown else offset

    def cleanup_group_metadata(self, *, now_ms: int, retention_ms: int) -> GroupResult[None]:
        """One offsets cleanup pass, every `offsets.retention.check.interval.ms`, as
        Kafka's GroupCoordinatorShard.cleanupGroupMetadata: expired offsets and empty
        classic groups left without offsets (`ClassicCoordinator.expire_offsets`,
        epoch `now_ms`), then every consumer group (KIP-848) without members, offsets
        or pending transactional offsets once those tombstones are written: its
        records tombstoned, ConsumerGroupMetadata last."""
        records = list(self.classic.expire_offsets(now_ms=now_ms, retention_ms=retention_ms))
        expired = Counter(
            record.key.group_id for record in records if isinstance(record.key, r.OffsetCommitKey)
        )
        for group_id, group in sorted(self._consumer_groups.items()):
            if (
                group.is_empty
                and self.classic.offsets.count(group_id) == expired[group_id]
                and not self.classic.txn_offsets.has_group(group_id)
            ):
                records.extend(consumer_membership.group_tombstones(group))
        return CoordinatorResult(records=tuple(records), response=None)

    def on_topics_deleted(self, *, topic_names: Iterable[str]) -> GroupResult[int]:
        """Tombstones of every group's committed offsets of deleted topics (Kafka's
        `onPartitionsDeleted`), whatever the group's state. Response: how many."""
        names = frozenset(topic_names)
        records = (
            *self.classic.offsets.topic_tombstones(names),
            *self.classic.txn_offsets.topic_tombstones(names),
        )
        return CoordinatorResult(records=records, response=len(records))

    def complete_transaction(
        self, *, producer_id: int, producer_epoch: int, commit: bool
    ) -> GroupResult[int]:
        """A transaction marker on the shard's `__consumer_offsets` partition:
        `producer_id`'s pending offsets of its groups materialised (`commit`) or
        dropped (group/txn_offsets.py). Response: how many records."""
        records = self.classic.txn_offsets.complete(
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            commit=commit,
        )
        return CoordinatorResult(records=records, response=len(records))

    # ---- administration ---------------------------------------------------------------

    def delete_any_groups(self, *, group_ids: Sequence[str]) -> GroupResult[DeleteGroupsResponse]:
        """DeleteGroups (42) of distinct ids of any type, one result per id in request
        order: consumer groups by `delete_consumer_groups`, classic (and simple)
        groups by `ClassicCoordinator.delete_groups`, the rest as share groups by
        `delete_groups` (a share group with state answers `pending`, with its
        `DeleteShareState` effect). The types' groups are disjoint, so one result
        carries every record."""
        consumer_ids = [g for g in group_ids if g in self._consumer_groups]
        taken = set(consumer_ids)
        classic_ids = [g for g in group_ids if g not in taken and self.classic.has_group(g)]
        taken.update(classic_ids)
        consumer = self.delete_consumer_groups(group_ids=consumer_ids)
        classic_records, classic_results = self.classic.delete_groups(classic_ids)
        share = self.delete_groups(group_ids=[g for g in group_ids if g not in taken])
        by_id = {
            result.group_id: result
            for result in (*consumer.response.results, *classic_results, *share.response.results)
        }
        return CoordinatorResult(
            records=(*consumer.records, *classic_records, *share.records),
            response=DeleteGroupsResponse(results=tuple(by_id[g] for g in group_ids)),
            effects=share.effects,
        )

    def delete_groups(self, *, group_ids: Iterable[str]) -> GroupResult[DeleteGroupsResponse]:
        """DeleteGroups for share groups. An empty group without state is deleted at
        once; one with state first moves its topics to deleting and returns a
        `DeleteShareState` effect (`for_group_deletion`); the deletion finishes in
        `complete_group_deletion`."""
        records: list[r.CoordinatorRecord] = []
        effects: list[Effect] = []
        results: list[DeleteGroupResult] = []
        for group_id in group_ids:
            group = self._groups.get(group_id)
            if group is None:
                results.append(
                    DeleteGroupResult(group_id=group_id, error=ErrorCode.group_id_not_found)
                )
                continue
            if not group.is_empty:
                results.append(
                    DeleteGroupResult(group_id=group_id, error=ErrorCode.non_empty_group)
                )
                continue
            metadata = group.state_metadata
            if metadata.is_empty:
                records.extend(membership.group_tombstones(group))
                results.append(DeleteGroupResult(group_id=group_id))
                continue
            new_metadata, deletes = lifecycle.move_to_deleting(
                metadata, lifecycle.topics_with_state(metadata), self._image
            )
            if new_metadata != metadata:
                records.append(membership.state_metadata_record(group_id, new_metadata))
            effects.append(
                lifecycle.delete_effect(group_id=group_id, topics=deletes, for_group_deletion=True)
            )
            self._deleting_groups.add(group_id)
            results.append(DeleteGroupResult(group_id=group_id, pending=True))
        return CoordinatorResult(
            records=tuple(records),
            response=DeleteGroupsResponse(results=tuple(results)),
            effects=tuple(effects),
        )

    def complete_group_deletion(
        self, *, group_id: str, success: bool
    ) -> GroupResult[GroupEpochResponse]:
        """The outcome of a group deletion's `DeleteShareState`. Success: tombstones
        of every group record, ShareGroupMetadata last (NON_EMPTY_GROUP if a member
        joined meanwhile: only the deleted topics leave `deleting`). Failure: the
        group stays, its topics still deleting, until DeleteGroups is retried."""
        self._deleting_groups.discard(group_id)
        group = self._groups.get(group_id)
        if group is None:
            return self._epoch_response(group_id, ErrorCode.group_id_not_found)
        if not success:
            return self._epoch_response(group_id, ErrorCode.unknown_server_error, group.group_epoch)
        if group.is_empty:
            return CoordinatorResult(
                records=tuple(membership.group_tombstones(group)),
                response=GroupEpochResponse(group_id=group_id),
            )
        metadata = StatePartitionMetadata(
            initializing=dict(group.state_metadata.initializing),
            initialized=dict(group.state_metadata.initialized),
        )
        records = (
            (membership.state_metadata_record(group_id, metadata),)
            if metadata != group.state_metadata
            else ()
        )
        return CoordinatorResult(
            records=records,
            response=GroupEpochResponse(
                group_id=group_id, error=ErrorCode.non_empty_group, group_epoch=group.group_epoch
            ),
        )

    def reset_epoch(self, *, group_id: str) -> GroupResult[GroupEpochResponse]:
        """An offset reset bumps the group epoch (fencing older state writers). Only
        for an empty group; a missing group is created empty."""
        if group_id in self._other_groups or self.classic.has_group(group_id):
            return self._epoch_response(group_id, ErrorCode.group_id_not_found)
        group = self._groups.get(group_id)
        if group is not None and not group.is_empty:
            return self._epoch_response(group_id, ErrorCode.non_empty_group, group.group_epoch)
        epoch = (group.group_epoch if group is not None else 0) + 1
        hash_value = group.metadata_hash if group is not None else 0
        return CoordinatorResult(
            records=(membership.epoch_record(group_id, epoch, hash_value),),
            response=GroupEpochResponse(group_id=group_id, group_epoch=epoch),
        )

    def alter_share_group_offsets(
        self, *, group_id: str, topics: Iterable[offsets.TopicOffsets]
    ) -> GroupResult[AlterOffsetsResponse]:
        """AlterShareGroupOffsets (91): reset the start offsets of an empty (or
        missing, then created) share group; the `InitializeShareState` effect
        completes through `complete_initialization` (rules in group/share/offsets.py)."""
        error = self._offsets_group_error(group_id, missing_ok=True)
        if error is not None:
            code, message = error
            return CoordinatorResult(
                records=(), response=AlterOffsetsResponse(error=code, error_message=message)
            )
        return offsets.alter(
            group_id=group_id, group=self._groups.get(group_id), topics=topics, image=self._image
        )

    def delete_share_group_offsets(
        self, *, group_id: str, topic_names: Iterable[str]
    ) -> GroupResult[DeleteOffsetsResponse]:
        """DeleteShareGroupOffsets (92): delete the state of topics of an empty share
        group; the `DeleteShareState` effect completes through
        `complete_state_deletion` (rules in group/share/offsets.py)."""
        error = self._offsets_group_error(group_id, missing_ok=False)
        if error is not None:
            code, message = error
            return CoordinatorResult(
                records=(), response=DeleteOffsetsResponse(error=code, error_message=message)
            )
        group = self._groups[group_id]
        return offsets.delete(
            group_id=group_id, group=group, topic_names=topic_names, image=self._image
        )

    def _offsets_group_error(
        self, group_id: str, *, missing_ok: bool
    ) -> tuple[ErrorCode, str] | None:
        if group_id in self._other_groups or self.classic.has_group(group_id):
            return ErrorCode.group_id_not_found, f"Group {group_id} is not a share group."
        group = self._groups.get(group_id)
        if group is None:
            if missing_ok:
                return None
            return ErrorCode.group_id_not_found, f"Group {group_id} not found."
        if not group.is_empty:
            return ErrorCode.non_empty_group, offsets.NOT_EMPTY_MESSAGE
        return None

    # ---- reads ------------------------------------------------------------------------

    def group_type(self, group_id: str) -> str | None:
        """ "share", "consumer" or None: a classic JoinGroup on a share group answers
        INCONSISTENT_GROUP_PROTOCOL, a share request on another type
        GROUP_ID_NOT_FOUND."""
        if group_id in self._groups:
            return queries.GROUP_TYPE_SHARE
        return self._other_groups.get(group_id) or self.classic.group_type(group_id)

    def _share_type(self, group_id: str) -> str | None:
        """The type of `group_id` if a non-classic group holds it."""
        if group_id in self._groups:
            return queries.GROUP_TYPE_SHARE
        return self._other_groups.get(group_id)

    def group_state(self, group_id: str) -> str | None:
        group = self._groups.get(group_id)
        if group is None:
            return None
        if group_id in self._deleting_groups and group.is_empty:
            return STATE_DEAD
        return group.state

    def share_group_describe(self, *, group_ids: Iterable[str]) -> list[DescribedGroup]:
        """ShareGroupDescribe (77); read-only. Unknown or other-type ids answer
        GROUP_ID_NOT_FOUND."""
        described: list[DescribedGroup] = []
        for group_id in group_ids:
            group = self._groups.get(group_id)
            state = self.group_state(group_id)
            if group is None or state is None:
                other_type = self._other_groups.get(group_id) or self.classic.group_type(group_id)
                described.append(queries.describe_missing(group_id, other_type=other_type))
            else:
                described.append(queries.describe(group, state=state, image=self._image))
        return described

    def list_groups(
        self, *, states_filter: Iterable[str] = (), types_filter: Iterable[str] = ()
    ) -> list[ListedGroup]:
        """ListGroups over share groups (type and protocol type "share"); filters
        are case-insensitive, empty = all."""
        states = [(group_id, self.group_state(group_id) or "") for group_id in self._groups]
        return queries.list_share_groups(
            states, states_filter=states_filter, types_filter=types_filter
        )

    def list_consumer_groups(
        self, *, states_filter: Iterable[str] = (), types_filter: Iterable[str] = ()
    ) -> list[ListedGroup]:
        """ListGroups rows of consumer groups (type and protocol type "consumer")."""
        states = {s.lower() for s in states_filter}
        types = {t.lower() for t in types_filter}
        if types and GROUP_TYPE_CONSUMER not in types:
            return []
        return [
            ListedGroup(
                group_id=group_id,
                protocol_type=GROUP_TYPE_CONSUMER,
                group_state=group.state,
                group_type=GROUP_TYPE_CONSUMER,
            )
            for group_id, group in sorted(self._consumer_groups.items())
            if not states or group.state.lower() in states
        ]

    def consumer_session_deadline(self, group_id: str, member_id: str) -> int | None:
        return self._consumer_deadlines.get((group_id, member_id))

    def session_deadline(self, group_id: str, member_id: str) -> int | None:
        """When the member's session expires unless it heartbeats (None: no timer)."""
        return self._session_deadlines.get((group_id, member_id))

    @property
    def topic_image(self) -> TopicImage:
        """The topics last given to `on_topics_changed`."""
        return self._image

    def share_group(self, group_id: str) -> ShareGroup | None:
        """The replayed state of a share group (read-only by convention)."""
        return self._groups.get(group_id)

    # ---- helpers ----------------------------------------------------------------------

    def _now(self, now_ms: int | None) -> int:
        return self._clock.monotonic_ms() if now_ms is None else now_ms

    def _retry_deletion_effect(self, group_id: str, metadata: StatePartitionMetadata) -> Effect:
        return lifecycle.delete_effect(
            group_id=group_id,
            topics=[
                lifecycle.retry_delete_topic(topic_id, name, self._image)
                for topic_id, name in sorted(metadata.deleting.items())
            ],
        )

    @staticmethod
    def _epoch_response(
        group_id: str, error: ErrorCode | None, group_epoch: int = 0
    ) -> GroupResult[GroupEpochResponse]:
        return CoordinatorResult(
            records=(),
            response=GroupEpochResponse(group_id=group_id, error=error, group_epoch=group_epoch),
        )
