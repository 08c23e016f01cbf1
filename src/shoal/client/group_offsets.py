"""Committing a consumer group's offsets from outside the group, as Kafka's
AdminClient `alterConsumerGroupOffsets` does: OffsetCommit (8) with generation -1 and
an empty member id, sent to the group's coordinator. The coordinator takes it only
while the group has no members (an active group answers UNKNOWN_MEMBER_ID, or
ILLEGAL_GENERATION); an unknown group is created empty with the offsets.
"""

from __future__ import annotations

from collections.abc import Mapping

from shoal.client import requests
from shoal.client.errors import check
from shoal.client.metadata import TopicPartition
from shoal.client.sync import Client


def commit_offsets(client: Client, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
    """Commit each partition's offset; the first partition answered with an error
    raises `KafkaError` naming it and the group."""
    response = client.to_coordinator(
        group_id,
        requests.offset_commit(group_id, offsets),
        lambda r: int(r.topics[0].partitions[0].error_code) if r.topics else 0,
    )
    for topic in response.topics:
        for p in topic.partitions:
            check(
                p.error_code,
                None,
                context=f"committing {topic.name}-{p.partition_index} in '{group_id}'",
            )
