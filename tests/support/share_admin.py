"""Share-group administration at the wire: request builders and readers for
DeleteGroups (42), DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91),
DeleteShareGroupOffsets (92) and the share coordinator's state RPCs (83-87), plus a
member that consumes and acknowledges through one connection.

Offsets read back as `{topic name: {partition: (start offset, leader epoch, lag)}}`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from shoal.client import KafkaConnection
from shoal.protocol.schema import request_schema
from tests.support.share_groups import Member, heartbeat_request
from tests.support.share_wire import TP, Acks, acquired, share_ack_request, share_fetch_request
from tests.support.wire import call1

Offsets = dict[str, dict[int, tuple[int, int, int]]]


# ---- DeleteGroups (42)


def delete_groups_request(*group_ids: str, version: int = 2) -> Any:
    schema = request_schema(42, version)
    return schema.make("DeleteGroupsRequest", groups_names=group_ids)


def delete_groups(bootstrap: str, *group_ids: str, version: int = 2) -> dict[str, int]:
    """{group id: error code}."""
    response = call1(bootstrap, delete_groups_request(*group_ids, version=version))
    return {r.group_id: int(r.error_code) for r in response.results}


# ---- DescribeShareGroupOffsets (90)


def describe_offsets_request(
    groups: Mapping[str, Mapping[str, Sequence[int]] | None], *, version: int = 1
) -> Any:
    """Topics None = every partition with state."""
    schema = request_schema(90, version)
    return schema.make(
        "DescribeShareGroupOffsetsRequest",
        groups=tuple(
            schema.make(
                "DescribeShareGroupOffsetsRequestGroup",
                group_id=group_id,
                topics=None
                if topics is None
                else tuple(
                    schema.make(
                        "DescribeShareGroupOffsetsRequestTopic",
                        topic_name=name,
                        partitions=tuple(partitions),
                    )
                    for name, partitions in topics.items()
                ),
            )
            for group_id, topics in groups.items()
        ),
    )


def offsets_of(group: Any) -> Offsets:
    """A described group's partitions; asserts no group or partition error."""
    assert group.error_code == ErrorCode.none, group
    found: Offsets = {}
    for topic in group.topics:
        for p in topic.partitions:
            assert p.error_code == ErrorCode.none, (topic.topic_name, p)
            lag = int(getattr(p, "lag", -1))
            found.setdefault(topic.topic_name, {})[int(p.partition_index)] = (
                int(p.start_offset),
                int(p.leader_epoch),
                lag,
            )
    return found


def describe_offsets(
    bootstrap: str, group_id: str, topics: Mapping[str, Sequence[int]] | None = None
) -> Offsets:
    response = call1(bootstrap, describe_offsets_request({group_id: topics}))
    (group,) = response.groups
    assert group.group_id == group_id
    return offsets_of(group)


async def describe_offsets_on(
    conn: KafkaConnection, group_id: str, topics: Mapping[str, Sequence[int]] | None = None
) -> Offsets:
    """`describe_offsets` on an open connection (inside a running event loop)."""
    response = await conn.request(describe_offsets_request({group_id: topics}))
    (group,) = response.groups
    return offsets_of(group)


# ---- AlterShareGroupOffsets (91)


def alter_offsets_request(group_id: str, offsets: Mapping[str, Mapping[int, int]]) -> Any:
    schema = request_schema(91, 0)
    return schema.make(
        "AlterShareGroupOffsetsRequest",
        group_id=group_id,
        topics=tuple(
            schema.make(
                "AlterShareGroupOffsetsRequestTopic",
                topic_name=name,
                partitions=tuple(
                    schema.make(
                        "AlterShareGroupOffsetsRequestPartition",
                        partition_index=p,
                        start_offset=offset,
                    )
                    for p, offset in partitions.items()
                ),
            )
            for name, partitions in offsets.items()
        ),
    )


def alter_offsets(
    bootstrap: str, group_id: str, offsets: Mapping[str, Mapping[int, int]]
) -> tuple[int, dict[str, dict[int, int]]]:
    """(top-level error code, {topic: {partition: error code}})."""
    response = call1(bootstrap, alter_offsets_request(group_id, offsets))
    return int(response.error_code), {
        t.topic_name: {int(p.partition_index): int(p.error_code) for p in t.partitions}
        for t in response.responses
    }


