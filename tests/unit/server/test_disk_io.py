"""The logs' blocking disk work off the event loop (server/services/disk_io.py) and the produce
path's ordering: a partition is answered only after its fsync finished, the loop serves
others meanwhile, and a cancelled request still has its fsync finished.

Nothing under test is mocked: the fsyncs are real. A gate holds every fsync made in a
disk worker thread until the test opens it (fsyncs on the loop's thread pass through,
so code that wrongly fsynced on the loop never reaches the gate and the test fails on
its "fsync entered" wait instead of hanging).
"""

from __future__ import annotations

import asyncio
import datetime
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.produce.v9.request import PartitionProduceData, ProduceRequest, TopicProduceData

from shoal import limits
from shoal.clock import ManualClock
from shoal.config import BrokerConfig
from shoal.log.api import LogError
from shoal.log.manager import LogManager
from shoal.protocol.errors import ErrorCode
from shoal.server.broker import Broker
from shoal.server.connection_info import ConnectionInfo
from shoal.server.context import RequestContext
from shoal.server.services.disk_io import DiskIO
from tests.unit.log.batches import append, make_batch
from tests.unit.server.fsync_gate import FsyncGate

PRODUCE_KEY = 0


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[FsyncGate]:
    held = FsyncGate()
    monkeypatch.setattr(os, "fsync", held.fsync)
    yield held
    held.open()  # never leave a worker blocked, whatever the test did


@pytest.fixture
def broker(broker: Broker) -> Broker:
    """The server tests' broker (conftest.py) with a topic flushed at every append
    ("durable") and one left to the flush policy ("lazy")."""
    broker.logs.create_topic("durable", partitions=1, configs={"flush.messages": "1"})
    broker.logs.create_topic("lazy", partitions=1, configs={})
    return broker


def produce(broker: Broker, topic: str, batch: bytes, *, acks: int = -1) -> Any:
    """Produce v9 of one partition through the real handler (no socket)."""
    ctx = RequestContext(
        services=broker.services,
        connection=ConnectionInfo(1, "127.0.0.1", 1),
        api_key=PRODUCE_KEY,
        api_version=9,
        correlation_id=1,
        client_id="test",
    )
    request = ProduceRequest(
        acks=acks,
        timeout=datetime.timedelta(seconds=30),
        topic_data=(
            TopicProduceData(
                name=topic, partition_data=(PartitionProduceData(index=0, records=batch),)
            ),
        ),
    )
    return broker.handlers[PRODUCE_KEY].handle(ctx, request)


def answer(response: Any) -> Any:
    (topic,) = response.responses
    (partition,) = topic.partition_responses
    return partition


def test_produce_answers_after_its_fsync_and_the_loop_serves_others_meanwhile(
    broker: Broker, gate: FsyncGate
) -> None:
    async def scenario() -> None:
        durable = asyncio.create_task(produce(broker, "durable", make_batch(3)))
        assert await gate.entered_async(1), "the fsync did not run in a disk worker"
        # The loop is free: a produce that needs no fsync is answered meanwhile.
        lazy = answer(await produce(broker, "lazy", make_batch(2)))
        assert lazy.error_code == ErrorCode.none
        await asyncio.sleep(0.05)
        assert not durable.done(), "answered before its fsync finished"
        gate.open()
        response = answer(await durable)
        assert response.error_code == ErrorCode.none and response.base_offset == 0
        await broker.disk.close()

    asyncio.run(scenario())
    log = broker.logs.partition("durable", 0)
    assert log is not None and log.flush_plan() is None  # the plan covered the append


def test_acks_zero_still_waits_for_its_fsync(broker: Broker, gate: FsyncGate) -> None:
    async def scenario() -> None:
        request = asyncio.create_task(produce(broker, "durable", make_batch(1), acks=0))
        assert await gate.entered_async(1)
        await asyncio.sleep(0.05)
        assert not request.done(), "acks=0 must not queue fsyncs without bound"
        gate.open()
        assert await request is None
        await broker.disk.close()

    asyncio.run(scenario())


def test_a_failed_fsync_answers_kafka_storage_error(broker: Broker, gate: FsyncGate) -> None:
    gate.fail = True
    gate.open()

    async def scenario() -> tuple[Any, Any]:
        first = answer(await produce(broker, "durable", make_batch(1)))
        second = answer(await produce(broker, "durable", make_batch(1, seed=1)))
        await broker.disk.close()
        return first, second

    first, second = asyncio.run(scenario())
    assert first.error_code == ErrorCode.kafka_storage_error
    assert first.error_message is None  # as from Kafka: the broker's log says why
    assert second.error_code == ErrorCode.kafka_storage_error  # the partition is offline


def test_a_request_cancelled_during_its_fsync_still_finishes_the_plan(
    broker: Broker, gate: FsyncGate
) -> None:
    gate.fail = True  # the outcome shows that finish_flush ran: the partition goes offline

    async def scenario() -> None:
        request = asyncio.create_task(produce(broker, "durable", make_batch(1)))
        assert await gate.entered_async(1)
        request.cancel()  # the connection closed mid-request
        with pytest.raises(asyncio.CancelledError):
            await request
        assert broker.disk.running == 1
        gate.open()
        await broker.disk.close()
        assert broker.disk.running == 0

    asyncio.run(scenario())
    log = broker.logs.partition("durable", 0)
    assert log is not None
    with pytest.raises(LogError, match="offline"):
        append(log, make_batch(1, seed=2))


