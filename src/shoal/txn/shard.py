"""`TxnShard`: the transactional ids placed on one partition of `__transaction_state`
(Kafka's TransactionCoordinator and TransactionStateManager, for one partition).

Theory of operation. Event-sourced: every operation validates, decides and returns a
`CoordinatorResult` (records to write, the response, effects for the shell), changing
nothing; `replay(record)` is the only mutator, run by the coordinator runtime after
the records are in the log and by a reload over the log. One record per change: the
whole `TxnMetadata` of the transactional id (Kafka writes the same), a tombstone when
the id expires.

Operations (Kafka 4.2's semantics, single node, coordinator epoch 0):

- `init_producer_id`: a new id gets a fresh producer id at epoch 0 (state Empty).
  A known one in a complete state (Empty, CompleteCommit, CompleteAbort) gets its
  epoch bumped (a new producer id at epoch 0 when the epoch would reach 32767), which
  fences every older instance (PRODUCER_FENCED on their next call). Ongoing: the
  transaction is aborted first (PrepareAbort at epoch + 1, markers, then
  CompleteAbort) and the caller is answered CONCURRENT_TRANSACTIONS, so it retries;
  PrepareCommit/PrepareAbort: CONCURRENT_TRANSACTIONS. With an expected producer id
  and epoch (v3+): another producer id or an epoch other than the current one ->
  PRODUCER_FENCED; the current one retried after a bump returns the same answer, as
  does the previous id at its exhausted epoch (a retry after InitProducerId or EndTxn
  v5 moved to a new id; Kafka 4.2, tests/differential/test_transactions.py).
- `add_partitions`: unknown id or another producer id -> INVALID_PRODUCER_ID_MAPPING;
  another epoch -> PRODUCER_FENCED; Prepare* -> CONCURRENT_TRANSACTIONS; otherwise the
  partitions join the transaction (state Ongoing, the start time set when it was
  not, `client_transaction_version` recorded: 2 when Produce v12+ or TxnOffsetCommit
  v5 add their partition, as Kafka records the version of the request that moved the
  transaction). Nothing new -> no record. `verify_only` (v4+) writes nothing: after the
  producer checks, PrepareCommit/PrepareAbort -> CONCURRENT_TRANSACTIONS; each
  partition already in an ongoing transaction of that producer answers NONE, the rest
  TRANSACTION_ABORTABLE (Kafka's handleVerifyPartitionsInTransaction; the handlers
  answer older request versions with INVALID_TXN_STATE, protocol/errors.py).
- `end_txn`: checks as above; Ongoing -> PrepareCommit/PrepareAbort (epoch bumped when
  `bump_epoch`: KIP-890, EndTxn v5+), effect `WriteMarkers`; the answer is given once
  the prepare record is written (markers go on afterwards, as in Kafka). A retry of
  a finished end (CompleteCommit + commit, CompleteAbort + abort) is NONE; of a
  preparing one CONCURRENT_TRANSACTIONS; the other end of it INVALID_TXN_STATE; Empty
  INVALID_TXN_STATE, except that with `bump_epoch` an abort of no transaction (Empty
  or completed, at the current epoch) bumps the epoch through PrepareAbort of no
  partitions (Kafka 4.2, transaction version 2). A bump from the exhausted epoch
  (32766) draws a new producer id (`new_producer_id`): prepared at 32767 under the old
  id with the new one recorded as next, answered with the new id at epoch 0, which
  completing the transaction makes current (the old id becomes the previous one, and a
  retry of that end by it is answered the new one).
- `markers_written`: Prepare* with that producer id and epoch -> Complete*, the
  partitions cleared (and the next producer id made current, see `end_txn`). Anything
  else (already completed, fenced meanwhile) -> nothing.
- `abort_timed_out(now_ms)`: every Ongoing transaction past its timeout is aborted
  with its epoch bumped (the timed-out producer is fenced), effects `WriteMarkers`.
- `expire_transactional_ids(now_ms)`: ids in a complete state not written for
  `transactional_id_expiration_ms` get a tombstone.
- `pending_markers()`: after a load, the markers of every Prepare* transaction (the
  shell writes them again: markers are idempotent).

Bounding the log (Kafka compacts `__transaction_state`; Shoal prunes it, as the other
coordinators do, coordinator/pruning.py): a reload needs only each live id's latest
record, so `prune_offset()` is the lowest of those offsets; `rewrite_stale(window)`
re-appends the latest record of ids left more than the window below the end (the
same metadata: a replay of it changes nothing), so idle ids do not pin the log.

Invariants (asserted in `replay`): a record moves an id only along `TRANSITIONS`;
the producer epoch of one producer id never goes down.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TypeVar

from shoal.clock import Clock
from shoal.coordinator.pruning import LiveKeys
from shoal.coordinator.result import CoordinatorResult
from shoal.protocol.errors import ErrorCode
from shoal.txn.records import TxnRecord, metadata_of, metadata_record, tombstone
from shoal.txn.state import (
    ABORT,
    COMMIT,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    PRODUCER_EPOCH_MAX,
    TRANSITIONS,
    TopicPartition,
    TxnMetadata,
    TxnState,
    WriteMarkers,
)

ResponseT = TypeVar("ResponseT")
COORDINATOR_EPOCH = 0
"""Single node: the `__transaction_state` leader epoch never moves."""
_COMPLETE = frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT})
_PREPARING = frozenset({TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT})
_NO_START = -1
EPOCH_EXHAUSTED = PRODUCER_EPOCH_MAX - 1
"""Kafka's isEpochExhausted: an epoch this high is not bumped for the same producer id
(Short.MaxValue stays free for the coordinator to fence with)."""


TxnResult = CoordinatorResult[TxnRecord, ResponseT]
"""What a transaction coordinator operation returns (the one result type; its
effects are `WriteMarkers`)."""


@dataclass(frozen=True, slots=True)
class ProducerAnswer:
    """InitProducerId's and EndTxn's answer."""

    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


class TxnShard:
    """One `__transaction_state` partition's transactional ids. See the module docstring."""

    def __init__(
        self, *, clock: Clock, max_timeout_ms: int, transactional_id_expiration_ms: int
    ) -> None:
        assert max_timeout_ms >= 1 and transactional_id_expiration_ms >= 1
        self._clock = clock
        self._max_timeout_ms = max_timeout_ms
        self._expiration_ms = transactional_id_expiration_ms
        self._txns: dict[str, TxnMetadata] = {}
        self._live: LiveKeys[str, TxnRecord] = LiveKeys()

    @property
    def transactions(self) -> Mapping[str, TxnMetadata]:
        return MappingProxyType(self._txns)

    # ---- the only mutator

    def replay(self, record: TxnRecord, offset: int = -1, /) -> None:
        transactional_id = record.key.transactional_id
        stored = self._txns.get(transactional_id)
        self._live.replayed(transactional_id, record, offset, tombstone=record.value is None)
        if record.value is None:
            self._txns.pop(transactional_id, None)
            return
        metadata = metadata_of(record)
        if stored is not None:
            assert metadata.state in TRANSITIONS[stored.state], (stored.state, metadata.state)
            if metadata.producer_id == stored.producer_id:
                assert metadata.producer_epoch >= stored.producer_epoch, (stored, metadata)
        self._txns[transactional_id] = metadata

    # ---- operations

    def init_producer_id(
        self,
        *,
        transactional_id: str,
        timeout_ms: int,
        expected_producer_id: int = NO_PRODUCER_ID,
        expected_producer_epoch: int = NO_PRODUCER_EPOCH,
        new_producer_id: Callable[[], int],
    ) -> TxnResult[ProducerAnswer]:
        if not transactional_id:
            return _answer(ErrorCode.invalid_request)
        if not 1 <= timeout_ms <= self._max_timeout_ms:
            return _answer(ErrorCode.invalid_transaction_timeout)
        now_ms = self._clock.wall_ms()
        stored = self._txns.get(transactional_id)
        if stored is None:
            metadata = TxnMetadata(
                transactional_id=transactional_id,
                producer_id=new_producer_id(),
                previous_producer_id=NO_PRODUCER_ID,
                next_producer_id=NO_PRODUCER_ID,
                producer_epoch=0,
                timeout_ms=timeout_ms,
                state=TxnState.EMPTY,
                partitions=frozenset(),
                last_update_ms=now_ms,
                start_ms=_NO_START,
                client_transaction_version=0,
            )
            return _written(metadata)
        expected = expected_producer_id != NO_PRODUCER_ID
        if expected:
            retried = _retried_init(stored, expected_producer_id, expected_producer_epoch)
            if retried is not None:
                return retried
        if stored.state in _PREPARING or stored.state == TxnState.PREPARE_EPOCH_FENCE:
            return _answer(ErrorCode.concurrent_transactions)
        if stored.state == TxnState.ONGOING:
            busy = ProducerAnswer(ErrorCode.concurrent_transactions)
            return self._abort(stored, now_ms=now_ms, response=busy)
        if stored.producer_epoch + 1 >= PRODUCER_EPOCH_MAX:
            metadata = replace(
                stored,
                producer_id=new_producer_id(),
                previous_producer_id=stored.producer_id,
                producer_epoch=0,
            )
        else:
            metadata = replace(stored, producer_epoch=stored.producer_epoch + 1)
        metadata = replace(
            metadata,
            timeout_ms=timeout_ms,
            state=TxnState.EMPTY,
            partitions=frozenset(),
            last_update_ms=now_ms,
            start_ms=_NO_START,
        )
        return _written(metadata)

    def add_partitions(
        self,
        *,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        verify_only: bool = False,
        client_transaction_version: int = 0,
    ) -> TxnResult[dict[TopicPartition, ErrorCode]]:
        wanted = frozenset(partitions)
        stored = self._txns.get(transactional_id)
        error = _producer_error(stored, producer_id, producer_epoch)
        if stored is None or error is not None:
            return CoordinatorResult(
                (), dict.fromkeys(wanted, error or ErrorCode.invalid_producer_id_mapping)
            )
        if verify_only:
            if stored.state in _PREPARING:
                return CoordinatorResult(
                    (), dict.fromkeys(wanted, ErrorCode.concurrent_transactions)
                )
            ongoing = stored.state == TxnState.ONGOING
            return CoordinatorResult(
                (),
                {
                    tp: ErrorCode.none
                    if ongoing and tp in stored.partitions
                    else ErrorCode.transaction_abortable
                    for tp in wanted
                },
            )
        if stored.state not in _COMPLETE and stored.state != TxnState.ONGOING:
            return CoordinatorResult((), dict.fromkeys(wanted, ErrorCode.concurrent_transactions))
        answer = dict.fromkeys(wanted, ErrorCode.none)
        if stored.state == TxnState.ONGOING and wanted <= stored.partitions:
            return CoordinatorResult((), answer)
        now_ms = self._clock.wall_ms()
        metadata = replace(
            stored,
            state=TxnState.ONGOING,
            partitions=(stored.partitions if stored.state == TxnState.ONGOING else frozenset())
            | wanted,
            last_update_ms=now_ms,
            start_ms=stored.start_ms if stored.state == TxnState.ONGOING else now_ms,
            client_transaction_version=client_transaction_version,
        )
        return CoordinatorResult((metadata_record(metadata),), answer)

    def end_txn(
        self,
        *,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        bump_epoch: bool = False,
        new_producer_id: Callable[[], int],
    ) -> TxnResult[ProducerAnswer]:
        stored = self._txns.get(transactional_id)
        retried = self._retried_end(stored, producer_id, producer_epoch, commit, bump_epoch)
        if retried is not None:
            return retried
        assert stored is not None
        error = _producer_error(stored, producer_id, producer_epoch)
        if error is not None:
            return _answer(error)
        if stored.state in _PREPARING or stored.state == TxnState.PREPARE_EPOCH_FENCE:
            return _answer(ErrorCode.concurrent_transactions)
        now_ms = self._clock.wall_ms()
        if stored.state != TxnState.ONGOING:
            if bump_epoch and not commit:
                return self._abort_nothing(stored, now_ms=now_ms, new_producer_id=new_producer_id)
            return _answer(ErrorCode.invalid_txn_state)
        if not bump_epoch:
            metadata = replace(
                stored,
                state=TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT,
                last_update_ms=now_ms,
            )
            return CoordinatorResult(
                (metadata_record(metadata),),
                ProducerAnswer(ErrorCode.none, metadata.producer_id, metadata.producer_epoch),
                (_markers(metadata),),
            )
        prepare = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        return _prepare_bumped(
            stored, prepare, now_ms=now_ms, partitions=stored.partitions, new_id=new_producer_id
        )

    def markers_written(
        self, *, transactional_id: str, producer_id: int, producer_epoch: int
    ) -> TxnResult[None]:
        stored = self._txns.get(transactional_id)
        if (
            stored is None
            or stored.state not in _PREPARING
            or stored.producer_id != producer_id
            or stored.producer_epoch != producer_epoch
        ):
            return CoordinatorResult((), None)
        committed = stored.state == TxnState.PREPARE_COMMIT
        metadata = replace(
            stored,
            state=TxnState.COMPLETE_COMMIT if committed else TxnState.COMPLETE_ABORT,
            partitions=frozenset(),
            last_update_ms=self._clock.wall_ms(),
        )
        if stored.next_producer_id != NO_PRODUCER_ID:  # the epoch ran out: the next id now
            metadata = replace(
                metadata,
                producer_id=stored.next_producer_id,
                previous_producer_id=stored.producer_id,
                next_producer_id=NO_PRODUCER_ID,
                producer_epoch=0,
            )
        return CoordinatorResult((metadata_record(metadata),), None)

    def abort_timed_out(self, now_ms: int) -> TxnResult[int]:
        """Abort every ongoing transaction past its timeout (`now_ms`: wall ms)."""
        records: list[TxnRecord] = []
        effects: list[object] = []
        for stored in self._txns.values():
            if stored.state != TxnState.ONGOING or stored.expired_at_ms() > now_ms:
                continue
            result = self._abort(stored, now_ms=now_ms, response=None)
            records.extend(result.records)
            effects.extend(result.effects)
        return CoordinatorResult(tuple(records), len(records), tuple(effects))

    def expire_transactional_ids(self, now_ms: int) -> TxnResult[int]:
        """Tombstones for ids left in a complete state for the expiration time."""
        expired = tuple(
            tombstone(t.transactional_id)
            for t in self._txns.values()
            if t.state in _COMPLETE and t.last_update_ms + self._expiration_ms <= now_ms
        )
        return CoordinatorResult(expired, len(expired))

    def prune_offset(self) -> int | None:
        """The lowest log offset a reload still needs (None: unknown or empty)."""
        return self._live.prune_offset()

    def rewrite_stale(self, *, window_records: int, records_max: int) -> TxnResult[int]:
        """The latest records of ids more than `window_records` below the end, again
        (at most `records_max`, oldest first)."""
        stale = self._live.stale(window_records=window_records)[:records_max]
        return CoordinatorResult(tuple(record for _offset, _tid, record in stale), len(stale))

    def pending_markers(self) -> tuple[WriteMarkers, ...]:
        return tuple(_markers(t) for t in self._txns.values() if t.state in _PREPARING)

    # ---- helpers

    def _abort(
        self, stored: TxnMetadata, *, now_ms: int, response: ResponseT
    ) -> TxnResult[ResponseT]:
        """PrepareAbort with the epoch bumped (fencing the current producer)."""
        metadata = replace(
            stored,
            producer_epoch=min(stored.producer_epoch + 1, PRODUCER_EPOCH_MAX),
            state=TxnState.PREPARE_ABORT,
            last_update_ms=now_ms,
        )
        return CoordinatorResult((metadata_record(metadata),), response, (_markers(metadata),))

    def _abort_nothing(
        self, stored: TxnMetadata, *, now_ms: int, new_producer_id: Callable[[], int]
    ) -> TxnResult[ProducerAnswer]:
        """Transaction version 2 (EndTxn v5+): an abort with no transaction ongoing
        still bumps the epoch (PrepareAbort of no partitions, then CompleteAbort), as
        Kafka 4.2's TransactionCoordinator.endTransaction does for an Empty or
        completed transaction."""
        return _prepare_bumped(
            stored,
            TxnState.PREPARE_ABORT,
            now_ms=now_ms,
            partitions=frozenset(),
            new_id=new_producer_id,
        )

    def _retried_end(
        self,
        stored: TxnMetadata | None,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        bump_epoch: bool,
    ) -> TxnResult[ProducerAnswer] | None:
        """The answer to an EndTxn that repeats a finished or preparing one."""
        if stored is None:
            return _answer(ErrorCode.invalid_producer_id_mapping)
        if stored.producer_id != producer_id:
            ran_out = (
                bump_epoch
                and producer_id == stored.previous_producer_id
                and producer_epoch == EPOCH_EXHAUSTED
                and stored.producer_epoch == 0
                and stored.state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
            )
            if not ran_out:
                return None
            return (
                _current(stored)
                if commit == (stored.state == TxnState.COMPLETE_COMMIT)
                else _answer(ErrorCode.invalid_txn_state)
            )
        # with a bump the stored epoch is one above the request's
        epoch_of_request = stored.producer_epoch - 1 if bump_epoch else stored.producer_epoch
        if producer_epoch != epoch_of_request or stored.state in (TxnState.ONGOING, TxnState.EMPTY):
            return None
        same = (commit and stored.state in (TxnState.COMPLETE_COMMIT, TxnState.PREPARE_COMMIT)) or (
            not commit and stored.state in (TxnState.COMPLETE_ABORT, TxnState.PREPARE_ABORT)
        )
        if not same:
            return _answer(ErrorCode.invalid_txn_state)
        if stored.state in _PREPARING:
            return _answer(ErrorCode.concurrent_transactions)
        return _current(stored)


