"""OffsetDelete (47) v0 against a broker process."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from shoal.protocol.schema import request_schema
from tests.support.broker import BrokerProcess
from tests.support.classic_groups import commit_request
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1


@pytest.fixture(scope="module")
def topic(broker: BrokerProcess) -> str:
    """A topic with three partitions: commits to partitions that do not exist fail."""
    name = topic_name("offsets")
    create_topic(broker.bootstrap, name, partitions=3)
    return name


def delete_request(group: str, topic: str, partitions: tuple[int, ...]) -> object:
    schema = request_schema(47, 0)
    return schema.make(
        "OffsetDeleteRequest",
        group_id=group,
        topics=(
            schema.make(
                "OffsetDeleteRequestTopic",
                name=topic,
                partitions=tuple(
                    schema.make("OffsetDeleteRequestPartition", partition_index=p)
                    for p in partitions
                ),
            ),
        ),
    )


def test_delete_then_fetch_shows_none(broker: BrokerProcess, topic: str) -> None:
    group = topic_name("delete")
    call1(broker.bootstrap, commit_request(8, group, {(topic, 0): 3}))
    response = call1(broker.bootstrap, delete_request(group, topic, (0,)))
    assert response.error_code == ErrorCode.none
    assert [p.error_code for t in response.topics for p in t.partitions] == [ErrorCode.none]
    fetch = request_schema(9, 7).make(
        "OffsetFetchRequest", group_id=group, topics=None, require_stable=False
    )
    assert call1(broker.bootstrap, fetch).topics == ()


def test_unknown_group(broker: BrokerProcess, topic: str) -> None:
    response = call1(broker.bootstrap, delete_request(topic_name("none"), topic, (0,)))
    assert response.error_code == ErrorCode.group_id_not_found
