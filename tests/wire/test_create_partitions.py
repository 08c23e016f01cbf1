"""CreatePartitions (37) v0-v3: grow, refuse shrinking, assignments, ValidateOnly."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

from shoal.protocol.schema import request_schema
from tests.support.broker import BrokerProcess
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1


def grow(
    bootstrap: str,
    version: int,
    *topics: tuple[str, int, Sequence[Sequence[int]] | None],
    validate_only: bool = False,
) -> list[Any]:
    schema = request_schema(37, version)
    request = schema.make(
        "CreatePartitionsRequest",
        topics=tuple(
            schema.make(
                "CreatePartitionsTopic",
                name=name,
                count=count,
                assignments=None
                if assignments is None
                else tuple(
                    schema.make("CreatePartitionsAssignment", broker_ids=tuple(ids))
                    for ids in assignments
                ),
            )
            for name, count, assignments in topics
        ),
        timeout=datetime.timedelta(seconds=10),
        validate_only=validate_only,
    )
    return list(call1(bootstrap, request).results)


def partitions_of(bootstrap: str, name: str) -> int:
    response = call1(
        bootstrap,
        MetadataRequest(
            topics=(MetadataRequestTopic(topic_id=None, name=name),),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        ),
    )
    return len(response.topics[0].partitions)


@pytest.mark.parametrize("version", [0, 3])
def test_grow(broker: BrokerProcess, version: int) -> None:
    name = topic_name("cp")
    create_topic(broker.bootstrap, name)
    (result,) = grow(broker.bootstrap, version, (name, 3, None))
    assert (result.name, result.error_code, result.error_message) == (name, ErrorCode.none, None)
    assert partitions_of(broker.bootstrap, name) == 3


def test_grow_with_assignments(broker: BrokerProcess) -> None:
    name = topic_name("cp-assigned")
    create_topic(broker.bootstrap, name)
    (result,) = grow(broker.bootstrap, 3, (name, 3, [[1], [1]]))
    assert result.error_code == ErrorCode.none
    assert partitions_of(broker.bootstrap, name) == 3


@pytest.mark.parametrize(
    ("count", "assignments", "code"),
    [
        (2, None, ErrorCode.invalid_partitions),  # not an increase
        (1, None, ErrorCode.invalid_partitions),  # shrink
        (10_001, None, ErrorCode.invalid_partitions),  # above the per-topic maximum
        (4, [[1]], ErrorCode.invalid_replica_assignment),  # one assignment for two
        (4, [[1], [2]], ErrorCode.invalid_replica_assignment),  # unknown broker
        (4, [[1], [1, 1]], ErrorCode.invalid_replica_assignment),
    ],
)
def test_refusals(
    broker: BrokerProcess, count: int, assignments: list[list[int]] | None, code: ErrorCode
) -> None:
    name = topic_name("cp-bad")
    create_topic(broker.bootstrap, name, partitions=2)
    (result,) = grow(broker.bootstrap, 3, (name, count, assignments))
    assert result.error_code == code
    assert result.error_message
    assert partitions_of(broker.bootstrap, name) == 2


def test_unknown_topic_and_repeated_topic(broker: BrokerProcess) -> None:
    name, missing = topic_name("cp-twice"), topic_name("cp-missing")
    create_topic(broker.bootstrap, name)
    results = grow(broker.bootstrap, 2, (name, 2, None), (missing, 2, None), (name, 3, None))
    assert [(r.name, r.error_code) for r in results] == [
        (name, ErrorCode.invalid_request),
        (missing, ErrorCode.unknown_topic_or_partition),
    ]
    assert partitions_of(broker.bootstrap, name) == 1


def test_validate_only_changes_nothing(broker: BrokerProcess) -> None:
    name = topic_name("cp-dry")
    create_topic(broker.bootstrap, name)
    (result,) = grow(broker.bootstrap, 1, (name, 4, None), validate_only=True)
    assert result.error_code == ErrorCode.none
    assert partitions_of(broker.bootstrap, name) == 1
