"""Bounding a coordinator's log: what a reload still needs, and deleting the rest.

Shoal's internal topics are not compacted (coordinator/internal_topics.py): a
coordinator prunes its own log. The rule both coordinators follow:

- A reload replays a partition from its log start offset. Each live key needs some
  record of its own to be replayed: its latest record (group coordinator: every
  record is a full upsert of its key) or its latest snapshot (share coordinator: the
  updates after a snapshot need it). A key whose latest record is a tombstone needs
  nothing. So the log below `lowest_needed_offset` (the lowest needed offset over
  live keys, or the end of the log when none is live) is garbage, and
  `prune_log` deletes it through the log's delete-records mechanism (the log start
  offset moves; whole segments below it are set aside and removed by the caller's
  `remove_paths`, the broker's disk worker threads).
- A key written once and never again (an offset committed long ago) would pin the
  log for ever, so each coordinator re-appends such a key's current value (replay is
  an upsert: state is unchanged), after which the old record is garbage too. The
  group coordinator keeps `LiveKeys` per partition (`stale` names the keys more than
  a window plus the live key count below the end; group/log_bound.py re-appends
  their latest records); the share coordinator keeps each key's snapshot offset in its own state
  and writes cold snapshots (share_coordinator/shard.py). Both prune with
  `lowest_needed_offset` and `prune_log`.

Invariant: pruning at `lowest_needed_offset` never removes a record a live key's
replay starts from, so a shard reloaded from the pruned log equals the live one.

`LiveKeys` is sans-I/O bookkeeping (no clock, no I/O); `prune_log` is the one step
that touches a `PartitionLog`, called by the shells with the offsets the coordinator
runtime reports (server/services/coordinator_host.py, server/services/group_persistence.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Generic, TypeVar

from shoal.coordinator.sink import NO_OFFSET
from shoal.log.partition import PartitionLog

K = TypeVar("K")
R = TypeVar("R")

RemovePaths = Callable[[list[Path]], object]
"""Removes files set aside by a deferred deletion (`fileio.remove_paths`, or the
broker's `DiskIO.remove`, which does it in a worker thread)."""


def lowest_needed_offset(needed: Iterable[int], *, end_offset: int) -> int | None:
    """The log offset below which nothing is needed to rebuild a shard: the lowest of
    the live keys' `needed` offsets, `end_offset` when there are none, or None if
    that is unknown (a needed offset is `NO_OFFSET`, or nothing was replayed)."""
    lowest: int | None = None
    for offset in needed:
        if offset == NO_OFFSET:
            return None
        lowest = offset if lowest is None else min(lowest, offset)
    if lowest is not None:
        return lowest
    return end_offset if end_offset > 0 else None


class LiveKeys(Generic[K, R]):
    """One log partition's live keys: for each, the offset of its latest record and
    that record (to re-append it); plus the partition's end offset as replayed."""

    def __init__(self) -> None:
        self._latest: dict[K, tuple[int, R]] = {}
        self._end_offset = 0

    def replayed(self, key: K, record: R, offset: int, *, tombstone: bool) -> None:
        """Note a replayed record at `offset` (`NO_OFFSET` if the sink gave none)."""
        if offset != NO_OFFSET:
            assert offset >= 0, offset
            self._end_offset = max(self._end_offset, offset + 1)
        if tombstone:
            self._latest.pop(key, None)
        else:
            self._latest[key] = (offset, record)

    @property
    def end_offset(self) -> int:
        """One past the highest offset replayed (0 if none)."""
        return self._end_offset

    def __len__(self) -> int:
        return len(self._latest)

    def prune_offset(self) -> int | None:
        """`lowest_needed_offset` of this partition's live keys."""
        return lowest_needed_offset(
            (offset for offset, _ in self._latest.values()), end_offset=self._end_offset
        )

    def stale(self, *, window_records: int) -> list[tuple[int, K, R]]:
        """(offset, key, latest record) of every live key whose latest record lies
        more than `window_records` plus the number of live keys below the end
        offset, in offset order. Counting the live keys in makes re-writing
        converge: right after every live key was re-written, their copies span at
        most that many records, so none is stale again until a window has passed."""
        assert window_records >= 0, window_records
        below = self._end_offset - window_records - len(self._latest)
        return sorted(
            (
                (offset, key, record)
                for key, (offset, record) in self._latest.items()
                if offset != NO_OFFSET and offset < below
            ),
            key=lambda entry: entry[0],
        )

    def latest(self, where: Callable[[K, int], bool] | None = None) -> list[tuple[int, K, R]]:
        """(offset, key, latest record) of every live key (for which `where(key,
        offset)` holds, if given), in offset order."""
        return sorted(
            (
                (offset, key, record)
                for key, (offset, record) in self._latest.items()
                if where is None or where(key, offset)
            ),
            key=lambda entry: entry[0],
        )


def prune_log(log: PartitionLog, offset: int, *, remove_paths: RemovePaths) -> bool:
    """Delete `log`'s records below `offset` (clamped to its end); True if its log
    start offset moved. The log is fsynced first: the records that take the place of
    the deleted ones (the re-written keys, newer snapshots) must be on disk before the
    new log start is, or a power loss under the page cache's durability could keep the
    deletion and lose them, leaving keys with no record at all. A failed fsync raises
    (`LogError`) and nothing is deleted."""
    target = min(offset, log.log_end_offset)
    if target <= log.log_start_offset:
        return False
    log.flush()
    log.delete_records_before(target, defer_delete=True)
    remove_paths(log.take_deleted_paths())
    return True
