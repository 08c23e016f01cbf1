"""ConsumerGroupDescribe (69) v0-1: state, epochs, assignor and members of consumer
groups (KIP-848).

Read-only: the shard's `consumer_group_describe` answers each id in request order;
an unknown id, or one taken by another group type, gets GROUP_ID_NOT_FOUND. Each
member shows its current assignment and its target, topics with id and name (as the
log manager knows them; a topic deleted since keeps an empty name). v1 adds
MemberType (1: consumer protocol, 0: a classic member of the group, as after an
online upgrade). AuthorizedOperations is INT32_MIN unless asked
for, then the principal's operations on the group (every one a group supports without
an authorizer).

Authorization (Kafka's handleConsumerGroupDescribe): DESCRIBE on each group
(GROUP_AUTHORIZATION_FAILED, listed before the described groups); a group with a
member assigned or targeted at a topic the principal may not DESCRIBE answers
TOPIC_AUTHORIZATION_FAILED without members.
"""

from __future__ import annotations

import datetime
from typing import Any

from shoal.group.consumer.group import ConsumerGroup, ConsumerGroupMember
from shoal.group.topic_image import Assignment
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.handlers.common import authorized_operations as ops
from shoal.server.registry import api

API_KEY = 69
_ZERO = datetime.timedelta(0)
MEMBER_TYPE_CLASSIC = 0
MEMBER_TYPE_CONSUMER = 1


@api(API_KEY, 0, 1)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    service = ctx.services.group_service
    requested = bool(request.include_authorized_operations)
    groups = []
    allowed = authz.filter_allowed(ctx, AclOperation.DESCRIBE, authz.GROUP, request.group_ids)
    for group_id in request.group_ids:  # Kafka lists the refused groups first
        if group_id not in allowed:
            groups.append(_denied(schema, group_id, ErrorCode.group_authorization_failed, None))
    wanted = [group_id for group_id in request.group_ids if group_id in allowed]
    for group_id in wanted:
        shard = service.shard_of(group_id)
        [(_, group, message)] = shard.consumer_group_describe(group_ids=[group_id])
        if group is None:
            groups.append(
                schema.make(
                    "DescribedGroup",
                    error_code=ErrorCode.group_id_not_found,
                    error_message=message,
                    group_id=group_id,
                    group_state="Dead",
                    group_epoch=-1,
                    assignment_epoch=-1,
                    assignor_name="",
                    members=(),
                    authorized_operations=ops.NOT_REQUESTED,
                )
            )
            continue
        operations = ops.for_resource(ctx, authz.GROUP, group_id, requested=requested)
        groups.append(_group(schema, ctx, group, shard.consumer_default_assignor, operations))
    if authz.enabled(ctx):
        groups = _without_undescribable_topics(ctx, schema, groups)
    return schema.response(throttle_time=_ZERO, groups=tuple(groups))


def _denied(schema: Schema, group_id: str, code: ErrorCode, message: str | None) -> Any:
    return schema.make(
        "DescribedGroup",
        error_code=code,
        error_message=message,
        group_id=group_id,
        group_state="",
        group_epoch=0,
        assignment_epoch=0,
        assignor_name="",
        members=(),
        authorized_operations=ops.NOT_REQUESTED,
    )


def _without_undescribable_topics(
    ctx: RequestContext, schema: Schema, groups: list[Any]
) -> list[Any]:
    """Each group with a member assigned (or targeted at) a topic the principal may not
    DESCRIBE becomes TOPIC_AUTHORIZATION_FAILED without members, as in Kafka."""

    def names(group: Any) -> set[str]:
        return {
            tp.topic_name
            for m in group.members
            for assignment in (m.assignment, m.target_assignment)
            for tp in assignment.topic_partitions
        }

    every = set().union(*(names(g) for g in groups)) if groups else set()
    visible = authz.filter_allowed(ctx, AclOperation.DESCRIBE, authz.TOPIC, every)
    return [
        _denied(schema, g.group_id, ErrorCode.topic_authorization_failed, UNDESCRIBABLE_TOPICS)
        if names(g) - visible
        else g
        for g in groups
    ]


UNDESCRIBABLE_TOPICS = (
    "The group has described topic(s) that the client is not authorized to describe."
)


def _group(
    schema: Schema, ctx: RequestContext, group: ConsumerGroup, default: str, operations: int
) -> Any:
    assignors = {m.server_assignor for m in group.members.values() if m.server_assignor}
    return schema.make(
        "DescribedGroup",
        error_code=ErrorCode.none,
        error_message=None,
        group_id=group.group_id,
        group_state=group.state,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=min(assignors) if assignors else default,
        members=tuple(
            _member(schema, ctx, member, group.target_assignment.get(member.member_id, {}))
            for _, member in sorted(group.members.items())
        ),
        authorized_operations=operations,
    )


def _member(
    schema: Schema, ctx: RequestContext, member: ConsumerGroupMember, target: Assignment
) -> Any:
    return schema.make(
        "Member",
        member_id=member.member_id,
        instance_id=member.instance_id,
        rack_id=member.rack_id,
        member_epoch=member.member_epoch,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=tuple(sorted(member.subscribed_topic_names)),
        subscribed_topic_regex=member.subscribed_topic_regex,
        assignment=_assignment(schema, ctx, member.assigned),
        target_assignment=_assignment(schema, ctx, target),
        member_type=MEMBER_TYPE_CLASSIC if member.uses_classic else MEMBER_TYPE_CONSUMER,
    )


def _assignment(schema: Schema, ctx: RequestContext, assignment: Assignment) -> Any:
    topics = []
    for topic_id, partitions in sorted(assignment.items()):
        info = ctx.services.logs.topic_by_id(topic_id)
        topics.append(
            schema.make(
                "TopicPartitions",
                topic_id=topic_id,
                topic_name=info.name if info is not None else "",
                partitions=tuple(sorted(partitions)),
            )
        )
    return schema.make("Assignment", topic_partitions=tuple(topics))
