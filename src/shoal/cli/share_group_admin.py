"""Share-group admin calls for `shoal share-groups`, as typed results.

ListGroups (16) v5 filtered to type "share" (sent to every broker, merged),
ShareGroupDescribe (77) v1, DescribeShareGroupOffsets (90) v1 (v0 when the broker
serves only that: no lag), AlterShareGroupOffsets (91) v0, DeleteShareGroupOffsets
(92) v0 and DeleteGroups (42) v2. Group requests go to the group's coordinator
(`AdminClient.send_to_coordinator` follows it while it loads or moves).

A start offset of -1 from DescribeShareGroupOffsets means the partition has no
state yet; it, its leader epoch and its lag are then unknown (None), as Kafka's
admin client reports them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kio.schema.alter_share_group_offsets.v0.request import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsRequestPartition,
    AlterShareGroupOffsetsRequestTopic,
)
from kio.schema.delete_groups.v2.request import DeleteGroupsRequest
from kio.schema.delete_share_group_offsets.v0.request import (
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequestTopic,
)
from kio.schema.describe_share_group_offsets.v0 import request as describe_offsets_v0
from kio.schema.describe_share_group_offsets.v1 import request as describe_offsets_v1
from kio.schema.list_groups.v5.request import ListGroupsRequest
from kio.schema.share_group_describe.v1.request import ShareGroupDescribeRequest
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32, i64

from shoal.cli.admin_client import AdminClient, KafkaError, Node, check
from shoal.protocol.errors import ErrorCode

SHARE_GROUP_TYPE = "share"
DESCRIBE_OFFSETS_KEY = 90
TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    state: str


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    client_id: str
    host: str
    member_epoch: int
    assignment: dict[str, tuple[int, ...]]

    @property
    def partition_count(self) -> int:
        return sum(len(partitions) for partitions in self.assignment.values())


@dataclass(frozen=True, slots=True)
class GroupDescription:
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    coordinator: Node
    members: tuple[MemberDescription, ...]


@dataclass(frozen=True, slots=True)
class PartitionOffset:
    topic: str
    partition: int
    start_offset: int | None
    leader_epoch: int | None
    lag: int | None


def list_share_groups(client: AdminClient, states: Sequence[str] = ()) -> list[ListedGroup]:
    """Share groups (in `states` if given), from every broker, sorted by id."""
    request = ListGroupsRequest(states_filter=tuple(states), types_filter=(SHARE_GROUP_TYPE,))
    found: dict[str, ListedGroup] = {}
    for node in client.brokers():
        response = client.send(request, node=node)
        check(response.error_code, None, context=f"listing groups on {node.address}")
        for group in response.groups:
            found[group.group_id] = ListedGroup(str(group.group_id), group.group_state)
    return [found[g] for g in sorted(found)]


def describe_group(client: AdminClient, group_id: str) -> GroupDescription:
    """ShareGroupDescribe of one group; GROUP_ID_NOT_FOUND and others raise."""
    response = client.send_to_coordinator(
        group_id,
        ShareGroupDescribeRequest(
            group_ids=(GroupId(group_id),), include_authorized_operations=False
        ),
        error_of=lambda r: int(r.groups[0].error_code),
    )
    (group,) = response.groups
    check(group.error_code, group.error_message, context=f"share group '{group_id}'")
    members = tuple(
        MemberDescription(
            member_id=m.member_id,
            client_id=m.client_id,
            host=m.client_host,
            member_epoch=int(m.member_epoch),
            assignment={
                str(tp.topic_name): tuple(sorted(int(p) for p in tp.partitions))
                for tp in m.assignment.topic_partitions
            },
        )
        for m in group.members
    )
    return GroupDescription(
        group_id=group_id,
        state=group.group_state,
        group_epoch=int(group.group_epoch),
        assignment_epoch=int(group.assignment_epoch),
        coordinator=client.coordinator(group_id),
        members=members,
    )


def describe_offsets(
    client: AdminClient, group_id: str, topics: Sequence[str] | None = None
) -> list[PartitionOffset]:
    """The share-partition state of the group (every partition with state when
    `topics` is None), sorted by topic and partition. A group-level error raises;
    so does a partition-level one, naming the partition."""
    v1 = client.supports(DESCRIBE_OFFSETS_KEY, 1)
    module: Any = describe_offsets_v1 if v1 else describe_offsets_v0
    request = module.DescribeShareGroupOffsetsRequest(
        groups=(
            module.DescribeShareGroupOffsetsRequestGroup(
                group_id=GroupId(group_id),
                topics=None
                if topics is None
                else tuple(
                    module.DescribeShareGroupOffsetsRequestTopic(topic_name=TopicName(t))
                    for t in topics
                ),
            ),
        )
    )
    response = client.send_to_coordinator(
        group_id, request, error_of=lambda r: int(r.groups[0].error_code)
    )
    (group,) = response.groups
    check(group.error_code, group.error_message, context=f"share group '{group_id}'")
    out = []
    for topic in group.topics:
        for p in topic.partitions:
            check(
                p.error_code,
                p.error_message,
                context=f"offsets of {topic.topic_name}-{p.partition_index} in '{group_id}'",
            )
            known = int(p.start_offset) >= 0
            lag = int(getattr(p, "lag", -1))
            out.append(
                PartitionOffset(
                    topic=str(topic.topic_name),
                    partition=int(p.partition_index),
                    start_offset=int(p.start_offset) if known else None,
                    leader_epoch=int(p.leader_epoch) if known and p.leader_epoch >= 0 else None,
                    lag=lag if known and lag >= 0 else None,
                )
            )
    return sorted(out, key=lambda o: (o.topic, o.partition))


def alter_offsets(
    client: AdminClient, group_id: str, offsets: Mapping[TopicPartition, int]
) -> None:
    """Set the start offset of each partition (the group must be empty)."""
    by_topic: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for (topic, partition), offset in sorted(offsets.items()):
        by_topic[topic].append((partition, offset))
    response = client.send_to_coordinator(
        group_id,
        AlterShareGroupOffsetsRequest(
            group_id=GroupId(group_id),
            topics=tuple(
                AlterShareGroupOffsetsRequestTopic(
                    topic_name=TopicName(topic),
                    partitions=tuple(
                        AlterShareGroupOffsetsRequestPartition(
                            partition_index=i32(p), start_offset=i64(o)
                        )
                        for p, o in parts
                    ),
                )
                for topic, parts in by_topic.items()
            ),
        ),
        error_of=lambda r: int(r.error_code),
    )
    check(response.error_code, response.error_message, context=f"share group '{group_id}'")
    for topic in response.responses:
        for p in topic.partitions:
            check(
                p.error_code,
                p.error_message,
                context=f"altering {topic.topic_name}-{p.partition_index} in '{group_id}'",
            )


def delete_offsets(
    client: AdminClient, group_id: str, topics: Sequence[str]
) -> dict[str, KafkaError | None]:
    """Delete the group's state of each topic; per-topic results. A group-level
    error (unknown group, non-empty group) raises."""
    response = client.send_to_coordinator(
        group_id,
        DeleteShareGroupOffsetsRequest(
            group_id=GroupId(group_id),
            topics=tuple(
                DeleteShareGroupOffsetsRequestTopic(topic_name=TopicName(t)) for t in topics
            ),
        ),
        error_of=lambda r: int(r.error_code),
    )
    check(response.error_code, response.error_message, context=f"share group '{group_id}'")
    return {
        str(t.topic_name): None
        if t.error_code == ErrorCode.none
        else KafkaError(t.error_code, t.error_message)
        for t in response.responses
    }


def delete_group(client: AdminClient, group_id: str) -> KafkaError | None:
    """DeleteGroups of one group at its coordinator; its error, if any."""
    response = client.send_to_coordinator(
        group_id,
        DeleteGroupsRequest(groups_names=(GroupId(group_id),)),
        error_of=lambda r: int(r.results[0].error_code),
    )
    (result,) = response.results
    return None if result.error_code == ErrorCode.none else KafkaError(result.error_code)
