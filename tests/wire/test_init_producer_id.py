"""InitProducerId (22) v0-v4: fresh producer ids at epoch 0, rising across restarts."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.protocol.schema import request_schema
from tests.support.broker import BrokerProcess
from tests.support.wire import call1


def init(
    version: int,
    *,
    transactional_id: str | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
) -> Any:
    return request_schema(22, version).make(
        "InitProducerIdRequest",
        transactional_id=transactional_id,
        transaction_timeout=datetime.timedelta(seconds=60),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
    )


def producer_id(bootstrap: str, version: int = 4, **fields: Any) -> int:
    response = call1(bootstrap, init(version, **fields))
    assert response.error_code == ErrorCode.none
    assert response.producer_epoch == 0
    assert response.producer_id >= 0
    return int(response.producer_id)


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_ids_increase(broker: BrokerProcess, version: int) -> None:
    first = producer_id(broker.bootstrap, version)
    second = producer_id(broker.bootstrap, version)
    assert second > first


def test_bump_after_an_error_gets_a_fresh_id(broker: BrokerProcess) -> None:
    """Kafka answers a non-transactional InitProducerId carrying its current id and epoch
    (KIP-360) with a new producer id at epoch 0."""
    first = producer_id(broker.bootstrap)
    again = producer_id(broker.bootstrap, 4, producer_id=first, producer_epoch=0)
    assert again > first


@pytest.mark.parametrize("version", [0, 4])
def test_transactional_ids_are_refused_for_now(broker: BrokerProcess, version: int) -> None:
    response = call1(broker.bootstrap, init(version, transactional_id="txn-1"))
    assert response.error_code == ErrorCode.invalid_request
    assert (response.producer_id, response.producer_epoch) == (-1, -1)
    assert broker.wait_for_log("transactions are not supported yet") is not None


def test_ids_keep_rising_across_restarts(fresh_broker: BrokerProcess) -> None:
    before = [producer_id(fresh_broker.bootstrap) for _ in range(3)]
    fresh_broker.restart()  # SIGKILL: no clean shutdown
    after = producer_id(fresh_broker.bootstrap)
    assert after > max(before)
    fresh_broker.stop()
    fresh_broker.start()
    assert producer_id(fresh_broker.bootstrap) > after
