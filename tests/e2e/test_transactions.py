"""Transactions with a real client (confluent-kafka / librdkafka): the transaction
coordinator finds itself (FindCoordinator type 1), hands out and bumps epochs
(init_transactions), commits and aborts with read_committed readers seeing only
committed records, and a second producer with the same transactional.id fences the
first."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import KafkaException, TopicPartition

from shoal.protocol.schema import request_schema
from tests.support.broker import BrokerProcess
from tests.support.clients import consumer, create_topic, producer
from tests.support.topics import topic_name
from tests.support.wire import call1


def _read_committed(bootstrap: str, topic: str, *, want: int) -> list[bytes]:
    """Values a read_committed consumer sees from both partitions: until `want` came
    (bounded) and then one more second, so that extra records would show."""
    c = consumer(bootstrap, isolation_level="read_committed", auto_offset_reset="earliest")
    values: list[bytes] = []
    try:
        c.assign([TopicPartition(topic, p, 0) for p in (0, 1)])
        deadline = time.monotonic() + 30
        settle_until: float | None = None
        while time.monotonic() < (settle_until or deadline):
            for message in c.consume(num_messages=100, timeout=0.2):
                if message.error() is None:
                    values.append(message.value())
            if settle_until is None and len(values) >= want:
                settle_until = time.monotonic() + 1
    finally:
        c.close()
    return values


def _described(bootstrap: str, tid: str) -> Any:
    request = request_schema(65, 0).make("DescribeTransactionsRequest", transactional_ids=(tid,))
    (state,) = call1(bootstrap, request).transaction_states
    return state


def test_init_transactions_bumps_the_epoch(broker: BrokerProcess) -> None:
    tid = topic_name("tx-init")
    first = producer(broker.bootstrap, transactional_id=tid)
    first.init_transactions(30)
    assert _described(broker.bootstrap, tid).producer_epoch == 0
    second = producer(broker.bootstrap, transactional_id=tid)
    second.init_transactions(30)
    state = _described(broker.bootstrap, tid)
    assert (state.producer_epoch, state.transaction_state) == (1, "Empty")


def test_commit_abort_and_fencing(broker: BrokerProcess) -> None:
    topic = topic_name("tx")
    create_topic(broker.bootstrap, topic, partitions=2)
    tid = topic_name("tx-id")
    p = producer(broker.bootstrap, transactional_id=tid)
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(10):
        p.produce(topic, value=f"committed-{i}".encode(), partition=i % 2)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(5):
        p.produce(topic, value=f"aborted-{i}".encode(), partition=i % 2)
    assert p.flush(30) == 0  # in the log (an abort purges what librdkafka has not sent)
    p.abort_transaction(30)
    assert _described(broker.bootstrap, tid).transaction_state == "CompleteAbort"

    assert sorted(_read_committed(broker.bootstrap, topic, want=10)) == sorted(
        f"committed-{i}".encode() for i in range(10)
    )

    zombie = p
    fresh = producer(broker.bootstrap, transactional_id=tid)
    fresh.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(topic, value=b"zombie", partition=0)
    with pytest.raises(KafkaException):
        zombie.commit_transaction(30)
