"""Metadata (3) v0-v13: topics by name and by id, all/none, auto-creation, errors."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.protocol.schema import request_schema
from shoal.server.handlers.common import authorized_operations
from tests.support.broker import BrokerProcess, running
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1

INT32_MIN = -(2**31)


def metadata(
    version: int,
    topics: Sequence[str | uuid.UUID | None] | None,
    *,
    allow_auto_create: bool = True,
    authorized_operations: bool = False,
) -> Any:
    """A Metadata request of `version`; a topic is a name, or (v10+) an id."""
    schema = request_schema(3, version)
    entries = None
    if topics is not None:
        entries = tuple(
            schema.make(
                "MetadataRequestTopic",
                name=None if isinstance(t, uuid.UUID) else t,
                topic_id=t if isinstance(t, uuid.UUID) else None,
            )
            for t in topics
        )
    return schema.make(
        "MetadataRequest",
        topics=entries,
        allow_auto_topic_creation=allow_auto_create,
        include_cluster_authorized_operations=authorized_operations,
        include_topic_authorized_operations=authorized_operations,
    )


def names(response: Any) -> set[str]:
    return {t.name for t in response.topics}


@pytest.mark.parametrize("version", [0, 1, 4, 7, 9, 10, 12, 13])
def test_describes_a_topic_at_every_version(broker: BrokerProcess, version: int) -> None:
    name = topic_name("md")
    topic_id = create_topic(broker.bootstrap, name, partitions=3)
    response = call1(broker.bootstrap, metadata(version, [name]))
    (node,) = response.brokers
    assert (node.node_id, node.host, node.port) == (1, "127.0.0.1", broker.port)
    (topic,) = response.topics
    assert topic.error_code == ErrorCode.none
    assert topic.name == name
    assert [p.partition_index for p in topic.partitions] == [0, 1, 2]
    for partition in topic.partitions:
        assert partition.error_code == ErrorCode.none
        assert partition.leader_id == 1
        assert tuple(partition.replica_nodes) == (1,)
        assert tuple(partition.isr_nodes) == (1,)
    if version >= 1:
        assert response.controller_id == 1
        assert topic.is_internal is False
    if version >= 2:
        assert response.cluster_id is not None and len(response.cluster_id) == 22
    if version >= 7:
        assert all(p.leader_epoch == 0 for p in topic.partitions)
    if version >= 8:
        assert topic.topic_authorized_operations == INT32_MIN
    if version >= 10:
        assert topic.topic_id == topic_id
    if version >= 13:
        assert response.error_code == ErrorCode.none


@pytest.mark.parametrize("version", [12, 13])
def test_by_topic_id(broker: BrokerProcess, version: int) -> None:
    name = topic_name("md-id")
    topic_id = create_topic(broker.bootstrap, name, partitions=2)
    unknown = uuid.uuid4()
    response = call1(broker.bootstrap, metadata(version, [topic_id, unknown]))
    known, missing = response.topics
    assert (known.error_code, known.name, known.topic_id) == (ErrorCode.none, name, topic_id)
    assert len(known.partitions) == 2
    assert missing.error_code == ErrorCode.unknown_topic_id
    assert missing.name is None
    assert missing.topic_id == unknown


@pytest.mark.parametrize("version", [10, 11])
def test_topic_ids_before_v12_are_invalid(broker: BrokerProcess, version: int) -> None:
    response = call1(broker.bootstrap, metadata(version, [uuid.uuid4()]))
    (topic,) = response.topics
    assert topic.error_code == ErrorCode.invalid_request


def test_all_and_none(broker: BrokerProcess) -> None:
    name = topic_name("md-all")
    create_topic(broker.bootstrap, name)
    assert name in names(call1(broker.bootstrap, metadata(0, [])))  # v0: empty = all
    assert name in names(call1(broker.bootstrap, metadata(1, None)))  # v1+: null = all
    assert name in names(call1(broker.bootstrap, metadata(13, None)))
    empty = call1(broker.bootstrap, metadata(13, []))  # v1+: empty = none
    assert empty.topics == ()
    assert len(empty.brokers) == 1


def test_repeated_topic_is_answered_once(broker: BrokerProcess) -> None:
    name = topic_name("md-twice")
    create_topic(broker.bootstrap, name)
    response = call1(broker.bootstrap, metadata(13, [name, name]))
    assert [t.name for t in response.topics] == [name]


@pytest.mark.parametrize("version", [0, 3, 4, 13])
def test_auto_creates_unknown_topics(broker: BrokerProcess, version: int) -> None:
    name = topic_name("md-auto")
    response = call1(broker.bootstrap, metadata(version, [name]))
    (topic,) = response.topics
    # As Kafka 4.2: the request that asks for the creation is answered unknown.
    assert topic.error_code == ErrorCode.unknown_topic_or_partition
    assert topic.partitions == ()
    again = call1(broker.bootstrap, metadata(13, [name], allow_auto_create=False))
    assert again.topics[0].error_code == ErrorCode.none
    assert len(again.topics[0].partitions) == 1  # num.partitions


def test_no_auto_creation_when_the_request_forbids_it(broker: BrokerProcess) -> None:
    name = topic_name("md-noauto")
    response = call1(broker.bootstrap, metadata(13, [name], allow_auto_create=False))
    (topic,) = response.topics
    assert topic.error_code == ErrorCode.unknown_topic_or_partition
    assert topic.partitions == ()
    again = call1(broker.bootstrap, metadata(13, [name], allow_auto_create=False))
    assert again.topics[0].error_code == ErrorCode.unknown_topic_or_partition


@pytest.mark.parametrize("allow", [True, False])
def test_invalid_name(broker: BrokerProcess, allow: bool) -> None:
    response = call1(broker.bootstrap, metadata(13, ["bad name!"], allow_auto_create=allow))
    assert response.topics[0].error_code == ErrorCode.invalid_topic_exception


def test_authorized_operations_when_asked(broker: BrokerProcess) -> None:
    name = topic_name("md-ops")
    create_topic(broker.bootstrap, name)
    response = call1(broker.bootstrap, metadata(10, [name], authorized_operations=True))
    assert response.topics[0].topic_authorized_operations == authorized_operations.TOPIC
    assert response.cluster_authorized_operations == authorized_operations.CLUSTER
    bits = authorized_operations.TOPIC
    assert bits & (1 << 3) and bits & (1 << 4) and not bits & (1 << 9)  # read, write; no cluster


@pytest.fixture(scope="module")
def no_auto_create(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(
        tmp_path_factory.mktemp("no-auto") / "data", "auto.create.topics.enable=false"
    )


@pytest.mark.parametrize("version", [0, 13])
def test_auto_create_disabled_by_config(no_auto_create: BrokerProcess, version: int) -> None:
    name = topic_name("md-off")
    response = call1(no_auto_create.bootstrap, metadata(version, [name]))
    assert response.topics[0].error_code == ErrorCode.unknown_topic_or_partition
    invalid = call1(no_auto_create.bootstrap, metadata(version, ["bad name!"]))
    assert invalid.topics[0].error_code == ErrorCode.invalid_topic_exception