# ---- DeleteShareGroupOffsets (92)


def delete_offsets_request(group_id: str, *topics: str) -> Any:
    schema = request_schema(92, 0)
    return schema.make(
        "DeleteShareGroupOffsetsRequest",
        group_id=group_id,
        topics=tuple(
            schema.make("DeleteShareGroupOffsetsRequestTopic", topic_name=t) for t in topics
        ),
    )


# ---- state RPCs (83-87)


def state_request(
    api_key: int,
    group_id: str,
    partitions: Mapping[uuid.UUID | None, Sequence[Mapping[str, Any]]],
    *,
    version: int = 0,
) -> Any:
    """A state RPC: {topic id: [partition fields]} (each field mapping has at least
    `partition`); nested type names are those of Kafka's schemas."""
    schema = request_schema(api_key, version)
    names = {
        83: "InitializeStateData",
        84: "ReadStateData",
        85: "WriteStateData",
        86: "DeleteStateData",
        87: "ReadStateSummaryData",
    }
    root = schema.root.__name__

    def partition(fields: Mapping[str, Any]) -> Any:
        values = dict(fields)
        if api_key == 85:
            values["state_batches"] = tuple(
                schema.make(
                    "StateBatch",
                    first_offset=b[0],
                    last_offset=b[1],
                    delivery_state=b[2],
                    delivery_count=b[3],
                )
                for b in values.get("state_batches", ())
            )
        return schema.make("PartitionData", **values)

    return schema.make(
        root,
        group_id=group_id,
        topics=tuple(
            schema.make(
                names[api_key],
                topic_id=topic_id,
                partitions=tuple(partition(fields) for fields in rows),
            )
            for topic_id, rows in partitions.items()
        ),
    )


def state_results(response: Any) -> dict[tuple[uuid.UUID | None, int], Any]:
    """{(topic id, partition): PartitionResult} of a state RPC response."""
    return {
        (topic.topic_id, int(p.partition)): p
        for topic in response.results
        for p in topic.partitions
    }


# ---- a consuming member on one connection


class Consumer:
    """A share-group member that joins, fetches and acknowledges over one connection,
    tracking its share-session epoch."""

    def __init__(self, conn: KafkaConnection, group_id: str) -> None:
        self.conn = conn
        self.member = Member(group_id)
        self.session_epoch = 0

    @property
    def group_id(self) -> str:
        return self.member.group_id

    async def join(self, *topics: str) -> None:
        await self.member.join(self.conn, list(topics))

    async def fetch(self, partitions: Iterable[TP], acks: Acks | None = None) -> Any:
        response = await self.conn.request(
            share_fetch_request(
                self.group_id,
                self.member.member_id,
                self.session_epoch,
                partitions,
                acks=acks,
                max_wait_ms=5_000,
            )
        )
        assert response.error_code == ErrorCode.none, response
        self.session_epoch += 1
        return response

    async def acquire(self, partitions: Iterable[TP]) -> dict[TP, list[tuple[int, int, int]]]:
        return acquired(await self.fetch(partitions))

    async def acknowledge(self, acks: Acks) -> None:
        response = await self.conn.request(
            share_ack_request(self.group_id, self.member.member_id, self.session_epoch, acks)
        )
        assert response.error_code == ErrorCode.none, response
        for topic in response.responses:
            for p in topic.partitions:
                assert p.error_code == ErrorCode.none, p
        self.session_epoch += 1

    async def close_and_leave(self) -> None:
        """End the share session (releasing nothing acknowledged) and leave."""
        if self.session_epoch > 0:
            response = await self.conn.request(
                share_ack_request(self.group_id, self.member.member_id, -1)
            )
            assert response.error_code == ErrorCode.none, response
        response = await self.conn.request(
            heartbeat_request(self.group_id, self.member.member_id, -1)
        )
        assert response.error_code == ErrorCode.none, response
