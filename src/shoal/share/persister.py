"""Durable share-partition state: the `Persister` protocol through which the shell
makes the share-partition leader's state reads and writes (server/services/share_service.py
performs what `SharePartitionManager` asks for), and `InMemoryPersister`. The values
a state write carries and the merge rule live in `shoal.share_coordinator.state` and
are re-exported here.

The semantics are those of the share coordinator's state RPCs (docs/design/coordinators.md §2):

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

Errors are `ErrorCode`s (as the share coordinator answers them), None on success;
`partition_error` maps them to the `ErrorCode` a share-partition answers.
Every method is synchronous;
`shoal.share_coordinator.ShareCoordinator` is the durable implementation.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
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
    "persist_cut",
    "within_log",
]


def within_log(state: PersistedState, log_end_offset: int) -> PersistedState:
    """`state` cut to the log it describes: a start offset past `log_end_offset` comes
    back to it, and batches (or their parts) at or past it are dropped. A consistent
    broker never needs this; a power loss can: with the page cache's durability
    (Kafka's default flush policy) the state topic may keep writes whose records the
    data log lost, and a share-partition starting past its log end would skip, and
    never deliver, the records produced after the restart up to that offset."""
    if state.start_offset < 0 or (
        state.start_offset <= log_end_offset
        and all(b.last_offset < log_end_offset for b in state.state_batches)
    ):
        return state
    start = min(state.start_offset, log_end_offset)
    batches = tuple(
        replace(batch, last_offset=min(batch.last_offset, log_end_offset - 1))
        for batch in state.state_batches
        if batch.first_offset < log_end_offset
    )
    return replace(state, start_offset=start, state_batches=batches)


class Persister(Protocol):
    """Durable share-partition state, as the share coordinator's RPCs define it."""

    def initialize(
        self, *, key: SharePartitionKey, state_epoch: int, start_offset: int
    ) -> ErrorCode | None: ...

    def read(self, *, key: SharePartitionKey, leader_epoch: int) -> ReadResult: ...

    def write(self, *, write: StateWrite) -> ErrorCode | None: ...

    def delete(self, *, key: SharePartitionKey) -> ErrorCode | None: ...

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
    ) -> ErrorCode | None:
        if key.partition < 0 or state_epoch < 0 or start_offset < UNINITIALIZED_START_OFFSET:
            return ErrorCode.invalid_request
        stored = self._states.get(key)
        if stored is not None:
            if state_epoch < stored.state_epoch:
                return ErrorCode.fenced_state_epoch
            if state_epoch == stored.state_epoch and start_offset == stored.start_offset:
                return None
        leader_epoch = -1 if stored is None else stored.leader_epoch
        count = UNKNOWN_DELIVERY_COMPLETE_COUNT if start_offset < 0 else 0
        self._states[key] = _Stored(state_epoch, leader_epoch, start_offset, count)
        return None

    def read(self, *, key: SharePartitionKey, leader_epoch: int) -> ReadResult:
        if key.partition < 0 or leader_epoch < 0:
            return ReadResult(ErrorCode.invalid_request)
        stored = self._states.get(key)
        if stored is None:
            return ReadResult(ErrorCode.invalid_request)
        if leader_epoch < stored.leader_epoch:
            return ReadResult(ErrorCode.fenced_leader_epoch)
        stored.leader_epoch = leader_epoch
        state = PersistedState(stored.state_epoch, stored.start_offset, tuple(stored.batches))
        return ReadResult(None, state)

    def write(self, *, write: StateWrite) -> ErrorCode | None:
        key = write.key
        if key.partition < 0 or write.state_epoch < 0 or write.leader_epoch < 0:
            return ErrorCode.invalid_request
        if write.start_offset < UNINITIALIZED_START_OFFSET:
            return ErrorCode.invalid_request
        stored = self._states.get(key)
        if stored is None:
            return ErrorCode.invalid_request
        if write.leader_epoch < stored.leader_epoch:
            return ErrorCode.fenced_leader_epoch
        if write.state_epoch < stored.state_epoch:
            return ErrorCode.fenced_state_epoch
        if write.start_offset >= stored.start_offset:
            if write.delivery_complete_count != UNKNOWN_DELIVERY_COMPLETE_COUNT:
                stored.delivery_complete_count = write.delivery_complete_count
            stored.start_offset = write.start_offset
        stored.batches = merge_state_batches(
            stored.batches, write.state_batches, start_offset=stored.start_offset
        )
        return None

    def delete(self, *, key: SharePartitionKey) -> ErrorCode | None:
        if key.partition < 0:
            return ErrorCode.invalid_request
        self._states.pop(key, None)
        return None

    def read_summary(self, *, key: SharePartitionKey, leader_epoch: int) -> StateSummary:
        if key.partition < 0:
            return StateSummary(ErrorCode.invalid_request)
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


