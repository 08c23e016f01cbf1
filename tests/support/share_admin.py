"""Share-group administration at the wire: readers of DeleteGroups (42),
DescribeShareGroupOffsets (90) and AlterShareGroupOffsets (91) answers (their
requests are the client's, `shoal.client.requests`), the requests the client has no
builder for (DescribeShareGroupOffsets of chosen partitions or several groups, the
share coordinator's state RPCs 83-87), and a member that consumes and acknowledges
through one connection.

Offsets read back as `{topic name: {partition: (start offset, leader epoch, lag)}}`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kio.schema.errors import ErrorCode

from shoal.client import requests
from shoal.client.aio import Connection
from shoal.client.share_requests import (
    LEAVE_EPOCH,
    Acks,
    heartbeat,
    share_acknowledge,
    share_fetch,
)
from shoal.protocol.schema import request_schema
from tests.support.share_groups import Member
from tests.support.share_wire import TP, acquired
from tests.support.wire import call1, send

Offsets = dict[str, dict[int, tuple[int, int, int]]]
MAX_RECORDS = 500
"""MaxRecords (and BatchSize) of the consuming member's ShareFetch."""


# ---- DeleteGroups (42)


def delete_groups(bootstrap: str, *group_ids: str, version: int = 2) -> dict[str, int]:
    """{group id: error code}."""
    response = call1(bootstrap, requests.delete_groups(group_ids).build(version))
    return {r.group_id: int(r.error_code) for r in response.results}


# ---- DescribeShareGroupOffsets (90)


def describe_offsets_request(
    groups: Mapping[str, Mapping[str, Sequence[int]] | None], *, version: int = 1
) -> Any:
    """Several groups, or chosen partitions (the client's
    `requests.describe_share_group_offsets` asks of one group, whole topics); topics
    None = every partition with state."""
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
    """The group's offsets (of `topics`' listed partitions, or every partition)."""
    request = (
        requests.describe_share_group_offsets(group_id)
        if topics is None
        else describe_offsets_request({group_id: topics})
    )
    response = call1(bootstrap, request)
    (group,) = response.groups
    assert group.group_id == group_id
    return offsets_of(group)


async def describe_offsets_on(conn: Connection, group_id: str) -> Offsets:
    """The group's offsets of every partition, on an open connection (inside a running
    event loop)."""
    response = await send(conn, requests.describe_share_group_offsets(group_id))
    (group,) = response.groups
    return offsets_of(group)


# ---- AlterShareGroupOffsets (91)


def alter_offsets(
    bootstrap: str, group_id: str, offsets: Mapping[str, Mapping[int, int]]
) -> tuple[int, dict[str, dict[int, int]]]:
    """(top-level error code, {topic: {partition: error code}})."""
    flat = {(t, p): offset for t, partitions in offsets.items() for p, offset in partitions.items()}
    response = call1(bootstrap, requests.alter_share_group_offsets(group_id, flat))
    return int(response.error_code), {
        t.topic_name: {int(p.partition_index): int(p.error_code) for p in t.partitions}
        for t in response.responses
    }


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

    def __init__(self, conn: Connection, group_id: str) -> None:
        self.conn = conn
        self.member = Member(group_id)
        self.session_epoch = 0

    @property
    def group_id(self) -> str:
        return self.member.group_id

    async def join(self, *topics: str) -> None:
        await self.member.join(self.conn, list(topics))

    async def fetch(self, partitions: Iterable[TP], acks: Acks | None = None) -> Any:
        response = await send(
            self.conn,
            share_fetch(
                group_id=self.group_id,
                member_id=self.member.member_id,
                session_epoch=self.session_epoch,
                partitions=partitions,
                acks=acks,
                max_wait_ms=5_000,
                max_records=MAX_RECORDS,
                batch_size=MAX_RECORDS,
            ),
        )
        assert response.error_code == ErrorCode.none, response
        self.session_epoch += 1
        return response

    async def acquire(self, partitions: Iterable[TP]) -> dict[TP, list[tuple[int, int, int]]]:
        return acquired(await self.fetch(partitions))

    async def acknowledge(self, acks: Acks) -> None:
        response = await send(
            self.conn,
            share_acknowledge(
                group_id=self.group_id,
                member_id=self.member.member_id,
                session_epoch=self.session_epoch,
                acks=acks,
            ),
        )
        assert response.error_code == ErrorCode.none, response
        for topic in response.responses:
            for p in topic.partitions:
                assert p.error_code == ErrorCode.none, p
        self.session_epoch += 1

    async def close_and_leave(self) -> None:
        """End the share session (releasing nothing acknowledged) and leave."""
        if self.session_epoch > 0:
            response = await send(
                self.conn,
                share_acknowledge(
                    group_id=self.group_id,
                    member_id=self.member.member_id,
                    session_epoch=LEAVE_EPOCH,
                ),
            )
            assert response.error_code == ErrorCode.none, response
        response = await send(
            self.conn, heartbeat(self.group_id, self.member.member_id, LEAVE_EPOCH, None)
        )
        assert response.error_code == ErrorCode.none, response
