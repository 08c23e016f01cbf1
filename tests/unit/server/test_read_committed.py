"""Fetch and ListOffsets read_committed through the real handlers (no socket), with
markers written by the log: aborted transactions listed, the last stable offset, and
a marker waking a parked read_committed fetch."""

from __future__ import annotations

import asyncio
from typing import Any

from shoal.client import requests
from shoal.client.requests import READ_COMMITTED, FetchPosition
from shoal.log.partition import PartitionLog
from shoal.log.transactions import ControlType
from shoal.server.broker import Broker
from shoal.server.connection_info import ConnectionInfo
from shoal.server.context import RequestContext
from tests.support.batches import decode_records
from tests.unit.log.batches import append, make_batch

FETCH_VERSION = 12


def _ctx(broker: Broker, api_key: int, version: int) -> RequestContext:
    return RequestContext(
        services=broker.services,
        connection=ConnectionInfo(1, "127.0.0.1", 1),
        api_key=api_key,
        api_version=version,
        correlation_id=1,
        client_id="test",
    )


async def _fetch(broker: Broker, offset: int, *, max_wait_ms: int = 0) -> Any:
    call = requests.fetch(
        {("t", 0): FetchPosition(offset=offset, max_bytes=1 << 20)},
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        isolation_level=READ_COMMITTED,
    )
    response = await broker.handlers[1].handle(
        _ctx(broker, 1, FETCH_VERSION), call.build(FETCH_VERSION)
    )
    (topic,) = response.responses
    (partition,) = topic.partitions
    return partition


def _txn_batch(producer_id: int, sequence: int) -> bytes:
    return make_batch(
        2, producer_id=producer_id, base_sequence=sequence, transactional=True, seed=sequence
    )


def _marker(log: PartitionLog, producer_id: int, control: ControlType) -> int:
    return log.append_control(
        producer_id=producer_id,
        producer_epoch=0,
        control=control,
        coordinator_epoch=0,
        timestamp_ms=1_700_000_000_000,
    )


def _topic(broker: Broker) -> PartitionLog:
    broker.logs.create_topic("t", partitions=1, configs={})
    log = broker.logs.partition("t", 0)
    assert log is not None
    return log


def test_fetch_lists_aborted_transactions_of_the_records_returned(broker: Broker) -> None:
    log = _topic(broker)
    append(log, _txn_batch(1, 0))  # 0-1 aborted
    append(log, _txn_batch(2, 0))  # 2-3 committed
    assert _marker(log, 1, ControlType.ABORT) == 4
    assert _marker(log, 2, ControlType.COMMIT) == 5
    append(log, _txn_batch(3, 0))  # 6-7 open
    append(log, make_batch(1))  # 8
    partition = asyncio.run(_fetch(broker, 0))
    assert (partition.high_watermark, partition.last_stable_offset) == (9, 6)
    assert [(a.producer_id, a.first_offset) for a in partition.aborted_transactions] == [(1, 0)]
    assert [r.offset for r in decode_records(partition.records)] == [0, 1, 2, 3, 4, 5]
    later = asyncio.run(_fetch(broker, 5))
    assert later.aborted_transactions == ()  # the abort's marker lies below offset 5


def test_a_marker_wakes_a_parked_read_committed_fetch(broker: Broker) -> None:
    log = _topic(broker)
    append(log, _txn_batch(1, 0))  # 0-1, open: nothing readable

    async def scenario() -> Any:
        parked = asyncio.create_task(_fetch(broker, 0, max_wait_ms=10_000))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert not parked.done()
        _marker(log, 1, ControlType.COMMIT)
        return await asyncio.wait_for(parked, 5)

    partition = asyncio.run(scenario())
    assert partition.last_stable_offset == 3
    # The transaction's records and its marker (consumers skip control batches).
    assert [r.offset for r in decode_records(partition.records)] == [0, 1, 2]
