"""Fetch and ListOffsets with IsolationLevel read_committed over an open transaction,
and DeleteRecords bounded by the last stable offset.

Here the transaction stays open: a transactional producer (InitProducerId with a
transactional id, its partition added) produces a batch and never ends it; its
timeout is the longest allowed. Markers, aborted transactions and wake-ups are covered
in-process (tests/unit/server/test_read_committed.py)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.client import requests
from shoal.client.requests import READ_COMMITTED, READ_UNCOMMITTED, FetchPosition
from shoal.protocol.schema import request_schema
from tests.support.batches import build_batch, decode_records, values_batch
from tests.support.broker import BrokerProcess
from tests.support.topics import create_topic, produce, topic_name
from tests.support.wire import call1, fetched
from tests.wire.test_delete_records import delete_before

BASE = 1_700_000_000_000


def fetch(bootstrap: str, topic: str, offset: int, isolation_level: int) -> Any:
    positions = {(topic, 0): FetchPosition(offset=offset, max_bytes=1 << 20)}
    return fetched(
        call1(
            bootstrap,
            requests.fetch(positions, max_wait_ms=0, min_bytes=0, isolation_level=isolation_level),
        )
    )


def latest(bootstrap: str, topic: str, timestamp: int, isolation_level: int) -> tuple[int, int]:
    response = call1(
        bootstrap, requests.list_offsets({(topic, 0): timestamp}, isolation_level=isolation_level)
    )
    (answer,) = response.topics[0].partitions
    assert answer.error_code == ErrorCode.none, answer
    return int(answer.offset), int(answer.timestamp)


@pytest.fixture(scope="module")
def open_txn_topic(broker: BrokerProcess) -> str:
    """0-1 plain (BASE), 2-3 transactional and open (BASE+2), 4-5 plain (BASE+4)."""
    name = topic_name("rc")
    create_topic(broker.bootstrap, name, partitions=1)
    tid = topic_name("rc-txn")
    init = call1(
        broker.bootstrap,
        request_schema(22, 4).make(
            "InitProducerIdRequest",
            transactional_id=tid,
            transaction_timeout=datetime.timedelta(minutes=15),
            producer_id=-1,
            producer_epoch=-1,
        ),
    )
    assert init.error_code == ErrorCode.none
    add = request_schema(24, 3)
    added = add.make(
        "AddPartitionsToTxnRequest",
        v3_and_below_transactional_id=tid,
        v3_and_below_producer_id=init.producer_id,
        v3_and_below_producer_epoch=init.producer_epoch,
        v3_and_below_topics=(add.make("AddPartitionsToTxnTopic", name=name, partitions=(0,)),),
    )
    (topic_result,) = call1(broker.bootstrap, added).results_by_topic_v3_and_below
    assert topic_result.results_by_partition[0].partition_error_code == ErrorCode.none
    assert produce(broker.bootstrap, name, values_batch(2, base_timestamp=BASE)) == 0
    transactional = build_batch(
        [b"t0", b"t1"],
        base_timestamp=BASE + 2,
        producer_id=int(init.producer_id),
        producer_epoch=int(init.producer_epoch),
        base_sequence=0,
        transactional=True,
    )
    produced = call1(
        broker.bootstrap, requests.produce({(name, 0): transactional}, transactional_id=tid)
    )
    assert produced.responses[0].partition_responses[0].base_offset == 2
    assert produce(broker.bootstrap, name, values_batch(2, base_timestamp=BASE + 4)) == 4
    return name


def test_fetch_read_committed_stops_at_the_last_stable_offset(
    broker: BrokerProcess, open_txn_topic: str
) -> None:
    committed = fetch(broker.bootstrap, open_txn_topic, 0, READ_COMMITTED)
    assert (committed.high_watermark, committed.last_stable_offset) == (6, 2)
    assert committed.aborted_transactions == ()
    assert [r.offset for r in decode_records(committed.records)] == [0, 1]
    assert fetch(broker.bootstrap, open_txn_topic, 2, READ_COMMITTED).records in (b"", None)
    uncommitted = fetch(broker.bootstrap, open_txn_topic, 0, READ_UNCOMMITTED)
    assert uncommitted.last_stable_offset == 2
    assert uncommitted.aborted_transactions is None
    assert [r.offset for r in decode_records(uncommitted.records)] == list(range(6))


def test_list_offsets_read_committed(broker: BrokerProcess, open_txn_topic: str) -> None:
    assert latest(broker.bootstrap, open_txn_topic, -1, READ_COMMITTED) == (2, -1)
    assert latest(broker.bootstrap, open_txn_topic, -1, READ_UNCOMMITTED) == (6, -1)
    assert latest(broker.bootstrap, open_txn_topic, BASE, READ_COMMITTED) == (0, BASE)
    # Found at offset 2, the open transaction: not found under read_committed.
    assert latest(broker.bootstrap, open_txn_topic, BASE + 1, READ_COMMITTED) == (-1, -1)
    # Found at offset 4, beyond the last stable offset: not found under read_committed.
    assert latest(broker.bootstrap, open_txn_topic, BASE + 4, READ_COMMITTED) == (-1, -1)
    assert latest(broker.bootstrap, open_txn_topic, BASE + 4, READ_UNCOMMITTED) == (4, BASE + 4)


def test_delete_records_beyond_the_last_stable_offset_is_out_of_range(
    broker: BrokerProcess, open_txn_topic: str
) -> None:
    (beyond,) = delete_before(broker.bootstrap, 2, open_txn_topic, (0, 3))
    assert beyond.error_code == ErrorCode.offset_out_of_range
    (at_lso,) = delete_before(broker.bootstrap, 2, open_txn_topic, (0, 2))
    assert (at_lso.error_code, at_lso.low_watermark) == (ErrorCode.none, 2)
