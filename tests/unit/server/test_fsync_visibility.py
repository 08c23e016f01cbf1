"""A read racing a pending fsync the flush policy called for (`flush.messages=1`)
does not see the record, through the real Produce, Fetch and ListOffsets handlers (no
socket): the fsync runs in a disk worker held by a gate, and until it is finished on
the loop the high watermark stays below the record (log/partition.py,
docs/design/disk-io.md); then the parked Fetch is woken and gets it. A ShareFetch through the
real ShareService acquires nothing meanwhile. Nothing under test is mocked: the fsync
is real, only held back."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shoal.client import requests
from shoal.client.requests import LATEST_TIMESTAMP, READ_COMMITTED, FetchPosition
from shoal.protocol.errors import ErrorCode
from shoal.server.broker import Broker
from shoal.server.connection_info import ConnectionInfo
from shoal.server.context import RequestContext
from tests.support.batches import decode_records
from tests.unit.log.batches import headers_of, make_batch
from tests.unit.server.fsync_gate import FsyncGate
from tests.unit.server.test_disk_io import answer, produce
from tests.unit.server.test_share_service import Rig

FETCH_VERSION = 12
LIST_OFFSETS_VERSION = 7


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[FsyncGate]:
    held = FsyncGate()
    monkeypatch.setattr(os, "fsync", held.fsync)
    yield held
    held.open()  # never leave a worker blocked, whatever the test did


@pytest.fixture
def broker(broker: Broker) -> Broker:
    broker.logs.create_topic("durable", partitions=1, configs={"flush.messages": "1"})
    return broker


def _ctx(broker: Broker, api_key: int, version: int) -> RequestContext:
    return RequestContext(
        services=broker.services,
        connection=ConnectionInfo(1, "127.0.0.1", 1),
        api_key=api_key,
        api_version=version,
        correlation_id=1,
        client_id="test",
    )


async def _fetch(broker: Broker, *, max_wait_ms: int = 0, isolation_level: int = 0) -> Any:
    call = requests.fetch(
        {("durable", 0): FetchPosition(offset=0, max_bytes=1 << 20)},
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        isolation_level=isolation_level,
    )
    response = await broker.handlers[1].handle(
        _ctx(broker, 1, FETCH_VERSION), call.build(FETCH_VERSION)
    )
    (topic,) = response.responses
    (partition,) = topic.partitions
    return partition


async def _latest(broker: Broker) -> int:
    call = requests.list_offsets({("durable", 0): LATEST_TIMESTAMP})
    response = await broker.handlers[2].handle(
        _ctx(broker, 2, LIST_OFFSETS_VERSION), call.build(LIST_OFFSETS_VERSION)
    )
    (partition,) = response.topics[0].partitions
    assert partition.error_code == ErrorCode.none
    return int(partition.offset)


def test_a_fetch_racing_the_fsync_sees_nothing_until_it_is_done(
    broker: Broker, gate: FsyncGate
) -> None:
    async def scenario() -> None:
        produced = asyncio.create_task(produce(broker, "durable", make_batch(3)))
        assert await gate.entered_async(1), "the fsync did not run in a disk worker"
        log = broker.logs.partition("durable", 0)
        assert log is not None and log.log_end_offset == 3  # appended, not yet durable
        now = await _fetch(broker)
        assert now.error_code == ErrorCode.none
        assert decode_records(now.records) == [] and now.high_watermark == 0
        assert now.last_stable_offset == 0
        committed = await _fetch(broker, isolation_level=READ_COMMITTED)
        assert decode_records(committed.records) == [] and committed.last_stable_offset == 0
        assert await _latest(broker) == 0
        parked = asyncio.create_task(_fetch(broker, max_wait_ms=60_000))
        await asyncio.sleep(0.05)
        assert not parked.done(), "the parked fetch was answered before the fsync"
        assert not produced.done()
        gate.open()
        assert answer(await produced).error_code == ErrorCode.none
        woken = await asyncio.wait_for(parked, timeout=10)
        assert len(decode_records(woken.records)) == 3 and woken.high_watermark == 3
        assert await _latest(broker) == 3
        await broker.disk.close()

    asyncio.run(scenario())


def test_a_failed_fsync_never_shows_the_record(broker: Broker, gate: FsyncGate) -> None:
    async def scenario() -> None:
        gate.fail = True
        produced = asyncio.create_task(produce(broker, "durable", make_batch(1)))
        assert await gate.entered_async(1)
        gate.open()
        response = answer(await produced)
        assert response.error_code == ErrorCode.kafka_storage_error
        failed = await _fetch(broker)
        assert failed.error_code == ErrorCode.kafka_storage_error
        assert decode_records(failed.records) == []
        await broker.disk.close()

    asyncio.run(scenario())


def test_a_share_fetch_racing_the_fsync_acquires_nothing_until_it_is_done(
    tmp_path: Path,
) -> None:
    """The share-partition leader reads below the high watermark: a record whose
    policy fsync is pending is neither acquired nor counted (seed 5097's race)."""
    rig = Rig(tmp_path, **{"log.flush.interval.messages": "1"})
    partition = rig.logs.partition("t", 0)
    assert partition is not None
    batch = make_batch(3)
    plan = partition.append(batch, headers_of(batch), leader_epoch=0, defer_flush=True).flush_plan
    assert plan is not None, "the broker's flush.messages=1 reaches the topic"
    assert rig.fetch() == 0
    plan.run()
    partition.finish_flush(plan)
    assert rig.fetch(epoch=1) == 3
