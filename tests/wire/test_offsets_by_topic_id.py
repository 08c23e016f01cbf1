"""OffsetCommit (8) and OffsetFetch (9) v10 against a broker process: topics named by
id in requests and responses; an unknown id answers UNKNOWN_TOPIC_ID per partition."""

from __future__ import annotations

import uuid

from kio.schema.errors import ErrorCode

from shoal.client.requests import metadata
from shoal.protocol.schema import request_schema
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic
from tests.support.topics import topic_name
from tests.support.wire import call1

UNKNOWN = uuid.UUID(int=0x5EED)


def test_commit_and_fetch_by_topic_id(broker: BrokerProcess) -> None:
    topic, group = topic_name("by-id"), topic_name("by-id-g")
    create_topic(broker.bootstrap, topic, partitions=2)
    (meta,) = call1(broker.bootstrap, metadata([topic]).build(12)).topics
    commit = request_schema(8, 10)

    def part(index: int, offset: int) -> object:
        return commit.make(
            "OffsetCommitRequestPartition",
            partition_index=index,
            committed_offset=offset,
            committed_leader_epoch=-1,
            committed_metadata="m",
        )

    committed = call1(
        broker.bootstrap,
        commit.make(
            "OffsetCommitRequest",
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            group_instance_id=None,
            topics=(
                commit.make(
                    "OffsetCommitRequestTopic",
                    topic_id=meta.topic_id,
                    partitions=(part(0, 7), part(9, 1)),
                ),
                commit.make("OffsetCommitRequestTopic", topic_id=UNKNOWN, partitions=(part(0, 1),)),
            ),
        ),
    )
    assert {
        (t.topic_id, p.partition_index, p.error_code)
        for t in committed.topics
        for p in t.partitions
    } == {
        (meta.topic_id, 0, ErrorCode.none),
        (meta.topic_id, 9, ErrorCode.unknown_topic_or_partition),
        (UNKNOWN, 0, ErrorCode.unknown_topic_id),
    }
    fetch = request_schema(9, 10)
    for topics, expected in (
        (None, {(meta.topic_id, 0, 7, ErrorCode.none)}),
        (
            (
                fetch.make(
                    "OffsetFetchRequestTopics", topic_id=meta.topic_id, partition_indexes=(0, 1)
                ),
                fetch.make("OffsetFetchRequestTopics", topic_id=UNKNOWN, partition_indexes=(0,)),
            ),
            {
                (meta.topic_id, 0, 7, ErrorCode.none),
                (meta.topic_id, 1, -1, ErrorCode.none),
                (UNKNOWN, 0, -1, ErrorCode.unknown_topic_id),
            },
        ),
    ):
        response = call1(
            broker.bootstrap,
            fetch.make(
                "OffsetFetchRequest",
                groups=(
                    fetch.make(
                        "OffsetFetchRequestGroup",
                        group_id=group,
                        member_id=None,
                        member_epoch=-1,
                        topics=topics,
                    ),
                ),
                require_stable=False,
            ),
        )
        (g,) = response.groups
        assert g.error_code == ErrorCode.none
        assert {
            (t.topic_id, p.partition_index, p.committed_offset, p.error_code)
            for t in g.topics
            for p in t.partitions
        } == expected
