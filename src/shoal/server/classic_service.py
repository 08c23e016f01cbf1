"""Classic consumer groups in the running broker: writes, parked answers, timers.

The rules are the shard's (`GroupCoordinatorShard.classic`, group/classic_coordinator.py);
this module drives them:

- **Writes.** Every operation's records go through the runtime of the group's shard
  (`GroupShards.of`, server/group_persistence.py: appended to the group's
  `__consumer_offsets` partition, replayed), then its `Completion` effects are
  delivered, then the timer driver is re-armed. Everything is synchronous on the
  event loop, so operations never interleave.
- **Parked answers.** A JoinGroup that must wait for the rebalance, and a follower's
  SyncGroup that must wait for the leader (a result with a `Park` effect,
  group/classic_state.py), get a future keyed by (group, member); a later
  operation's `Completion` (or a timer's) resolves it. A client that went away
  leaves a future nobody awaits: resolving it is harmless.
- **Conversions.** A classic group upgraded to a consumer group (by a
  ConsumerGroupHeartbeat, group_service.py) answers its parked requests with
  REBALANCE_IN_PROGRESS through `answer_abandoned`; its members then rejoin the
  consumer group, whose classic members the shard serves (group/consumer_classic.py).
- **Timers.** One source (`timer_sources`) for session expiry, pending members and
  rebalance deadlines (`ClassicGroups.next_deadline` / `expire`, the earliest of
  every shard's), and one every
  `offsets.retention.check.interval.ms` expiring offsets past
  `offsets.retention.minutes` and deleting groups left empty without offsets
  (`GroupCoordinatorShard.cleanup_group_metadata`).

Time: membership uses the monotonic clock; commit timestamps the wall clock.
A full record sink raises `RecordSinkFull` to the handler (COORDINATOR_NOT_AVAILABLE).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from shoal.clock import Clock
from shoal.group.classic_coordinator import ClassicCoordinator
from shoal.group.classic_state import (
    Completion,
    JoinRequest,
    JoinResponse,
    LeaveResponse,
    LeavingMember,
    SyncRequest,
    SyncResponse,
    completions_of,
    parked_member,
)
from shoal.group.committed_offsets import FetchedOffset, OffsetToCommit, PartitionError
from shoal.group.log_maintenance import GroupRuntime
from shoal.group.results import GroupResult
from shoal.protocol.errors import ErrorCode
from shoal.server.group_persistence import GroupShards
from shoal.server.timers import DeadlineTimer, PeriodicTimer, TimerSource

log = logging.getLogger(__name__)
R = TypeVar("R")
_Key = tuple[str, str]


class ClassicService:
    """See the module docstring."""

    def __init__(
        self,
        *,
        shards: GroupShards,
        clock: Clock,
        rearm: Callable[[], None],
        retention: Callable[[], tuple[int, int]] = lambda: (10_080 * 60_000, 600_000),
    ) -> None:
        self._shards = shards
        self._retention = retention
        """(offsets retention ms, check interval ms), read at each check."""
        self._clock = clock
        self._rearm = rearm
        self._joins: dict[_Key, list[asyncio.Future[JoinResponse]]] = {}
        self._syncs: dict[_Key, list[asyncio.Future[SyncResponse]]] = {}

    def _classic(self, group_id: str) -> ClassicCoordinator:
        return self._shards.shard_of(group_id).classic

    def timer_sources(self) -> list[TimerSource]:
        return [
            DeadlineTimer("classic-groups", deadline=self._next_deadline, action=self.fire_timers),
            PeriodicTimer(
                "offsets-retention",
                interval_ms=lambda: self._retention()[1],
                action=self.expire_offsets,
            ),
        ]

    def _next_deadline(self, _now_ms: int) -> int | None:
        deadlines = [
            deadline
            for shard in self._shards.shards()
            if (deadline := shard.classic.groups.next_deadline()) is not None
        ]
        return min(deadlines, default=None)

    def fire_timers(self, now_ms: int) -> None:
        for runtime in self._shards.runtimes:
            groups = runtime.shard.classic.groups
            deadline = groups.next_deadline()
            if deadline is None or deadline > now_ms:
                continue  # nothing due on this shard
            for group_id, member_id in self._apply(runtime, groups.expire(now_ms=now_ms)):
                log.info(
                    "classic group %s: member %s removed, session timed out", group_id, member_id
                )

    def expire_offsets(self, _now_ms: int) -> None:
        """One offsets cleanup pass on every shard: tombstone offsets past
        `offsets.retention.minutes` (epoch time) and the groups left empty without
        offsets (`GroupCoordinatorShard.cleanup_group_metadata`)."""
        now_ms, retention_ms = self._clock.wall_ms(), self._retention()[0]
        for partition, runtime in enumerate(self._shards.runtimes):
            result = runtime.shard.cleanup_group_metadata(now_ms=now_ms, retention_ms=retention_ms)
            if result.records:
                runtime.apply(result)
                log.info(
                    "offsets cleanup of __consumer_offsets-%d: %d offset and group records "
                    "tombstoned",
                    partition,
                    len(result.records),
                )

    # ---- membership -----------------------------------------------------------------

    async def join(self, request: JoinRequest) -> JoinResponse:
        """JoinGroup: the answer, once the rebalance completes if it must wait."""
        runtime = self._shards.of(request.group_id)
        result = runtime.shard.classic.join(request, now_ms=self._clock.monotonic_ms())
        future = self._park(self._joins, request.group_id, result)
        response = self._apply(runtime, result)
        if future is None:
            assert response is not None
            return response
        parked: JoinResponse = await future
        return parked

    async def sync(self, request: SyncRequest) -> SyncResponse:
        """SyncGroup: the member's assignment, once the leader's arrived."""
        runtime = self._shards.of(request.group_id)
        result = runtime.shard.classic.sync(request, now_ms=self._clock.monotonic_ms())
        future = self._park(self._syncs, request.group_id, result)
        response = self._apply(runtime, result)
        if future is None:
            assert response is not None
            return response
        parked: SyncResponse = await future
        return parked

    def heartbeat(
        self, *, group_id: str, member_id: str, generation_id: int, group_instance_id: str | None
    ) -> ErrorCode | None:
        return self._classic(group_id).heartbeat(
            group_id=group_id,
            member_id=member_id,
            generation_id=generation_id,
            group_instance_id=group_instance_id,
            now_ms=self._clock.monotonic_ms(),
        )

    def leave(self, *, group_id: str, members: Sequence[LeavingMember]) -> LeaveResponse:
        runtime = self._shards.of(group_id)
        result = runtime.shard.classic.leave(
            group_id=group_id, members=members, now_ms=self._clock.monotonic_ms()
        )
        response: LeaveResponse = self._apply(runtime, result)
        left = [m.member_id or m.group_instance_id for m, error in response.members if not error]
        if left:
            log.info("group %s: classic members %s left", group_id, left)
        return response

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
    ) -> tuple[PartitionError, ...]:
        runtime = self._shards.of(group_id)
        result = runtime.shard.classic.commit_offsets(
            group_id=group_id,
            member_id=member_id,
            generation_id=generation_id,
            group_instance_id=group_instance_id,
            offsets=offsets,
            api_version=api_version,
            now_ms=self._clock.wall_ms(),
        )
        return runtime.apply(result)

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
    ) -> tuple[PartitionError, ...]:
        """TxnOffsetCommit (28): the offsets written pending their transaction's
        marker (group/txn_offsets.py)."""
        runtime = self._shards.of(group_id)
        result = runtime.shard.classic.txn_commit_offsets(
            group_id=group_id,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            member_id=member_id,
            generation_id=generation_id,
            group_instance_id=group_instance_id,
            offsets=offsets,
            now_ms=self._clock.wall_ms(),
        )
        return runtime.apply(result)

    def fetch_offsets(
        self,
        *,
        group_id: str,
        partitions: Sequence[tuple[str, int]] | None,
        require_stable: bool = False,
    ) -> tuple[ErrorCode | None, tuple[FetchedOffset, ...]]:
        return self._classic(group_id).fetch_offsets(
            group_id=group_id, partitions=partitions, require_stable=require_stable
        )

    def delete_offsets(
        self, *, group_id: str, partitions: Sequence[tuple[str, int]]
    ) -> tuple[ErrorCode | None, tuple[PartitionError, ...]]:
        runtime = self._shards.of(group_id)
        error, result = runtime.shard.classic.delete_offsets(
            group_id=group_id, partitions=partitions
        )
        if error is not None:
            return error, ()
        return None, runtime.apply(result)

    # ---- plumbing ---------------------------------------------------------------------

    def _park(
        self, waiters: dict[_Key, list[Any]], group_id: str, result: GroupResult[Any]
    ) -> asyncio.Future[Any] | None:
        member_id = parked_member(result)
        if member_id is None:
            return None
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        waiters.setdefault((group_id, member_id), []).append(future)
        return future

    def _apply(self, runtime: GroupRuntime, result: GroupResult[R]) -> R:
        response = runtime.apply(result)
        for completion in completions_of(result):
            self._complete(completion)
        self.answer_abandoned(runtime)
        self._rearm()
        return response

    def answer_abandoned(self, runtime: GroupRuntime) -> None:
        """Answer the parked requests of the classic groups of `runtime`'s shard that
        replay removed or restarted (an upgrade to a consumer group, a downgrade's
        rebalance): REBALANCE_IN_PROGRESS, so the members rejoin."""
        abandoned = runtime.shard.classic.groups.take_abandoned()
        for completion in abandoned:
            self._complete(completion)
        if abandoned:
            log.info("classic groups: %d parked requests answered after conversion", len(abandoned))

    def _complete(self, completion: Completion) -> None:
        key = (completion.group_id, completion.member_id)
        if completion.join is not None:
            for future in self._joins.pop(key, []):
                if not future.done():
                    future.set_result(completion.join)
        if completion.sync is not None:
            for sync_future in self._syncs.pop(key, []):
                if not sync_future.done():
                    sync_future.set_result(completion.sync)
