"""CreateTopics (19) v2-v7: creation, defaults, validation errors, ValidateOnly."""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

from shoal import limits
from shoal.protocol.schema import request_schema
from tests.support.broker import BrokerProcess
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1

DEFAULT_SOURCE, TOPIC_SOURCE = 5, 1


def topic(
    version: int,
    name: str,
    *,
    partitions: int = 1,
    replication_factor: int = 1,
    configs: Mapping[str, str | None] | None = None,
    assignments: Sequence[Sequence[int]] = (),
) -> Any:
    schema = request_schema(19, version)
    return schema.make(
        "CreatableTopic",
        name=name,
        num_partitions=partitions,
        replication_factor=replication_factor,
        assignments=tuple(
            schema.make("CreatableReplicaAssignment", partition_index=i, broker_ids=tuple(ids))
            for i, ids in enumerate(assignments)
        ),
        configs=tuple(
            schema.make("CreatableTopicConfig", name=k, value=v) for k, v in (configs or {}).items()
        ),
    )


def create(bootstrap: str, version: int, *topics: Any, validate_only: bool = False) -> Any:
    schema = request_schema(19, version)
    request = schema.make(
        "CreateTopicsRequest",
        topics=topics,
        timeout=datetime.timedelta(seconds=10),
        validate_only=validate_only,
    )
    return call1(bootstrap, request).topics


def create_one(bootstrap: str, version: int, name: str, **fields: Any) -> Any:
    (result,) = create(bootstrap, version, topic(version, name, **fields))
    assert result.name == name
    return result


def partitions_of(bootstrap: str, name: str) -> int | None:
    response = call1(
        bootstrap,
        MetadataRequest(
            topics=(MetadataRequestTopic(topic_id=None, name=name),),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        ),
    )
    found = response.topics[0]
    return None if found.error_code != ErrorCode.none else len(found.partitions)


@pytest.mark.parametrize("version", [2, 4])
def test_create_at_low_versions(broker: BrokerProcess, version: int) -> None:
    name = topic_name("ct")
    result = create_one(broker.bootstrap, version, name, partitions=3)
    assert result.error_code == ErrorCode.none
    assert result.error_message is None
    assert partitions_of(broker.bootstrap, name) == 3


def test_v7_reports_id_counts_and_configs(broker: BrokerProcess) -> None:
    name = topic_name("ct7")
    result = create_one(broker.bootstrap, 7, name, partitions=2, configs={"retention.ms": "60000"})
    assert result.error_code == ErrorCode.none
    assert result.topic_id is not None
    assert (result.num_partitions, result.replication_factor) == (2, 1)
    configs = {c.name: c for c in result.configs}
    assert configs["retention.ms"].value == "60000"
    assert configs["retention.ms"].config_source == TOPIC_SOURCE
    assert configs["segment.bytes"].value == "1073741824"
    assert configs["segment.bytes"].config_source == DEFAULT_SOURCE
    assert not any(c.read_only or c.is_sensitive for c in result.configs)
    metadata = call1(
        broker.bootstrap,
        MetadataRequest(
            topics=(MetadataRequestTopic(topic_id=result.topic_id, name=None),),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        ),
    )
    assert metadata.topics[0].name == name


def test_defaults_for_partitions_and_replication(broker: BrokerProcess) -> None:
    name = topic_name("ct-default")
    result = create_one(broker.bootstrap, 7, name, partitions=-1, replication_factor=-1)
    assert result.error_code == ErrorCode.none
    assert (result.num_partitions, result.replication_factor) == (1, 1)


def test_existing_topic(broker: BrokerProcess) -> None:
    name = topic_name("ct-dup")
    create_topic(broker.bootstrap, name)
    result = create_one(broker.bootstrap, 7, name)
    assert result.error_code == ErrorCode.topic_already_exists
    assert result.topic_id is None
    assert result.configs is None


