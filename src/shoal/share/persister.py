"""Durable share-partition state: the `Persister` protocol the share-partition leader
talks to, and `InMemoryPersister`. The values a state write carries and the merge
rule live in `shoal.share_coordinator.state` and are re-exported here.

The semantics are those of the share coordinator's state RPCs (coordinators.md §2):

- initialize: a state epoch below the stored one is FENCED_STATE_EPOCH; the same
  epoch and start offset is a no-op; anything else replaces the whole state (new
  epoch, new start offset, no batches).
- read: an uninitialised key is INVALID_REQUEST; a leader epoch below the stored one
  is FENCED_LEADER_EPOCH, a higher one is recorded first.
- write: uninitialised -> INVALID_REQUEST; stale leader epoch -> FENCED_LEADER_EPOCH;
  stale state epoch -> FENCED_STATE_EPOCH. The start offset never moves back (-1
  keeps it); a DeliveryCompleteCount sent with a start offset behind the stored one
  is ignored. Batches are merged (`merge_state_batches`). A write never changes the
  stored epochs: only initialize sets the state epoch and only read raises the
  leader epoch (Kafka 4.2, KAFKA-19456).
- delete: the key reads as uninitialised afterwards.
- read_summary: an unknown key gives start offset -1 and DeliveryCompleteCount -1,
  leader and state epoch 0, no error.
- negative partitions or epochs -> INVALID_REQUEST.

Errors are Kafka error names (strings, as the share coordinator records them), None
on success; `partition_error` maps them to the `ErrorCode` a share-partition answers.
Every method is synchronous;
`shoal.share_coordinator.ShareCoordinator` is the durable implementation.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Protocol

from shoal.protocol.errors import ErrorCode
from shoal.share_coordinator.state import (
    DELIVERY_STATE_ACKNOWLEDGED,
    DELIVERY_STATE_ARCHIVED,
    DELIVERY_STATE_AVAILABLE,
    PERSISTED_DELIVERY_STATES,
    UNINITIALIZED_START_OFFSET,
    UNKNOWN_DELIVERY_COMPLETE_COUNT,
    PersistedState,
    ReadResult,
    SharePartitionKey,
    StateBatch,
    StateSummary,
    StateWrite,
    _append_coalesced,
    merge_state_batches,
)

__all__ = [
    "DELIVERY_STATE_ACKNOWLEDGED",
    "DELIVERY_STATE_ARCHIVED",
    "DELIVERY_STATE_AVAILABLE",
    "FENCING_ERRORS",
    "PERSISTED_DELIVERY_STATES",
    "UNINITIALIZED_START_OFFSET",
    "UNKNOWN_DELIVERY_COMPLETE_COUNT",
    "InMemoryPersister",
    "PersistedState",
    "Persister",
    "ReadResult",
    "SharePartitionKey",
    "StateBatch",
    "StateSummary",
    "StateWrite",
    "_append_coalesced",
    "merge_state_batches",
    "partition_error",
]


class Persister(Protocol):
    """Durable share-partition state, as the share coordinator's RPCs define it."""

    def initialize(
        self, *, key: SharePartitionKey, state_epoch: int, start_offset: int
    ) -> str | None: ...

    def read(self, *, key: SharePartitionKey, leader_epoch: int) -> ReadResult: ...

    def write(self, *, write: StateWrite) -> str | None: ...

    def delete(self, *, key: SharePartitionKey) -> str | None: ...

    def read_summary(self, *, key: SharePartitionKey, leader_epoch: int) -> StateSummary: ...

    def partitions_with_state(self, *, group_id: str, topic_id: uuid.UUID) -> tuple[int, ...]:
        """The partitions of (group, topic) that have state, ascending."""
        ...


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
        if write.start_offset < UNINITIALIZED_START_OFFSET:
            return "INVALID_REQUEST"
        stored = self._states.get(key)
        if stored is None:
            return "INVALID_REQUEST"
        if write.leader_epoch < stored.leader_epoch:
            return "FENCED_LEADER_EPOCH"
        if write.state_epoch < stored.state_epoch:
            return "FENCED_STATE_EPOCH"
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

    def partitions_with_state(self, *, group_id: str, topic_id: uuid.UUID) -> tuple[int, ...]:
        return tuple(
            sorted(
                key.partition
                for key in self._states
                if key.group_id == group_id and key.topic_id == topic_id
            )
        )


FENCING_ERRORS = frozenset({"FENCED_LEADER_EPOCH", "FENCED_STATE_EPOCH"})
"""A write failing with one of these means another leader or a newer state epoch
owns the share-partition: drop it from memory and reload (§8.5)."""

_PARTITION_ERRORS = {
    "FENCED_LEADER_EPOCH": ErrorCode.not_leader_or_follower,
    "FENCED_STATE_EPOCH": ErrorCode.not_leader_or_follower,
    "NOT_COORDINATOR": ErrorCode.coordinator_not_available,
    "COORDINATOR_NOT_AVAILABLE": ErrorCode.coordinator_not_available,
    "COORDINATOR_LOAD_IN_PROGRESS": ErrorCode.coordinator_not_available,
    "GROUP_ID_NOT_FOUND": ErrorCode.group_id_not_found,
    "UNKNOWN_TOPIC_OR_PARTITION": ErrorCode.unknown_topic_or_partition,
}


def partition_error(state_error: str) -> ErrorCode:
    """The error a share-partition reports to clients when a state RPC failed with
    the error name `state_error` (share-partition.md §8.5; Kafka's
    SharePartition.fetchPersisterError)."""
    return _PARTITION_ERRORS.get(state_error, ErrorCode.unknown_server_error)
