"""DescribeCluster (60) v0-v2: this node as the only broker and the controller."""

from __future__ import annotations

from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.protocol.schema import request_schema
from shoal.server.handlers.common import authorized_operations
from tests.support.broker import BrokerProcess
from tests.support.wire import call1

INT32_MIN = -(2**31)


def describe(version: int, *, endpoint_type: int = 1, operations: bool = False) -> Any:
    return request_schema(60, version).make(
        "DescribeClusterRequest",
        include_cluster_authorized_operations=operations,
        endpoint_type=endpoint_type,
        include_fenced_brokers=True,
    )


@pytest.mark.parametrize("version", [0, 1, 2])
def test_describes_this_node(broker: BrokerProcess, version: int) -> None:
    response = call1(broker.bootstrap, describe(version))
    assert response.error_code == ErrorCode.none
    assert response.error_message is None
    assert len(response.cluster_id) == 22
    assert response.controller_id == 1
    (node,) = response.brokers
    assert (node.broker_id, node.host, node.port, node.rack) == (1, "127.0.0.1", broker.port, None)
    assert response.cluster_authorized_operations == INT32_MIN
    if version >= 1:
        assert response.endpoint_type == 1
    if version >= 2:
        assert node.is_fenced is False


def test_same_cluster_id_as_metadata(broker: BrokerProcess) -> None:
    from kio.schema.metadata.v12.request import MetadataRequest

    metadata = call1(
        broker.bootstrap,
        MetadataRequest(
            topics=(), allow_auto_topic_creation=False, include_topic_authorized_operations=False
        ),
    )
    assert call1(broker.bootstrap, describe(2)).cluster_id == metadata.cluster_id


def test_authorized_operations_when_asked(broker: BrokerProcess) -> None:
    response = call1(broker.bootstrap, describe(0, operations=True))
    assert response.cluster_authorized_operations == authorized_operations.CLUSTER


@pytest.mark.parametrize(
    ("endpoint_type", "code"),
    [(2, ErrorCode.mismatched_endpoint_type), (0, ErrorCode.unsupported_endpoint_type),
     (9, ErrorCode.unsupported_endpoint_type)],
)  # fmt: skip
def test_other_endpoint_types(broker: BrokerProcess, endpoint_type: int, code: ErrorCode) -> None:
    response = call1(broker.bootstrap, describe(1, endpoint_type=endpoint_type))
    assert response.error_code == code
    assert response.error_message
    assert response.brokers == ()
