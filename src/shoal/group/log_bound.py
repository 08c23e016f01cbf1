"""Keeping `__consumer_offsets` bounded: the group shard's live keys.

The group coordinator's records are full upserts of their key (a group's epoch, a
member, a target or current assignment, a committed offset, a classic group's
metadata ...), and a tombstone removes a key. So a reload needs, for every live key,
only its latest record; the log below the lowest such offset is garbage
(coordinator/pruning.py). `GroupLogKeys` keeps that bookkeeping for the shard's one
`__consumer_offsets` partition (a shard per partition), fed by the shard's `replay`
with each record's offset in the partition.

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

from shoal.coordinator.pruning import LiveKeys
from shoal.group import records as r


class GroupLogKeys:
    """Live keys of the shard's `__consumer_offsets` partition. See the module
    docstring."""

    def __init__(self) -> None:
        self._live: LiveKeys[r.RecordKey, r.CoordinatorRecord] = LiveKeys()

    def replayed(self, record: r.CoordinatorRecord, offset: int) -> None:
        """Note a record replayed at `offset` of the partition."""
        self._live.replayed(record.key, record, offset, tombstone=record.value is None)

    def live_keys(self) -> int:
        return len(self._live)

    def end_offset(self) -> int:
        return self._live.end_offset

    def prune_offset(self) -> int | None:
        """The offset below which the partition's log is not needed (None: unknown)."""
        return self._live.prune_offset()

    def rewrite_records(
        self, *, window_records: int, records_max: int
    ) -> tuple[r.CoordinatorRecord, ...]:
        """The records to re-append so no live key lies more than `window_records`
        below the partition's end (module docstring)."""
        assert records_max >= 1, records_max
        chosen: list[r.CoordinatorRecord] = []
        for suffix in _stale_group_suffixes(self._live, window_records=window_records):
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
