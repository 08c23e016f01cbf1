"""Classic consumer groups in the running broker: parked answers over the runtime.

The rules are the shard's (`GroupCoordinatorShard.classic`, group/classic/coordinator.py);
the group coordinator's runtime (server/services/group_service.py) writes them. This module
keeps what needs the event loop:

- **Parked answers.** A JoinGroup that must wait for the rebalance, and a follower's
  SyncGroup that must wait for the leader (a result with a `Park` effect,
  group/classic/state.py), get a future keyed by (group, member) before the result
  is written; a later write's `Completion` effect (an operation's, or a timed
  write's) resolves it (`complete`, called by the runtime's effect handler). A
  client that went away leaves a future nobody awaits: resolving it is harmless.
- **Conversions.** A classic group upgraded to a consumer group (by a
  ConsumerGroupHeartbeat) answers its parked requests with REBALANCE_IN_PROGRESS
  through `answer_abandoned`; its members then rejoin the consumer group, whose
  classic members the shard serves (group/consumer/classic_members.py).
- **Timed writes** on the runtime: session expiry, pending members and rebalance
  deadlines ("classic-groups", each shard's `ClassicGroups.next_deadline` /
  `expire`), and every `offsets.retention.check.interval.ms` the offsets cleanup
  ("offsets-retention": offsets past `offsets.retention.minutes` and groups left
  empty without offsets, `GroupCoordinatorShard.cleanup_group_metadata`).

Every operation goes to the runtime's partition of its group. Time: membership uses
the monotonic clock; commit timestamps the wall clock. A full record sink raises
`RecordSinkFull` to the handler (COORDINATOR_NOT_AVAILABLE).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from shoal.clock import Clock
from shoal.coordinator.result import decided
from shoal.coordinator.runtime import TimedWrite
from shoal.group import GroupCoordinatorShard
from shoal.group.classic.state import (
    Completion,
    JoinRequest,
    JoinResponse,
    LeaveResponse,
    LeavingMember,
    SyncRequest,
    SyncResponse,
    parked_member,
)
from shoal.group.committed_offsets import FetchedOffset, OffsetToCommit, PartitionError
from shoal.group.log_maintenance import GroupRuntime
from shoal.group.results import GroupResult
from shoal.protocol.errors import ErrorCode

log = logging.getLogger(__name__)
R = TypeVar("R")
_Key = tuple[str, str]


class ClassicService:
    """See the module docstring."""

    def __init__(
        self,
        *,
        runtime: GroupRuntime,
        clock: Clock,
        rearm: Callable[[], None],
        retention: Callable[[], tuple[int, int]] = lambda: (10_080 * 60_000, 600_000),
    ) -> None:
        self._runtime = runtime
        self._retention = retention
        """(offsets retention ms, check interval ms), read at each check."""
        self._clock = clock
        self._rearm = rearm
        self._joins: dict[_Key, list[asyncio.Future[JoinResponse]]] = {}
        self._syncs: dict[_Key, list[asyncio.Future[SyncResponse]]] = {}
        runtime.add_timed(
            TimedWrite(
                "classic-groups",
                operation=self._expire,
                deadline_ms=lambda shard: shard.classic.groups.next_deadline(),
            ),
            TimedWrite(
                "offsets-retention",
                operation=lambda shard, _now: self._cleanup(shard),
                interval_ms=lambda: self._retention()[1],
            ),
        )

    @staticmethod
    def _expire(
        shard: GroupCoordinatorShard, now_ms: int
    ) -> GroupResult[tuple[tuple[str, str], ...]]:
        result = shard.classic.groups.expire(now_ms=now_ms)
        for group_id, member_id in result.response:
            log.info("classic group %s: member %s removed, session timed out", group_id, member_id)
        return result

    def _cleanup(self, shard: GroupCoordinatorShard) -> GroupResult[None]:
        """The offsets cleanup of one shard (the runtime logs what it wrote)."""
        return shard.cleanup_group_metadata(
            now_ms=self._clock.wall_ms(), retention_ms=self._retention()[0]
        )

    def expire_offsets(self, _now_ms: int) -> None:
        """One offsets cleanup pass on every shard now: tombstone offsets past
        `offsets.retention.minutes` (epoch time) and the groups left empty without
        offsets (the "offsets-retention" timed write's step)."""
        self._runtime.write_all(self._cleanup)

    # ---- membership -----------------------------------------------------------------

    async def join(self, request: JoinRequest) -> JoinResponse:
        """JoinGroup: the answer, once the rebalance completes if it must wait."""
        partition, shard = self._shard_of(request.group_id)
        result = shard.classic.join(request, now_ms=self._clock.monotonic_ms())
        future = self._park(self._joins, request.group_id, result)
        response = self._apply(partition, result)
        if future is None:
            assert response is not None
            return response
        parked: JoinResponse = await future
        return parked

    async def sync(self, request: SyncRequest) -> SyncResponse:
        """SyncGroup: the member's assignment, once the leader's arrived."""
        partition, shard = self._shard_of(request.group_id)
        result = shard.classic.sync(request, now_ms=self._clock.monotonic_ms())
        future = self._park(self._syncs, request.group_id, result)
        response = self._apply(partition, result)
        if future is None:
            assert response is not None
            return response
        parked: SyncResponse = await future
        return parked

    def heartbeat(
        self, *, group_id: str, member_id: str, generation_id: int, group_instance_id: str | None
    ) -> ErrorCode | None:
        return self._shard_of(group_id)[1].classic.heartbeat(
            group_id=group_id,
            member_id=member_id,
            generation_id=generation_id,
            group_instance_id=group_instance_id,
            now_ms=self._clock.monotonic_ms(),
        )

    def leave(self, *, group_id: str, members: Sequence[LeavingMember]) -> LeaveResponse:
        partition, shard = self._shard_of(group_id)
        result = shard.classic.leave(
            group_id=group_id, members=members, now_ms=self._clock.monotonic_ms()
        )
        response: LeaveResponse = self._apply(partition, result)
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
        partition, shard = self._shard_of(group_id)
        result = shard.classic.commit_offsets(
            group_id=group_id,
            member_id=member_id,
            generation_id=generation_id,
            group_instance_id=group_instance_id,
            offsets=offsets,
            api_version=api_version,
            now_ms=self._clock.wall_ms(),
        )
        return self._runtime.write(partition, decided(result)).response

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
        partition, shard = self._shard_of(group_id)
        result = shard.classic.txn_commit_offsets(
            group_id=group_id,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            member_id=member_id,
            generation_id=generation_id,
            group_instance_id=group_instance_id,
            offsets=offsets,
            now_ms=self._clock.wall_ms(),
        )
        return self._runtime.write(partition, decided(result)).response

    def fetch_offsets(
        self,
        *,
        group_id: str,
        partitions: Sequence[tuple[str, int]] | None,
        require_stable: bool = False,
    ) -> tuple[ErrorCode | None, tuple[FetchedOffset, ...]]:
        return self._shard_of(group_id)[1].classic.fetch_offsets(
            group_id=group_id, partitions=partitions, require_stable=require_stable
        )

    def delete_offsets(
        self, *, group_id: str, partitions: Sequence[tuple[str, int]]
    ) -> tuple[ErrorCode | None, tuple[PartitionError, ...]]:
        partition, shard = self._shard_of(group_id)
        error, result = shard.classic.delete_offsets(group_id=group_id, partitions=partitions)
        if error is not None:
            return error, ()
        return None, self._runtime.write(partition, decided(result)).response

    # ---- plumbing ---------------------------------------------------------------------

    def _shard_of(self, group_id: str) -> tuple[int, GroupCoordinatorShard]:
        partition = self._runtime.partition_of(group_id)
        return partition, self._runtime.shard_at(partition)

    def _park(
        self, waiters: dict[_Key, list[Any]], group_id: str, result: GroupResult[Any]
    ) -> asyncio.Future[Any] | None:
        member_id = parked_member(result)
        if member_id is None:
            return None
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        waiters.setdefault((group_id, member_id), []).append(future)
        return future

    def _apply(self, partition: int, result: GroupResult[R]) -> R:
        """Write `result` (its `Completion` effects answer parked requests through
        the runtime's effect handler), answer what replay abandoned, re-arm."""
        response = self._runtime.write(partition, decided(result)).response
        self.answer_abandoned(partition)
        self._rearm()
        return response

    def answer_abandoned(self, partition: int) -> None:
        """Answer the parked requests of the classic groups of `partition`'s shard
        that replay removed or restarted (an upgrade to a consumer group, a
        downgrade's rebalance): REBALANCE_IN_PROGRESS, so the members rejoin."""
        abandoned = self._runtime.shard_at(partition).classic.groups.take_abandoned()
        for completion in abandoned:
            self.complete(completion)
        if abandoned:
            log.info("classic groups: %d parked requests answered after conversion", len(abandoned))

    def complete(self, completion: Completion) -> None:
        """Answer a parked JoinGroup or SyncGroup (a `Completion` effect)."""
        key = (completion.group_id, completion.member_id)
        if completion.join is not None:
            for future in self._joins.pop(key, []):
                if not future.done():
                    future.set_result(completion.join)
        if completion.sync is not None:
            for sync_future in self._syncs.pop(key, []):
                if not sync_future.done():
                    sync_future.set_result(completion.sync)
