"""The group coordinator in the running broker: its runtime, effects and events.

`GroupService` hosts a `GroupCoordinatorShard` (group/shard.py) per
`__consumer_offsets` partition on the one coordinator runtime (coordinator/runtime.py,
as Kafka's GroupCoordinatorService hosts a GroupCoordinatorShard per partition): the
runtime places a group on `partition_for(group_id, n)`, loads each partition by
replay, writes (append, replay, effects, then the answer), runs the timed writes and
tells the broker's timer driver when (one source, "group-coordinator"). This shell
keeps what needs the world outside the shards:

- **Routing and fan-out.** An operation on a group goes to its partition;
  ListGroups, ShareGroupDescribe, DeleteGroups and topic events go to every shard
  concerned and merge the answers (describes and DeleteGroups in request order,
  ListGroups by group id).
- **Effects** (`_on_effects`, the runtime's handler): `InitializeShareState` and
  `DeleteShareState` are performed through the persister and their outcome written
  on the same partition (server/services/group_share_state.py); `Completion` answers the
  parked classic request (classic_service.py).
- **Administration.** DeleteGroups, AlterShareGroupOffsets and
  DeleteShareGroupOffsets are shard operations like any other; their effects'
  outcomes (persister errors per share-partition, the end of a group deletion) are
  folded into the answer by group/share/offsets.py (`with_initialization_errors`,
  `with_deletion_errors`). After any of them changed a group's share state, every
  `on_share_state_reset` listener is called with the group id (the share service
  drops the group's cached share-partitions, which reload the new state).
  DescribeShareGroupOffsets is a read: the shard says which partitions
  (`offsets_to_describe`), the persister gives their summaries, and
  `offsets.describe_partition` computes the lag against the high watermark.
- **Initialisation and assignment.** An initialisation a heartbeat starts is
  performed right after that heartbeat's records (the share coordinator is in this
  process, and its writes are durable when `initialize` returns); its completion
  makes the partitions assignable and bumps the group epoch. The heartbeat is then
  answered from a second pass of the same member at its new epoch
  (`_assign_after_initialisation`), whose records carry the member's share of the
  now-initialised partitions. So a member forming a group gets its partitions in
  its join reply, and each member joining after it gets its fair share in its own
  reply (members already in the group learn their smaller share at their next
  heartbeat). A deliberate difference from Kafka, whose share coordinator answers
  asynchronously: there the partitions reach every member only at its heartbeat
  after the initialisation, one heartbeat interval (5 s) after forming.
- **Timed writes.** Each shard's `next_deadline()` (session expiry, initialisation
  retry, a scheduled regex refresh) is due to `expire_sessions`,
  `retry_initializations` and `refresh_regexes` (group/consumer/regex_refresh.py); the
  classic ones are classic_service.py's; the log maintenance pass is
  group_persistence.py's (`on_fired` tells it what each firing did). Every write
  calls `rearm`.
- **Topics.** `topics_changed()` hands every shard each topic's id, name and
  partition count (at start and after CreateTopics, DeleteTopics, CreatePartitions
  and Metadata auto-creation); `topics_deleted()` tombstones every group's committed
  offsets of deleted topics (Kafka's `onPartitionsDeleted`).
- **Transactions.** TxnOffsetCommit writes pending offsets through
  `classic.txn_commit_offsets`, as OffsetCommit does through `classic.commit_offsets`;
  `complete_transaction` (the transaction shell's marker on a `__consumer_offsets`
  partition) settles that partition's (group/txn_offsets.py).
- **Configs.** Per-group overrides come from `group_configs` (the broker's
  `GroupConfigStore.overrides`), looked up at each operation, so a change applies
  from the group's next heartbeat; changed `group.share.*` broker configs arrive
  through `reconfigure`.

The record sinks are given by the broker, one per `__consumer_offsets` partition
(server/services/group_persistence.py); without them (tests) one `InMemoryRecordSink` bounded
by `limits.COORDINATOR_RECORDS_IN_MEMORY_MAX`, so one shard. A sink that refuses a
write raises `RecordSinkError` (a batch too large is one) out of the operation,
which the handler answers with COORDINATOR_NOT_AVAILABLE.

About 620 lines because it is the one adapter of the group coordinator's shards on
the runtime: every group type's operations, their effects and the share-state
administration go through it (classic parked answers live in classic_service.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TypeVar

from shoal.clock import Clock
from shoal.config import BrokerConfig, broker_keys
from shoal.coordinator import InMemoryRecordSink, RecordSink, RecordSinkError
from shoal.coordinator.placement import Placement
from shoal.coordinator.result import decided
from shoal.coordinator.runtime import CoordinatorRuntime, Fired, TimedWrite
from shoal.group import (
    DeleteShareState,
    GroupCoordinatorShard,
    InitializeShareState,
    ShareGroupSettings,
    TopicMetadata,
)
from shoal.group.classic.groups import ClassicSettings
from shoal.group.classic.state import Completion
from shoal.group.consumer.membership import (
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    HeartbeatRequest,
    HeartbeatResponse,
)
from shoal.group.log_maintenance import GroupRuntime
from shoal.group.records import CoordinatorRecord
from shoal.group.results import (
    AlterOffsetsResponse,
    DeleteGroupResult,
    DeleteOffsetsResponse,
    DescribedGroup,
    DescribedOffsetsTopic,
    GroupResult,
    GroupsChanged,
    ListedGroup,
    ShareGroupHeartbeatResponse,
)
from shoal.group.settings import ConsumerGroupSettings, GroupConfigLookup
from shoal.group.share import offsets as group_offsets
from shoal.group.share.group import LEAVE_GROUP_MEMBER_EPOCH
from shoal.group.share.offsets import TopicOffsets
from shoal.log.manager import LogManager
from shoal.protocol.errors import ErrorCode
from shoal.server.services.classic_service import ClassicService
from shoal.server.services.coordinator_host import LogLoader, load_all
from shoal.server.services.group_persistence import GROUP_METADATA_TOPIC
from shoal.server.services.group_share_state import HighWatermark, Outcomes, ShareStateEffects
from shoal.server.services.timers import DeadlineTimer, TimerSource
from shoal.share.persister import Persister

log = logging.getLogger(__name__)
R = TypeVar("R")

SHARE_GROUPS_DISABLED = "Share groups are disabled on this broker (share.version=0)."


def share_groups_enabled(config: BrokerConfig) -> bool:
    """`share.version` >= 1 (the `share.version` feature, docs/reference/configs.md); at 0
    the share APIs stay advertised but answer UNSUPPORTED_VERSION."""
    return config.get(broker_keys.SHARE_VERSION) >= 1


def topics_of(logs: LogManager) -> list[TopicMetadata]:
    """Every topic of the log manager as the group coordinator sees it."""
    return [
        TopicMetadata(topic_id=info.topic_id, name=info.name, partition_count=info.partitions)
        for info in logs.topics()
    ]


class GroupService:
    """The group coordinator of this broker. See the module docstring."""

    def __init__(
        self,
        *,
        clock: Clock,
        config: BrokerConfig,
        persister: Persister,
        topic_source: Callable[[], Iterable[TopicMetadata]],
        group_configs: GroupConfigLookup | None = None,
        sinks: Sequence[RecordSink[CoordinatorRecord]] = (),
        loader: LogLoader[CoordinatorRecord] | None = None,
        share_state_listeners: Iterable[Callable[[str], None]] = (),
        rearm: Callable[[], None] = lambda: None,
    ) -> None:
        self._clock = clock
        self._share_state = ShareStateEffects(persister)
        self._topic_source = topic_source
        self._group_configs: GroupConfigLookup = group_configs or _no_group_configs
        self._settings = ShareGroupSettings.from_broker_config(config)
        self._consumer_settings = ConsumerGroupSettings.from_broker_config(config)
        self._classic_settings = ClassicSettings.from_config(config)
        sinks = list(sinks) or [InMemoryRecordSink()]
        self._loader = loader
        self.runtime: GroupRuntime = CoordinatorRuntime(
            new_shard=lambda _partition: self._new_shard(),
            sinks=sinks,
            name=GROUP_METADATA_TOPIC,
            placement=Placement(len(sinks), key_text=str),
            loader=loader,
            prune_offset=GroupCoordinatorShard.prune_offset,
        )
        """A shard per `__consumer_offsets` partition (one sink each)."""
        self.runtime.on_effects(self._on_effects)
        self.runtime.add_timed(
            TimedWrite("group-sessions", operation=_expire_sessions, deadline_ms=_deadline),
            TimedWrite(
                "group-initialisation-retry",
                operation=lambda shard, now: shard.retry_initializations(now_ms=now),
                deadline_ms=_deadline,
            ),
            TimedWrite(
                "group-regex-refresh",
                operation=lambda shard, now: shard.refresh_regexes(now_ms=now),
                deadline_ms=_deadline,
            ),
        )
        self._rearm = rearm
        self._outcomes = Outcomes()
        """What the effects of the write in progress came to (`_write_tracked`)."""
        self.classic = ClassicService(
            runtime=self.runtime,
            clock=clock,
            rearm=rearm,
            retention=lambda: (
                config.get(broker_keys.OFFSETS_RETENTION_MINUTES) * 60_000,
                config.get(broker_keys.OFFSETS_RETENTION_CHECK_INTERVAL_MS),
            ),
        )
        """Classic consumer groups and committed offsets (server/services/classic_service.py)."""
        self.on_fired: list[Callable[[Fired], object]] = []
        """Told what each firing of the runtime's timed writes did (the log
        maintenance deletes the logs below the offsets its pass reported:
        server/services/group_persistence.py)."""
        self.on_share_state_reset: list[Callable[[str], None]] = list(share_state_listeners)
        """Called with a group id after an admin operation replaced or deleted share
        state of the group (the share service drops its cached share-partitions)."""

    def _new_shard(self) -> GroupCoordinatorShard:
        return GroupCoordinatorShard(
            clock=self._clock,
            settings=self._settings,
            group_configs=self._group_configs,
            classic_settings=self._classic_settings,
            consumer_settings=self._consumer_settings,
        )

    def shard_of(self, group_id: str) -> GroupCoordinatorShard:
        """The live shard holding `group_id`, for reads (describe, group types)."""
        return self.runtime.shard_at(self.runtime.partition_of(group_id))

    def shards(self) -> list[GroupCoordinatorShard]:
        """Every live shard, by partition."""
        return [shard for _, shard in self.runtime.shards()]

    # ---- lifecycle ------------------------------------------------------------------

    def load(self) -> None:
        """Rebuild each partition's shard from its records in `__consumer_offsets`
        (the loader's); `start` then finishes loading."""
        assert self._loader is not None, "no __consumer_offsets to load"
        load_all(self.runtime, self._loader, clock=self._clock, what="group coordinator")

    def start(self) -> None:
        """Finish loading (`load` first): take the current topics (so re-issued
        deletions know their partitions), re-arm sessions and re-issue interrupted
        initialisations and deletions (the timer driver then fires the re-armed
        deadlines)."""
        self.topics_changed()
        for partition in range(self.runtime.partitions):
            self._write(partition, self.runtime.shard_at(partition).on_loaded())

    def timer_sources(self) -> list[TimerSource]:
        """The runtime's timed writes (sessions, initialisation retries, regex
        refreshes, classic deadlines, offsets retention, the log maintenance pass),
        for the timer driver."""
        return [
            DeadlineTimer(
                "group-coordinator", deadline=self.runtime.next_deadline, action=self._fire
            )
        ]

    def _fire(self, now_ms: int) -> None:
        fired = self.runtime.fire(now_ms)
        for partition in range(self.runtime.partitions):
            self.classic.answer_abandoned(partition)  # conversions a timed write made
        for listener in self.on_fired:
            listener(fired)

    def reconfigure(self, config: BrokerConfig) -> None:
        """Adopt changed `group.share.*` broker configs (IncrementalAlterConfigs)."""
        consumer_settings = ConsumerGroupSettings.from_broker_config(config)
        if consumer_settings != self._consumer_settings:
            self._consumer_settings = consumer_settings
            for shard in self.shards():
                shard.update_consumer_settings(consumer_settings)
        settings = ShareGroupSettings.from_broker_config(config)
        if settings == self._settings:
            return
        self._settings = settings
        for shard in self.shards():
            shard.update_settings(settings)
        self._rearm()

    def topics_changed(self) -> None:
        """Tell every shard the current topics; call after any topic is created,
        deleted or grown. A shard whose write is refused catches up at the next."""
        topics = list(self._topic_source())
        try:
            written = self.runtime.write_all(lambda shard: shard.on_topics_changed(topics=topics))
        finally:
            self._rearm()
        bumped = [g for _, result in written for g in result.response.bumped_groups]
        if bumped:
            log.info("topic change bumped the epoch of share groups %s", bumped)

    def topics_deleted(self, names: Collection[str]) -> None:
        """Tombstone every group's committed offsets of deleted topics (Kafka's
        `onPartitionsDeleted`); call after DeleteTopics. A shard whose write is
        refused keeps the offsets until they are deleted."""
        try:
            written = self.runtime.write_all(
                lambda shard: shard.on_topics_deleted(topic_names=names)
            )
        finally:
            self._rearm()
        deleted = sum(result.response for _, result in written)
        if deleted:
            log.info("deleted %d committed offsets of deleted topics %s", deleted, names)

    # ---- transactions -----------------------------------------------------------------

    def offsets_partition(self, group_id: str) -> int:
        """The `__consumer_offsets` partition holding `group_id`'s records: the one a
        transaction that committed the group's offsets must send its marker to."""
        return self.runtime.partition_of(group_id)

    async def complete_transaction(
        self, *, offsets_partition: int, producer_id: int, producer_epoch: int, commit: bool
    ) -> None:
        """A transaction marker for `__consumer_offsets` partition `offsets_partition`:
        the producer's pending offsets there become committed (`commit`) or are
        dropped, the records written before this returns. Idempotent (a repeated
        marker writes nothing). A sink that refuses the write raises
        `RecordSinkError`: the marker is not done, the caller retries it."""
        shard = self.runtime.shard_at(offsets_partition)
        result = shard.complete_transaction(
            producer_id=producer_id, producer_epoch=producer_epoch, commit=commit
        )
        if self._write(offsets_partition, result):
            log.info(
                "transaction marker (%s) of producer %d epoch %d on __consumer_offsets-%d: "
                "%d records",
                "commit" if commit else "abort",
                producer_id,
                producer_epoch,
                offsets_partition,
                len(result.records),
            )

    # ---- operations -------------------------------------------------------------------

    def heartbeat(
        self,
        *,
        group_id: str,
        member_id: str,
        member_epoch: int,
        rack_id: str | None,
        subscribed_topic_names: Collection[str] | None,
        client_id: str,
        client_host: str,
    ) -> ShareGroupHeartbeatResponse:
        """ShareGroupHeartbeat (76). Raises `RecordSinkError` if nothing could be
        written (the request then changed nothing)."""
        partition = self.runtime.partition_of(group_id)
        result = self.runtime.shard_at(partition).share_group_heartbeat(
            group_id=group_id,
            member_id=member_id,
            member_epoch=member_epoch,
            rack_id=rack_id,
            subscribed_topic_names=subscribed_topic_names,
            client_id=client_id,
            client_host=client_host,
        )
        response = self._write(partition, result)
        if response.error is not None:
            return response
        if member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            log.info("share group %s: member %s left", group_id, member_id)
            return response
        response = self._assign_after_initialisation(
            partition,
            group_id=group_id,
            member_id=member_id,
            response=response,
            client_id=client_id,
            client_host=client_host,
        )
        if member_epoch == 0:
            log.info(
                "share group %s: member %s (client %s, %s) joined, epoch %d, %d partitions",
                group_id,
                member_id,
                client_id,
                client_host,
                response.member_epoch,
                sum(len(tp.partitions) for tp in response.assignment or ()),
            )
        return response

    def _assign_after_initialisation(
        self,
        partition: int,
        *,
        group_id: str,
        member_id: str,
        response: ShareGroupHeartbeatResponse,
        client_id: str,
        client_host: str,
    ) -> ShareGroupHeartbeatResponse:
        """If the heartbeat's effects moved the group epoch past the member's (an
        initialisation it started completed), the member heartbeats once more, at
        the epoch it was given, and is answered with the assignment of that pass
        (module docstring, "Initialisation and assignment"). Its records are
        written before the answer, like any heartbeat's."""
        shard = self.runtime.shard_at(partition)
        group = shard.share_group(group_id)
        if group is None or group.group_epoch <= response.member_epoch:
            return response
        try:
            again = self._write(
                partition,
                shard.share_group_heartbeat(
                    group_id=group_id,
                    member_id=member_id,
                    member_epoch=response.member_epoch,
                    rack_id=None,
                    subscribed_topic_names=None,
                    client_id=client_id,
                    client_host=client_host,
                ),
            )
        except RecordSinkError:
            # The first pass stands (written); the member gets the partitions at its
            # next heartbeat, as without this pass.
            log.exception("share group %s: assignment after initialisation not written", group_id)
            return response
        if again.error is not None:
            log.warning(
                "share group %s: member %s's assignment after initialisation refused: %s",
                group_id,
                member_id,
                again.error_message,
            )
            return response
        return again

    def consumer_heartbeat(self, request: HeartbeatRequest) -> HeartbeatResponse:
        """ConsumerGroupHeartbeat (68). Raises `RecordSinkError` if nothing could be
        written (the request then changed nothing)."""
        partition = self.runtime.partition_of(request.group_id)
        result = self.runtime.shard_at(partition).consumer_group_heartbeat(request=request)
        response = self._write(partition, result)
        self.classic.answer_abandoned(partition)  # an upgraded classic group's parked requests
        if response.error is not None:
            return response
        if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            log.info(
                "consumer group %s: static member %s (instance %s) left, its partitions kept",
                request.group_id,
                request.member_id,
                request.instance_id,
            )
        elif request.member_epoch < 0:
            log.info("consumer group %s: member %s left", request.group_id, request.member_id)
        elif request.member_epoch == 0:
            log.info(
                "consumer group %s: member %s (client %s, %s) joined at epoch %d",
                request.group_id,
                request.member_id,
                request.client_id,
                request.client_host,
                response.member_epoch,
            )
        return response

    def describe(self, group_ids: Iterable[str]) -> list[DescribedGroup]:
        """ShareGroupDescribe (77); read-only."""
        return [
            described
            for group_id in group_ids
            for described in self.shard_of(group_id).share_group_describe(group_ids=[group_id])
        ]

    def list_groups(
        self, *, states_filter: Iterable[str] = (), types_filter: Iterable[str] = ()
    ) -> list[ListedGroup]:
        """ListGroups over share, classic and consumer groups of every shard; read-only."""
        states, types = list(states_filter), list(types_filter)
        listed: list[ListedGroup] = []
        for shard in self.shards():
            listed += shard.list_groups(states_filter=states, types_filter=types)
            listed += shard.classic.list_groups(states_filter=states, types_filter=types)
            listed += shard.list_consumer_groups(states_filter=states, types_filter=types)
        return sorted(listed, key=lambda group: group.group_id)

    # ---- administration ---------------------------------------------------------------

    def delete_groups(self, group_ids: Iterable[str]) -> list[DeleteGroupResult]:
        """DeleteGroups (42) of consumer, classic and share groups: one final result
        per distinct id, in request order (state deleted, then the group's records
        tombstoned; `GroupCoordinatorShard.delete_any_groups` on each shard). Raises
        `RecordSinkError` if nothing could be written."""
        ids = list(dict.fromkeys(group_ids))
        by_partition: dict[int, list[str]] = {}
        for group_id in ids:
            by_partition.setdefault(self.runtime.partition_of(group_id), []).append(group_id)
        by_id: dict[str, DeleteGroupResult] = {}
        for partition, wanted in by_partition.items():
            shard = self.runtime.shard_at(partition)
            shares = {g for g in wanted if shard.share_group(g) is not None}
            response, outcomes = self._write_tracked(
                partition, shard.delete_any_groups(group_ids=wanted)
            )
            for result in response.results:
                group_id, error = result.group_id, result.error
                if result.pending:
                    error = outcomes.deleted_groups.get(group_id, ErrorCode.unknown_server_error)
                if error is None:
                    log.info("group %s deleted", group_id)
                    if group_id in shares:
                        self._state_reset(group_id)
                by_id[group_id] = DeleteGroupResult(group_id=group_id, error=error)
        return [by_id[g] for g in ids]

    def alter_offsets(
        self, *, group_id: str, topics: Iterable[TopicOffsets]
    ) -> AlterOffsetsResponse:
        """AlterShareGroupOffsets (91). A partition whose state the persister did not
        initialise answers the persister's error. Raises `RecordSinkError` if nothing
        could be written."""
        partition = self.runtime.partition_of(group_id)
        shard = self.runtime.shard_at(partition)
        result = shard.alter_share_group_offsets(group_id=group_id, topics=topics)
        response, outcomes = self._write_tracked(partition, result)
        if response.error is not None or not result.effects:
            return response
        failed = outcomes.errors_of(group_id)
        log.info(
            "share group %s: start offsets reset at epoch %d (%d share-partitions failed)",
            group_id,
            response.group_epoch,
            len(failed),
        )
        self._state_reset(group_id)
        return group_offsets.with_initialization_errors(response, failed)

    def delete_offsets(self, *, group_id: str, topic_names: Iterable[str]) -> DeleteOffsetsResponse:
        """DeleteShareGroupOffsets (92). A topic whose state the persister did not
        delete answers the persister's error (and stays deleting, retried by the next
        request). Raises `RecordSinkError` if nothing could be written."""
        partition = self.runtime.partition_of(group_id)
        shard = self.runtime.shard_at(partition)
        result = shard.delete_share_group_offsets(group_id=group_id, topic_names=topic_names)
        response, outcomes = self._write_tracked(partition, result)
        if response.error is not None or not result.effects:
            return response
        failed_topics = {key[0]: error for key, error in outcomes.errors_of(group_id).items()}
        response = group_offsets.with_deletion_errors(response, failed_topics)
        log.info(
            "share group %s: share state of %s deleted",
            group_id,
            [row.topic_name for row in response.topics if row.error is None],
        )
        self._state_reset(group_id)
        return response

    def describe_offsets(
        self,
        *,
        group_id: str,
        topics: Sequence[tuple[str, Sequence[int]]] | None,
        high_watermark: HighWatermark,
    ) -> list[DescribedOffsetsTopic]:
        """DescribeShareGroupOffsets (90) of one group; read-only. `topics` None =
        every initialised partition. As Kafka, nothing here is a group-level error: a
        group, topic or partition without state answers StartOffset -1."""
        wanted = self.shard_of(group_id).offsets_to_describe(group_id=group_id, topics=topics)
        return self._share_state.describe_offsets(group_id, wanted, high_watermark)

    def _state_reset(self, group_id: str) -> None:
        for listener in list(self.on_share_state_reset):
            try:
                listener(group_id)
            except Exception:  # one failing listener must not skip the others
                log.exception("share-state-reset listener %r failed for %s", listener, group_id)

    # ---- writes and effects -------------------------------------------------------------

    def _write(self, partition: int, result: GroupResult[R]) -> R:
        response, _ = self._write_tracked(partition, result)
        return response

    def _write_tracked(self, partition: int, result: GroupResult[R]) -> tuple[R, Outcomes]:
        """Write `result` on `partition` (the runtime appends, replays and hands the
        effects to `_on_effects`), re-arm the timer. Returns the response and what
        the effects came to."""
        self._outcomes = outcomes = Outcomes()
        try:
            response = self.runtime.write(partition, lambda _shard: result).response
        finally:
            self._rearm()
        return response, outcomes

    def _on_effects(self, partition: int, effects: tuple[object, ...]) -> None:
        """The runtime's effect handler: answer parked classic requests; perform each
        share-state effect and write its outcome on the same partition (whose own
        effects come back here)."""
        outcomes = self._outcomes
        for effect in effects:
            if isinstance(effect, Completion):
                self.classic.complete(effect)
                continue
            if not isinstance(effect, InitializeShareState | DeleteShareState):
                continue  # a `Park`: the classic shell parked the request before the write
            outcome = self._share_state.outcome(self.runtime.shard_at(partition), effect, outcomes)
            try:
                answer = self.runtime.write(partition, decided(outcome)).response
            except RecordSinkError:
                log.exception("share group %s: outcome of %r not written", effect.group_id, effect)
                continue
            if isinstance(effect, DeleteShareState) and effect.for_group_deletion:
                outcomes.deleted_groups[effect.group_id] = answer.error


def _deadline(shard: GroupCoordinatorShard) -> int | None:
    return shard.next_deadline()


def _expire_sessions(shard: GroupCoordinatorShard, now_ms: int) -> GroupResult[GroupsChanged]:
    result = shard.expire_sessions(now_ms=now_ms)
    for group_id, member_id in result.response.expired_members:
        log.info("group %s: member %s removed, session timed out", group_id, member_id)
    return result


def _no_group_configs(_group_id: str) -> Mapping[str, object]:
    return {}
