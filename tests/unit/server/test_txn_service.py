"""The transaction shell's marker writing, against a marker target that records calls
(the log side and the group side are other packages' and tested there)."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.coordinator.runtime import InMemoryRecordSink
from shoal.log.api import LogError
from shoal.log.manager import LogManager
from shoal.protocol.errors import ErrorCode
from shoal.server.services.txn_service import TxnService
from shoal.sim.disk import Disk
from shoal.txn import ABORT, COMMIT, TransactionCoordinator, TxnState
from shoal.txn.records import TxnRecord


@dataclass
class RecordingLog:
    calls: list[dict[str, Any]] = field(default_factory=list)
    fail: bool = False

    def append_control(self, **marker: Any) -> int:
        if self.fail:
            raise LogError(ErrorCode.kafka_storage_error, "disk gone")
        self.calls.append(marker)
        return len(self.calls) - 1


@dataclass
class RecordingGroups:
    calls: list[dict[str, Any]] = field(default_factory=list)

    async def complete_transaction(self, **marker: Any) -> None:
        self.calls.append(marker)


def make_service() -> tuple[TxnService, dict[tuple[str, int], RecordingLog], RecordingGroups]:
    clock = ManualClock()
    sinks: list[InMemoryRecordSink[TxnRecord]] = [InMemoryRecordSink() for _ in range(2)]
    coordinator = TransactionCoordinator(
        sink_for=sinks.__getitem__,
        partitions=2,
        clock=clock,
        max_timeout_ms=900_000,
        transactional_id_expiration_ms=604_800_000,
    )
    logs = {("t", 0): RecordingLog(), ("t", 1): RecordingLog()}
    groups = RecordingGroups()
    ids = itertools.count(7)
    service = TxnService(
        coordinator=coordinator,
        clock=clock,
        config=lambda: BrokerConfig.from_raw({}),
        control_target=lambda topic, partition: logs.get((topic, partition)),
        group_transactions=groups,
        allocate_producer_id=lambda: next(ids),
        offsets_partitions=lambda: 50,
    )
    return service, logs, groups


def start_txn(service: TxnService, *partitions: tuple[str, int]) -> int:
    answer, _ = service.coordinator.init_producer_id(
        transactional_id="x",
        timeout_ms=10_000,
        expected_producer_id=-1,
        expected_producer_epoch=-1,
        new_producer_id=service.allocate_producer_id,
    )
    service.coordinator.add_partitions(
        transactional_id="x",
        producer_id=answer.producer_id,
        producer_epoch=0,
        partitions=partitions,
    )
    return answer.producer_id


def test_commit_writes_a_marker_everywhere_then_completes() -> None:
    service, logs, groups = make_service()
    offsets = service.offsets_partition("g")
    pid = start_txn(service, ("t", 0), ("t", 1), offsets)
    answer, effects = service.coordinator.end_txn(
        transactional_id="x",
        producer_id=pid,
        producer_epoch=0,
        commit=True,
        bump_epoch=False,
        new_producer_id=service.allocate_producer_id,
    )
    assert answer.error == ErrorCode.none
    asyncio.run(service.complete_all(effects))
    for log in logs.values():
        (call,) = log.calls
        assert (call["producer_id"], call["producer_epoch"], call["control"]) == (pid, 0, COMMIT)
    assert groups.calls == [
        {"offsets_partition": offsets[1], "producer_id": pid, "producer_epoch": 0, "commit": True}
    ]
    assert service.coordinator.metadata("x").state == TxnState.COMPLETE_COMMIT  # type: ignore[union-attr]


def test_a_failed_marker_leaves_the_transaction_preparing_until_retried() -> None:
    service, logs, _groups = make_service()
    pid = start_txn(service, ("t", 0), ("t", 1))
    logs[("t", 1)].fail = True
    _answer, effects = service.coordinator.end_txn(
        transactional_id="x",
        producer_id=pid,
        producer_epoch=0,
        commit=False,
        bump_epoch=False,
        new_producer_id=service.allocate_producer_id,
    )
    assert asyncio.run(service.complete(effects[0])) is False
    assert service.coordinator.metadata("x").state == TxnState.PREPARE_ABORT  # type: ignore[union-attr]
    logs[("t", 1)].fail = False

    async def timer_fires() -> None:
        service.abort_timed_out()  # also resends markers of preparing transactions
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    asyncio.run(timer_fires())
    assert service.coordinator.metadata("x").state == TxnState.COMPLETE_ABORT  # type: ignore[union-attr]
    assert [c["control"] for c in logs[("t", 1)].calls] == [ABORT]


def test_a_deleted_partition_needs_no_marker() -> None:
    service, _logs, _groups = make_service()
    pid = start_txn(service, ("t", 0), ("gone", 0))
    _answer, effects = service.coordinator.end_txn(
        transactional_id="x",
        producer_id=pid,
        producer_epoch=0,
        commit=True,
        bump_epoch=False,
        new_producer_id=service.allocate_producer_id,
    )
    errors = asyncio.run(service.write_markers(effects[0]))
    assert errors == {("t", 0): ErrorCode.none, ("gone", 0): ErrorCode.unknown_topic_or_partition}
    service.coordinator.markers_written(effects[0])
    assert service.coordinator.metadata("x").state == TxnState.COMPLETE_COMMIT  # type: ignore[union-attr]


def test_timed_out_transaction_is_aborted_by_the_timer() -> None:
    service, logs, _groups = make_service()
    pid = start_txn(service, ("t", 0))
    clock = service._clock
    assert isinstance(clock, ManualClock)
    clock.advance(10_000)

    async def timer_fires() -> int:
        aborted = service.abort_timed_out()
        for _ in range(3):
            await asyncio.sleep(0)
        return aborted

    assert asyncio.run(timer_fires()) == 1
    (call,) = logs[("t", 0)].calls
    assert (call["producer_id"], call["producer_epoch"], call["control"]) == (pid, 1, ABORT)
    assert service.coordinator.metadata("x").state == TxnState.COMPLETE_ABORT  # type: ignore[union-attr]


def test_every_state_write_is_on_disk_before_the_coordinator_answers(tmp_path: Path) -> None:
    """`__transaction_state` is fsynced at every write under Kafka's default flush
    policy (the page cache), so a power loss cannot take an epoch bump a data log
    already holds (txn_service.py, "Durability"): nothing it wrote is left unflushed
    after InitProducerId, AddPartitionsToTxn or EndTxn returns."""
    clock = ManualClock()
    config = BrokerConfig.from_raw({"transaction.state.log.num.partitions": "1"})
    disk = Disk(tmp_path)
    logs = LogManager.open(data_dir=tmp_path, broker_config=config, clock=clock)
    with disk.installed():
        service = TxnService.open(
            logs,
            lambda: config,
            clock,
            control_target=lambda topic, partition: RecordingLog(),
            group_transactions=RecordingGroups(),
        )
        coordinator = service.coordinator
        state_dir = tmp_path / "__transaction_state-0"
        disk.settle()
        pid = start_txn(service, ("t", 0))
        written = [disk.unflushed_bytes()]
        answer, effects = coordinator.end_txn(
            transactional_id="x",
            producer_id=pid,
            producer_epoch=0,
            commit=True,
            bump_epoch=False,
            new_producer_id=service.allocate_producer_id,
        )
        written.append(disk.unflushed_bytes())
        assert answer.error == ErrorCode.none
        asyncio.run(service.complete_all(effects))
        written.append(disk.unflushed_bytes())
    assert state_dir.is_dir()
    assert written == [0, 0, 0]
    assert coordinator.metadata("x").state == TxnState.COMPLETE_COMMIT  # type: ignore[union-attr]
    logs.close()
