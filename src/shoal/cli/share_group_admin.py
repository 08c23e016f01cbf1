"""Share-group admin calls for `shoal share-groups`, as typed results, over
`shoal.client.Client`.

ListGroups (16) filtered to type "share" is sent to every broker of the cluster and
the answers merged. ShareGroupDescribe (77), DescribeShareGroupOffsets (90; the
broker's lag from v1), AlterShareGroupOffsets (91), DeleteShareGroupOffsets (92) and
DeleteGroups (42) go to the group's coordinator, found with FindCoordinator and
followed while it loads or moves (`Client.to_coordinator`). Every request is built
by `shoal.client.requests` at the version the client picks from ApiVersions; an API
the cluster does not serve fails with UNSUPPORTED_VERSION naming it
("ListGroups (API 16)").

A start offset of -1 from DescribeShareGroupOffsets means the partition has no
state yet; it, its leader epoch and its lag are then unknown (None), as Kafka's
admin client reports them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from shoal.client import Client, KafkaError, Node, check, requests
from shoal.client.errors import ErrorCode
from shoal.client.metadata import TopicPartition
from shoal.config import group_keys


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    state: str
    group_type: str = ""
    protocol_type: str = ""


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


def list_share_groups(client: Client, states: Sequence[str] = ()) -> list[ListedGroup]:
    """Share groups (in `states` if given), from every broker, sorted by id."""
    return list_groups(client, (requests.SHARE_GROUP_TYPE,), states)


def list_groups(
    client: Client, types: Sequence[str], states: Sequence[str] = ()
) -> list[ListedGroup]:
    """Groups of `types` (in `states` if given), from every broker, sorted by id."""
    call = requests.list_groups(types=types, states=states)
    found: dict[str, ListedGroup] = {}
    for node in client.brokers():
        response = client.call(call, node)
        check(response.error_code, None, context=f"listing groups on {node.address}")
        for group in response.groups:
            found[group.group_id] = ListedGroup(
                str(group.group_id),
                str(getattr(group, "group_state", "")),
                str(getattr(group, "group_type", "")),
                str(group.protocol_type),
            )
    return [found[g] for g in sorted(found)]


def _first_group_error(response: Any) -> int:
    return int(response.groups[0].error_code)


def _top_level_error(response: Any) -> int:
    return int(response.error_code)


def describe_group(client: Client, group_id: str) -> GroupDescription:
    """ShareGroupDescribe of one group; GROUP_ID_NOT_FOUND and others raise."""
    response = client.to_coordinator(
        group_id, requests.share_group_describe([group_id]), _first_group_error
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
    client: Client, group_id: str, topics: Sequence[str] | None = None
) -> list[PartitionOffset]:
    """The share-partition state of the group (every partition with state when
    `topics` is None), sorted by topic and partition. A group-level error raises;
    so does a partition-level one, naming the partition."""
    response = client.to_coordinator(
        group_id, requests.describe_share_group_offsets(group_id, topics), _first_group_error
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


def alter_offsets(client: Client, group_id: str, offsets: Mapping[TopicPartition, int]) -> None:
    """Set the start offset of each partition (the group must be empty)."""
    response = client.to_coordinator(
        group_id, requests.alter_share_group_offsets(group_id, offsets), _top_level_error
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
    client: Client, group_id: str, topics: Sequence[str]
) -> dict[str, KafkaError | None]:
    """Delete the group's state of each topic; per-topic results. A group-level
    error (unknown group, non-empty group) raises."""
    response = client.to_coordinator(
        group_id, requests.delete_share_group_offsets(group_id, topics), _top_level_error
    )
    check(response.error_code, response.error_message, context=f"share group '{group_id}'")
    return {
        str(t.topic_name): None
        if t.error_code == ErrorCode.none
        else KafkaError(t.error_code, t.error_message)
        for t in response.responses
    }


def delete_group(client: Client, group_id: str) -> KafkaError | None:
    """DeleteGroups of one group at its coordinator; its error, if any."""
    response = client.to_coordinator(
        group_id,
        requests.delete_groups([group_id]),
        lambda r: int(r.results[0].error_code),
    )
    (result,) = response.results
    return None if result.error_code == ErrorCode.none else KafkaError(result.error_code)


# ---- delivery extensions (Shoal's: the group configs `shoal.share.delivery.paused`,
# `.order` and `.delay.max.ms`)

PAUSED_KEY = group_keys.SHOAL_SHARE_DELIVERY_PAUSED.name
"""Group config behind `--pause` / `--resume` (KIP-1249 is not accepted)."""
ORDER_KEY = group_keys.SHOAL_SHARE_DELIVERY_ORDER.name
"""Group config of key-ordered delivery (`key`; `none` by default)."""
DELAY_MAX_KEY = group_keys.SHOAL_SHARE_DELIVERY_DELAY_MAX_MS.name
"""Group config of scheduled delivery (0, the default, is off)."""
_DELIVERY_KEYS = (PAUSED_KEY, ORDER_KEY, DELAY_MAX_KEY)


def set_paused(client: Client, group_id: str, paused: bool) -> None:
    """IncrementalAlterConfigs on the GROUP resource: SET the key to true to pause,
    DELETE it (back to the default, false) to resume. Errors raise."""
    change = (
        requests.ConfigChange(PAUSED_KEY, "true")
        if paused
        else requests.ConfigChange(PAUSED_KEY, None, requests.CONFIG_DELETE)
    )
    response = client.call(
        requests.incremental_alter_configs({(requests.GROUP_RESOURCE, group_id): [change]})
    )
    (result,) = response.responses
    check(result.error_code, result.error_message, context=f"share group '{group_id}'")


@dataclass(frozen=True, slots=True)
class DeliverySettings:
    """A share group's delivery extensions, as its group configs say (Shoal's own)."""

    paused: bool = False
    """`shoal.share.delivery.paused`."""
    key_order: bool = False
    """`shoal.share.delivery.order=key`."""
    delay_max_ms: int = 0
    """`shoal.share.delivery.delay.max.ms`; 0 is scheduled delivery off."""


def delivery_settings(client: Client, group_id: str) -> DeliverySettings | None:
    """The group's delivery extensions, in one DescribeConfigs; None when its configs
    cannot be read (no DESCRIBE_CONFIGS on the group, say: `--describe` itself needs
    only DESCRIBE). A broker that does not know the keys (Apache Kafka) lists no
    values: all off."""
    response = client.call(
        requests.describe_configs(requests.GROUP_RESOURCE, [group_id], keys=list(_DELIVERY_KEYS))
    )
    (result,) = response.results
    if result.error_code != ErrorCode.none:
        return None
    values = {str(c.name): c.value for c in result.configs if c.name in _DELIVERY_KEYS}
    delay = values.get(DELAY_MAX_KEY)
    return DeliverySettings(
        paused=values.get(PAUSED_KEY) == "true",
        key_order=values.get(ORDER_KEY) == "key",
        delay_max_ms=int(delay) if delay is not None and delay.isdigit() else 0,
    )