def test_a_retried_duplicate_is_answered_only_after_the_originals_fsync(
    broker: Broker, gate: FsyncGate
) -> None:
    """The original request's connection was lost while its fsync ran; the producer's
    retry (same producer id and sequence) is a duplicate and must wait for that fsync,
    and shares its failure."""
    batch = make_batch(2, producer_id=broker.logs.allocate_producer_id(), base_sequence=0)
    gate.fail = True

    async def scenario() -> Any:
        original = asyncio.create_task(produce(broker, "durable", batch))
        assert await gate.entered_async(1)
        original.cancel()
        retry = asyncio.create_task(produce(broker, "durable", batch))
        await asyncio.sleep(0.05)
        assert not retry.done(), "a duplicate was acknowledged before the original's fsync"
        gate.open()
        response = answer(await retry)
        await broker.disk.close()
        return response

    response = asyncio.run(scenario())
    assert response.error_code == ErrorCode.kafka_storage_error


def test_a_duplicate_with_no_fsync_running_is_answered_at_once(broker: Broker) -> None:
    batch = make_batch(2, producer_id=broker.logs.allocate_producer_id(), base_sequence=0)

    async def scenario() -> tuple[Any, Any]:
        first = answer(await produce(broker, "durable", batch))
        second = answer(await produce(broker, "durable", batch))
        await broker.disk.close()
        return first, second

    first, second = asyncio.run(scenario())
    assert first.error_code == second.error_code == ErrorCode.none
    assert first.base_offset == second.base_offset == 0


# ---- the background flusher


@pytest.fixture
def logs(tmp_path: Path) -> Iterator[LogManager]:
    config = BrokerConfig.from_raw({"log.dirs": str(tmp_path)})
    manager = LogManager.open(data_dir=tmp_path, broker_config=config, clock=ManualClock())
    manager.create_topic("t", partitions=2, configs={"flush.ms": "1000"})
    yield manager
    manager.close()


def _append_to_all(logs: LogManager, seed: int) -> None:
    for index in range(2):
        log = logs.partition("t", index)
        assert log is not None
        append(log, make_batch(1, seed=seed))


def test_flush_passes_never_overlap(logs: LogManager, gate: FsyncGate) -> None:
    async def scenario() -> list[int]:
        disk = DiskIO()
        started = []
        _append_to_all(logs, seed=0)
        started.append(disk.flush_due(logs, now_ms=1_000))
        assert await gate.entered_async(2)
        _append_to_all(logs, seed=1)
        started.append(disk.flush_due(logs, now_ms=2_000))  # the first pass still runs
        gate.open()
        await disk.close()
        disk = DiskIO()
        started.append(disk.flush_due(logs, now_ms=3_000))  # what was skipped is due now
        started.append(disk.flush_due(logs, now_ms=3_000))
        await disk.close()
        return started

    assert asyncio.run(scenario()) == [2, 0, 2, 0]
    assert gate.entered == 4


def test_at_most_threads_max_fsyncs_run_at_once(logs: LogManager, gate: FsyncGate) -> None:
    async def scenario() -> None:
        disk = DiskIO(threads_max=1)
        _append_to_all(logs, seed=0)
        assert disk.flush_due(logs, now_ms=1_000) == 2
        assert await gate.entered_async(1)
        await asyncio.sleep(0.1)
        assert gate.entered == 1, "a second fsync ran beside the first"
        assert disk.running == 2
        gate.open()
        await disk.close()

    asyncio.run(scenario())
    assert gate.entered == 2


def test_the_thread_limit_has_a_default_and_a_floor() -> None:
    assert DiskIO().threads_max == limits.DISK_IO_THREADS_MAX
    with pytest.raises(ValueError, match="at least one thread"):
        DiskIO(threads_max=0)


# ---- removals


def test_remove_goes_on_when_its_waiter_is_cancelled(tmp_path: Path) -> None:
    segment = tmp_path / "00000000000000000000.log.deleted"
    segment.write_bytes(b"x" * 100)
    directory = tmp_path / "t-0.0123-delete"
    directory.mkdir()
    (directory / "00000000000000000000.log").write_bytes(b"y")

    async def scenario() -> None:
        disk = DiskIO()
        waiter = disk.remove([segment, directory])
        waiter.cancel()
        await disk.close()

    asyncio.run(scenario())
    assert not segment.exists() and not directory.exists()


def test_retention_leaves_nothing_behind_once_its_removal_is_done(broker: Broker) -> None:
    broker.logs.create_topic(
        "old", partitions=1, configs={"segment.bytes": "1024", "retention.ms": "1000"}
    )
    log = broker.logs.partition("old", 0)
    assert log is not None
    for seed in range(6):
        append(log, make_batch(4, value_size=200, seed=seed))
    assert len(log.segment_base_offsets()) > 2
    assert isinstance(broker.clock, ManualClock)
    broker.clock.advance(10_000)

    async def scenario() -> None:
        broker._enforce_retention(broker.clock.monotonic_ms())
        await broker.disk.close()

    asyncio.run(scenario())
    assert len(log.segment_base_offsets()) == 1
    assert sorted(p.name for p in log.directory.glob("*.deleted")) == []
    assert len(list(log.directory.glob("*.log"))) == 1
