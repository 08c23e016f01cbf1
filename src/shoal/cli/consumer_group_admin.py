"""Consumer-group admin calls for `shoal consumer-groups`, as typed results, over
`shoal.client.Client`.

Listing is `share_group_admin.list_groups` with the consumer types (classic groups of
protocol type "consumer" or "" and KIP-848 consumer groups). Describing asks
ConsumerGroupDescribe (69) first and DescribeGroups (15) for a group it does not know
(GROUP_ID_NOT_FOUND: a classic group, or none) or when the broker lacks API 69, as
Kafka's admin client does (DescribeConsumerGroupsHandler), so an Empty consumer-protocol
group is described too. OffsetFetch (9), OffsetCommit (8), OffsetDelete (47) and
DeleteGroups (42) go to the group's coordinator (`Client.to_coordinator`), built by
`shoal.client.requests` at the version the client picks from ApiVersions.

A member's assignment is the ConsumerProtocolAssignment of its DescribeGroups entry,
read with kio's schema; an assignment that does not parse (another protocol type)
counts as no partitions.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from kio.schema.consumer_protocol_assignment import v0, v1, v2, v3
from kio.serial import entity_reader
from kio.serial.errors import SerialError

from shoal.cli.share_group_admin import ListedGroup, list_groups
from shoal.client import Client, KafkaError, Node, check, requests
from shoal.client.calls import Call
from shoal.client.errors import ErrorCode
from shoal.client.metadata import TopicPartition
from shoal.protocol.schema import request_schema

log = logging.getLogger(__name__)

CONSUMER_GROUP_TYPES = (requests.CLASSIC_GROUP_TYPE, requests.CONSUMER_GROUP_TYPE)
API_CONSUMER_GROUP_DESCRIBE = 69
CONSUMER_PROTOCOL_TYPES = ("consumer", "")
"""Protocol types of classic groups the consumer-groups tool shows (Kafka's)."""
_VERSION = struct.Struct(">h")
_ASSIGNMENTS: dict[int, Any] = {
    0: v0.data.ConsumerProtocolAssignment,
    1: v1.data.ConsumerProtocolAssignment,
    2: v2.data.ConsumerProtocolAssignment,
    3: v3.data.ConsumerProtocolAssignment,
}


@dataclass(frozen=True, slots=True)
class ConsumerMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: dict[str, tuple[int, ...]]
    member_epoch: int | None = None
    """The member's epoch (consumer-protocol groups; None for a classic group)."""
    target: dict[str, tuple[int, ...]] | None = None
    """The member's target assignment (consumer-protocol groups only)."""

    @property
    def partition_count(self) -> int:
        return sum(len(partitions) for partitions in self.assignment.values())


@dataclass(frozen=True, slots=True)
class ConsumerGroupDescription:
    group_id: str
    state: str
    protocol_type: str
    assignment_strategy: str
    coordinator: Node
    members: tuple[ConsumerMember, ...]
    group_epoch: int | None = None
    """Group and target-assignment epochs (consumer-protocol groups only)."""
    assignment_epoch: int | None = None


def list_consumer_groups(
    client: Client, types: Iterable[str] = (), states: Iterable[str] = ()
) -> list[ListedGroup]:
    """Consumer groups (of `types`, in `states` if given), sorted by id."""
    wanted = tuple(types) or CONSUMER_GROUP_TYPES
    return [
        g
        for g in list_groups(client, wanted, tuple(states))
        if g.group_type != requests.CLASSIC_GROUP_TYPE or g.protocol_type in CONSUMER_PROTOCOL_TYPES
    ]


@cache
def _assignment_reader(version: int) -> Any:
    return entity_reader(_ASSIGNMENTS[version])


def assignment_of(data: bytes) -> dict[str, tuple[int, ...]]:
    """The partitions of a ConsumerProtocolAssignment (newer versions read as the
    newest known; unreadable bytes are no partitions)."""
    if len(data) < _VERSION.size:
        return {}
    version = max(min(int(_VERSION.unpack_from(data, 0)[0]), max(_ASSIGNMENTS)), 0)
    try:
        assignment, _ = _assignment_reader(version)(memoryview(data)[_VERSION.size :], 0)
    except (SerialError, ValueError, KeyError) as exc:
        log.warning("unreadable consumer assignment (%d bytes): %s", len(data), exc)
        return {}
    out: dict[str, set[int]] = {}
    for tp in assignment.assigned_partitions:
        out.setdefault(str(tp.topic), set()).update(int(p) for p in tp.partitions)
    return {t: tuple(sorted(ps)) for t, ps in out.items()}


def consumer_group_describe(group_ids: list[str]) -> Call:
    """ConsumerGroupDescribe (69) v0-v1 of `group_ids`."""
    return Call(
        API_CONSUMER_GROUP_DESCRIBE,
        0,
        1,
        lambda version: request_schema(API_CONSUMER_GROUP_DESCRIBE, version).make(
            "ConsumerGroupDescribeRequest",
            group_ids=tuple(group_ids),
            include_authorized_operations=False,
        ),
    )


def describe_consumer_group(client: Client, group_id: str) -> ConsumerGroupDescription:
    """One group, consumer-protocol or classic (an unknown group comes back Dead);
    errors raise."""
    if client.supports(API_CONSUMER_GROUP_DESCRIBE):
        response = client.to_coordinator(
            group_id, consumer_group_describe([group_id]), lambda r: int(r.groups[0].error_code)
        )
        (group,) = response.groups
        if int(group.error_code) not in (ErrorCode.group_id_not_found, ErrorCode.none):
            check(group.error_code, group.error_message, context=f"group '{group_id}'")
        if int(group.error_code) == ErrorCode.none:
            return _consumer_protocol_description(client, group)
    return _classic_description(client, group_id)


def _partitions(topics: Any) -> dict[str, tuple[int, ...]]:
    return {
        str(t.topic_name): tuple(sorted(int(p) for p in t.partitions))
        for t in topics
        if t.partitions
    }


def _consumer_protocol_description(client: Client, group: Any) -> ConsumerGroupDescription:
    return ConsumerGroupDescription(
        group_id=str(group.group_id),
        state=str(group.group_state),
        protocol_type="consumer",
        assignment_strategy=str(group.assignor_name),
        coordinator=client.coordinator(str(group.group_id)),
        members=tuple(
            ConsumerMember(
                member_id=str(m.member_id),
                group_instance_id=m.instance_id,
                client_id=str(m.client_id),
                host=str(m.client_host),
                assignment=_partitions(m.assignment.topic_partitions),
                member_epoch=int(m.member_epoch),
                target=_partitions(m.target_assignment.topic_partitions),
            )
            for m in group.members
        ),
        group_epoch=int(group.group_epoch),
        assignment_epoch=int(group.assignment_epoch),
    )


def _classic_description(client: Client, group_id: str) -> ConsumerGroupDescription:
    response = client.to_coordinator(
        group_id, requests.describe_groups([group_id]), lambda r: int(r.groups[0].error_code)
    )
    (group,) = response.groups
    if int(group.error_code) == ErrorCode.group_id_not_found:  # DescribeGroups v6+
        return ConsumerGroupDescription(
            group_id, "Dead", "", "", client.coordinator(group_id), members=()
        )
    check(group.error_code, getattr(group, "error_message", None), context=f"group '{group_id}'")
    members = tuple(
        ConsumerMember(
            member_id=str(m.member_id),
            group_instance_id=getattr(m, "group_instance_id", None),
            client_id=str(m.client_id),
            host=str(m.client_host),
            assignment=assignment_of(bytes(m.member_assignment)),
        )
        for m in group.members
    )
    return ConsumerGroupDescription(
        group_id=group_id,
        state=str(group.group_state),
        protocol_type=str(group.protocol_type),
        assignment_strategy=str(group.protocol_data),
        coordinator=client.coordinator(group_id),
        members=members,
    )


def committed_offsets(client: Client, group_id: str) -> dict[TopicPartition, int]:
    """Every committed offset of the group; group- and partition-level errors raise."""
    response = client.to_coordinator(
        group_id,
        requests.offset_fetch(group_id),
        lambda r: requests.fetched_offsets(r).error_code,
    )
    fetched = requests.fetched_offsets(response)
    check(fetched.error_code, None, context=f"offsets of group '{group_id}'")
    for (topic, partition), code in sorted(fetched.errors.items()):
        check(code, None, context=f"offset of {topic}-{partition} in '{group_id}'")
    return {tp: o for tp, o in fetched.offsets.items() if o >= 0}


def delete_offsets(
    client: Client, group_id: str, partitions: Iterable[TopicPartition]
) -> dict[TopicPartition, KafkaError | None]:
    """OffsetDelete of the partitions; per-partition results. A group-level error
    (unknown group, non-empty group subscribed to a topic) raises."""
    response = client.to_coordinator(
        group_id, requests.offset_delete(group_id, partitions), lambda r: int(r.error_code)
    )
    check(response.error_code, None, context=f"group '{group_id}'")
    return {
        (str(t.name), int(p.partition_index)): None
        if p.error_code == ErrorCode.none
        else KafkaError(p.error_code)
        for t in response.topics
        for p in t.partitions
    }
