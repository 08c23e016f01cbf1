"""ShareGroupBrowse (30000) v0, a Shoal extension API: the in-flight records of a
share group's share-partitions, read without acquiring anything.

The lock holder and the acquired states live only in the share-partition leader's
memory, and no Kafka API returns them; this one does, over the Kafka listener (so
with its TLS, authentication and framing), for `shoal share-groups --browse`. The
schema is declared as kio declares Kafka's (protocol/extensions/).

Per requested partition, in request order: the loaded share-partition's
`SharePartition.snapshot` (the same read-only view the web console shows), at most
`max_entries` entries from the start offset on, capped by
`shoal.share.browse.max.entries` (`truncated` says more were in flight). Each entry
carries its state's code and name, delivery count, holder (member id, null when none),
the time left on its lock (-1 without one), whether a state write is pending, and
the time left before a record held back by delayed redelivery
(`shoal.share.redelivery.backoff.*`) may be acquired again (-1 when not held back),
the epoch-ms time a record waiting for its `shoal.deliver.at` comes due (-1 when it
does not wait) and whether its key holds it back. The partition carries what key
order and scheduled delivery hold back (`SharePartition.delivery_holds`: blocked keys,
the records they hold and the keys holding the most, records waiting for their time
and the earliest due, malformed `shoal.deliver.at` headers seen); all of these are
tagged fields, absent when nothing is held (protocol/extensions/). A
share-partition not in memory answers `loaded` false: nothing of it is acquired, and
its persisted state is what DescribeShareGroupOffsets reports. Nothing is loaded,
touched or woken: a browse changes no state, delivery count or idle time.

Errors: top level, in this order: share groups disabled -> UNSUPPORTED_VERSION; no
DESCRIBE on the group -> GROUP_AUTHORIZATION_FAILED; no DESCRIBE on the topic ->
TOPIC_AUTHORIZATION_FAILED; an empty group id -> INVALID_GROUP_ID; a negative
max_entries -> INVALID_REQUEST; an unknown topic -> UNKNOWN_TOPIC_OR_PARTITION. Per
partition: one the topic does not have -> UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

import datetime
import logging
import uuid
from typing import Any

from shoal.config import broker_keys
from shoal.limits import SHARE_BLOCKED_KEYS_SHOWN
from shoal.protocol.errors import ErrorCode
from shoal.protocol.extensions import SHARE_GROUP_BROWSE
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.registry import api
from shoal.server.services.group_service import SHARE_GROUPS_DISABLED, share_groups_enabled
from shoal.share.holding import DeliveryHolds
from shoal.share.partition import InFlightSnapshot
from shoal.share.persister import SharePartitionKey

API_KEY = SHARE_GROUP_BROWSE
_ZERO = datetime.timedelta(0)
_NO_TOPIC = uuid.UUID(int=0)
NO_LOCK = -1
NO_DELAY = -1
NOT_DUE = -1
"""DeliverAtMs / NextDueMs of a record (a partition) with nothing waiting."""
log = logging.getLogger(__name__)


@api(API_KEY, 0, 0)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    refusal = _refusal(ctx, request)
    if refusal is not None:
        code, message = refusal
        return schema.response(
            throttle_time=_ZERO,
            error_code=code,
            error_message=message,
            topic_id=_NO_TOPIC,
            partitions=(),
        )
    info = ctx.services.logs.topic(request.topic_name)
    assert info is not None  # _refusal checked it
    max_entries = min(
        int(request.max_entries),
        ctx.services.config.current.get(broker_keys.SHOAL_SHARE_BROWSE_MAX_ENTRIES),
    )
    partitions = tuple(
        _partition(
            ctx, schema, request.group_id, info.topic_id, int(p), info.partitions, max_entries
        )
        for p in request.partitions
    )
    return schema.response(
        throttle_time=_ZERO,
        error_code=ErrorCode.none,
        error_message=None,
        topic_id=info.topic_id,
        partitions=partitions,
    )


def _refusal(ctx: RequestContext, request: Any) -> tuple[ErrorCode, str] | None:
    if not share_groups_enabled(ctx.services.config.current):
        return ErrorCode.unsupported_version, SHARE_GROUPS_DISABLED
    for code, resource, name in (
        (ErrorCode.group_authorization_failed, authz.GROUP, request.group_id),
        (ErrorCode.topic_authorization_failed, authz.TOPIC, request.topic_name),
    ):
        if not authz.allowed(ctx, AclOperation.DESCRIBE, resource, name):
            log.info(
                "ShareGroupBrowse of group %s topic %s refused for %s: no DESCRIBE on %s",
                request.group_id,
                request.topic_name,
                ctx.connection.principal,
                name,
            )
            return code, authz.DENIED_MESSAGES[code]
    if not request.group_id:
        return ErrorCode.invalid_group_id, "Empty group id."
    if request.max_entries < 0:
        return ErrorCode.invalid_request, f"MaxEntries {request.max_entries} is negative."
    if ctx.services.logs.topic(request.topic_name) is None:
        return (
            ErrorCode.unknown_topic_or_partition,
            f"Topic {request.topic_name} does not exist.",
        )
    return None


def _partition(
    ctx: RequestContext,
    schema: Schema,
    group_id: str,
    topic_id: uuid.UUID,
    partition: int,
    partition_count: int,
    max_entries: int,
) -> Any:
    if not 0 <= partition < partition_count:
        return _unloaded(
            schema,
            partition,
            ErrorCode.unknown_topic_or_partition,
            f"The topic has no partition {partition}.",
        )
    sp = ctx.services.share_service.partitions.get(SharePartitionKey(group_id, topic_id, partition))
    if sp is None or not sp.initialized:
        return _unloaded(schema, partition, ErrorCode.none, None)
    snap = sp.snapshot(max_entries=max_entries)
    return _window(schema, partition, snap, sp.delivery_holds(top=SHARE_BLOCKED_KEYS_SHOWN))


def _unloaded(schema: Schema, partition: int, code: ErrorCode, message: str | None) -> Any:
    return schema.make(
        "BrowsedPartition",
        partition_index=partition,
        error_code=code,
        error_message=message,
        loaded=False,
        start_offset=-1,
        end_offset=-1,
        delivery_complete_count=-1,
        truncated=False,
        entries=(),
    )


def _window(schema: Schema, partition: int, snap: InFlightSnapshot, holds: DeliveryHolds) -> Any:
    return schema.make(
        "BrowsedPartition",
        partition_index=partition,
        error_code=ErrorCode.none,
        error_message=None,
        loaded=True,
        start_offset=snap.start_offset,
        end_offset=snap.end_offset,
        delivery_complete_count=snap.delivery_complete_count,
        truncated=snap.truncated,
        entries=tuple(
            schema.make(
                "InFlightEntry",
                first_offset=e.first_offset,
                last_offset=e.last_offset,
                state=int(e.state),
                state_name=e.state.name,
                delivery_count=e.delivery_count,
                member_id=e.member_id or None,
                lock_expires_in_ms=NO_LOCK
                if e.lock_deadline_ms is None
                else max(0, e.lock_deadline_ms - snap.taken_at_ms),
                pending_write=e.pending,
                redelivery_due_in_ms=NO_DELAY
                if e.redelivery_due_ms is None
                else max(0, e.redelivery_due_ms - snap.taken_at_ms),
                deliver_at_ms=NOT_DUE if e.deliver_at_ms is None else e.deliver_at_ms,
                key_blocked=e.key_blocked,
            )
            for e in snap.entries
        ),
        blocked_keys=holds.blocked_keys,
        blocked_records=holds.blocked_records,
        top_blocked_keys=tuple(
            schema.make("BlockedKey", key=key, held_records=held)
            for key, held in holds.top_blocked_keys
        ),
        scheduled_records=holds.scheduled_records,
        next_due_ms=NOT_DUE if holds.next_due_ms is None else holds.next_due_ms,
        malformed_deliver_at=holds.malformed_deliver_at,
    )
