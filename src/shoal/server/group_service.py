"""The group coordinator in the running broker: shard, runtime, effects and timers.

`GroupService` owns the `GroupCoordinatorShard` (group/coordinator.py), the
`CoordinatorRuntime` that writes its records and replays them (coordinator/), and
drives everything the shard leaves to its caller:

- **Writes.** Every shard operation goes through `_write`: the runtime appends the
  records and replays them, then the result's effects are performed, then the timer
  is re-armed, then the response is returned. Everything is synchronous, so one
  operation never interleaves with another on the event loop.
- **Effects.** `InitializeShareState` -> `persister.initialize` for every
  share-partition (in-process, synchronous) -> `complete_initialization` (success
  only if every partition succeeded) -> written like any result.
  `DeleteShareState` -> `persister.delete` -> `complete_state_deletion`, or
  `complete_group_deletion` for a DeleteGroups.
- **Join follow-up.** Kafka initialises asynchronously, so its join reply usually
  has an empty assignment. Here the persister answers in-process, so when a
  heartbeat's initialisation completes, an internal heartbeat at the member's new
  epoch (null subscription, same client) follows at once and its reply, carrying the
  assignment, is what the member gets (coordinators.md §1, initialisation item 4).
- **Timers.** One asyncio task sleeps until `shard.next_deadline()` (session expiry,
  initialisation retry) on the broker clock's `monotonic_ms`, fires
  `expire_sessions` and `retry_initializations`, and is re-armed after every write.
- **Topics.** `topics_changed()` hands the shard every topic's id, name and
  partition count (at start and after CreateTopics, DeleteTopics, CreatePartitions
  and Metadata auto-creation).
- **Configs.** Per-group overrides come from `group_configs` (the broker's
  `GroupConfigStore.overrides`), looked up at each operation, so a change applies
  from the group's next heartbeat; changed `group.share.*` broker configs arrive
  through `reconfigure`.

The record sink is in memory for now (`InMemoryRecordSink`, bounded by
`limits.COORDINATOR_RECORDS_IN_MEMORY_MAX`): a full sink raises `RecordSinkFull`
out of `heartbeat`, which the handler answers with COORDINATOR_NOT_AVAILABLE.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TypeVar

from shoal.clock import Clock
from shoal.config import BrokerConfig
from shoal.coordinator import CoordinatorRuntime, InMemoryRecordSink, RecordSink, RecordSinkFull
from shoal.group import (
    CoordinatorResult,
    DeleteShareState,
    GroupCoordinatorShard,
    InitializeShareState,
    ShareGroupSettings,
    TopicMetadata,
)
from shoal.group.records import CoordinatorRecord
from shoal.group.results import (
    DescribedGroup,
    Effect,
    GroupEpochResponse,
    ListedGroup,
    ShareGroupHeartbeatResponse,
)
from shoal.group.settings import GroupConfigLookup
from shoal.group.share_group import LEAVE_GROUP_MEMBER_EPOCH
from shoal.log.manager import LogManager
from shoal.share.persister import Persister, SharePartitionKey

log = logging.getLogger(__name__)
R = TypeVar("R")

_TIMER_FAILURE_BACKOFF_MS = 1_000
"""After a timer write fails (say the sink is full), wait this long before retrying."""
_EFFECTS_PER_WRITE_MAX = 10_000
"""Guard against an effect loop: completions never produce further effects today."""

SHARE_GROUPS_DISABLED = "Share groups are disabled on this broker (share.version=0)."


def share_groups_enabled(config: BrokerConfig) -> bool:
    """`share.version` >= 1 (configs.md §1); at 0 the share APIs stay advertised but
    answer UNSUPPORTED_VERSION."""
    return int(config["share.version"]) >= 1


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
        sink: RecordSink[CoordinatorRecord] | None = None,
    ) -> None:
        self._clock = clock
        self._persister = persister
        self._topic_source = topic_source
        self._group_configs: GroupConfigLookup = group_configs or _no_group_configs
        self._settings = ShareGroupSettings.from_broker_config(config)
        self._sink: RecordSink[CoordinatorRecord] = (
            sink if sink is not None else InMemoryRecordSink()
        )
        self.runtime: CoordinatorRuntime[GroupCoordinatorShard, CoordinatorRecord] = (
            CoordinatorRuntime(shard_factory=self._new_shard, sink=self._sink)
        )
        self._wake = asyncio.Event()
        self._timer: asyncio.Task[None] | None = None

    def _new_shard(self) -> GroupCoordinatorShard:
        return GroupCoordinatorShard(
            clock=self._clock, settings=self._settings, group_configs=self._group_configs
        )

    @property
    def shard(self) -> GroupCoordinatorShard:
        """The live shard, for reads (describe, list, group types)."""
        return self.runtime.shard

    # ---- lifecycle ------------------------------------------------------------------

    def start(self) -> None:
        """Finish loading (nothing to replay from the in-memory sink yet), take the
        current topics and start the timer task. Call inside the running loop."""
        self._write(self.shard.on_loaded())
        self.topics_changed()
        self._timer = asyncio.create_task(self._timer_loop(), name="group-coordinator-timers")

    async def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer
            self._timer = None

    def reconfigure(self, config: BrokerConfig) -> None:
        """Adopt changed `group.share.*` broker configs (IncrementalAlterConfigs)."""
        settings = ShareGroupSettings.from_broker_config(config)
        if settings == self._settings:
            return
        self._settings = settings
        self.shard.update_settings(settings)
        self._wake.set()

    def topics_changed(self) -> None:
        """Tell the shard the current topics; call after any topic is created,
        deleted or grown."""
        topics = list(self._topic_source())
        try:
            changed = self._write(self.shard.on_topics_changed(topics=topics))
        except RecordSinkFull:  # the topic change itself stands; groups catch up later
            log.exception("group coordinator could not record a topic change")
            return
        if changed.bumped_groups:
            log.info("topic change bumped the epoch of share groups %s", changed.bumped_groups)

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
        """ShareGroupHeartbeat (76). Raises `RecordSinkFull` if nothing could be
        written (the request then changed nothing)."""
        result = self.shard.share_group_heartbeat(
            group_id=group_id,
            member_id=member_id,
            member_epoch=member_epoch,
            rack_id=rack_id,
            subscribed_topic_names=subscribed_topic_names,
            client_id=client_id,
            client_host=client_host,
        )
        response, initialized = self._write_tracked(result)
        if response.error is not None:
            return response
        if member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
            log.info("share group %s: member %s left", group_id, member_id)
            return response
        if group_id in initialized:
            response = self._follow_up(
                response, group_id=group_id, client_id=client_id, host=client_host
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

    def _follow_up(
        self, response: ShareGroupHeartbeatResponse, *, group_id: str, client_id: str, host: str
    ) -> ShareGroupHeartbeatResponse:
        """The internal heartbeat after an in-process initialisation (module docstring)."""
        assert response.member_id is not None
        result = self.shard.share_group_heartbeat(
            group_id=group_id,
            member_id=response.member_id,
            member_epoch=response.member_epoch,
            rack_id=None,
            subscribed_topic_names=None,
            client_id=client_id,
            client_host=host,
        )
        try:
            follow = self._write(result)
        except RecordSinkFull:
            log.exception("share group %s: follow-up heartbeat not written", group_id)
            return response
        if follow.error is not None:
            log.warning("share group %s: follow-up heartbeat failed: %s", group_id, follow)
            return response
        if follow.assignment is None:
            follow = dataclasses.replace(follow, assignment=response.assignment)
        return follow

    def describe(self, group_ids: Iterable[str]) -> list[DescribedGroup]:
        """ShareGroupDescribe (77); read-only."""
        return self.shard.share_group_describe(group_ids=group_ids)

    def list_groups(
        self, *, states_filter: Iterable[str] = (), types_filter: Iterable[str] = ()
    ) -> list[ListedGroup]:
        """ListGroups over the share groups; read-only."""
        return self.shard.list_groups(states_filter=states_filter, types_filter=types_filter)

    # ---- writes and effects -------------------------------------------------------------

    def _write(self, result: CoordinatorResult[R]) -> R:
        response, _ = self._write_tracked(result)
        return response

    def _write_tracked(self, result: CoordinatorResult[R]) -> tuple[R, set[str]]:
        """Apply `result`, perform its effects, re-arm the timer. Returns the response
        and the groups whose initialisation completed successfully meanwhile."""
        try:
            response = self.runtime.apply(result)
            initialized = self._perform(result.effects)
        finally:
            self._wake.set()
        return response, initialized

    def _perform(self, effects: Iterable[Effect]) -> set[str]:
        pending = list(effects)
        initialized: set[str] = set()
        performed = 0
        while pending:
            performed += 1
            assert performed <= _EFFECTS_PER_WRITE_MAX, "effects keep producing effects"
            effect = pending.pop(0)
            outcome: CoordinatorResult[GroupEpochResponse]
            if isinstance(effect, InitializeShareState):
                success = self._initialize_state(effect)
                outcome = self.shard.complete_initialization(
                    group_id=effect.group_id,
                    topic_partitions=effect.partitions_by_topic(),
                    success=success,
                )
                if success:
                    initialized.add(effect.group_id)
            else:
                success = self._delete_state(effect)
                if effect.for_group_deletion:
                    outcome = self.shard.complete_group_deletion(
                        group_id=effect.group_id, success=success
                    )
                else:
                    outcome = self.shard.complete_state_deletion(
                        group_id=effect.group_id,
                        topic_ids=[t.topic_id for t in effect.topics],
                        success=success,
                    )
            try:
                self.runtime.apply(outcome)
            except RecordSinkFull:
                log.exception("share group %s: outcome of %r not written", effect.group_id, effect)
                initialized.discard(effect.group_id)
                continue
            pending.extend(outcome.effects)
        return initialized

    def _initialize_state(self, effect: InitializeShareState) -> bool:
        ok = True
        for topic in effect.topics:
            for partition in topic.partitions:
                key = SharePartitionKey(effect.group_id, topic.topic_id, partition.partition)
                error = self._persister.initialize(
                    key=key, state_epoch=effect.state_epoch, start_offset=partition.start_offset
                )
                if error is not None:
                    log.warning(
                        "share group %s: initialising %s-%d (state epoch %d) failed: %s",
                        effect.group_id,
                        topic.topic_name,
                        partition.partition,
                        effect.state_epoch,
                        error,
                    )
                    ok = False
        return ok

    def _delete_state(self, effect: DeleteShareState) -> bool:
        ok = True
        for topic in effect.topics:
            if topic.partitions is None:
                # Only after a reload, for a topic gone meanwhile. The in-memory
                # persister does not outlive the process, so it holds nothing to delete.
                log.info(
                    "share group %s: no partitions known for deleted topic %s (%s)",
                    effect.group_id,
                    topic.topic_name,
                    topic.topic_id,
                )
                continue
            for partition in topic.partitions:
                error = self._persister.delete(
                    key=SharePartitionKey(effect.group_id, topic.topic_id, partition)
                )
                if error is not None:
                    log.warning(
                        "share group %s: deleting the state of %s-%d failed: %s",
                        effect.group_id,
                        topic.topic_name,
                        partition,
                        error,
                    )
                    ok = False
        return ok

    # ---- timers -----------------------------------------------------------------------

    async def _timer_loop(self) -> None:
        """Sleep until the shard's earliest deadline (or a write re-arms), then fire."""
        while True:
            self._wake.clear()
            deadline = self.shard.next_deadline()
            now = self._clock.monotonic_ms()
            if deadline is not None and deadline <= now:
                if not self._fire(now):
                    await asyncio.sleep(_TIMER_FAILURE_BACKOFF_MS / 1000)
                continue
            # asyncio.timeout, not wait_for: 3.11's wait_for swallows a cancellation
            # that arrives just as the event is set, and stop() would hang.
            timeout_s = None if deadline is None else (deadline - now) / 1000
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout_s):
                    await self._wake.wait()

    def _fire(self, now_ms: int) -> bool:
        try:
            changed = self._write(self.shard.expire_sessions(now_ms=now_ms))
            for group_id, member_id in changed.expired_members:
                log.info(
                    "share group %s: member %s removed, session timed out", group_id, member_id
                )
            self._write(self.shard.retry_initializations(now_ms=now_ms))
        except Exception:  # keep the timers alive; the failure is logged with context
            log.exception("group coordinator timers failed")
            return False
        return True


def _no_group_configs(_group_id: str) -> Mapping[str, object]:
    return {}
