"""OffsetFetch (9) v1-v9 against a broker process: one group (v1-v7, all partitions
from v2 with null Topics) and several groups (v8+)."""

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


@pytest.fixture(scope="module")
def committed(broker: BrokerProcess, topic: str) -> str:
    group = topic_name("fetch")
    response = call1(broker.bootstrap, commit_request(8, group, {(topic, 0): 10, (topic, 2): 12}))
    assert all(p.error_code == ErrorCode.none for t in response.topics for p in t.partitions)
    return group


@pytest.mark.parametrize("version", [1, 5, 7])
def test_one_group(broker: BrokerProcess, topic: str, committed: str, version: int) -> None:
    schema = request_schema(9, version)
    request = schema.make(
        "OffsetFetchRequest",
        group_id=committed,
        topics=(schema.make("OffsetFetchRequestTopic", name=topic, partition_indexes=(0, 1)),),
        require_stable=True,
    )
    (topic,) = call1(broker.bootstrap, request).topics
    rows = [(p.partition_index, p.committed_offset, p.metadata) for p in topic.partitions]
    assert rows == [(0, 10, "meta"), (1, -1, "")]
    if version >= 5:
        assert [p.committed_leader_epoch for p in topic.partitions] == [5, -1]


def test_all_partitions_with_null_topics(broker: BrokerProcess, topic: str, committed: str) -> None:
    request = request_schema(9, 7).make(
        "OffsetFetchRequest", group_id=committed, topics=None, require_stable=False
    )
    (topic,) = call1(broker.bootstrap, request).topics
    assert [(p.partition_index, p.committed_offset) for p in topic.partitions] == [(0, 10), (2, 12)]


def test_v9_several_groups(broker: BrokerProcess, committed: str) -> None:
    schema = request_schema(9, 9)
    empty = topic_name("nothing")
    request = schema.make(
        "OffsetFetchRequest",
        groups=tuple(
            schema.make(
                "OffsetFetchRequestGroup", group_id=g, member_id=None, member_epoch=-1, topics=None
            )
            for g in (committed, empty)
        ),
        require_stable=True,
    )
    groups = {g.group_id: g for g in call1(broker.bootstrap, request).groups}
    assert [p.committed_offset for t in groups[committed].topics for p in t.partitions] == [10, 12]
    assert groups[empty].topics == () and groups[empty].error_code == ErrorCode.none
