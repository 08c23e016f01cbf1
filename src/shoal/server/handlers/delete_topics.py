"""DeleteTopics (20) v1-v6: delete topics by name (v1-v5) or by name or id (v6).

v6 entries name a topic or give its id, not both (INVALID_REQUEST either way); a name
or id repeated in the request gets INVALID_REQUEST. An unknown name gets
UNKNOWN_TOPIC_OR_PARTITION, an unknown id UNKNOWN_TOPIC_ID, each with the error's
default message as Kafka sends it. (Kafka orders its answers by kind, ids first;
Shoal answers in request order: clients match them by name or id.) With
`delete.topic.enable=false` every topic gets TOPIC_DELETION_DISABLED (INVALID_REQUEST
before v3, which predates that code, as in Kafka). Internal topics are refused with
INVALID_REQUEST: Kafka's broker would delete them and only its CLI refuses, but Shoal's
internal topics hold share-group state that must not vanish under a running broker.

After a deletion every parked Fetch of the topic's partitions is woken (the log
announces the deletion and the broker wakes them), so it answers
UNKNOWN_TOPIC_OR_PARTITION now rather than at its MaxWaitMs.

The deletion runs in the broker's change lane (`services.disk.changes`), in turn with
the other topic changes (a topic deleted, or deleted and made again, meanwhile answers
UNKNOWN_TOPIC_OR_PARTITION): the partition directories are renamed and the deletion
written to the metadata log on the loop (the deletion is durable then), and the topic is
answered at once, as Kafka answers once the deletion is committed; the renamed
directories are removed afterwards in a disk worker thread (`services.disk`,
server/services/disk_io.py; Kafka removes its renamed `-delete` directories later too, and
opening the data directory removes leftovers). Answering only once they were gone left a
window, as long as the removal, in which the topic was already gone from Metadata but
its deleter had not heard: a producer's Metadata refresh then auto-created it again
before the deleter's own CreateTopics (a Kafka client's delete-then-recreate failing
with TOPIC_ALREADY_EXISTS).

Authorization (Kafka's ControllerApis.deleteTopics): a topic named needs DELETE
(TOPIC_AUTHORIZATION_FAILED, whether or not it exists); a topic given by id answers
UNKNOWN_TOPIC_ID unless the principal may DESCRIBE it, TOPIC_AUTHORIZATION_FAILED
without DELETE.
"""

from __future__ import annotations

import datetime
import logging
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

from shoal.config import broker_keys
from shoal.log.api import LogError, TopicInfo
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.refused import Refused
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 20
_ZERO = datetime.timedelta(0)
_DELETION_DISABLED_CODE_MIN_VERSION = 3
_UNKNOWN_TOPIC_MESSAGE = "This server does not host this topic-partition."
_UNKNOWN_TOPIC_ID_MESSAGE = "This server does not host this topic ID."
"""Kafka's ControllerApis.deleteTopics answers an unknown name or id with the error's
default message (ApiError without one), as Kafka 4.2 sends it."""


@dataclass(frozen=True, slots=True)
class _Target:
    name: str | None
    topic_id: uuid.UUID | None


@api(API_KEY, 1, 6)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    if ctx.api_version >= 6:
        targets = [_Target(t.name, t.topic_id) for t in request.topics]
    else:
        targets = [_Target(name, None) for name in request.topic_names]
    counts = Counter(targets)
    results = []
    for target in dict.fromkeys(targets):
        try:
            if counts[target] > 1:
                what = "name" if target.topic_id is None else "id"
                raise Refused(ErrorCode.invalid_request, f"Duplicate topic {what}.")
            name, topic_id = await _delete(ctx, target)
        except Refused as exc:
            log.info(
                "DeleteTopics of %s refused (%s): %s (client %s)",
                target.name or target.topic_id,
                exc.code.name,
                exc.message,
                ctx.client_id,
            )
            results.append(_result(schema, target.name, target.topic_id, exc.code, exc.message))
            continue
        results.append(_result(schema, name, topic_id, ErrorCode.none, None))
    return schema.response(throttle_time=_ZERO, responses=tuple(results))


async def _delete(ctx: RequestContext, target: _Target) -> tuple[str, uuid.UUID]:
    services = ctx.services
    if not services.config.current.get(broker_keys.DELETE_TOPIC_ENABLE):
        if ctx.api_version < _DELETION_DISABLED_CODE_MIN_VERSION:
            raise Refused(ErrorCode.invalid_request, "Topic deletion is disabled.")
        raise Refused(ErrorCode.topic_deletion_disabled, "Topic deletion is disabled.")
    if target.name is not None and target.topic_id is not None:
        raise Refused(
            ErrorCode.invalid_request, "You may not specify both topic name and topic id."
        )
    if target.name is not None:
        if not authz.allowed(ctx, AclOperation.DELETE, authz.TOPIC, target.name):
            raise Refused(ErrorCode.topic_authorization_failed, "Authorization failed.")
        info = services.logs.topic(target.name)
        if info is None:
            raise Refused(ErrorCode.unknown_topic_or_partition, _UNKNOWN_TOPIC_MESSAGE)
    elif target.topic_id is not None:
        info = services.logs.topic_by_id(target.topic_id)
        if info is None or not authz.allowed(ctx, AclOperation.DESCRIBE, authz.TOPIC, info.name):
            raise Refused(ErrorCode.unknown_topic_id, _UNKNOWN_TOPIC_ID_MESSAGE)
        if not authz.allowed(ctx, AclOperation.DELETE, authz.TOPIC, info.name):
            raise Refused(ErrorCode.topic_authorization_failed, "Authorization failed.")
    else:
        raise Refused(ErrorCode.invalid_request, "Neither topic name nor id were specified.")
    if info.internal:
        raise Refused(
            ErrorCode.invalid_request,
            f"Topic {info.name} is an internal topic and is not allowed to be deleted.",
        )
    name, topic_id = info.name, info.topic_id

    async def delete() -> TopicInfo:  # in turn with the other topic changes
        current = services.logs.topic(name)
        if current is None or current.topic_id != topic_id:  # deleted (and made) meanwhile
            raise LogError(ErrorCode.unknown_topic_or_partition, _UNKNOWN_TOPIC_MESSAGE)
        return services.logs.delete_topic(name, defer_delete=True)

    try:
        deleted = await services.disk.changes.run(delete)
    except LogError as exc:
        raise Refused(exc.code, str(exc)) from exc
    finally:  # the files go after the answer (the renamed leftovers of a crash on open)
        services.disk.remove(services.logs.take_deleted_paths())
    log.info(
        "deleted topic %s (id %s, %d partitions) for %s",
        deleted.name,
        deleted.topic_id,
        deleted.partitions,
        ctx.client_id,
    )
    return deleted.name, deleted.topic_id


def _result(
    schema: Schema,
    name: str | None,
    topic_id: uuid.UUID | None,
    code: ErrorCode,
    message: str | None,
) -> Any:
    return schema.make(
        "DeletableTopicResult",
        name=name,
        topic_id=topic_id,
        error_code=code,
        error_message=message,
    )