def _producer_error(
    stored: TxnMetadata | None, producer_id: int, producer_epoch: int
) -> ErrorCode | None:
    if stored is None or stored.producer_id != producer_id:
        return ErrorCode.invalid_producer_id_mapping
    if producer_epoch != stored.producer_epoch:
        return ErrorCode.producer_fenced
    return None


def _retried_init(
    stored: TxnMetadata, producer_id: int, producer_epoch: int
) -> TxnResult[ProducerAnswer] | None:
    """An InitProducerId naming its current producer: a mismatch's error, or the
    answer to a retry of a bump already done; None to go on."""
    if producer_id == stored.producer_id:
        if producer_epoch == stored.producer_epoch:
            return None
        if producer_epoch == stored.producer_epoch - 1:
            if stored.state == TxnState.EMPTY:
                return _current(stored)  # a retry of the bump that made this epoch
            if stored.state == TxnState.COMPLETE_ABORT:
                return None  # the producer whose transaction the coordinator aborted
        return _answer(ErrorCode.producer_fenced)
    if (
        producer_id == stored.previous_producer_id
        and producer_epoch >= EPOCH_EXHAUSTED
        and stored.state in _COMPLETE
    ):
        # the producer whose epoch ran out (by InitProducerId or EndTxn v5), retrying
        return _current(stored)
    return _answer(ErrorCode.producer_fenced)  # Kafka's isValidProducerId


