"""The simulated broker of the coordinator scenario: the group and transaction
coordinators over real logs, driven through the cores' own entry points.

Logs (real `PartitionLog`s on disk): `sim-data-0` (a transactional producer's data
partition), `__consumer_offsets-0/1` (the group shard through a `RoutedRecordSink`,
as server/group_persistence.py routes it) and `__transaction_state-0` (the
`TransactionCoordinator` through a `LogRecordSink`, as server/txn_service.py).
A start replays both coordinator topics, then does what `GroupService.start` does
(topics, then `on_loaded`, written).

Owns: a process start and a crash (`abandon`, no shutdown step); the fault points of
every coordinator write (`FaultySink`: a crash before the append, a failed append,
a crash after the append with nothing replayed or answered); the record of which
log took the last write (for tearing it); the marker writing the transaction shell
does (`complete_markers`, TxnService.complete's steps: each partition's marker, then
`markers_written`) and the log maintenance passes (group/log_maintenance.py,
`TransactionCoordinator.maintain_log`). The flush policy of every log is the run's:
`flush.messages=1` (fsync per write) or Kafka's default (the page cache), except
`__transaction_state`, fsynced at every write under either, as the broker does it
(server/txn_service.py, "Durability").
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from shoal.clock import ManualClock
from shoal.coordinator.log_sink import LogRecordSink, RoutedRecordSink, read_log
from shoal.coordinator.placement import partition_for
from shoal.coordinator.runtime import (
    CoordinatorRuntime,
    RecordSink,
    RecordSinkError,
    RecordSinkUnavailable,
    WriteResult,
)
from shoal.group import GroupCoordinatorShard
from shoal.group.coordinator import DurableState
from shoal.group.log_maintenance import maintenance_pass
from shoal.group.records import CODEC as GROUP_CODEC
from shoal.group.records import CoordinatorRecord
from shoal.group.topics import TopicMetadata
from shoal.log import fileio
from shoal.log.api import AppendResult, LogError
from shoal.log.partition import PartitionLog
from shoal.log.transactions import ControlType
from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import validate_produced
from shoal.sim.faults import Faults
from shoal.txn import COMMIT, TransactionCoordinator, TxnMetadata, WriteMarkers
from shoal.txn.records import CODEC as TXN_CODEC

R = TypeVar("R")
T = TypeVar("T")

TOPIC = "sim-topic"
TOPIC_ID = uuid.UUID("5ea1ab1e-0000-4000-8000-000000000002")
TOPIC_PARTITIONS = 6
"""The topic the consumer group subscribes to (assignments and offsets only)."""
DATA_TOPIC = "sim-data"
OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_PARTITIONS = 2
CONSUMER_GROUP = "sim-cg"
TXN_GROUP = "sim-txn-group"
TXN_ID = "sim-txn"
TXN_TIMEOUT_MS = 60_000
BATCH_BYTES_MAX = 1 << 20
LOAD_BUFFER_BYTES = 64 * 1024
SEGMENT_BYTES = 8 * 1024
FLUSH_PER_WRITE = {"flush.messages": 1}


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What the coordinators hold, comparable across a crash."""

    group: DurableState
    txns: dict[str, TxnMetadata]


class FaultySink(Generic[R]):
    """A coordinator sink with the fault points of a write (module docstring)."""

    def __init__(self, sink: RecordSink[R], broker: CoordBroker) -> None:
        self._sink = sink
        self._broker = broker

    def append(self, records: Sequence[R], /) -> int | Sequence[int]:
        faults = self._broker.faults
        faults.crash_point("crash_before_write")
        if faults.fires("append_fails"):
            raise RecordSinkUnavailable("simulated storage error")
        appended = self._broker.tracked(lambda: self._sink.append(records))
        faults.crash_point("crash_after_write")
        return appended


