"""InitProducerId (22) v0-v5: fresh producer ids at epoch 0, rising across restarts;
transactional ids (more in test_transactions.py)."""

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


@pytest.mark.parametrize("version", [0, 3, 5])
def test_transactional_ids_get_bumped_epochs(broker: BrokerProcess, version: int) -> None:
    tid = f"init-{version}"
    first = call1(broker.bootstrap, init(version, transactional_id=tid))
    assert (first.error_code, first.producer_epoch) == (ErrorCode.none, 0)
    second = call1(broker.bootstrap, init(version, transactional_id=tid))
    assert (second.error_code, second.producer_id) == (ErrorCode.none, first.producer_id)
    assert second.producer_epoch == 1
