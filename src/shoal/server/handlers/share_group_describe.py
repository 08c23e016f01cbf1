"""ShareGroupDescribe (77) v1: state, epochs, assignor and members of share groups.

Read-only: the group coordinator's `share_group_describe` answers each id, in request
order; an unknown id, or one taken by another group type, gets GROUP_ID_NOT_FOUND.
Assigned topics carry their id and their name as the log manager knows it (falling
back to the name the group remembers for a topic deleted since). AuthorizedOperations
is INT32_MIN unless asked for, then the principal's operations on the group.

Authorization (Kafka's handleShareGroupDescribe): DESCRIBE on each group
(GROUP_AUTHORIZATION_FAILED, listed before the described groups); a group with a member
assigned a topic the principal may not DESCRIBE answers TOPIC_AUTHORIZATION_FAILED
without members, as ConsumerGroupDescribe does.

With `share.version`=0 every group answers UNSUPPORTED_VERSION (35).
"""

from __future__ import annotations

import datetime
from typing import Any

from shoal.group.results import DescribedGroup, DescribedMember
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.handlers.common import authorized_operations as ops
from shoal.server.registry import api
from shoal.server.services.group_service import SHARE_GROUPS_DISABLED, share_groups_enabled

API_KEY = 77
_ZERO = datetime.timedelta(0)


@api(API_KEY, 1, 1)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    if not share_groups_enabled(ctx.services.config.current):
        groups = tuple(
            _group(
                schema,
                ctx,
                DescribedGroup(group_id=group_id, error_message=SHARE_GROUPS_DISABLED),
                code=ErrorCode.unsupported_version,
                operations=ops.NOT_REQUESTED,
            )
            for group_id in request.group_ids
        )
        return schema.response(throttle_time=_ZERO, groups=groups)
    requested = bool(request.include_authorized_operations)
    allowed = authz.filter_allowed(ctx, AclOperation.DESCRIBE, authz.GROUP, request.group_ids)
    refused = [
        _refused(schema, ctx, group_id, ErrorCode.group_authorization_failed, None)
        for group_id in request.group_ids
        if group_id not in allowed
    ]
    described = ctx.services.group_service.describe(
        [group_id for group_id in request.group_ids if group_id in allowed]
    )
    if authz.enabled(ctx):
        described = _without_undescribable_topics(ctx, described)
    groups = tuple(refused) + tuple(
        _group(
            schema,
            ctx,
            group,
            code=ErrorCode.none if group.error is None else group.error,
            operations=ops.for_resource(ctx, authz.GROUP, group.group_id, requested=requested)
            if group.error is None
            else ops.NOT_REQUESTED,
        )
        for group in described
    )
    return schema.response(throttle_time=_ZERO, groups=groups)


def _refused(
    schema: Schema, ctx: RequestContext, group_id: str, code: ErrorCode, message: str | None
) -> Any:
    return _group(
        schema,
        ctx,
        DescribedGroup(group_id=group_id, error_message=message),
        code=code,
        operations=ops.NOT_REQUESTED,
    )


UNDESCRIBABLE_TOPICS = (
    "The group has described topic(s) that the client is not authorized to describe."
)


def _without_undescribable_topics(
    ctx: RequestContext, described: list[DescribedGroup]
) -> list[DescribedGroup]:
    def names(group: DescribedGroup) -> set[str]:
        logs = ctx.services.logs
        found = set()
        for member in group.members:
            for assigned in member.assignment:
                info = logs.topic_by_id(assigned.topic_id)
                found.add(info.name if info is not None else assigned.topic_name)
        return found

    every = set().union(*(names(g) for g in described)) if described else set()
    visible = authz.filter_allowed(ctx, AclOperation.DESCRIBE, authz.TOPIC, every)
    return [
        DescribedGroup(
            group_id=g.group_id,
            error=ErrorCode.topic_authorization_failed,
            error_message=UNDESCRIBABLE_TOPICS,
        )
        if g.error is None and names(g) - visible
        else g
        for g in described
    ]


def _group(
    schema: Schema, ctx: RequestContext, group: DescribedGroup, *, code: ErrorCode, operations: int
) -> Any:
    return schema.make(
        "DescribedGroup",
        error_code=code,
        error_message=group.error_message,
        group_id=group.group_id,
        group_state=group.group_state,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=group.assignor_name,
        members=tuple(_member(schema, ctx, member) for member in group.members),
        authorized_operations=operations,
    )


def _member(schema: Schema, ctx: RequestContext, member: DescribedMember) -> Any:
    logs = ctx.services.logs
    topics = []
    for assigned in member.assignment:
        info = logs.topic_by_id(assigned.topic_id)
        topics.append(
            schema.make(
                "TopicPartitions",
                topic_id=assigned.topic_id,
                topic_name=info.name if info is not None else assigned.topic_name,
                partitions=assigned.partitions,
            )
        )
    return schema.make(
        "Member",
        member_id=member.member_id,
        rack_id=member.rack_id,
        member_epoch=member.member_epoch,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=member.subscribed_topic_names,
        assignment=schema.make("Assignment", topic_partitions=tuple(topics)),
    )
