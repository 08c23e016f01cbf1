"""`TransactionCoordinator`: one `TxnShard` per partition of `__transaction_state`, all
hosted by one coordinator runtime.

A transactional id lives on the partition Kafka places it on (the runtime's
`Placement`: Java's String.hashCode, non-negative, modulo the partition count).
Every operation is a runtime write on that partition: records appended, replayed,
the effects (`WriteMarkers`) handed to the host's effect handler, then the response
returned together with those effects (the request handler waits for its markers
before answering, server/services/txn_service.py). A sink that fails becomes
COORDINATOR_NOT_AVAILABLE (the client retries) with nothing replayed.

Timed writes (`schedule`, run by the runtime's `fire` from the host's timer driver):
the abort of timed-out transactions (with the markers of transactions left
preparing sent again, as effects), the expiry of idle transactional ids, and the
log maintenance pass (stale ids re-written, then each partition's prune offset
reported for the host to delete). `abort_timed_out`, `expire_transactional_ids`,
`rewrite_stale` and `maintain_log` run the same steps at once (tests, the simulator).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

from shoal import limits
from shoal.clock import Clock
from shoal.coordinator.placement import Placement
from shoal.coordinator.pruning import RemovePaths, prune_log
from shoal.coordinator.result import CoordinatorResult
from shoal.coordinator.runtime import (
    CoordinatorRuntime,
    CoordinatorUnavailable,
    Loader,
    RecordSink,
    TimedWrite,
)
from shoal.log.partition import PartitionLog
from shoal.protocol.errors import ErrorCode
from shoal.txn.records import TxnRecord
from shoal.txn.shard import ProducerAnswer, TxnResult, TxnShard
from shoal.txn.state import TopicPartition, TxnMetadata, WriteMarkers

log = logging.getLogger(__name__)
ResponseT = TypeVar("ResponseT")

TRANSACTION_STATE_TOPIC = "__transaction_state"
ABORT_TIMED_OUT = "txn-abort-timed-out"
EXPIRE_IDS = "txn-expire-ids"
MAINTENANCE = "txn-state-log-maintenance"

TxnRuntime = CoordinatorRuntime[TxnShard, TxnRecord]


def markers_of(effects: Iterable[object]) -> tuple[WriteMarkers, ...]:
    """The `WriteMarkers` among a result's effects (the only kind a `TxnShard` returns)."""
    markers = tuple(effects)
    assert all(isinstance(m, WriteMarkers) for m in markers), markers
    return markers  # type: ignore[return-value]


