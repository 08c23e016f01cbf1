"""The transaction coordinator in the running broker: `__transaction_state`, loading,
marker writing and its timers.

`TxnService.open` loads an existing state topic before the broker serves anything:
the `TransactionCoordinator` (txn/) with one `LogRecordSink` per partition, every
partition replayed. A broker without the topic creates it on first use of the
coordinator (`transaction.state.log.num.partitions` partitions, internal, infinite
retention), as Kafka creates it on first need, so brokers that never see a
transaction do not carry its 50 partitions.

Durability. Every append to `__transaction_state` is fsynced before the coordinator
replays it or anyone is answered (`LogRecordSink(sync=True)`), whatever the flush
policy. Without it, a power loss under the page cache (Kafka's default policy) may
take an epoch bump (InitProducerId, a timed-out abort's fence) from the state topic
while a data partition's log kept a batch or a marker at the bumped epoch; the
reloaded coordinator then sends markers at the older epoch, the partition refuses them
(INVALID_PRODUCER_EPOCH, a marker below the producer's epoch) and the transaction
stays PrepareCommit/PrepareAbort for ever. Kafka's marker handler also gives up on
that error (the epoch moved on: someone newer owns the transaction); Kafka avoids the
state by replicating the topic with acks=all, which a single node cannot. With the
fsync, every epoch, producer id and partition any data log can hold was durable in
`__transaction_state` before a client or a marker could carry it, in every schedule
(a crash between a write and its fsync leaves the record in the page cache only: the
load fsyncs each partition before the coordinator acts on it, `flush_loaded`).
The other fix considered, reconciling on load with the data logs' producer state
(markers at an epoch bumped past theirs), cannot recover a state record lost whole
(the producer id unknown to the coordinator) and would issue epochs the coordinator
never recorded. The cost is a few fsyncs per transaction (InitProducerId,
AddPartitionsToTxn/AddOffsetsToTxn, the prepare and complete records; measured in
bench/transactions.py, its latest run in bench/results/transactions.json).

Markers. Writing one `WriteMarkers` effect: for each partition of the transaction, a
`__consumer_offsets` partition goes to the group coordinator (`complete_transaction`,
which materialises or drops that producer's pending offsets), any other to the
partition's log (`append_control`, one control batch). Once every partition has its
marker (a partition whose topic is gone counts as done, as in Kafka),
`markers_written` writes CompleteCommit/CompleteAbort. A partition that fails leaves
the transaction preparing; the abort timer sends its markers again (markers are
idempotent on the log side). WriteTxnMarkers (API 27) goes through the same
`write_markers`.

Shoal writes the markers before it answers EndTxn (Kafka answers once the prepare
record is written and sends markers afterwards): on one node they are local appends,
and the producer's next transaction then does not meet CONCURRENT_TRANSACTIONS.

Timers. The coordinator's timed writes (txn/coordinator.py, `schedule`: aborting
timed-out transactions and resending stuck markers, expiring idle ids, re-writing
stale ids and pruning) run on its runtime, hooked to the broker's timer driver as
one source (server/services/coordinator_host.py), with their intervals read from the config.

Effects. The runtime hands every `WriteMarkers` effect to `_on_effects`, which starts
writing them on the loop (one task per transactional id at a time); a request that
got effects back awaits those tasks (`complete_all`) before it answers.

The marker targets are Protocols: `ControlAppender` is what `PartitionLog.append_control`
offers (log/, the interface in notes/s3/txn-interfaces.md), `GroupTransactions` is what
`GroupService.complete_transaction` offers.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from typing import Protocol

from shoal.clock import Clock
from shoal.config import BrokerConfig, broker_keys
from shoal.coordinator.internal_topics import ensure_internal_topic
from shoal.coordinator.log_sink import LogRecordSink
from shoal.coordinator.placement import partition_for
from shoal.coordinator.pruning import RemovePaths
from shoal.log import fileio
from shoal.log.api import LogError
from shoal.log.manager import LogManager
from shoal.log.partition import PartitionLog
from shoal.log.transactions import ControlType
from shoal.protocol.errors import ErrorCode
from shoal.server.services.coordinator_host import LogLoader, RuntimeTimer, load_all
from shoal.server.services.timers import TimerSource
from shoal.txn import COMMIT, TransactionCoordinator, WriteMarkers
from shoal.txn.coordinator import TRANSACTION_STATE_TOPIC, markers_of
from shoal.txn.records import CODEC
from shoal.txn.state import TopicPartition

log = logging.getLogger(__name__)

CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"

__all__ = [
    "CONSUMER_OFFSETS_TOPIC",
    "TRANSACTION_STATE_TOPIC",
    "ControlAppender",
    "GroupTransactions",
    "TxnService",
]


class ControlAppender(Protocol):
    """A data partition's log as the marker writer uses it."""

    def append_control(
        self,
        *,
        producer_id: int,
        producer_epoch: int,
        control: ControlType,
        coordinator_epoch: int,
        timestamp_ms: int,
    ) -> int: ...