FENCING_ERRORS = frozenset({ErrorCode.fenced_leader_epoch, ErrorCode.fenced_state_epoch})
"""A write failing with one of these means another leader or a newer state epoch
owns the share-partition: drop it from memory and reload (§8.5)."""

_PARTITION_ERRORS = {
    ErrorCode.fenced_leader_epoch: ErrorCode.not_leader_or_follower,
    ErrorCode.fenced_state_epoch: ErrorCode.not_leader_or_follower,
    ErrorCode.not_coordinator: ErrorCode.coordinator_not_available,
    ErrorCode.coordinator_not_available: ErrorCode.coordinator_not_available,
    ErrorCode.coordinator_load_in_progress: ErrorCode.coordinator_not_available,
    ErrorCode.group_id_not_found: ErrorCode.group_id_not_found,
    ErrorCode.unknown_topic_or_partition: ErrorCode.unknown_topic_or_partition,
}


def partition_error(state_error: ErrorCode) -> ErrorCode:
    """The error a share-partition reports to clients when a state RPC failed with
    `state_error` (docs/design/share-partition.md §8.5; Kafka's
    SharePartition.fetchPersisterError)."""
    return _PARTITION_ERRORS.get(state_error, ErrorCode.unknown_server_error)


def persist_cut(
    persister: Persister,
    key: SharePartitionKey,
    persisted: PersistedState,
    cut: PersistedState,
    *,
    leader_epoch: int,
) -> ErrorCode | None:
    """Make durable the state `within_log` cut from `persisted`, so that a later load
    finds neither the old start offset nor batches describing records the log lost
    (the log gives those offsets to new records). A write can do neither (the
    coordinator never moves a start offset back, and its merge keeps the higher
    delivery count), so the state is initialised again at the cut start (a snapshot
    without batches; first one offset on if the start did not change, since an
    initialisation that changes nothing writes nothing), then the batches left are
    written. A crash in between loses only delivery counts and acknowledgements below
    the log end, after a power loss that could lose them anyway."""
    if cut.start_offset == persisted.start_offset:
        error = persister.initialize(
            key=key, state_epoch=cut.state_epoch, start_offset=cut.start_offset + 1
        )
        if error is not None:
            return error
    error = persister.initialize(
        key=key, state_epoch=cut.state_epoch, start_offset=cut.start_offset
    )
    if error is not None or not cut.state_batches:
        return error
    terminal = (DELIVERY_STATE_ACKNOWLEDGED, DELIVERY_STATE_ARCHIVED)
    complete = sum(
        b.last_offset - b.first_offset + 1
        for b in cut.state_batches
        if b.delivery_state in terminal
    )
    return persister.write(
        write=StateWrite(
            key=key,
            state_epoch=cut.state_epoch,
            leader_epoch=leader_epoch,
            start_offset=cut.start_offset,
            delivery_complete_count=complete,
            state_batches=cut.state_batches,
        )
    )
