"""DeleteTopics (20) v1-v6: by name and by id, errors, deletion disabled, parked fetches."""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.delete_topics.v1.request import DeleteTopicsRequest as DeleteTopicsV1
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest as DeleteTopicsV6
from kio.schema.delete_topics.v6.request import DeleteTopicState
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

from shoal.client.aio import Connection
from tests.support.broker import BrokerProcess, running
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1

TIMEOUT = datetime.timedelta(seconds=10)


def by_names(*names: str) -> Any:
    return DeleteTopicsV1(topic_names=names, timeout=TIMEOUT)


def by_states(*states: tuple[str | None, uuid.UUID | None]) -> Any:
    topics = tuple(DeleteTopicState(name=n, topic_id=i) for n, i in states)
    return DeleteTopicsV6(topics=topics, timeout=TIMEOUT)


def exists(bootstrap: str, name: str) -> bool:
    response = call1(
        bootstrap,
        MetadataRequest(
            topics=(MetadataRequestTopic(topic_id=None, name=name),),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        ),
    )
    return bool(response.topics[0].error_code == ErrorCode.none)


def test_by_name_v1(broker: BrokerProcess) -> None:
    name = topic_name("dt")
    create_topic(broker.bootstrap, name, partitions=2)
    (result,) = call1(broker.bootstrap, by_names(name)).responses
    assert (result.name, result.error_code) == (name, ErrorCode.none)
    assert not exists(broker.bootstrap, name)
    (again,) = call1(broker.bootstrap, by_names(name)).responses
    assert again.error_code == ErrorCode.unknown_topic_or_partition


def test_by_id_v6_and_recreate_gets_a_new_id(broker: BrokerProcess) -> None:
    name = topic_name("dt-id")
    first_id = create_topic(broker.bootstrap, name)
    (result,) = call1(broker.bootstrap, by_states((None, first_id))).responses
    assert (result.name, result.topic_id, result.error_code) == (name, first_id, ErrorCode.none)
    assert result.error_message is None
    assert not exists(broker.bootstrap, name)
    second_id = create_topic(broker.bootstrap, name)
    assert second_id != first_id
    (gone,) = call1(broker.bootstrap, by_states((None, first_id))).responses
    assert gone.error_code == ErrorCode.unknown_topic_id
    assert exists(broker.bootstrap, name)
    (by_name,) = call1(broker.bootstrap, by_states((name, None))).responses
    assert (by_name.error_code, by_name.topic_id) == (ErrorCode.none, second_id)


def test_v6_errors(broker: BrokerProcess) -> None:
    name = topic_name("dt-err")
    topic_id = create_topic(broker.bootstrap, name)
    missing = topic_name("dt-missing")
    response = call1(
        broker.bootstrap,
        by_states((name, topic_id), (None, None), (missing, None), (None, uuid.uuid4())),
    )
    codes = [(r.name, r.error_code) for r in response.responses]
    assert codes == [
        (name, ErrorCode.invalid_request),
        (None, ErrorCode.invalid_request),
        (missing, ErrorCode.unknown_topic_or_partition),
        (None, ErrorCode.unknown_topic_id),
    ]
    assert all(r.error_message for r in response.responses)
    # the unknown ones: the errors' default messages, as Kafka 4.2 sends them
    assert [r.error_message for r in response.responses[2:]] == [
        "This server does not host this topic-partition.",
        "This server does not host this topic ID.",
    ]
    assert exists(broker.bootstrap, name)


def test_repeated_name(broker: BrokerProcess) -> None:
    name = topic_name("dt-twice")
    create_topic(broker.bootstrap, name)
    (result,) = call1(broker.bootstrap, by_names(name, name)).responses
    assert result.error_code == ErrorCode.invalid_request
    assert exists(broker.bootstrap, name)


def test_deletion_wakes_parked_fetches(broker: BrokerProcess) -> None:
    name = topic_name("dt-parked")
    create_topic(broker.bootstrap, name)
    host, port = broker.bootstrap.split(":")
    fetch = FetchRequest(
        max_wait=datetime.timedelta(seconds=20),
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=(
            FetchTopic(
                topic=name,
                partitions=(
                    FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20),
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )

    async def go() -> tuple[Any, float]:
        fetcher = await Connection.open(host, int(port))
        admin = await Connection.open(host, int(port))
        try:
            parked = await fetcher.send(fetch)
            assert parked is not None
            await asyncio.sleep(0.3)
            started = time.monotonic()
            deleted = await admin.request(by_names(name))
            assert deleted.responses[0].error_code == ErrorCode.none
            response = await asyncio.wait_for(parked, 10)
            return response, time.monotonic() - started
        finally:
            await fetcher.close()
            await admin.close()

    response, waited_s = asyncio.run(go())
    partition = response.responses[0].partitions[0]
    assert partition.error_code == ErrorCode.unknown_topic_or_partition
    assert waited_s < 5


@pytest.fixture(scope="module")
def no_delete(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(tmp_path_factory.mktemp("no-delete") / "data", "delete.topic.enable=false")


def test_deletion_disabled(no_delete: BrokerProcess) -> None:
    name = topic_name("dt-off")
    create_topic(no_delete.bootstrap, name)
    (v6,) = call1(no_delete.bootstrap, by_states((name, None))).responses
    assert v6.error_code == ErrorCode.topic_deletion_disabled
    (v1,) = call1(no_delete.bootstrap, by_names(name)).responses
    assert v1.error_code == ErrorCode.invalid_request  # v1-v2 predate code 73
    assert exists(no_delete.bootstrap, name)
