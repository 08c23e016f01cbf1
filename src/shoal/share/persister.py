"""Durable share-partition state: the values a state write carries, the `Persister`
protocol the share-partition leader talks to, and `InMemoryPersister`.

The semantics are those of the share coordinator's state RPCs (coordinators.md §2):

- initialize: a state epoch below the stored one is FENCED_STATE_EPOCH; the same
  epoch and start offset is a no-op; anything else replaces the whole state (new
  epoch, new start offset, no batches).
- read: an uninitialised key is INVALID_REQUEST; a leader epoch below the stored one
  is FENCED_LEADER_EPOCH, a higher one is recorded first.
- write: uninitialised -> INVALID_REQUEST; stale leader epoch -> FENCED_LEADER_EPOCH;
  stale state epoch -> FENCED_STATE_EPOCH. The start offset never moves back (-1
  keeps it); a DeliveryCompleteCount sent with a start offset behind the stored one
  is ignored. Batches are merged (`merge_state_batches`).
- delete: the key reads as uninitialised afterwards.
- read_summary: an unknown key gives start offset -1 and DeliveryCompleteCount -1,
  leader and state epoch 0, no error.
- negative partitions or epochs -> INVALID_REQUEST.

Errors are Kafka error names (strings), None on success. Every method is synchronous;
the durable share coordinator implements the same protocol later.
"""

from __future__ import annotations

import heapq
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from shoal.share.states import PERSISTED_STATES, RecordState

UNINITIALIZED_START_OFFSET = -1
UNKNOWN_DELIVERY_COMPLETE_COUNT = -1


@dataclass(frozen=True, slots=True)
class SharePartitionKey:
    group_id: str
    topic_id: uuid.UUID
    partition: int


@dataclass(frozen=True, slots=True)
class StateBatch:
    """A persisted range: `delivery_state` is a RecordState id (0, 2 or 4)."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int

    def __post_init__(self) -> None:
        assert self.first_offset <= self.last_offset, self
        assert self.delivery_state in PERSISTED_STATES, self

    @property
    def state(self) -> RecordState:
        return RecordState(self.delivery_state)


@dataclass(frozen=True, slots=True)
class PersistedState:
    """What a read returns: state epoch, start offset (-1 if never set), batches."""

    state_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...] = ()


@dataclass(frozen=True, slots=True)
class StateWrite:
    """One WriteShareGroupState for one share-partition."""

    key: SharePartitionKey
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    state_batches: tuple[StateBatch, ...]


@dataclass(frozen=True, slots=True)
class ReadResult:
    error: str | None
    state: PersistedState | None = None


@dataclass(frozen=True, slots=True)
class StateSummary:
    error: str | None
    state_epoch: int = 0
    leader_epoch: int = 0
    start_offset: int = UNINITIALIZED_START_OFFSET
    delivery_complete_count: int = UNKNOWN_DELIVERY_COMPLETE_COUNT


class Persister(Protocol):
    """Durable share-partition state, as the share coordinator's RPCs define it."""

    def initialize(
        self, *, key: SharePartitionKey, state_epoch: int, start_offset: int
    ) -> str | None: ...

    def read(self, *, key: SharePartitionKey, leader_epoch: int) -> ReadResult: ...

    def write(self, *, write: StateWrite) -> str | None: ...

    def delete(self, *, key: SharePartitionKey) -> str | None: ...

    def read_summary(self, *, key: SharePartitionKey, leader_epoch: int) -> StateSummary: ...


@dataclass(slots=True)
class _Stored:
    state_epoch: int
    leader_epoch: int
    start_offset: int
    delivery_complete_count: int
    batches: list[StateBatch] = field(default_factory=list)