def _prepare_bumped(
    stored: TxnMetadata,
    prepare: TxnState,
    *,
    now_ms: int,
    partitions: frozenset[TopicPartition],
    new_id: Callable[[], int],
) -> TxnResult[ProducerAnswer]:
    """Transaction version 2's end (EndTxn v5+): PrepareCommit/PrepareAbort at the
    epoch bumped, markers at that epoch. When the epoch has run out (`EPOCH_EXHAUSTED`,
    Kafka's isEpochExhausted) a new producer id is drawn and recorded as the next one:
    the markers still go out under the old id at the last epoch, and completing the
    transaction moves the id to the new one at epoch 0 (Kafka's prepareAbortOrCommit
    and prepareComplete); the client is answered the new id and epoch 0."""
    exhausted = stored.producer_epoch >= EPOCH_EXHAUSTED
    metadata = replace(
        stored,
        producer_epoch=min(stored.producer_epoch + 1, PRODUCER_EPOCH_MAX),
        next_producer_id=new_id() if exhausted else NO_PRODUCER_ID,
        state=prepare,
        partitions=partitions,
        last_update_ms=now_ms,
        client_transaction_version=2,
    )
    answer = (
        ProducerAnswer(ErrorCode.none, metadata.next_producer_id, 0)
        if exhausted
        else ProducerAnswer(ErrorCode.none, metadata.producer_id, metadata.producer_epoch)
    )
    return CoordinatorResult((metadata_record(metadata),), answer, (_markers(metadata),))


def _markers(metadata: TxnMetadata) -> WriteMarkers:
    return WriteMarkers(
        transactional_id=metadata.transactional_id,
        producer_id=metadata.producer_id,
        producer_epoch=metadata.producer_epoch,
        control=COMMIT if metadata.state == TxnState.PREPARE_COMMIT else ABORT,
        coordinator_epoch=COORDINATOR_EPOCH,
        partitions=tuple(sorted(metadata.partitions)),
    )


def _answer(error: ErrorCode) -> TxnResult[ProducerAnswer]:
    return CoordinatorResult((), ProducerAnswer(error))


def _current(metadata: TxnMetadata) -> TxnResult[ProducerAnswer]:
    return CoordinatorResult(
        (), ProducerAnswer(ErrorCode.none, metadata.producer_id, metadata.producer_epoch)
    )


def _written(metadata: TxnMetadata) -> TxnResult[ProducerAnswer]:
    answer = ProducerAnswer(ErrorCode.none, metadata.producer_id, metadata.producer_epoch)
    return CoordinatorResult((metadata_record(metadata),), answer)
