"""The persister as the broker hands it out with metrics on: the share coordinator, timed.

`TimedPersister` delegates every call to the share coordinator (the `Persister`) and
observes two of them: `read`, which is how a share-partition loads its state (Kafka's
share-group `partition-load-time`), and `write`, the share coordinator's write
latency (`write-latency`; with `share.coordinator.append.linger.ms` the records are
staged when it returns, and the response still waits for them, server/services/state_linger.py).
The other calls pass through untimed.
"""

from __future__ import annotations

import uuid

from shoal.clock import measure_ns
from shoal.protocol.errors import ErrorCode
from shoal.server.observability.metric_families import HistogramFamily
from shoal.share.persister import (
    Persister,
    ReadResult,
    SharePartitionKey,
    StateSummary,
    StateWrite,
)


class TimedPersister:
    def __init__(
        self, inner: Persister, *, load_time: HistogramFamily, write_latency: HistogramFamily
    ) -> None:
        self._inner = inner
        self._load_time = load_time
        self._write_latency = write_latency

    def initialize(
        self, *, key: SharePartitionKey, state_epoch: int, start_offset: int
    ) -> ErrorCode | None:
        return self._inner.initialize(key=key, state_epoch=state_epoch, start_offset=start_offset)

    def read(self, *, key: SharePartitionKey, leader_epoch: int) -> ReadResult:
        started_ns = measure_ns()
        try:
            return self._inner.read(key=key, leader_epoch=leader_epoch)
        finally:
            self._load_time.observe((), (measure_ns() - started_ns) / 1e9)

    def write(self, *, write: StateWrite) -> ErrorCode | None:
        started_ns = measure_ns()
        try:
            return self._inner.write(write=write)
        finally:
            self._write_latency.observe((), (measure_ns() - started_ns) / 1e9)

    def delete(self, *, key: SharePartitionKey) -> ErrorCode | None:
        return self._inner.delete(key=key)

    def read_summary(self, *, key: SharePartitionKey, leader_epoch: int) -> StateSummary:
        return self._inner.read_summary(key=key, leader_epoch=leader_epoch)

    def partitions_with_state(self, *, group_id: str, topic_id: uuid.UUID) -> tuple[int, ...]:
        return self._inner.partitions_with_state(group_id=group_id, topic_id=topic_id)
