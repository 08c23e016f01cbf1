"""The simulated broker: one data partition and the share coordinator's state
partition, both real `PartitionLog`s on disk, driven through the cores' own entry
points (`SharePartitionManager`, `ShareCoordinator`, `LogRecordSink`, `read_log`).

Owns: opening and recovering the broker from its directory (a "process start"),
abandoning it as a crash would (`crash`), tearing the last written batch of a log
file, and the fault-injecting persister that can die between the state records
written and the answer returned. Nothing here decides what to do next: `world` does.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from shoal.clock import ManualClock
from shoal.coordinator.log_sink import LogRecordSink, read_log
from shoal.coordinator.runtime import RecordSinkUnavailable
from shoal.log.api import AppendResult
from shoal.log.partition import PartitionLog
from shoal.protocol.errors import ErrorCode
from shoal.protocol.record_batch import TRANSACTIONAL_MASK, encode_batch, validate_produced
from shoal.share.leader_settings import SharePartitionConfig
from shoal.share.persister import (
    ReadResult,
    SharePartitionKey,
    StateSummary,
    StateWrite,
)
from shoal.share.sessions import TopicIdPartition
from shoal.share_coordinator import ShareCoordinator
from shoal.share_coordinator.records import CODEC, ShareCoordinatorRecord
from shoal.share_coordinator.settings import ShareCoordinatorSettings
from shoal.share_coordinator.shard import KeyState
from shoal.sim.faults import Faults
from shoal.sim.share_leader import DrivenManager

TOPIC_ID = uuid.UUID("5ea1ab1e-0000-4000-8000-000000000001")
GROUP = "sim-group"
TP = TopicIdPartition(TOPIC_ID, 0)
KEY = SharePartitionKey(GROUP, TOPIC_ID, 0)
PRODUCER_ID = 1_000
BATCH_BYTES_MAX = 1 << 20
LOAD_BUFFER_BYTES = 64 * 1024
DATA_LOG_CONFIG = {"segment.bytes": 8 * 1024}
"""Small segments, so that runs roll segments (and recover sealed ones)."""
STATE_LOG_CONFIG = {"segment.bytes": 16 * 1024}
FLUSH_PER_WRITE = {"flush.messages": 1}
"""The flush policy of a run that fsyncs every write (else Kafka's default)."""


_TIMESTAMP_MS = 1_767_225_600_000
"""2026-01-01T00:00:00Z: every produced record's timestamp."""


def produced_batch(
    *,
    base_sequence: int,
    count: int,
    first_value: int,
    producer_epoch: int = 0,
    producer_id: int = PRODUCER_ID,
    transactional: bool = False,
) -> bytes:
    """One idempotent (or transactional) record batch of `count` records whose values
    are their numbers."""
    return encode_batch(
        [(None, str(first_value + index).encode()) for index in range(count)],
        timestamp_ms=_TIMESTAMP_MS,
        attributes=TRANSACTIONAL_MASK if transactional else 0,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )


class FailingSink:
    """The state log's sink, failing an append when the `state_append_fails` fault
    fires (a storage error: the coordinator answers COORDINATOR_NOT_AVAILABLE)."""

    def __init__(self, sink: LogRecordSink[ShareCoordinatorRecord], faults: Faults) -> None:
        self._sink = sink
        self._faults = faults

    def append(self, records: Sequence[ShareCoordinatorRecord], /) -> int:
        if self._faults.fires("state_append_fails"):
            raise RecordSinkUnavailable("simulated storage error")
        return self._sink.append(records)


class CrashingPersister:
    """The share coordinator as the manager's `Persister`, with crash points around
    each state write (the write path is where records land before an answer).
    `around_write` is told before and after each call that may append records."""

    def __init__(
        self,
        coordinator: ShareCoordinator,
        faults: Faults,
        around_write: Callable[[bool], None],
    ) -> None:
        self.coordinator = coordinator
        self._faults = faults
        self._around_write = around_write

    def initialize(
        self, *, key: SharePartitionKey, state_epoch: int, start_offset: int
    ) -> ErrorCode | None:
        return self.coordinator.initialize(
            key=key, state_epoch=state_epoch, start_offset=start_offset
        )

    def read(self, *, key: SharePartitionKey, leader_epoch: int) -> ReadResult:
        """A read records a raised leader epoch: a write like any other."""
        self._around_write(False)
        result = self.coordinator.read(key=key, leader_epoch=leader_epoch)
        self._around_write(True)
        return result

    def write(self, *, write: StateWrite) -> ErrorCode | None:
        self._faults.crash_point("crash_before_state_write")
        self._around_write(False)
        error = self.coordinator.write(write=write)
        self._around_write(True)
        self._faults.crash_point("crash_after_state_write")
        return error

    def delete(self, *, key: SharePartitionKey) -> ErrorCode | None:
        return self.coordinator.delete(key=key)

    def read_summary(self, *, key: SharePartitionKey, leader_epoch: int) -> StateSummary:
        return self.coordinator.read_summary(key=key, leader_epoch=leader_epoch)

    def partitions_with_state(self, *, group_id: str, topic_id: uuid.UUID) -> tuple[int, ...]:
        return self.coordinator.partitions_with_state(group_id=group_id, topic_id=topic_id)


class Broker:
    """One incarnation of the simulated broker (a process lifetime)."""

    def __init__(
        self,
        *,
        directory: Path,
        clock: ManualClock,
        faults: Faults,
        share_config: SharePartitionConfig,
        flush_per_write: bool = False,
    ) -> None:
        self.directory = directory
        flush = dict(FLUSH_PER_WRITE) if flush_per_write else {}
        self.clock = clock
        self.last_write: str | None = None
        """Which log took the latest write ("data" or "state"), for tearing."""
        self.last_write_bytes = 0
        self.states_after_writes: list[dict[SharePartitionKey, KeyState]] = []
        """The coordinator's states after each state write of the current step."""
        self.data_log = PartitionLog.open(
            directory=directory / "data-0", config=DATA_LOG_CONFIG | flush, clock=clock
        )
        self.state_log = PartitionLog.open(
            directory=directory / "__share_group_state-0",
            config=STATE_LOG_CONFIG | flush,
            clock=clock,
        )
        self._faults = faults
        self.coordinator = self.load_coordinator()
        self.persister = CrashingPersister(self.coordinator, faults, self._around_state_write)
        settings = replace(share_config, auto_offset_reset="earliest")
        self.manager = DrivenManager(
            clock=clock,
            logs=self._log_for,
            persister=self.persister,
            settings_for=lambda _: settings,
        )
        self._state_end = self.state_log.log_end_offset
        self._state_size = self.state_log.size_bytes

    def load_coordinator(self) -> ShareCoordinator:
        """A share coordinator rebuilt from the state log (as at start-up)."""
        sink = FailingSink(
            LogRecordSink(log=self.state_log, encode=CODEC.encode, clock=self.clock),
            self._faults,
        )
        coordinator = ShareCoordinator(
            sink_for=lambda _partition: sink,
            clock=self.clock,
            settings=ShareCoordinatorSettings(num_partitions=1, records_per_snapshot=8),
        )
        coordinator.runtime.load_partition(
            0, read_log(self.state_log, CODEC.decode, buffer_bytes=LOAD_BUFFER_BYTES)
        )
        return coordinator

    def _log_for(self, topic_id: uuid.UUID, partition: int) -> PartitionLog | ErrorCode:
        if (topic_id, partition) != (TOPIC_ID, 0):
            return ErrorCode.unknown_topic_or_partition
        return self.data_log

    def _around_state_write(self, done: bool) -> None:
        if not done:
            self._state_end = self.state_log.log_end_offset
            self._state_size = self.state_log.size_bytes
            return
        if self.state_log.log_end_offset == self._state_end:
            return
        self.last_write = "state"
        self.last_write_bytes = self.state_log.size_bytes - self._state_size
        self.states_after_writes.append(dict(self.coordinator.shard(0).states))

    def append(self, records: bytes) -> AppendResult:
        headers = validate_produced(records, max_batch_bytes=BATCH_BYTES_MAX)
        result = self.data_log.append(records, headers, leader_epoch=0)
        if not result.duplicate:
            self.last_write = "data"
            self.last_write_bytes = len(records)
        return result

    def crash(self) -> None:
        """Let go of everything without a shutdown step."""
        self.data_log.abandon()
        self.state_log.abandon()

    def tear_last_write(self, cut_bytes: int) -> str | None:
        """Cut `cut_bytes` (1 .. batch size - 1) off the end of the newest segment of the
        log that took the latest write; returns a description, or None if there was no
        write to tear. Call after `crash`."""
        if self.last_write is None or self.last_write_bytes <= 1:
            return None
        name = "data-0" if self.last_write == "data" else "__share_group_state-0"
        segments = sorted((self.directory / name).glob("*.log"))
        path = segments[-1]
        size = path.stat().st_size
        cut = 1 + cut_bytes % (self.last_write_bytes - 1)
        if cut > size:
            return None
        with path.open("r+b") as file:
            file.truncate(size - cut)
        return f"tore {cut} of the last {self.last_write_bytes} bytes of {name}/{path.name}"
