"""Keeping `__consumer_offsets` bounded: the group shard's live keys per partition.

The group coordinator's records are full upserts of their key (a group's epoch, a
member, a target or current assignment, a committed offset, a classic group's
metadata ...), and a tombstone removes a key. So a reload needs, for every live key,
only its latest record; the log below the lowest such offset is garbage
(coordinator/pruning.py). `GroupLogKeys` keeps that bookkeeping for every partition
of `__consumer_offsets` the shard's records span (one in the broker, a shard per
partition; several in the simulator's one shard over a routed sink), fed by the
shard's `replay` with each record's offset in its partition
(`partition_for(group_id, partitions)`).

Re-writing. A key written once and never again would pin its partition's log for
ever, so `rewrite_records` returns records to re-append: for each group that has a
live key more than `window_records` plus the partition's live key count below its
end (`LiveKeys.stale`: so re-writing converges), the group's live records from the
oldest such key onward, in their log order. Re-appending the suffix
(not only the old key) keeps the relative order of the group's latest records, so the
log's latest-record-per-key view, which is what a reload rebuilds, is the same as
before, and replaying the re-appended records leaves the state unchanged (each is an
upsert of the value the key already has). Whole groups only, until `records_max`
records are chosen (at least one group per pass): the rest waits for the next pass.

Bound: after a pass and a prune, a partition holds at most `window_records` + twice
its live keys + what was appended since. Memory: one record per live key, which is
what the state holds anyway. Sans-I/O; no clock (the shell decides when to call).
"""

from __future__ import annotations

from shoal.coordinator.placement import partition_for
from shoal.coordinator.pruning import LiveKeys
from shoal.group import records as r


class GroupLogKeys:
    """Live keys of every `__consumer_offsets` partition. See the module docstring."""

    def __init__(self, *, partitions: int) -> None:
        assert partitions >= 1, partitions
        self._partitions = partitions
        self._live: list[LiveKeys[r.RecordKey, r.CoordinatorRecord]] = [
            LiveKeys() for _ in range(partitions)
        ]

    @property
    def partitions(self) -> int:
        return self._partitions

    def partition_of(self, group_id: str) -> int:
        if self._partitions == 1:  # a shard per partition (the broker's): no hashing
            return 0
        return partition_for(group_id, self._partitions)

    def replayed(self, record: r.CoordinatorRecord, offset: int) -> None:
        """Note a record replayed at `offset` of its group's partition."""
        live = self._live[self.partition_of(record.key.group_id)]
        live.replayed(record.key, record, offset, tombstone=record.value is None)

    def live_keys(self, partition: int) -> int:
        return len(self._live[partition])

    def end_offset(self, partition: int) -> int:
        return self._live[partition].end_offset

    def prune_offsets(self) -> dict[int, int]:
        """Partition -> the offset below which its log is not needed (partitions
        whose offset is unknown are left out)."""
        offsets = {}
        for partition, live in enumerate(self._live):
            offset = live.prune_offset()
            if offset is not None:
                offsets[partition] = offset
        return offsets

    def rewrite_records(
        self, *, window_records: int, records_max: int
    ) -> tuple[r.CoordinatorRecord, ...]:
        """The records to re-append so no live key lies more than `window_records`
        below its partition's end (module docstring), partitions in order."""
        assert records_max >= 1, records_max
        chosen: list[r.CoordinatorRecord] = []
        for live in self._live:
            for suffix in _stale_group_suffixes(live, window_records=window_records):
                chosen.extend(suffix)
                if len(chosen) >= records_max:
                    return tuple(chosen)
        return tuple(chosen)


def _stale_group_suffixes(
    live: LiveKeys[r.RecordKey, r.CoordinatorRecord], *, window_records: int
) -> list[list[r.CoordinatorRecord]]:
    """For each group with a key more than `window_records` below the end: its live
    records from that oldest key onward, in log order; oldest group first."""
    oldest: dict[str, int] = {}
    for offset, key, _record in live.stale(window_records=window_records):
        oldest.setdefault(key.group_id, offset)
    if not oldest:
        return []

    def in_suffix(key: r.RecordKey, offset: int) -> bool:
        since = oldest.get(key.group_id)
        return since is not None and offset >= since

    suffixes: dict[str, list[r.CoordinatorRecord]] = {}
    for _offset, key, record in live.latest(in_suffix):
        suffixes.setdefault(key.group_id, []).append(record)
    return [suffixes[group_id] for group_id in sorted(suffixes, key=oldest.__getitem__)]
