"""Read-only answers about share groups: ShareGroupDescribe and ListGroups.

Pure functions of replayed group state and the topic image; they never produce
records. Topic names in a described assignment come from the image, falling back to
the name the group's state metadata remembers (a topic deleted since).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from shoal.group.results import (
    DescribedGroup,
    DescribedMember,
    DescribedTopicPartitions,
    ListedGroup,
)
from shoal.group.share.group import ShareGroup, ShareGroupMember
from shoal.group.topic_image import TopicImage
from shoal.protocol.errors import ErrorCode

GROUP_TYPE_SHARE = "share"
PROTOCOL_TYPE_SHARE = "share"
ASSIGNOR_NAME = "simple"


def describe_missing(group_id: str, *, other_type: str | None) -> DescribedGroup:
    """An unknown id, or one taken by another group type: GROUP_ID_NOT_FOUND."""
    message = (
        f"Group {group_id} is not a share group."
        if other_type is not None
        else f"Group {group_id} not found."
    )
    return DescribedGroup(
        group_id=group_id, error=ErrorCode.group_id_not_found, error_message=message
    )


def describe(group: ShareGroup, *, state: str, image: TopicImage) -> DescribedGroup:
    return DescribedGroup(
        group_id=group.group_id,
        group_state=state,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=ASSIGNOR_NAME,
        members=tuple(
            _describe_member(group, member, image) for _, member in sorted(group.members.items())
        ),
    )


def _describe_member(
    group: ShareGroup, member: ShareGroupMember, image: TopicImage
) -> DescribedMember:
    return DescribedMember(
        member_id=member.member_id,
        rack_id=member.rack_id,
        member_epoch=member.member_epoch,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=tuple(sorted(member.subscribed_topic_names)),
        assignment=tuple(
            DescribedTopicPartitions(
                topic_id=topic_id,
                topic_name=topic_name(group, topic_id, image),
                partitions=tuple(sorted(partitions)),
            )
            for topic_id, partitions in sorted(member.assigned_partitions.items())
        ),
    )


def topic_name(group: ShareGroup, topic_id: uuid.UUID, image: TopicImage) -> str:
    topic = image.by_id(topic_id)
    if topic is not None:
        return topic.name
    return group.state_metadata.topic_name(topic_id) or ""


def list_share_groups(
    groups: Iterable[tuple[str, str]],
    *,
    states_filter: Iterable[str],
    types_filter: Iterable[str],
) -> list[ListedGroup]:
    """`groups` = (group id, state) pairs; filters are case-insensitive, empty = all."""
    states = {s.lower() for s in states_filter}
    types = {t.lower() for t in types_filter}
    if types and GROUP_TYPE_SHARE not in types:
        return []
    return [
        ListedGroup(
            group_id=group_id,
            protocol_type=PROTOCOL_TYPE_SHARE,
            group_state=state,
            group_type=GROUP_TYPE_SHARE,
        )
        for group_id, state in sorted(groups)
        if not states or state.lower() in states
    ]
