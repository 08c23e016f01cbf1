"""`ShareCoordinatorShard`: the durable state of the share-partitions placed on one
partition of `__share_group_state` (Kafka's ShareCoordinatorShard).

Theory of operation. The shard is event-sourced. Each operation (`initialize`,
`read`, `write`, `delete`, `read_summary`, `cold_snapshots`) validates, decides, and
returns a `CoordinatorResult` of records to write plus the response, changing nothing;
`replay(record, offset)` is the only mutator, run by the coordinator runtime after
the records are in the log, and by a reload over the log. Semantics
(docs/design/coordinators.md §2.3-2.5):

- initialize: state epoch below the stored one -> FENCED_STATE_EPOCH; same state
  epoch and start offset -> success, no record; else a ShareSnapshot replacing all
  state (SnapshotEpoch 0, or the stored one + 1; the stored leader epoch is kept).
- read: uninitialised -> INVALID_REQUEST; leader epoch below the stored one ->
  FENCED_LEADER_EPOCH; above it -> a ShareUpdate carrying only the new LeaderEpoch
  (StartOffset -1, DeliveryCompleteCount -1, no batches), as Kafka's
  readStateAndMaybeUpdateLeaderEpoch writes.
- write: uninitialised -> INVALID_REQUEST; stale leader epoch -> FENCED_LEADER_EPOCH;
  stale state epoch -> FENCED_STATE_EPOCH. The start offset never moves back (an
  incoming one below the stored one, or -1, keeps it, and its DeliveryCompleteCount
  is ignored). Writes never change the epochs (Kafka 4.2: only initialize sets the
  state epoch, only read raises the leader epoch). Once a key has had
  `records_per_snapshot` updates since its snapshot the write is a ShareSnapshot of
  the whole merged state (SnapshotEpoch + 1), otherwise a ShareUpdate of the incoming
  batches merged among themselves (StartOffset / DeliveryCompleteCount -1 when not
  moving). Replaying a snapshot resets the count; each update adds one.
- delete: one tombstone on the ShareSnapshot key (Kafka writes the same single
  tombstone); the key reads as uninitialised afterwards. Unknown key: no record.
- read_summary: never writes; unknown key -> start offset -1, DeliveryCompleteCount
  -1, epochs 0, no error.
- negative partition or epochs, a start offset below -1, a null topic id, a delivery
  count that does not fit an int16 -> INVALID_REQUEST.

Timestamps (CreateTimestamp, WriteTimestamp) come from the injected clock's wall
time and are data only: nothing decides on them but `cold_snapshots`, which is handed
`now_ms`.

Pruning. The log below `prune_offset()` is not needed to rebuild this shard: a live
key needs its latest snapshot and the updates after it, so the answer is the lowest
latest-snapshot offset over live keys (a key whose latest record is an update still
needs that snapshot; a key deleted by a tombstone needs nothing). With no live key
everything up to the end of the log may go. Records of deleted keys left above the
prune offset are harmless on reload: an update of an unknown key builds a partial
state that the key's tombstone, further on, removes.

Memory: per key only its merged state (`KeyState`), never the record history.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TypeVar

from shoal.clock import Clock
from shoal.coordinator.pruning import lowest_needed_offset
from shoal.coordinator.result import CoordinatorResult
from shoal.coordinator.sink import NO_OFFSET
from shoal.protocol.errors import ErrorCode
from shoal.share_coordinator.records import (
    ShareCoordinatorRecord,
    ShareSnapshotValue,
    ShareUpdateKey,
    ShareUpdateValue,
    snapshot_record,
    state_batches_of,
    tombstone,
    update_record,
)
from shoal.share_coordinator.state import (
    UNINITIALIZED_START_OFFSET,
    UNKNOWN_DELIVERY_COMPLETE_COUNT,
    PersistedState,
    ReadResult,
    SharePartitionKey,
    StateBatch,
    StateSummary,
    StateWrite,
    merge_into_state,
    merge_state_batches,
)

log = logging.getLogger(__name__)

NO_LEADER_EPOCH = -1
"""The leader epoch of a key no leader has read yet."""
UNKNOWN_TIMESTAMP = -1
"""Timestamps of a key rebuilt from an update alone (its snapshot was pruned)."""
_DELIVERY_COUNT_MAX = 2**15 - 1

ResponseT = TypeVar("ResponseT")


ShareResult = CoordinatorResult[ShareCoordinatorRecord, ResponseT]
"""What a share coordinator operation returns (the one result type, with no effects)."""


@dataclass(slots=True, kw_only=True)
class KeyState:
    """What the shard holds for one share-partition: its merged state, plus where and
    when its latest snapshot was written and how many updates followed it.

    Never changed once built: each replay puts a new one in place (readers may keep
    one). Not frozen only for speed: a frozen dataclass sets each of these eleven
    fields through `object.__setattr__`, three to four times the cost of this
    constructor, and one is built per state write."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    state_batches: tuple[StateBatch, ...]
    create_timestamp_ms: int
    write_timestamp_ms: int
    updates_since_snapshot: int
    snapshot_offset: int
    """Log offset of the latest snapshot (of the first record seen, if the key was
    rebuilt from updates alone); `NO_OFFSET` if the sink gave none."""
    update_key: ShareUpdateKey | None = field(default=None, compare=False, repr=False)
    """The key entity of the last ShareUpdate replayed for this key (None before the
    first): the next update is written with this same entity, whose bytes the codec
    finds by identity. Not state: equal states may differ in it."""