class InMemoryPersister:
    """A `Persister` keeping everything in a dict; for tests and single-process use."""

    def __init__(self) -> None:
        self._states: dict[SharePartitionKey, _Stored] = {}

    def initialize(
        self, *, key: SharePartitionKey, state_epoch: int, start_offset: int
    ) -> str | None:
        if key.partition < 0 or state_epoch < 0 or start_offset < UNINITIALIZED_START_OFFSET:
            return "INVALID_REQUEST"
        stored = self._states.get(key)
        if stored is not None:
            if state_epoch < stored.state_epoch:
                return "FENCED_STATE_EPOCH"
            if state_epoch == stored.state_epoch and start_offset == stored.start_offset:
                return None
        leader_epoch = -1 if stored is None else stored.leader_epoch
        count = UNKNOWN_DELIVERY_COMPLETE_COUNT if start_offset < 0 else 0
        self._states[key] = _Stored(state_epoch, leader_epoch, start_offset, count)
        return None

    def read(self, *, key: SharePartitionKey, leader_epoch: int) -> ReadResult:
        if key.partition < 0 or leader_epoch < 0:
            return ReadResult("INVALID_REQUEST")
        stored = self._states.get(key)
        if stored is None:
            return ReadResult("INVALID_REQUEST")
        if leader_epoch < stored.leader_epoch:
            return ReadResult("FENCED_LEADER_EPOCH")
        stored.leader_epoch = leader_epoch
        state = PersistedState(stored.state_epoch, stored.start_offset, tuple(stored.batches))
        return ReadResult(None, state)

    def write(self, *, write: StateWrite) -> str | None:
        key = write.key
        if key.partition < 0 or write.state_epoch < 0 or write.leader_epoch < 0:
            return "INVALID_REQUEST"
        stored = self._states.get(key)
        if stored is None:
            return "INVALID_REQUEST"
        if write.leader_epoch < stored.leader_epoch:
            return "FENCED_LEADER_EPOCH"
        if write.state_epoch < stored.state_epoch:
            return "FENCED_STATE_EPOCH"
        stored.leader_epoch = write.leader_epoch
        stored.state_epoch = write.state_epoch
        if write.start_offset >= stored.start_offset:
            if write.delivery_complete_count != UNKNOWN_DELIVERY_COMPLETE_COUNT:
                stored.delivery_complete_count = write.delivery_complete_count
            stored.start_offset = write.start_offset
        stored.batches = merge_state_batches(
            stored.batches, write.state_batches, start_offset=stored.start_offset
        )
        return None

    def delete(self, *, key: SharePartitionKey) -> str | None:
        if key.partition < 0:
            return "INVALID_REQUEST"
        self._states.pop(key, None)
        return None

    def read_summary(self, *, key: SharePartitionKey, leader_epoch: int) -> StateSummary:
        if key.partition < 0:
            return StateSummary("INVALID_REQUEST")
        stored = self._states.get(key)
        if stored is None:
            return StateSummary(None)
        return StateSummary(
            None,
            state_epoch=stored.state_epoch,
            leader_epoch=stored.leader_epoch,
            start_offset=stored.start_offset,
            delivery_complete_count=stored.delivery_complete_count,
        )


def merge_state_batches(
    current: Iterable[StateBatch], incoming: Iterable[StateBatch], *, start_offset: int
) -> list[StateBatch]:
    """The share coordinator's merge (coordinators.md §2.4, Kafka's
    PersisterStateBatchCombiner): drop batches below `start_offset` and clip those
    straddling it; where ranges overlap the higher delivery count wins, then the higher
    delivery state; adjacent ranges with equal (state, count) coalesce.

    A sweep over range boundaries with a heap of the covering batches: O(n log n).
    """
    batches = sorted(
        (
            StateBatch(
                max(b.first_offset, start_offset), b.last_offset, b.delivery_state, b.delivery_count
            )
            for b in (*current, *incoming)
            if b.last_offset >= start_offset
        ),
        key=lambda b: b.first_offset,
    )
    boundaries = sorted({b.first_offset for b in batches} | {b.last_offset + 1 for b in batches})
    merged: list[StateBatch] = []
    covering: list[tuple[int, int, int, int]] = []  # (-count, -state, seq, last)
    next_batch = 0
    for index, point in enumerate(boundaries[:-1]):
        while next_batch < len(batches) and batches[next_batch].first_offset == point:
            b = batches[next_batch]
            heapq.heappush(
                covering, (-b.delivery_count, -b.delivery_state, next_batch, b.last_offset)
            )
            next_batch += 1
        while covering and covering[0][3] < point:
            heapq.heappop(covering)
        if not covering:
            continue
        count, state = -covering[0][0], -covering[0][1]
        _append_coalesced(merged, StateBatch(point, boundaries[index + 1] - 1, state, count))
    return merged


def _append_coalesced(merged: list[StateBatch], batch: StateBatch) -> None:
    if merged:
        tail = merged[-1]
        if (
            tail.last_offset + 1 == batch.first_offset
            and tail.delivery_state == batch.delivery_state
            and tail.delivery_count == batch.delivery_count
        ):
            merged[-1] = StateBatch(
                tail.first_offset, batch.last_offset, tail.delivery_state, tail.delivery_count
            )
            return
    merged.append(batch)


FENCING_ERRORS = frozenset({"FENCED_LEADER_EPOCH", "FENCED_STATE_EPOCH"})
"""A write failing with one of these means another leader or a newer state epoch
owns the share-partition: drop it from memory and reload (§8.5)."""

_PARTITION_ERRORS = {
    "FENCED_LEADER_EPOCH": "NOT_LEADER_OR_FOLLOWER",
    "FENCED_STATE_EPOCH": "NOT_LEADER_OR_FOLLOWER",
    "NOT_COORDINATOR": "COORDINATOR_NOT_AVAILABLE",
    "COORDINATOR_NOT_AVAILABLE": "COORDINATOR_NOT_AVAILABLE",
    "COORDINATOR_LOAD_IN_PROGRESS": "COORDINATOR_NOT_AVAILABLE",
    "GROUP_ID_NOT_FOUND": "GROUP_ID_NOT_FOUND",
    "UNKNOWN_TOPIC_OR_PARTITION": "UNKNOWN_TOPIC_OR_PARTITION",
}


def partition_error(state_error: str) -> str:
    """The error a share-partition reports to clients when a state RPC failed with
    `state_error` (share-partition.md §8.5; Kafka's SharePartition.fetchPersisterError)."""
    return _PARTITION_ERRORS.get(state_error, "UNKNOWN_SERVER_ERROR")