@pytest.mark.parametrize(
    ("fields", "code", "mentions"),
    [
        ({"replication_factor": 3}, ErrorCode.invalid_replication_factor, "3"),
        ({"replication_factor": 0}, ErrorCode.invalid_replication_factor, "larger than 0"),
        ({"partitions": 0}, ErrorCode.invalid_partitions, "partitions"),
        ({"partitions": -5}, ErrorCode.invalid_partitions, "partitions"),
        ({"partitions": 10_001}, ErrorCode.policy_violation, "Excessively large"),
        ({"configs": {"no.such.key": "1"}}, ErrorCode.invalid_config, "no.such.key"),
        ({"configs": {"retention.ms": "soon"}}, ErrorCode.invalid_config, "retention.ms"),
        ({"configs": {"retention.ms": "-7"}}, ErrorCode.invalid_config, "retention.ms"),
        ({"configs": {"retention.ms": None}}, ErrorCode.invalid_config, "retention.ms"),
        ({"assignments": [[2]], "partitions": -1, "replication_factor": -1},
         ErrorCode.invalid_replica_assignment, "broker 2"),
        ({"assignments": [[1, 1]], "partitions": -1, "replication_factor": -1},
         ErrorCode.invalid_replica_assignment, "more than once"),
        ({"assignments": [[]], "partitions": -1, "replication_factor": -1},
         ErrorCode.invalid_replica_assignment, "empty"),
        ({"assignments": [[1]], "partitions": 1, "replication_factor": -1},
         ErrorCode.invalid_request, "numPartitions"),
        ({"assignments": [[1]], "partitions": -1, "replication_factor": 1},
         ErrorCode.invalid_request, "replication factor"),
    ],
)  # fmt: skip
def test_refusals(
    broker: BrokerProcess, fields: dict[str, Any], code: ErrorCode, mentions: str
) -> None:
    name = topic_name("ct-bad")
    result = create_one(broker.bootstrap, 7, name, **fields)
    assert result.error_code == code, result
    assert result.error_message is not None and mentions in result.error_message
    assert (result.num_partitions, result.replication_factor) == (-1, -1)
    assert partitions_of(broker.bootstrap, name) is None


@pytest.mark.parametrize("name", ["bad name", "", "x" * 250, "..", "a/b"])
def test_invalid_names(broker: BrokerProcess, name: str) -> None:
    result = create_one(broker.bootstrap, 5, name)
    assert result.error_code == ErrorCode.invalid_topic_exception
    assert result.error_message.startswith("Topic name is invalid: ")  # Kafka's words


def test_partitions_per_request_limit(broker: BrokerProcess) -> None:
    """limits.PARTITIONS_PER_CREATE_TOPICS_MAX counts every topic of the request: at it
    the topics are valid, one partition more refuses them all (Kafka's controller)."""
    half = limits.PARTITIONS_PER_CREATE_TOPICS_MAX // 2
    names = [topic_name("ct-many"), topic_name("ct-many")]
    at_limit = create(
        broker.bootstrap, 7, topic(7, names[0], partitions=half),
        topic(7, names[1], partitions=half), validate_only=True,
    )  # fmt: skip
    assert [r.error_code for r in at_limit] == [ErrorCode.none, ErrorCode.none]
    over = create(
        broker.bootstrap, 7, topic(7, names[0], partitions=half),
        topic(7, names[1], partitions=half + 1),
    )  # fmt: skip
    assert [(r.error_code, r.error_message) for r in over] == [
        (ErrorCode.policy_violation, "Excessively large number of partitions per request.")
    ] * 2
    assert partitions_of(broker.bootstrap, names[0]) is None


def test_manual_assignments_give_the_partition_count(broker: BrokerProcess) -> None:
    name = topic_name("ct-assigned")
    result = create_one(
        broker.bootstrap, 7, name, partitions=-1, replication_factor=-1,
        assignments=[[1], [1], [1]],
    )  # fmt: skip
    assert result.error_code == ErrorCode.none
    assert result.num_partitions == 3
    assert partitions_of(broker.bootstrap, name) == 3


def test_assignment_indexes_must_be_consecutive(broker: BrokerProcess) -> None:
    schema = request_schema(19, 7)
    name = topic_name("ct-gap")
    gap = schema.make(
        "CreatableTopic",
        name=name,
        num_partitions=-1,
        replication_factor=-1,
        assignments=(
            schema.make("CreatableReplicaAssignment", partition_index=0, broker_ids=(1,)),
            schema.make("CreatableReplicaAssignment", partition_index=2, broker_ids=(1,)),
        ),
        configs=(),
    )
    (result,) = create(broker.bootstrap, 7, gap)
    assert result.error_code == ErrorCode.invalid_replica_assignment


def test_validate_only_creates_nothing(broker: BrokerProcess) -> None:
    name = topic_name("ct-dry")
    (result,) = create(broker.bootstrap, 7, topic(7, name, partitions=4), validate_only=True)
    assert result.error_code == ErrorCode.none
    assert result.num_partitions == 4
    assert partitions_of(broker.bootstrap, name) is None
    (bad,) = create(broker.bootstrap, 7, topic(7, name, partitions=0), validate_only=True)
    assert bad.error_code == ErrorCode.invalid_partitions


def test_repeated_name_in_one_request(broker: BrokerProcess) -> None:
    name, other = topic_name("ct-twice"), topic_name("ct-once")
    results = create(broker.bootstrap, 7, topic(7, name), topic(7, other), topic(7, name))
    by_name = {r.name: r for r in results}
    assert len(results) == 2
    assert by_name[name].error_code == ErrorCode.invalid_request
    assert by_name[other].error_code == ErrorCode.none
    assert partitions_of(broker.bootstrap, name) is None