class GroupTransactions(Protocol):
    """The group coordinator as the marker writer uses it."""

    async def complete_transaction(
        self, *, offsets_partition: int, producer_id: int, producer_epoch: int, commit: bool
    ) -> None: ...


class TxnService:
    """The broker's transaction coordinator. See the module docstring."""

    def __init__(
        self,
        *,
        coordinator: TransactionCoordinator | None = None,
        open_state: Callable[[], tuple[TransactionCoordinator, list[PartitionLog]]] | None = None,
        clock: Clock,
        config: Callable[[], BrokerConfig],
        control_target: Callable[[str, int], ControlAppender | None],
        group_transactions: GroupTransactions,
        allocate_producer_id: Callable[[], int],
        offsets_partitions: Callable[[], int],
        partitions: list[PartitionLog] | None = None,
        remove_paths: RemovePaths = fileio.remove_paths,
    ) -> None:
        assert (coordinator is None) != (open_state is None), "a coordinator or its opener"
        self._coordinator: TransactionCoordinator | None = None
        self._open_state = open_state
        self._partitions = partitions or []
        self._remove_paths = remove_paths
        self._clock = clock
        self._config = config
        self._control_target = control_target
        self._group = group_transactions
        self.allocate_producer_id = allocate_producer_id
        self._offsets_partitions = offsets_partitions
        self._tasks: dict[str, asyncio.Task[bool]] = {}
        """The markers being written, per transactional id (one task at a time)."""
        if coordinator is not None:
            self._adopt(coordinator)

    @classmethod
    def open(
        cls,
        logs: LogManager,
        config: Callable[[], BrokerConfig],
        clock: Clock,
        *,
        control_target: Callable[[str, int], ControlAppender | None],
        group_transactions: GroupTransactions,
        remove_paths: RemovePaths = fileio.remove_paths,
    ) -> TxnService:
        """The service; `__transaction_state` is loaded now if it exists, else created
        and opened on first use."""

        def open_state() -> tuple[TransactionCoordinator, list[PartitionLog]]:
            return _open_state(logs, config(), clock)

        def offsets_partitions() -> int:
            info = logs.topic(CONSUMER_OFFSETS_TOPIC)
            return info.partitions if info is not None else 1

        service = cls(
            open_state=open_state,
            clock=clock,
            config=config,
            control_target=control_target,
            group_transactions=group_transactions,
            allocate_producer_id=logs.allocate_producer_id,
            offsets_partitions=offsets_partitions,
            remove_paths=remove_paths,
        )
        if logs.topic(TRANSACTION_STATE_TOPIC) is not None:
            _ = service.coordinator
        return service

    @property
    def opened(self) -> bool:
        return self._coordinator is not None

    @property
    def coordinator(self) -> TransactionCoordinator:
        """The coordinator, opening `__transaction_state` first if it is not yet."""
        if self._coordinator is None:
            assert self._open_state is not None
            coordinator, self._partitions = self._open_state()
            self._adopt(coordinator)
            assert self._coordinator is not None
        return self._coordinator

    def _adopt(self, coordinator: TransactionCoordinator) -> None:
        """Take `coordinator` on: its timed writes and its effects."""

        def interval(key: str) -> Callable[[], int]:
            return lambda: self._config().get_int(key)

        coordinator.schedule(
            abort_interval_ms=interval(
                "transaction.abort.timed.out.transaction.cleanup.interval.ms"
            ),
            expire_interval_ms=interval(
                "transaction.remove.expired.transaction.cleanup.interval.ms"
            ),
            maintenance_interval_ms=interval("transaction.state.log.prune.interval.ms"),
            window_records=interval("transaction.state.log.rewrite.window.records"),
        )
        coordinator.runtime.on_effects(self._on_effects)
        self._coordinator = coordinator

    def offsets_partition(self, group_id: str) -> TopicPartition:
        """The `__consumer_offsets` partition of a group (AddOffsetsToTxn adds it)."""
        return CONSUMER_OFFSETS_TOPIC, partition_for(group_id, self._offsets_partitions())

    # ---- markers

    async def complete_all(self, effects: tuple[WriteMarkers, ...]) -> None:
        """Return once the markers of every effect are written and their transactions
        complete (or failed: retried by the abort timer)."""
        for markers in effects:
            await self.complete(markers)

    async def complete(self, markers: WriteMarkers) -> bool:
        """Await the writing of `markers` (started now unless `_on_effects` did);
        False if a partition failed (the transaction stays preparing)."""
        return await asyncio.shield(self._writing(markers))

    def _writing(self, markers: WriteMarkers) -> asyncio.Task[bool]:
        """The task writing the markers of `markers.transactional_id`: one at a time."""
        task = self._tasks.get(markers.transactional_id)
        if task is None or task.done():
            task = asyncio.get_running_loop().create_task(self._write_and_complete(markers))
            self._tasks[markers.transactional_id] = task
            task.add_done_callback(functools.partial(self._task_done, markers.transactional_id))
        return task

    async def _write_and_complete(self, markers: WriteMarkers) -> bool:
        errors = await self.write_markers(markers)
        failed = {tp: e for tp, e in errors.items() if e not in _DONE}
        if failed:
            log.warning(
                "markers of transactional id %r (producer %d epoch %d) not all written, "
                "retried later: %s",
                markers.transactional_id,
                markers.producer_id,
                markers.producer_epoch,
                {f"{t}-{p}": e.name for (t, p), e in failed.items()},
            )
            return False
        self.coordinator.markers_written(markers)
        return True

    async def write_markers(self, markers: WriteMarkers) -> dict[TopicPartition, ErrorCode]:
        """One marker per partition; each partition's error (NONE when written)."""
        errors: dict[TopicPartition, ErrorCode] = {}
        for topic, partition in markers.partitions:
            errors[(topic, partition)] = await self._write_one(markers, topic, partition)
        return errors

    async def _write_one(self, markers: WriteMarkers, topic: str, partition: int) -> ErrorCode:
        if topic == CONSUMER_OFFSETS_TOPIC:
            try:
                await self._group.complete_transaction(
                    offsets_partition=partition,
                    producer_id=markers.producer_id,
                    producer_epoch=markers.producer_epoch,
                    commit=markers.control == COMMIT,
                )
            except LogError as exc:
                log.warning("offsets marker on %s-%d failed: %s", topic, partition, exc)
                return exc.code
            return ErrorCode.none
        target = self._control_target(topic, partition)
        if target is None:
            return ErrorCode.unknown_topic_or_partition
        try:
            target.append_control(
                producer_id=markers.producer_id,
                producer_epoch=markers.producer_epoch,
                control=ControlType(markers.control),
                coordinator_epoch=markers.coordinator_epoch,
                timestamp_ms=self._clock.wall_ms(),
            )
        except LogError as exc:
            log.warning("marker on %s-%d failed: %s", topic, partition, exc)
            return exc.code
        return ErrorCode.none

    # ---- background work

    def start(self) -> None:
        """Send the markers of transactions a restart found preparing."""
        if self.opened:
            self._spawn(self.coordinator.pending_markers())

    async def stop(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _on_effects(self, _partition: int, effects: tuple[object, ...]) -> None:
        """The runtime's effect handler: start writing the markers on the loop.
        Outside a running loop (tests, tools) the caller writes those it got back."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        self._spawn(markers_of(effects))

    def _spawn(self, effects: tuple[WriteMarkers, ...]) -> None:
        for markers in effects:
            self._writing(markers)

    def _task_done(self, transactional_id: str, task: asyncio.Task[bool]) -> None:
        if self._tasks.get(transactional_id) is task:
            del self._tasks[transactional_id]
        if not task.cancelled() and task.exception() is not None:
            log.error(
                "writing transaction markers failed; retried by the abort timer",
                exc_info=task.exception(),
            )

    def abort_timed_out(self) -> int:
        """Abort timed-out transactions and resend the markers of stuck preparing ones
        now (the timed write's steps at once); how many were aborted."""
        if not self.opened:
            return 0
        aborted = self.coordinator.abort_timed_out(self._clock.wall_ms())
        self._spawn(aborted)
        self._spawn(self.coordinator.pending_markers())
        return len(aborted)

    def timer_sources(self) -> list[TimerSource]:
        """The coordinator runtime's timed writes, as one source (nothing is armed
        before `__transaction_state` is opened)."""
        timed = RuntimeTimer(
            "txn-coordinator",
            runtime=lambda: self.coordinator.runtime if self.opened else None,
            partitions=lambda: self._partitions,
            remove_paths=self._remove_paths,
        )
        return [timed]


def _open_state(
    logs: LogManager, config: BrokerConfig, clock: Clock
) -> tuple[TransactionCoordinator, list[PartitionLog]]:
    """Ensure `__transaction_state`, then load every partition's shard."""
    partitions = ensure_internal_topic(
        logs,
        name=TRANSACTION_STATE_TOPIC,
        partitions=config.get(broker_keys.TRANSACTION_STATE_LOG_NUM_PARTITIONS),
        configs={"segment.bytes": config.get(broker_keys.TRANSACTION_STATE_LOG_SEGMENT_BYTES)},
    )
    sinks = [LogRecordSink(log=p, encode=CODEC.encode, clock=clock, sync=True) for p in partitions]
    buffer_bytes = config.get(broker_keys.TRANSACTION_STATE_LOG_LOAD_BUFFER_SIZE)
    loader = LogLoader(partitions, CODEC.decode, buffer_bytes=buffer_bytes, flush_first=True)
    coordinator = TransactionCoordinator(
        sink_for=sinks.__getitem__,
        partitions=len(partitions),
        clock=clock,
        max_timeout_ms=config.get(broker_keys.TRANSACTION_MAX_TIMEOUT_MS),
        transactional_id_expiration_ms=config.get(broker_keys.TRANSACTIONAL_ID_EXPIRATION_MS),
        loader=loader,
    )
    load_all(coordinator.runtime, loader, clock=clock, what="transaction coordinator")
    return coordinator, partitions


_DONE = frozenset({ErrorCode.none, ErrorCode.unknown_topic_or_partition})
"""Marker outcomes that complete a partition (a deleted partition needs no marker)."""
