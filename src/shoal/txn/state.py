"""The words of the transaction coordinator: transaction states, a transactional id's
metadata, and the marker effect.

`TxnState` carries Kafka's persisted status ids (TransactionState.java) and its legal
transitions, one table (`TRANSITIONS`): the shard asserts every record it writes
follows it.

    Empty ----------> Ongoing -----> PrepareCommit --> CompleteCommit
      ^  ^              |  \\------> PrepareAbort  --> CompleteAbort
      |  |              |                                   |
      |  +--- (InitProducerId, AddPartitionsToTxn) ---------+
      +-- Dead (expired; written as a tombstone)

An Empty or completed transactional id may also go to PrepareAbort: transaction
version 2's abort with no transaction ongoing (EndTxn v5) bumps the epoch that way.

`WriteMarkers` is the effect a shard returns when a transaction is prepared: the
shell writes one control batch per partition (a data partition's log, or the group
coordinator for a `__consumer_offsets` partition), then calls `markers_written`.
`control` is `ABORT` (0) or `COMMIT` (1), the values of the log's `ControlType`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

TopicPartition = tuple[str, int]

ABORT = 0
COMMIT = 1
"""Marker types: the int values of `shoal.log.transactions.ControlType`."""
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
PRODUCER_EPOCH_MAX = 2**15 - 1
"""Kafka's Short.MaxValue: an epoch that would reach it gets a new producer id."""


class TxnState(enum.IntEnum):
    """Kafka's TransactionState ids (persisted as TransactionStatus)."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def display_name(self) -> str:
        """The name DescribeTransactions and ListTransactions use (Kafka's)."""
        return _NAMES[self]

    @classmethod
    def from_display_name(cls, name: str) -> TxnState | None:
        return _BY_NAME.get(name)


_NAMES = {
    TxnState.EMPTY: "Empty",
    TxnState.ONGOING: "Ongoing",
    TxnState.PREPARE_COMMIT: "PrepareCommit",
    TxnState.PREPARE_ABORT: "PrepareAbort",
    TxnState.COMPLETE_COMMIT: "CompleteCommit",
    TxnState.COMPLETE_ABORT: "CompleteAbort",
    TxnState.DEAD: "Dead",
    TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_NAME = {name: state for state, name in _NAMES.items()}

_COMPLETE = frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT})
_NEXT_OF_COMPLETE = _COMPLETE | {TxnState.ONGOING, TxnState.DEAD, TxnState.PREPARE_ABORT}
"""PrepareAbort: transaction version 2's abort of no transaction (EndTxn v5)."""
TRANSITIONS: dict[TxnState, frozenset[TxnState]] = {
    TxnState.EMPTY: _NEXT_OF_COMPLETE,
    TxnState.ONGOING: frozenset(
        {TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT}
    ),
    TxnState.PREPARE_COMMIT: frozenset({TxnState.PREPARE_COMMIT, TxnState.COMPLETE_COMMIT}),
    TxnState.PREPARE_ABORT: frozenset({TxnState.PREPARE_ABORT, TxnState.COMPLETE_ABORT}),
    TxnState.COMPLETE_COMMIT: _NEXT_OF_COMPLETE,
    TxnState.COMPLETE_ABORT: _NEXT_OF_COMPLETE,
    TxnState.DEAD: frozenset(),
    TxnState.PREPARE_EPOCH_FENCE: frozenset({TxnState.PREPARE_ABORT}),
}
"""state -> the states a record may move it to (Kafka's validPreviousStates, inverted;
plus staying put, which a maintenance re-write of the latest record does)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnMetadata:
    """What the coordinator holds for one transactional id (one record's worth)."""

    transactional_id: str
    producer_id: int
    previous_producer_id: int
    next_producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition]
    last_update_ms: int
    """Wall ms of the last record (drives `transactional.id.expiration.ms`)."""
    start_ms: int
    """Wall ms the ongoing transaction started; -1 when none is ongoing."""
    client_transaction_version: int

    def expired_at_ms(self) -> int:
        """When an ongoing transaction times out (wall ms)."""
        return self.start_ms + self.timeout_ms


@dataclass(frozen=True, slots=True, kw_only=True)
class WriteMarkers:
    """Write a `control` marker for the producer on every partition, then report
    `markers_written(transactional_id, producer_id, producer_epoch)`."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    control: int
    coordinator_epoch: int
    partitions: tuple[TopicPartition, ...]
