"""`TransactionCoordinator`: one `TxnShard` per partition of `__transaction_state`, each
on its own `CoordinatorRuntime`.

A transactional id lives on the partition Kafka places it on (`coordinator.placement`:
Java's String.hashCode, non-negative, modulo the partition count). Every operation
runs on that partition's shard and goes through `runtime.apply`: records appended,
replayed, then the response returned, with the result's effects (`WriteMarkers`) for
the caller to perform afterwards. A sink that fails becomes COORDINATOR_NOT_AVAILABLE
(the client retries) with nothing replayed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

from shoal import limits
from shoal.clock import Clock
from shoal.coordinator.placement import partition_for
from shoal.coordinator.pruning import RemovePaths, prune_log
from shoal.coordinator.runtime import CoordinatorRuntime, RecordSink, RecordSinkError
from shoal.log.partition import PartitionLog
from shoal.protocol.errors import ErrorCode
from shoal.txn.records import TxnRecord
from shoal.txn.shard import ProducerAnswer, TxnResult, TxnShard
from shoal.txn.state import TopicPartition, TxnMetadata, WriteMarkers

log = logging.getLogger(__name__)
ResponseT = TypeVar("ResponseT")


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
    ) -> None:
        def shard_factory() -> TxnShard:
            return TxnShard(
                clock=clock,
                max_timeout_ms=max_timeout_ms,
                transactional_id_expiration_ms=transactional_id_expiration_ms,
            )

        self._runtimes = tuple(
            CoordinatorRuntime(shard_factory=shard_factory, sink=sink_for(p))
            for p in range(partitions)
        )

    def partition_of(self, transactional_id: str) -> int:
        return partition_for(transactional_id, len(self._runtimes))

    def shard_of(self, transactional_id: str) -> TxnShard:
        return self._runtimes[self.partition_of(transactional_id)].shard

    def shards(self) -> Iterator[TxnShard]:
        return (runtime.shard for runtime in self._runtimes)

    def metadata(self, transactional_id: str) -> TxnMetadata | None:
        return self.shard_of(transactional_id).transactions.get(transactional_id)

    def load_partition(self, partition: int, pairs: Iterable[tuple[int, TxnRecord]]) -> TxnShard:
        return self._runtimes[partition].load_at(pairs)

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
        result = self.shard_of(transactional_id).init_producer_id(
            transactional_id=transactional_id,
            timeout_ms=timeout_ms,
            expected_producer_id=expected_producer_id,
            expected_producer_epoch=expected_producer_epoch,
            new_producer_id=new_producer_id,
        )
        failed = ProducerAnswer(ErrorCode.coordinator_not_available)
        return self._apply(transactional_id, result, failed)

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
        result = self.shard_of(transactional_id).add_partitions(
            transactional_id=transactional_id,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            partitions=wanted,
            verify_only=verify_only,
            client_transaction_version=client_transaction_version,
        )
        failed = dict.fromkeys(wanted, ErrorCode.coordinator_not_available)
        return self._apply(transactional_id, result, failed)[0]

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
        result = self.shard_of(transactional_id).end_txn(
            transactional_id=transactional_id,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            commit=commit,
            bump_epoch=bump_epoch,
            new_producer_id=new_producer_id,
        )
        failed = ProducerAnswer(ErrorCode.coordinator_not_available)
        return self._apply(transactional_id, result, failed)

    def markers_written(self, markers: WriteMarkers) -> None:
        result = self.shard_of(markers.transactional_id).markers_written(
            transactional_id=markers.transactional_id,
            producer_id=markers.producer_id,
            producer_epoch=markers.producer_epoch,
        )
        self._apply(markers.transactional_id, result, None)

    def abort_timed_out(self, now_ms: int) -> tuple[WriteMarkers, ...]:
        """Abort every timed-out transaction; the markers to write."""
        effects: list[WriteMarkers] = []
        for partition, runtime in enumerate(self._runtimes):
            result = runtime.shard.abort_timed_out(now_ms)
            if result.records and self._applied(partition, runtime, result):
                effects.extend(result.effects)
        return tuple(effects)

    def expire_transactional_ids(self, now_ms: int) -> int:
        expired = 0
        for partition, runtime in enumerate(self._runtimes):
            result = runtime.shard.expire_transactional_ids(now_ms)
            if result.records and self._applied(partition, runtime, result):
                expired += result.response
        return expired

    def prune_offsets(self) -> dict[int, int]:
        """Per partition, the offset below which its log is no longer needed."""
        offsets: dict[int, int] = {}
        for partition, runtime in enumerate(self._runtimes):
            offset = runtime.shard.prune_offset()
            if offset is not None:
                offsets[partition] = offset
        return offsets

    def rewrite_stale(self, *, window_records: int, records_per_append: int) -> int:
        """Re-append the latest record of ids left more than the window below their
        partition's end (one append of at most `records_per_append` per partition);
        how many were re-written."""
        written = 0
        for partition, runtime in enumerate(self._runtimes):
            result = runtime.shard.rewrite_stale(
                window_records=window_records, records_max=records_per_append
            )
            if result.records and self._applied(partition, runtime, result):
                written += result.response
        return written

    def maintain_log(
        self,
        partitions: Sequence[PartitionLog],
        *,
        window_records: int,
        remove_paths: RemovePaths,
    ) -> int:
        """One maintenance pass (the broker's timer and the simulation run it): re-write
        stale ids (`rewrite_stale`, at most `limits.COORDINATOR_REWRITE_RECORDS_PER_APPEND`
        per partition), then delete each of `partitions` below its `prune_offsets`.
        Returns how many partitions' log start moved."""
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

    def _apply(
        self, transactional_id: str, result: TxnResult[ResponseT], failed: ResponseT
    ) -> tuple[ResponseT, tuple[WriteMarkers, ...]]:
        partition = self.partition_of(transactional_id)
        if self._applied(partition, self._runtimes[partition], result):
            return result.response, result.effects
        return failed, ()

    @staticmethod
    def _applied(
        partition: int,
        runtime: CoordinatorRuntime[TxnShard, TxnRecord],
        result: TxnResult[ResponseT],
    ) -> bool:
        try:
            runtime.apply(result)
        except RecordSinkError as exc:
            log.warning(
                "__transaction_state-%d: %d records not written: %s",
                partition,
                len(result.records),
                exc,
            )
            return False
        return True
