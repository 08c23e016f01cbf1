"""Classic-group requests for wire tests, built with kio at a pinned version, a
helper that makes a one-member Stable group, and the embedded consumer protocol's
subscription bytes (JoinGroup metadata) for tests that need real ones."""

from __future__ import annotations

import datetime
import io
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kio.schema.consumer_protocol_subscription import v1 as subscription_v1
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from shoal.protocol.schema import request_schema
from tests.support.wire import call1

SESSION = datetime.timedelta(seconds=10)
PROTOCOL = ("range", b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff")
"""A consumer-protocol v0 subscription to no topics."""


def consumer_subscription(
    topics: Sequence[str], owned: dict[str, Sequence[int]] | None = None
) -> bytes:
    """A ConsumerProtocolSubscription v1 (topics, owned partitions), as a client
    sends in JoinGroup."""
    data = subscription_v1.data
    entity = data.ConsumerProtocolSubscription(
        topics=tuple(topics),
        user_data=None,
        owned_partitions=tuple(
            data.TopicPartition(topic=name, partitions=tuple(partitions))
            for name, partitions in sorted((owned or {}).items())
        ),
    )
    buffer = io.BytesIO()
    buffer.write(struct.pack(">h", 1))
    entity_writer(data.ConsumerProtocolSubscription)(buffer, entity)
    return buffer.getvalue()


def join_request(
    version: int,
    group_id: str,
    *,
    member_id: str = "",
    instance: str | None = None,
    protocols: Sequence[tuple[str, bytes]] = (PROTOCOL,),
    session: datetime.timedelta = SESSION,
) -> Any:
    schema = request_schema(11, version)
    return schema.make(
        "JoinGroupRequest",
        group_id=group_id,
        session_timeout=session,
        rebalance_timeout=session,
        member_id=member_id,
        group_instance_id=instance,
        protocol_type="consumer",
        protocols=tuple(
            schema.make("JoinGroupRequestProtocol", name=n, metadata=m) for n, m in protocols
        ),
        reason=None,
    )


def sync_request(
    version: int,
    group_id: str,
    member_id: str,
    generation: int,
    assignments: dict[str, bytes],
    *,
    instance: str | None = None,
) -> Any:
    schema = request_schema(14, version)
    return schema.make(
        "SyncGroupRequest",
        group_id=group_id,
        generation_id=generation,
        member_id=member_id,
        group_instance_id=instance,
        protocol_type="consumer",
        protocol_name="range",
        assignments=tuple(
            schema.make("SyncGroupRequestAssignment", member_id=m, assignment=a)
            for m, a in assignments.items()
        ),
    )


def heartbeat_request(version: int, group_id: str, member_id: str, generation: int) -> Any:
    return request_schema(12, version).make(
        "HeartbeatRequest",
        group_id=group_id,
        generation_id=generation,
        member_id=member_id,
        group_instance_id=None,
    )


def commit_request(
    version: int,
    group_id: str,
    offsets: dict[tuple[str, int], int],
    *,
    member_id: str = "",
    generation: int = -1,
    metadata: str = "meta",
    instance: str | None = None,
) -> Any:
    schema = request_schema(8, version)
    topics: dict[str, list[Any]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(
            schema.make(
                "OffsetCommitRequestPartition",
                partition_index=partition,
                committed_offset=offset,
                committed_leader_epoch=5,
                committed_metadata=metadata,
            )
        )
    return schema.make(
        "OffsetCommitRequest",
        group_id=group_id,
        generation_id_or_member_epoch=generation,
        member_id=member_id,
        group_instance_id=instance,
        retention_time=datetime.timedelta(milliseconds=-1),
        topics=tuple(
            schema.make("OffsetCommitRequestTopic", name=name, partitions=tuple(parts))
            for name, parts in topics.items()
        ),
    )


@dataclass(frozen=True)
class StableMember:
    group_id: str
    member_id: str
    generation: int


def stable_group(bootstrap: str, group_id: str, assignment: bytes = b"A") -> StableMember:
    """One member joins (JoinGroup v3: no member id round trip; the answer waits the
    initial rebalance delay) and syncs its own assignment."""
    joined = call1(bootstrap, join_request(3, group_id))
    assert joined.error_code == ErrorCode.none, joined
    member = StableMember(group_id, joined.member_id, int(joined.generation_id))
    synced = call1(
        bootstrap,
        sync_request(
            3, group_id, member.member_id, member.generation, {member.member_id: assignment}
        ),
    )
    assert synced.error_code == ErrorCode.none and synced.assignment == assignment
    return member
