"""A transaction coordinator over in-memory sinks on the manual clock, reloadable
from what the sinks hold (a restart)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from shoal.clock import ManualClock
from shoal.coordinator.runtime import InMemoryRecordSink
from shoal.txn import TransactionCoordinator, WriteMarkers
from shoal.txn.records import CODEC, TxnRecord

PARTITIONS = 3
MAX_TIMEOUT_MS = 900_000
EXPIRATION_MS = 604_800_000


@dataclass
class Rig:
    clock: ManualClock = field(default_factory=ManualClock)
    sinks: list[InMemoryRecordSink[TxnRecord]] = field(
        default_factory=lambda: [InMemoryRecordSink() for _ in range(PARTITIONS)]
    )
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1000))
    coordinator: TransactionCoordinator = field(init=False)

    def __post_init__(self) -> None:
        self.coordinator = self._new()

    def _new(self) -> TransactionCoordinator:
        return TransactionCoordinator(
            sink_for=self.sinks.__getitem__,
            partitions=PARTITIONS,
            clock=self.clock,
            max_timeout_ms=MAX_TIMEOUT_MS,
            transactional_id_expiration_ms=EXPIRATION_MS,
        )

    def restart(self) -> None:
        """A new coordinator loaded from the bytes of every record written so far."""
        self.coordinator = self._new()
        for partition, sink in enumerate(self.sinks):
            pairs = [(i, CODEC.decode(*CODEC.encode(r))) for i, r in enumerate(sink.records)]
            self.coordinator.runtime.load_partition(partition, pairs)

    def init(self, tid: str, *, timeout_ms: int = 60_000, pid: int = -1, epoch: int = -1):  # type: ignore[no-untyped-def]
        return self.coordinator.init_producer_id(
            transactional_id=tid,
            timeout_ms=timeout_ms,
            expected_producer_id=pid,
            expected_producer_epoch=epoch,
            new_producer_id=lambda: next(self.ids),
        )

    def add(
        self,
        tid: str,
        pid: int,
        epoch: int,
        *partitions: tuple[str, int],
        verify: bool = False,
        tv: int = 0,
    ):  # type: ignore[no-untyped-def]
        return self.coordinator.add_partitions(
            transactional_id=tid,
            producer_id=pid,
            producer_epoch=epoch,
            partitions=partitions,
            verify_only=verify,
            client_transaction_version=tv,
        )

    def end(self, tid: str, pid: int, epoch: int, *, commit: bool, bump: bool = False):  # type: ignore[no-untyped-def]
        return self.coordinator.end_txn(
            transactional_id=tid,
            producer_id=pid,
            producer_epoch=epoch,
            commit=commit,
            bump_epoch=bump,
            new_producer_id=lambda: next(self.ids),
        )

    def complete(self, effects: tuple[WriteMarkers, ...]) -> None:
        for markers in effects:
            self.coordinator.markers_written(markers)
