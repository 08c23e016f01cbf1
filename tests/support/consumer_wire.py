"""ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69) requests for wire
tests, built with kio at a pinned version, and the groups ListGroups reports."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from shoal.protocol.schema import request_schema
from tests.support.wire import call1

TIMEOUT = datetime.timedelta(seconds=30)


def beat(
    version: int,
    group: str,
    member: str,
    epoch: int,
    topics: list[str] | None = None,
    *,
    owned: dict[uuid.UUID, list[int]] | None = None,
    assignor: str | None = None,
) -> Any:
    schema = request_schema(68, version)
    return schema.make(
        "ConsumerGroupHeartbeatRequest",
        group_id=group,
        member_id=member,
        member_epoch=epoch,
        instance_id=None,
        rack_id=None,
        rebalance_timeout=TIMEOUT if epoch == 0 else datetime.timedelta(milliseconds=-1),
        subscribed_topic_names=tuple(topics) if topics is not None else None,
        subscribed_topic_regex=None,
        server_assignor=assignor,
        topic_partitions=(
            None
            if owned is None
            else tuple(
                schema.make("TopicPartitions", topic_id=t, partitions=tuple(ps))
                for t, ps in owned.items()
            )
        ),
    )


def describe(version: int, *groups: str) -> Any:
    schema = request_schema(69, version)
    return schema.make(
        "ConsumerGroupDescribeRequest", group_ids=groups, include_authorized_operations=False
    )


def listed_groups(bootstrap: str) -> dict[str, tuple[str, str, str]]:
    """ListGroups v5, every type and state: group id -> (type, protocol type, state)."""
    request = request_schema(16, 5).make("ListGroupsRequest", states_filter=(), types_filter=())
    response = call1(bootstrap, request)
    return {g.group_id: (g.group_type, g.protocol_type, g.group_state) for g in response.groups}