class ShareCoordinatorShard:
    """One `__share_group_state` partition's share-partition states. See the module
    docstring."""

    def __init__(
        self, *, clock: Clock, records_per_snapshot: int, cold_partition_snapshot_interval_ms: int
    ) -> None:
        assert records_per_snapshot >= 0, records_per_snapshot
        assert cold_partition_snapshot_interval_ms >= 1, cold_partition_snapshot_interval_ms
        self._clock = clock
        self._records_per_snapshot = records_per_snapshot
        self._cold_interval_ms = cold_partition_snapshot_interval_ms
        self._states: dict[SharePartitionKey, KeyState] = {}
        self._end_offset = 0
        self._replays = 0
        """Records replayed so far (`_written` says when its state was looked up)."""
        self._written: _Written | None = None
        """The last record `write` built, its key, its batches, the key's state `write`
        found and `_replays` then: `replay` of that very record object takes the key
        and batches from here instead of deriving them from the record again, and the
        state too if nothing was replayed in between (the same values: a cache, not
        state)."""

    # ---- reads of the shard itself

    @property
    def states(self) -> Mapping[SharePartitionKey, KeyState]:
        """Every live key's state (read-only view)."""
        return MappingProxyType(self._states)

    @property
    def end_offset(self) -> int:
        """One past the highest log offset replayed (0 if none)."""
        return self._end_offset

    def partitions_with_state(self, *, group_id: str, topic_id: uuid.UUID) -> tuple[int, ...]:
        """The partitions of (group, topic) with state on this shard, ascending."""
        return tuple(
            sorted(
                key.partition
                for key in self._states
                if key.group_id == group_id and key.topic_id == topic_id
            )
        )

    def prune_offset(self) -> int | None:
        """The lowest log offset still needed to rebuild this shard, or None if that
        is unknown (a live key whose snapshot has no offset) or nothing was replayed.
        See the module docstring."""
        return lowest_needed_offset(
            (state.snapshot_offset for state in self._states.values()),
            end_offset=self._end_offset,
        )

    # ---- operations: records plus a response, no state change

    def initialize(
        self, *, key: SharePartitionKey, state_epoch: int, start_offset: int
    ) -> ShareResult[ErrorCode | None]:
        if _key_invalid(key) or state_epoch < 0 or start_offset < UNINITIALIZED_START_OFFSET:
            return CoordinatorResult((), ErrorCode.invalid_request)
        stored = self._states.get(key)
        if stored is not None:
            if state_epoch < stored.state_epoch:
                return CoordinatorResult((), ErrorCode.fenced_state_epoch)
            if state_epoch == stored.state_epoch and start_offset == stored.start_offset:
                return CoordinatorResult((), None)
        now_ms = self._clock.wall_ms()
        record = snapshot_record(
            key,
            snapshot_epoch=0 if stored is None else stored.snapshot_epoch + 1,
            state_epoch=state_epoch,
            leader_epoch=NO_LEADER_EPOCH if stored is None else stored.leader_epoch,
            start_offset=start_offset,
            delivery_complete_count=UNKNOWN_DELIVERY_COMPLETE_COUNT if start_offset < 0 else 0,
            state_batches=(),
            create_timestamp_ms=now_ms,
            write_timestamp_ms=now_ms,
        )
        return CoordinatorResult((record,), None)

    def read(self, *, key: SharePartitionKey, leader_epoch: int) -> ShareResult[ReadResult]:
        if _key_invalid(key) or leader_epoch < 0:
            return CoordinatorResult((), ReadResult(ErrorCode.invalid_request))
        stored = self._states.get(key)
        if stored is None:
            return CoordinatorResult((), ReadResult(ErrorCode.invalid_request))
        if leader_epoch < stored.leader_epoch:
            return CoordinatorResult((), ReadResult(ErrorCode.fenced_leader_epoch))
        records: tuple[ShareCoordinatorRecord, ...] = ()
        if leader_epoch > stored.leader_epoch:
            update = update_record(
                key,
                snapshot_epoch=stored.snapshot_epoch,
                leader_epoch=leader_epoch,
                start_offset=UNINITIALIZED_START_OFFSET,
                delivery_complete_count=UNKNOWN_DELIVERY_COMPLETE_COUNT,
                state_batches=(),
            )
            records = (update,)
        state = PersistedState(stored.state_epoch, stored.start_offset, stored.state_batches)
        return CoordinatorResult(records, ReadResult(None, state))

    def write(self, *, write: StateWrite) -> ShareResult[ErrorCode | None]:
        key = write.key
        if (
            key.partition < 0  # _key_invalid(key), inline: once per acknowledgement
            or key.topic_id.int == 0
            or write.state_epoch < 0
            or write.leader_epoch < 0
            or write.start_offset < UNINITIALIZED_START_OFFSET
        ):
            return CoordinatorResult((), ErrorCode.invalid_request)
        for batch in write.state_batches:
            if not 0 <= batch.delivery_count <= _DELIVERY_COUNT_MAX:
                return CoordinatorResult((), ErrorCode.invalid_request)
        stored = self._states.get(key)
        if stored is None:
            return CoordinatorResult((), ErrorCode.invalid_request)
        if write.leader_epoch < stored.leader_epoch:
            return CoordinatorResult((), ErrorCode.fenced_leader_epoch)
        if write.state_epoch < stored.state_epoch:
            return CoordinatorResult((), ErrorCode.fenced_state_epoch)
        moves = write.start_offset >= stored.start_offset
        start_offset = write.start_offset if moves else stored.start_offset
        count = write.delivery_complete_count if moves else UNKNOWN_DELIVERY_COMPLETE_COUNT
        batches: tuple[StateBatch, ...]
        if stored.updates_since_snapshot >= self._records_per_snapshot:
            now_ms = self._clock.wall_ms()
            batches = tuple(
                merge_into_state(
                    stored.state_batches, write.state_batches, start_offset=start_offset
                )
            )
            record = snapshot_record(
                key,
                snapshot_epoch=stored.snapshot_epoch + 1,
                state_epoch=stored.state_epoch,
                leader_epoch=stored.leader_epoch,
                start_offset=start_offset,
                delivery_complete_count=(
                    stored.delivery_complete_count
                    if count == UNKNOWN_DELIVERY_COMPLETE_COUNT
                    else count
                ),
                state_batches=batches,
                create_timestamp_ms=now_ms,
                write_timestamp_ms=now_ms,
            )
        else:
            incoming = write.state_batches
            if not incoming or (len(incoming) == 1 and incoming[0].last_offset < start_offset):
                batches = ()  # what the merge gives: nothing kept
            else:
                batches = tuple(merge_state_batches((), incoming, start_offset=start_offset))
            record = update_record(
                key,
                snapshot_epoch=stored.snapshot_epoch,
                leader_epoch=stored.leader_epoch,
                start_offset=write.start_offset if moves else UNINITIALIZED_START_OFFSET,
                delivery_complete_count=count,
                state_batches=batches,
                record_key=stored.update_key,
            )
        self._written = (record, key, batches, stored, self._replays)
        return CoordinatorResult((record,), None)

    def delete(self, *, key: SharePartitionKey) -> ShareResult[ErrorCode | None]:
        if _key_invalid(key):
            return CoordinatorResult((), ErrorCode.invalid_request)
        if key not in self._states:
            return CoordinatorResult((), None)
        return CoordinatorResult((tombstone(key),), None)

    def read_summary(
        self, *, key: SharePartitionKey, leader_epoch: int
    ) -> ShareResult[StateSummary]:
        """Never writes (no records); the leader epoch is not checked."""
        if _key_invalid(key):
            return CoordinatorResult((), StateSummary(ErrorCode.invalid_request))
        stored = self._states.get(key)
        if stored is None:
            return CoordinatorResult((), StateSummary(None))
        summary = StateSummary(
            None,
            state_epoch=stored.state_epoch,
            leader_epoch=stored.leader_epoch,
            start_offset=stored.start_offset,
            delivery_complete_count=stored.delivery_complete_count,
        )
        return CoordinatorResult((), summary)

    def cold_snapshots(self, now_ms: int) -> ShareResult[int]:
        """A snapshot of every key whose last snapshot was written at least
        `cold_partition_snapshot_interval_ms` before `now_ms` (wall-clock ms) and that
        either has had updates since, or lies more than `records_per_snapshot` records
        below the end of the log: an idle key's old snapshot would otherwise hold the
        prune offset down for ever while other keys keep writing (an idle partition
        writes nothing). The snapshot keeps CreateTimestamp and sets WriteTimestamp
        to `now_ms`. The response is the number of snapshots."""
        pinning = max(self._records_per_snapshot, 1)
        records = tuple(
            snapshot_record(
                key,
                snapshot_epoch=state.snapshot_epoch + 1,
                state_epoch=state.state_epoch,
                leader_epoch=state.leader_epoch,
                start_offset=state.start_offset,
                delivery_complete_count=state.delivery_complete_count,
                state_batches=state.state_batches,
                create_timestamp_ms=state.create_timestamp_ms,
                write_timestamp_ms=now_ms,
            )
            for key, state in sorted(self._states.items(), key=lambda item: _order(item[0]))
            if now_ms - state.write_timestamp_ms >= self._cold_interval_ms
            and (
                state.updates_since_snapshot > 0
                or (
                    state.snapshot_offset != NO_OFFSET
                    and self._end_offset - state.snapshot_offset > pinning
                )
            )
        )
        return CoordinatorResult(records, len(records))

    # ---- the only mutator

    def replay(self, record: ShareCoordinatorRecord, offset: int = NO_OFFSET, /) -> None:
        """Apply one record read from (or just appended to) the log at `offset`.
        The record `write` just built brings its key, batches and (if nothing was
        replayed since) the key's state along (`_written`): the values derived here
        from any other record equal to it."""
        if offset != NO_OFFSET:
            assert offset >= 0, offset
            if offset >= self._end_offset:
                self._end_offset = offset + 1
        replays = self._replays
        self._replays = replays + 1
        written = self._written
        batches: tuple[StateBatch, ...] | None
        previous: KeyState | None = None
        if written is not None and written[0] is record:
            _, key, batches, previous, looked_up_at = written
            found = looked_up_at == replays
        else:
            record_key = record.key
            key = SharePartitionKey(
                record_key.group_id, record_key.topic_id, int(record_key.partition)
            )
            batches = None
            found = False
        value = record.value
        if value is None:
            self._states.pop(key, None)
            return
        if not found:
            previous = self._states.get(key)
        if isinstance(value, ShareSnapshotValue):
            self._replay_snapshot(key, value, offset, batches, previous)
        else:
            assert isinstance(record.key, ShareUpdateKey), record
            self._replay_update(key, value, offset, batches, record.key, previous)

    def _replay_snapshot(
        self,
        key: SharePartitionKey,
        value: ShareSnapshotValue,
        offset: int,
        batches: tuple[StateBatch, ...] | None,
        previous: KeyState | None,
    ) -> None:
        leader_epoch = int(value.leader_epoch)
        state_epoch = int(value.state_epoch)
        if previous is not None:
            # Kafka keeps the highest epochs seen for a live key.
            leader_epoch = max(leader_epoch, previous.leader_epoch)
            state_epoch = max(state_epoch, previous.state_epoch)
        self._states[key] = KeyState(
            snapshot_epoch=int(value.snapshot_epoch),
            state_epoch=state_epoch,
            leader_epoch=leader_epoch,
            start_offset=int(value.start_offset),
            delivery_complete_count=int(value.delivery_complete_count),
            state_batches=state_batches_of(value.state_batches) if batches is None else batches,
            create_timestamp_ms=int(value.create_timestamp),
            write_timestamp_ms=int(value.write_timestamp),
            updates_since_snapshot=0,
            snapshot_offset=offset,
            update_key=None if previous is None else previous.update_key,
        )

    def _replay_update(
        self,
        key: SharePartitionKey,
        value: ShareUpdateValue,
        offset: int,
        incoming: tuple[StateBatch, ...] | None,
        record_key: ShareUpdateKey,
        previous: KeyState | None,
    ) -> None:
        if previous is None:
            log.info(
                "share state update at offset %d for %s has no snapshot before it; "
                "rebuilding from the update (its snapshot was pruned)",
                offset,
                key,
            )
            previous = KeyState(
                snapshot_epoch=int(value.snapshot_epoch),
                state_epoch=0,
                leader_epoch=NO_LEADER_EPOCH,
                start_offset=UNINITIALIZED_START_OFFSET,
                delivery_complete_count=UNKNOWN_DELIVERY_COMPLETE_COUNT,
                state_batches=(),
                create_timestamp_ms=UNKNOWN_TIMESTAMP,
                write_timestamp_ms=UNKNOWN_TIMESTAMP,
                updates_since_snapshot=0,
                snapshot_offset=offset,
            )
        start_offset = previous.start_offset
        if value.start_offset != UNINITIALIZED_START_OFFSET:
            start_offset = int(value.start_offset)
        count = previous.delivery_complete_count
        if value.delivery_complete_count != UNKNOWN_DELIVERY_COMPLETE_COUNT:
            count = int(value.delivery_complete_count)
        if incoming is None:
            incoming = state_batches_of(value.state_batches)
        batches = previous.state_batches
        if incoming or (batches and batches[0].first_offset < start_offset):
            batches = tuple(merge_into_state(batches, incoming, start_offset=start_offset))
        # else: the merge would return the stored batches as they are
        leader_epoch = int(value.leader_epoch)
        self._states[key] = KeyState(  # every field: `replace` costs twice as much
            snapshot_epoch=previous.snapshot_epoch,
            state_epoch=previous.state_epoch,
            leader_epoch=(
                previous.leader_epoch if previous.leader_epoch >= leader_epoch else leader_epoch
            ),
            start_offset=start_offset,
            delivery_complete_count=count,
            state_batches=batches,
            create_timestamp_ms=previous.create_timestamp_ms,
            write_timestamp_ms=previous.write_timestamp_ms,
            updates_since_snapshot=previous.updates_since_snapshot + 1,
            snapshot_offset=previous.snapshot_offset,
            update_key=record_key if previous.update_key is None else previous.update_key,
        )


# ---- helpers ----------------------------------------------------------------------------

_Written = tuple[ShareCoordinatorRecord, SharePartitionKey, tuple[StateBatch, ...], KeyState, int]
"""`ShareCoordinatorShard._written`: record, key, batches, state found, replays then."""


def _key_invalid(key: SharePartitionKey) -> bool:
    return key.partition < 0 or key.topic_id.int == 0


def _order(key: SharePartitionKey) -> tuple[str, bytes, int]:
    return key.group_id, key.topic_id.bytes, key.partition