class CoordBroker:
    """One incarnation of the simulated broker (a process lifetime)."""

    def __init__(
        self, *, directory: Path, clock: ManualClock, faults: Faults, flush_per_write: bool
    ) -> None:
        self.directory = directory
        self.clock = clock
        self.faults = faults
        config: dict[str, object] = {"segment.bytes": SEGMENT_BYTES}
        if flush_per_write:
            config.update(FLUSH_PER_WRITE)
        self._config = config
        self.data_log = self._open(f"{DATA_TOPIC}-0")
        self.offsets_logs = [self._open(f"{OFFSETS_TOPIC}-{p}") for p in range(2)]
        self.txn_log = self._open("__transaction_state-0")
        self.txn_log.flush_loaded()  # as server/txn_service.py loads it
        self.last_write: tuple[Path, int] | None = None
        """(log directory, bytes) of the latest write, for tearing."""
        self.group = CoordinatorRuntime(shard_factory=self.new_group_shard, sink=self._group_sink())
        self.group.load_at(self.read_group_log())
        self.txn = self.load_txn()
        self.recovered = self.snapshot()
        """The coordinators' state as replayed at start, before any write."""
        enabled, faults.enabled = faults.enabled, False
        try:
            self.group.apply(self.group.shard.on_topics_changed(topics=[_TOPIC]))
            self.group.apply(self.group.shard.on_loaded())
        finally:
            faults.enabled = enabled

    def _open(self, name: str) -> PartitionLog:
        return PartitionLog.open(
            directory=self.directory / name, config=dict(self._config), clock=self.clock
        )

    @property
    def logs(self) -> list[PartitionLog]:
        return [self.data_log, *self.offsets_logs, self.txn_log]

    # ---- the coordinators

    def new_group_shard(self) -> GroupCoordinatorShard:
        return GroupCoordinatorShard(clock=self.clock, log_partitions=OFFSETS_PARTITIONS)

    def _group_sink(self) -> FaultySink[CoordinatorRecord]:
        def route(record: CoordinatorRecord) -> int:
            return partition_for(record.key.group_id, OFFSETS_PARTITIONS)

        sinks = [
            LogRecordSink(log=log, encode=GROUP_CODEC.encode, clock=self.clock)
            for log in self.offsets_logs
        ]
        return FaultySink(RoutedRecordSink(sinks=sinks, route=route), self)

    def read_group_log(self) -> list[tuple[int, CoordinatorRecord]]:
        """Every `__consumer_offsets` record, partition by partition (group_persistence)."""
        return [
            pair
            for log in self.offsets_logs
            for pair in read_log(log, GROUP_CODEC.decode, buffer_bytes=LOAD_BUFFER_BYTES)
        ]

    def load_txn(self) -> TransactionCoordinator:
        sink = FaultySink(
            LogRecordSink(log=self.txn_log, encode=TXN_CODEC.encode, clock=self.clock, sync=True),
            self,
        )
        coordinator = TransactionCoordinator(
            sink_for=lambda _partition: sink,
            partitions=1,
            clock=self.clock,
            max_timeout_ms=900_000,
            transactional_id_expiration_ms=7 * 24 * 3_600_000,
        )
        pairs = list(read_log(self.txn_log, TXN_CODEC.decode, buffer_bytes=LOAD_BUFFER_BYTES))
        coordinator.runtime.load_partition(0, pairs)
        return coordinator

    def snapshot(self) -> Snapshot:
        return Snapshot(
            self.group.shard.durable_state(), dict(self.txn.shard_of(TXN_ID).transactions)
        )

    def rebuilt(self) -> Snapshot:
        """The coordinators replayed afresh from their logs (replay equals live)."""
        runtime = CoordinatorRuntime(shard_factory=self.new_group_shard, sink=self._group_sink())
        shard = runtime.load_at(self.read_group_log())
        txn = self.load_txn()
        return Snapshot(shard.durable_state(), dict(txn.shard_of(TXN_ID).transactions))

    def group_write(self, result: WriteResult[CoordinatorRecord, T]) -> T:
        """A group write as GroupService._write does it (records, replay, answer)."""
        return self.group.apply(result)

    # ---- data and markers

    def tracked(self, write: Callable[[], T]) -> T:
        """Run a write, remembering which log grew (and by how much) for tearing."""
        before = [(log.directory, log.size_bytes) for log in self.logs]
        result = write()
        for (directory, size), log in zip(before, self.logs, strict=True):
            if log.size_bytes > size:
                self.last_write = (directory, log.size_bytes - size)
        return result

    def append(self, records: bytes) -> AppendResult:
        headers = validate_produced(records, max_batch_bytes=BATCH_BYTES_MAX)
        return self.tracked(lambda: self.data_log.append(records, headers, leader_epoch=0))

    def txn_produce(
        self, records: bytes, transactional_id: str, producer_id: int, producer_epoch: int
    ) -> AppendResult | ErrorCode:
        """A transactional Produce as the server's handler does it: verified with the
        coordinator (verify-only AddPartitionsToTxn), then appended; an error code if
        the verification or the log refused it."""
        errors = self.txn.add_partitions(
            transactional_id=transactional_id,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            partitions=[(DATA_TOPIC, 0)],
            verify_only=True,
        )
        error = errors.get((DATA_TOPIC, 0), ErrorCode.invalid_txn_state)
        if error != ErrorCode.none:
            return error
        try:
            return self.append(records)
        except LogError as exc:
            return exc.code

    def complete_markers(self, markers: WriteMarkers) -> bool:
        """TxnService.complete: a marker on every partition, then `markers_written`.
        False if a marker or the completion record could not be written (the
        transaction stays preparing; the abort timer sends the markers again)."""
        for topic, partition in markers.partitions:
            try:
                if topic == OFFSETS_TOPIC:
                    self.group_write(
                        self.group.shard.complete_transaction(
                            offsets_partition=partition,
                            producer_id=markers.producer_id,
                            producer_epoch=markers.producer_epoch,
                            commit=markers.control == COMMIT,
                        )
                    )
                else:
                    assert (topic, partition) == (DATA_TOPIC, 0), (topic, partition)
                    self._append_control(markers)
            except (RecordSinkError, LogError):
                return False
            self.faults.crash_point("crash_between_markers")
        before = self.txn_log.log_end_offset
        self.txn.markers_written(markers)
        return self.txn_log.log_end_offset > before or self._completed(markers)

    def _append_control(self, markers: WriteMarkers) -> None:
        self.faults.crash_point("crash_before_write")
        if self.faults.fires("append_fails"):
            raise LogError(ErrorCode.kafka_storage_error, "simulated storage error")
        self.tracked(
            lambda: self.data_log.append_control(
                producer_id=markers.producer_id,
                producer_epoch=markers.producer_epoch,
                control=ControlType(markers.control),
                coordinator_epoch=markers.coordinator_epoch,
                timestamp_ms=self.clock.wall_ms(),
            )
        )
        self.faults.crash_point("crash_after_write")

    def _completed(self, markers: WriteMarkers) -> bool:
        metadata = self.txn.metadata(markers.transactional_id)
        return metadata is None or metadata.state.name.startswith("COMPLETE")

    # ---- maintenance

    def maintain_group_log(self, window_records: int) -> tuple[int, int]:
        return maintenance_pass(
            self.group,
            self.offsets_logs,
            window_records=window_records,
            records_max=64,
            remove_paths=fileio.remove_paths,
        )

    def maintain_txn_log(self, window_records: int) -> int:
        return self.txn.maintain_log(
            [self.txn_log], window_records=window_records, remove_paths=fileio.remove_paths
        )

    # ---- death

    def crash(self) -> None:
        for log in self.logs:
            log.abandon()


_TOPIC = TopicMetadata(topic_id=TOPIC_ID, name=TOPIC, partition_count=TOPIC_PARTITIONS)
