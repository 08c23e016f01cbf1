"""One maintenance pass over `__consumer_offsets`: re-write old keys, then prune.

Owns the steps of a pass, shared by the broker's `GroupLogMaintenance` (server/
group_persistence.py, which decides when a pass runs) and the deterministic
simulation (sim/), which runs passes at seeded points between crashes:

1. the shard's `rewrite_old_records` (group/log_bound.py) chooses the records to
   re-append; they are written through the runtime in appends of
   `limits.COORDINATOR_REWRITE_RECORDS_PER_APPEND` (a batch the sink finds too large
   is halved; one record is never too large unless limits shrank);
2. each partition is deleted below the shard's `prune_offsets` with the shared
   `prune_log` step.

A sink error in step 1 propagates before anything is pruned: the old records stay, so
a crash or a failed write at any point loses no key. Sans-I/O apart from the log it
is handed; no clock.
"""

from __future__ import annotations

from collections.abc import Sequence

from shoal import limits
from shoal.coordinator.log_sink import CoordinatorBatchTooLarge
from shoal.coordinator.pruning import RemovePaths, prune_log
from shoal.coordinator.result import CoordinatorResult
from shoal.coordinator.runtime import CoordinatorRuntime
from shoal.group.coordinator import GroupCoordinatorShard
from shoal.group.records import CoordinatorRecord
from shoal.log.partition import PartitionLog

GroupRuntime = CoordinatorRuntime[GroupCoordinatorShard, CoordinatorRecord]


def maintenance_pass(
    runtime: GroupRuntime,
    partitions: Sequence[PartitionLog],
    *,
    window_records: int,
    records_max: int,
    remove_paths: RemovePaths,
    partition: int = 0,
) -> tuple[int, int]:
    """Re-write old keys of the shard on the runtime's `partition` (at most about
    `records_max`, whole groups; none if 0), then prune `partitions`, the logs the
    shard's records span (the broker's shard: its one partition). Returns (records
    re-written, partitions whose log start moved). A sink error propagates (nothing
    pruned)."""
    shard = runtime.shard_at(partition)
    records: tuple[CoordinatorRecord, ...] = ()
    if records_max > 0:  # 0: this pass's re-write budget is spent; prune only
        records = shard.rewrite_old_records(
            window_records=window_records, records_max=records_max
        ).records
    step = limits.COORDINATOR_REWRITE_RECORDS_PER_APPEND
    for start in range(0, len(records), step):
        _append(runtime, partition, records[start : start + step])
    offset = shard.prune_offset()
    moved = 0
    if (
        offset is not None
        and partitions
        and prune_log(partitions[0], offset, remove_paths=remove_paths)
    ):
        moved = 1
    return len(records), moved


def _append(runtime: GroupRuntime, partition: int, records: Sequence[CoordinatorRecord]) -> None:
    try:
        runtime.write(
            partition, lambda _shard: CoordinatorResult(records=tuple(records), response=None)
        )
    except CoordinatorBatchTooLarge:
        if len(records) == 1:
            raise  # written once as one record: cannot happen unless limits shrank
        half = len(records) // 2
        _append(runtime, partition, records[:half])
        _append(runtime, partition, records[half:])
