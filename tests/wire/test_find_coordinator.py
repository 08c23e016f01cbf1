"""FindCoordinator (10) v0-v6: this node for every key type; share keys only at v6."""

from __future__ import annotations

import base64
import uuid
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v0.request import FindCoordinatorRequest as FindCoordinatorV0

from shoal.protocol.schema import request_schema
from tests.support.broker import BrokerProcess
from tests.support.wire import call1

GROUP, TRANSACTION, SHARE = 0, 1, 2
TOPIC_ID = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def find(version: int, key_type: int, *keys: str) -> Any:
    schema = request_schema(10, version)
    if version < 4:
        (key,) = keys
        return schema.make("FindCoordinatorRequest", key=key, key_type=key_type)
    return schema.make("FindCoordinatorRequest", key_type=key_type, coordinator_keys=keys)


def test_v0(broker: BrokerProcess) -> None:
    response = call1(broker.bootstrap, FindCoordinatorV0(key="group-a"))
    assert response.error_code == ErrorCode.none
    assert (response.node_id, response.host, response.port) == (1, "127.0.0.1", broker.port)


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("key_type", [GROUP, TRANSACTION])
def test_single_key_versions(broker: BrokerProcess, version: int, key_type: int) -> None:
    response = call1(broker.bootstrap, find(version, key_type, "some-key"))
    assert response.error_code == ErrorCode.none
    assert response.error_message is None
    assert (response.node_id, response.host, response.port) == (1, "127.0.0.1", broker.port)


@pytest.mark.parametrize("version", [4, 5, 6])
@pytest.mark.parametrize("key_type", [GROUP, TRANSACTION])
def test_batched_versions(broker: BrokerProcess, version: int, key_type: int) -> None:
    response = call1(broker.bootstrap, find(version, key_type, "g1", "g2", "g3"))
    assert [c.key for c in response.coordinators] == ["g1", "g2", "g3"]
    for coordinator in response.coordinators:
        assert coordinator.error_code == ErrorCode.none
        assert (coordinator.node_id, coordinator.host, coordinator.port) == (
            1,
            "127.0.0.1",
            broker.port,
        )


def test_share_keys_at_v6(broker: BrokerProcess) -> None:
    good = f"my-group:{TOPIC_ID}:3"
    bad = [
        "my-group",
        f"my-group:{TOPIC_ID}",
        f"my-group:{TOPIC_ID}:3:4",
        f":{TOPIC_ID}:0",
        "my-group:not-a-topic-id:0",
        f"my-group:{TOPIC_ID}:x",
    ]
    response = call1(broker.bootstrap, find(6, SHARE, good, *bad))
    first, *rest = response.coordinators
    assert (first.key, first.error_code, first.node_id) == (good, ErrorCode.none, 1)
    for coordinator, key in zip(rest, bad, strict=True):
        assert coordinator.key == key
        assert coordinator.error_code == ErrorCode.invalid_request, key
        assert coordinator.error_message
        assert (coordinator.node_id, coordinator.host, coordinator.port) == (-1, "", -1)


@pytest.mark.parametrize("version", [3, 5])
def test_share_keys_before_v6(broker: BrokerProcess, version: int) -> None:
    response = call1(broker.bootstrap, find(version, SHARE, f"g:{TOPIC_ID}:0"))
    if version < 4:
        assert response.error_code == ErrorCode.invalid_request
        assert response.node_id == -1
    else:
        assert response.coordinators[0].error_code == ErrorCode.invalid_request


@pytest.mark.parametrize("version", [2, 6])
def test_unknown_key_type(broker: BrokerProcess, version: int) -> None:
    response = call1(broker.bootstrap, find(version, 7, "k"))
    error = response if version < 4 else response.coordinators[0]
    assert error.error_code == ErrorCode.invalid_request
    assert "7" in error.error_message