class TransactionCoordinator:
    """The shards of every `__transaction_state` partition. See the module docstring."""

    def __init__(
        self,
        *,
        sink_for: Callable[[int], RecordSink[TxnRecord]],
        partitions: int,
        clock: Clock,
        max_timeout_ms: int,
        transactional_id_expiration_ms: int,
        loader: Loader | None = None,
    ) -> None:
        self._clock = clock

        def new_shard(_partition: int) -> TxnShard:
            return TxnShard(
                clock=clock,
                max_timeout_ms=max_timeout_ms,
                transactional_id_expiration_ms=transactional_id_expiration_ms,
            )

        self.runtime: TxnRuntime = CoordinatorRuntime(
            new_shard=new_shard,
            sinks=[sink_for(p) for p in range(partitions)],
            name=TRANSACTION_STATE_TOPIC,
            placement=Placement(partitions, key_text=str),
            loader=loader,
            prune_offset=TxnShard.prune_offset,
        )

    def schedule(
        self,
        *,
        abort_interval_ms: Callable[[], int],
        expire_interval_ms: Callable[[], int],
        maintenance_interval_ms: Callable[[], int],
        window_records: Callable[[], int],
    ) -> None:
        """Register the coordinator's timed writes on its runtime (module docstring)."""
        clock = self._clock

        def abort(shard: TxnShard, _now: int) -> TxnResult[int]:
            aborted = shard.abort_timed_out(clock.wall_ms())
            # the markers of transactions left preparing go out again (idempotent)
            resend = shard.pending_markers()
            return CoordinatorResult(aborted.records, aborted.response, aborted.effects + resend)

        def rewrite(shard: TxnShard, _now: int) -> TxnResult[int]:
            return shard.rewrite_stale(
                window_records=window_records(),
                records_max=limits.COORDINATOR_REWRITE_RECORDS_PER_APPEND,
            )

        self.runtime.add_timed(
            TimedWrite(ABORT_TIMED_OUT, operation=abort, interval_ms=abort_interval_ms),
            TimedWrite(
                EXPIRE_IDS,
                operation=lambda shard, _now: shard.expire_transactional_ids(clock.wall_ms()),
                interval_ms=expire_interval_ms,
            ),
            TimedWrite(
                MAINTENANCE, operation=rewrite, interval_ms=maintenance_interval_ms, then_prune=True
            ),
        )

    def shard_of(self, transactional_id: str) -> TxnShard:
        return self.runtime.shard_at(self.runtime.partition_of(transactional_id))

    def shards(self) -> Iterator[TxnShard]:
        return (shard for _, shard in self.runtime.shards())

    def metadata(self, transactional_id: str) -> TxnMetadata | None:
        return self.shard_of(transactional_id).transactions.get(transactional_id)

    # ---- operations: (response, effects)

    def init_producer_id(
        self,
        *,
        transactional_id: str,
        timeout_ms: int,
        expected_producer_id: int,
        expected_producer_epoch: int,
        new_producer_id: Callable[[], int],
    ) -> tuple[ProducerAnswer, tuple[WriteMarkers, ...]]:
        failed = ProducerAnswer(ErrorCode.coordinator_not_available)
        return self._write(
            transactional_id,
            lambda shard: shard.init_producer_id(
                transactional_id=transactional_id,
                timeout_ms=timeout_ms,
                expected_producer_id=expected_producer_id,
                expected_producer_epoch=expected_producer_epoch,
                new_producer_id=new_producer_id,
            ),
            failed,
        )

    def add_partitions(
        self,
        *,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        verify_only: bool = False,
        client_transaction_version: int = 0,
    ) -> dict[TopicPartition, ErrorCode]:
        wanted = tuple(partitions)
        failed = dict.fromkeys(wanted, ErrorCode.coordinator_not_available)
        return self._write(
            transactional_id,
            lambda shard: shard.add_partitions(
                transactional_id=transactional_id,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                partitions=wanted,
                verify_only=verify_only,
                client_transaction_version=client_transaction_version,
            ),
            failed,
        )[0]

    def end_txn(
        self,
        *,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        bump_epoch: bool,
        new_producer_id: Callable[[], int],
    ) -> tuple[ProducerAnswer, tuple[WriteMarkers, ...]]:
        failed = ProducerAnswer(ErrorCode.coordinator_not_available)
        return self._write(
            transactional_id,
            lambda shard: shard.end_txn(
                transactional_id=transactional_id,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                commit=commit,
                bump_epoch=bump_epoch,
                new_producer_id=new_producer_id,
            ),
            failed,
        )

    def markers_written(self, markers: WriteMarkers) -> None:
        self._write(
            markers.transactional_id,
            lambda shard: shard.markers_written(
                transactional_id=markers.transactional_id,
                producer_id=markers.producer_id,
                producer_epoch=markers.producer_epoch,
            ),
            None,
        )

    # ---- the timed steps, at once

    def abort_timed_out(self, now_ms: int) -> tuple[WriteMarkers, ...]:
        """Abort every timed-out transaction (`now_ms`: wall ms); the markers to write."""
        written = self.runtime.write_all(lambda shard: shard.abort_timed_out(now_ms))
        return tuple(m for _, result in written for m in markers_of(result.effects))

    def expire_transactional_ids(self, now_ms: int) -> int:
        written = self.runtime.write_all(lambda shard: shard.expire_transactional_ids(now_ms))
        return sum(result.response for _, result in written)

    def prune_offsets(self) -> dict[int, int]:
        """Per partition, the offset below which its log is no longer needed."""
        return self.runtime.prune_offsets()

    def rewrite_stale(self, *, window_records: int, records_per_append: int) -> int:
        """Re-append the latest record of ids left more than the window below their
        partition's end (one append of at most `records_per_append` per partition);
        how many were re-written."""
        written = self.runtime.write_all(
            lambda shard: shard.rewrite_stale(
                window_records=window_records, records_max=records_per_append
            )
        )
        return sum(result.response for _, result in written)

    def maintain_log(
        self,
        partitions: Sequence[PartitionLog],
        *,
        window_records: int,
        remove_paths: RemovePaths,
    ) -> int:
        """One maintenance pass at once: re-write stale ids (`rewrite_stale`, at most
        `limits.COORDINATOR_REWRITE_RECORDS_PER_APPEND` per partition), then delete
        each of `partitions` below its `prune_offsets`. Returns how many partitions'
        log start moved."""
        self.rewrite_stale(
            window_records=window_records,
            records_per_append=limits.COORDINATOR_REWRITE_RECORDS_PER_APPEND,
        )
        moved = 0
        for index, offset in sorted(self.prune_offsets().items()):
            if index < len(partitions) and prune_log(
                partitions[index], offset, remove_paths=remove_paths
            ):
                moved += 1
        return moved

    def pending_markers(self) -> tuple[WriteMarkers, ...]:
        return tuple(m for shard in self.shards() for m in shard.pending_markers())

    def _write(
        self,
        transactional_id: str,
        op: Callable[[TxnShard], TxnResult[ResponseT]],
        failed: ResponseT,
    ) -> tuple[ResponseT, tuple[WriteMarkers, ...]]:
        partition = self.runtime.partition_of(transactional_id)
        try:
            result = self.runtime.write(partition, op)
        except CoordinatorUnavailable as exc:
            log.warning("%s-%d: not written: %s", TRANSACTION_STATE_TOPIC, partition, exc)
            return failed, ()
        return result.response, markers_of(result.effects)
