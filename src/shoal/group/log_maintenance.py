"""The `__consumer_offsets` maintenance pass as a timed write of the group runtime.

Owns what one pass writes: on each partition in turn, the shard's
`rewrite_old_records` (group/log_bound.py), at most `records_per_pass_max` records
over all partitions together (whole groups; a partition whose turn comes after the
budget is spent re-writes nothing). `maintenance_write` is that pass as the runtime's
`TimedWrite` (coordinator/runtime.py): every `interval_ms()`, or at once when the
host calls `runtime.due_now(MAINTENANCE)`; its records go in appends of
`limits.COORDINATOR_REWRITE_RECORDS_PER_APPEND` (a batch the sink finds too large is
halved), and then the runtime reports each partition's prune offset (`then_prune`),
below which the host deletes the log. A sink error leaves the old records in place
and prunes nothing past them, so a crash or a failed write at any point loses no
key. Sans-I/O; no clock.
"""

from __future__ import annotations

from collections.abc import Callable

from shoal import limits
from shoal.coordinator.result import CoordinatorResult
from shoal.coordinator.runtime import CoordinatorRuntime, TimedWrite
from shoal.group.records import CoordinatorRecord
from shoal.group.results import GroupResult
from shoal.group.shard import GroupCoordinatorShard

GroupRuntime = CoordinatorRuntime[GroupCoordinatorShard, CoordinatorRecord]

MAINTENANCE = "group-log-maintenance"
"""The maintenance pass's timed write on the group runtime."""


class MaintenancePass:
    """A pass's shared budget and what the last pass re-wrote (module docstring)."""

    def __init__(self, *, window_records: Callable[[], int], records_per_pass_max: int) -> None:
        assert records_per_pass_max >= 1, records_per_pass_max
        self._window_records = window_records
        self._records_max = records_per_pass_max
        self.rewritten = 0
        """Records the pass in progress (or the last one) chose to re-write."""

    def start(self, _now_ms: int) -> None:
        self.rewritten = 0

    def rewrite(self, shard: GroupCoordinatorShard, _now_ms: int) -> GroupResult[int]:
        budget = self._records_max - self.rewritten
        if budget <= 0:  # this pass's re-write budget is spent: prune only
            return CoordinatorResult(records=(), response=0)
        result = shard.rewrite_old_records(
            window_records=self._window_records(), records_max=budget
        )
        self.rewritten += len(result.records)
        return result


def maintenance_write(
    maintenance: MaintenancePass, *, interval_ms: Callable[[], int]
) -> TimedWrite[GroupCoordinatorShard]:
    """The pass as the group runtime's timed write (module docstring)."""
    return TimedWrite(
        MAINTENANCE,
        operation=maintenance.rewrite,
        interval_ms=interval_ms,
        then_prune=True,
        records_per_append=limits.COORDINATOR_REWRITE_RECORDS_PER_APPEND,
        start=maintenance.start,
    )
