"""`DrivenManager`: a synchronous shell around the pure `SharePartitionManager`, for
the simulator, the core's unit tests and the in-process benches. It performs the
manager's effects through a `Persister` as the broker's shell
(server/services/share_service.py) does: loads before an operation (`to_load`, the
persister's read, `load`, a `StateCut` made durable with `persist_cut`), the state
write of an acknowledgement or a release made and handed back (`acknowledge_written`,
`write_done`), standing writes made and reported (`standing_written`), unload writes
(`unload_written`). Each operation answers what it amounts to once its writes are
made; the group's settings come from `settings_for`, resolved at each operation."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from shoal.clock import Clock
from shoal.protocol.errors import ErrorCode
from shoal.protocol.share import AcquireMode
from shoal.share.acknowledge import AckBatch
from shoal.share.leader_settings import SharePartitionConfig
from shoal.share.log_read import ShareLog, bytes_between, perform_read, reset_offset
from shoal.share.manager import (
    LEADER_EPOCH,
    NO_EFFECTS,
    Acknowledged,
    AcquireRound,
    Effects,
    LocksExpired,
    ShareFetched,
    SharePartitionManager,
    StateCut,
)
from shoal.share.partition import SharePartition
from shoal.share.persister import (
    Persister,
    ReadResult,
    SharePartitionKey,
    partition_error,
    persist_cut,
)
from shoal.share.sessions import TopicIdPartition


class DrivenManager:
    """A `SharePartitionManager` over `logs`, driven over `_persister` (a test may
    swap it); the logs are read here (`perform_read`, `bytes_between`,
    `reset_offset`). Unknown attributes are
    the manager's (`get`, `keys`, `next_lock_deadline`, ...)."""

    def __init__(
        self,
        *,
        clock: Clock,
        logs: Callable[[uuid.UUID, int], ShareLog | ErrorCode],
        persister: Persister,
        settings_for: Callable[[str], SharePartitionConfig],
    ) -> None:
        self.manager = SharePartitionManager(clock=clock, logs=logs)
        self.clock = clock
        self.logs = logs
        self._persister = persister
        self.settings_for = settings_for

    def __getattr__(self, name: str) -> Any:
        return getattr(self.manager, name)

    def __len__(self) -> int:
        return len(self.manager)

    def get(self, key: SharePartitionKey) -> SharePartition | None:
        return self.manager.get(key)

    # ---- loading

    def load(self, key: SharePartitionKey) -> SharePartition | ErrorCode:
        loaded = self.manager.get(key)
        if loaded is not None:
            answer = self.manager.load(key, ReadResult(None), settings=loaded.settings)
            assert answer is loaded  # touched, never read again
            return loaded
        settings = self.settings_for(key.group_id)
        read = self._persister.read(key=key, leader_epoch=LEADER_EPOCH)
        reset = None
        if read.state is not None and read.state.start_offset < 0:
            partition_log = self.logs(key.topic_id, key.partition)
            if not isinstance(partition_log, ErrorCode):
                reset = reset_offset(settings.auto_offset_reset, partition_log, clock=self.clock)
        answer = self.manager.load(key, read, settings=settings, reset_offset=reset)
        if not isinstance(answer, StateCut):
            return answer
        error = persist_cut(
            self._persister, key, answer.persisted, answer.cut, leader_epoch=LEADER_EPOCH
        )
        if error is not None:
            return partition_error(error)
        again = self.manager.load(key, ReadResult(None, answer.cut), settings=settings)
        assert not isinstance(again, StateCut)
        return again

    def load_missing(
        self, group_id: str, partitions: Iterable[TopicIdPartition]
    ) -> dict[TopicIdPartition, ErrorCode]:
        errors = {}
        for key in self.manager.to_load(group_id, partitions):
            loaded = self.load(key)
            if isinstance(loaded, ErrorCode):
                errors[TopicIdPartition(key.topic_id, key.partition)] = loaded
        return errors

    # ---- effects

    def perform(self, effects: Effects) -> Effects:
        """Make the standing writes of `effects`; returns it."""
        for write in effects.writes:
            self.manager.standing_written(write, self._persister.write(write=write))
        return effects

    # ---- operations

    def acquire(
        self,
        *,
        group_id: str,
        member_id: str,
        partitions: Sequence[TopicIdPartition],
        max_records: int,
        batch_size: int,
        max_bytes: int,
        acquire_mode: AcquireMode = AcquireMode.BATCH_OPTIMIZED,
        rotation: int = 0,
        settings: SharePartitionConfig | None = None,
    ) -> ShareFetched:
        if settings is None:
            settings = self.settings_for(group_id)
        errors = self.load_missing(group_id, partitions)
        round_ = self.manager.acquire(
            group_id=group_id,
            member_id=member_id,
            partitions=partitions,
            max_records=max_records,
            batch_size=batch_size,
            max_bytes=max_bytes,
            settings=settings,
            acquire_mode=acquire_mode,
            rotation=rotation,
            load_errors=errors,
        )
        return self.run(round_)

    def run(self, round_: AcquireRound) -> ShareFetched:
        """Perform the reads of `round_` and its effects; its answer."""
        read = round_.next_read()
        while read is not None:
            partition_log = self.logs(read.partition.topic_id, read.partition.partition)
            assert not isinstance(partition_log, ErrorCode)
            round_.feed(perform_read(partition_log, read))
            read = round_.next_read()
        fetched = round_.done()
        self.perform(fetched.effects)
        return fetched

    def available_bytes(
        self, *, group_id: str, partitions: Iterable[TopicIdPartition], cap: int
    ) -> int:
        partitions = list(partitions)
        self.load_missing(group_id, partitions)
        available = self.manager.available_bytes(
            group_id=group_id, partitions=partitions, cap=cap, settings=self.settings_for(group_id)
        )
        if isinstance(available, int):
            return available
        ranges = []
        for tp, offset, limit in available:
            partition_log = self.logs(tp.topic_id, tp.partition)
            assert not isinstance(partition_log, ErrorCode)
            ranges.append((partition_log, offset, limit))
        return bytes_between(ranges, cap=cap)

    def acknowledge(
        self,
        *,
        group_id: str,
        member_id: str,
        partition: TopicIdPartition,
        batches: Sequence[AckBatch],
        renew_allowed: bool = False,
    ) -> Acknowledged:
        settings = self.settings_for(group_id)

        def once() -> Acknowledged:
            return self.manager.acknowledge(
                group_id=group_id,
                member_id=member_id,
                partition=partition,
                batches=batches,
                settings=settings,
                renew_allowed=renew_allowed,
            )

        acknowledged = once()
        if acknowledged.load is not None:
            loaded = self.load(acknowledged.load)
            if isinstance(loaded, ErrorCode):
                return Acknowledged(loaded)
            acknowledged = once()
        if acknowledged.pending is not None:
            error = self._persister.write(write=acknowledged.pending.pending.write)
            acknowledged = self.manager.acknowledge_written(acknowledged.pending, error)
        self.perform(acknowledged.effects)
        return acknowledged

    def release(
        self, *, group_id: str, member_id: str, partitions: Iterable[TopicIdPartition]
    ) -> Effects:
        effects = NO_EFFECTS
        for pending in self.manager.release(
            group_id=group_id,
            member_id=member_id,
            partitions=partitions,
            settings=self.settings_for(group_id),
        ):
            _error, done = self.manager.write_done(
                pending, self._persister.write(write=pending.write)
            )
            effects |= self.perform(done)
        return effects

    def expire_locks(self, *, now_ms: int) -> LocksExpired:
        due = self.manager.groups_due(now_ms=now_ms)
        expired = self.manager.expire_locks(
            now_ms=now_ms, settings={group: self.settings_for(group) for group in due}
        )
        self.perform(expired.effects)
        return expired

    def on_log_start_offset(
        self, *, topic_id: uuid.UUID, partition: int, log_start_offset: int
    ) -> Effects:
        groups = self.manager.groups_of(topic_id=topic_id, partition=partition)
        return self.perform(
            self.manager.on_log_start_offset(
                topic_id=topic_id,
                partition=partition,
                log_start_offset=log_start_offset,
                settings={group: self.settings_for(group) for group in groups},
            )
        )

    def dlq_done(self, key: SharePartitionKey, *, first_offset: int, last_offset: int) -> Effects:
        return self.perform(
            self.manager.dlq_done(
                key,
                first_offset=first_offset,
                last_offset=last_offset,
                settings=self.settings_for(key.group_id),
            )
        )

    def drop_group(self, group_id: str) -> list[SharePartitionKey]:
        unloading = self.manager.drop_group(group_id)
        for write in unloading.writes:
            self.manager.unload_written(write, self._persister.write(write=write))
        return unloading.keys

    def unload_idle(self, *, now_ms: int, idle_ms: int) -> list[SharePartitionKey]:
        unloading = self.manager.unload_idle(now_ms=now_ms, idle_ms=idle_ms)
        for write in unloading.writes:
            self.manager.unload_written(write, self._persister.write(write=write))
        return unloading.keys
