"""DescribeProducers (61): the producer state of partitions, an open transaction's
first offset, and unknown partitions. The open transaction is written as an old client
would leave one (a transactional batch of an idempotent producer id, with a
transactional id the coordinator does not know), so the module's broker runs with
`transaction.partition.verification.enable=false`."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.client import requests
from tests.support.batches import build_batch
from tests.support.broker import BrokerProcess, running
from tests.support.topics import create_topic, produce, topic_name
from tests.support.wire import call1, init_producer_id_request


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    unverified = "transaction.partition.verification.enable=false"
    yield from running(tmp_path_factory.mktemp("broker") / "data", unverified)


def _producer_id(bootstrap: str) -> tuple[int, int]:
    init = call1(bootstrap, init_producer_id_request())
    assert init.error_code == ErrorCode.none
    return int(init.producer_id), int(init.producer_epoch)


def _partitions(response: Any) -> dict[tuple[str, int], Any]:
    return {(str(t.name), int(p.partition_index)): p for t in response.topics for p in t.partitions}


def test_describe_producers_reports_sequences_and_open_transactions(
    broker: BrokerProcess,
) -> None:
    topic = topic_name("dp")
    create_topic(broker.bootstrap, topic, partitions=2)
    plain_id, plain_epoch = _producer_id(broker.bootstrap)
    txn_id, txn_epoch = _producer_id(broker.bootstrap)
    before_ms = int(time.time() * 1000)
    idempotent = build_batch(
        [b"a", b"b", b"c"], producer_id=plain_id, producer_epoch=plain_epoch, base_sequence=0
    )
    assert produce(broker.bootstrap, topic, idempotent) == 0
    transactional = build_batch(
        [b"t0", b"t1"],
        producer_id=txn_id,
        producer_epoch=txn_epoch,
        base_sequence=0,
        transactional=True,
    )
    assert produce(broker.bootstrap, topic, transactional, transactional_id="dp-old-client") == 3
    after_ms = int(time.time() * 1000)

    response = call1(
        broker.bootstrap,
        requests.describe_producers([(topic, 0), (topic, 1), ("no-such-topic", 0)]),
    )
    answers = _partitions(response)
    assert answers["no-such-topic", 0].error_code == ErrorCode.unknown_topic_or_partition
    empty = answers[topic, 1]
    assert (empty.error_code, empty.active_producers) == (ErrorCode.none, ())
    described = answers[topic, 0]
    assert described.error_code == ErrorCode.none
    states = {int(p.producer_id): p for p in described.active_producers}
    assert set(states) == {plain_id, txn_id}
    plain, txn = states[plain_id], states[txn_id]
    assert (plain.producer_epoch, plain.last_sequence, plain.coordinator_epoch) == (
        plain_epoch,
        2,
        -1,
    )
    assert plain.current_txn_start_offset == -1
    assert (txn.producer_epoch, txn.last_sequence, txn.current_txn_start_offset) == (
        txn_epoch,
        1,
        3,
    )
    # The broker's write time (wall clock), not the batch's timestamps.
    for state in (plain, txn):
        assert before_ms - 1000 <= int(state.last_timestamp) <= after_ms + 1000
