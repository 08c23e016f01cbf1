"""What the share coordinator's state RPCs (83-87) share on the wire: validation and
error mapping of one requested share-partition.

Each of InitializeShareGroupState, ReadShareGroupState, WriteShareGroupState,
DeleteShareGroupState and ReadShareGroupStateSummary answers every requested
partition. Before `services.persister` (the `Persister` protocol: the in-process or the
durable share coordinator) sees a partition, it is checked here (docs/design/coordinators.md §2.3
item 6): an empty group id, a null topic id, a negative partition or a negative epoch
is INVALID_REQUEST; a topic id the log manager does not know, or a partition beyond
the topic's, is UNKNOWN_TOPIC_OR_PARTITION. The persister's own errors (fencing,
uninitialised keys) get a message here saying what failed.
With `share.version`=0 every partition answers UNSUPPORTED_VERSION. These are
broker-to-coordinator RPCs: a principal without CLUSTER_ACTION on the cluster gets
CLUSTER_AUTHORIZATION_FAILED on every partition (Kafka's `authorizeClusterOperation`).

`serve` is the loop all five handlers share: check each partition, call the
handler's persister operation for the valid ones, answer every partition with its
error and the operation's extra fields, and log what was refused in one line.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from shoal.protocol.errors import ErrorCode, error_name
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.services.group_service import SHARE_GROUPS_DISABLED, share_groups_enabled
from shoal.share.persister import SharePartitionKey

log = logging.getLogger(__name__)
PartitionError = tuple[ErrorCode, str]
Fields = dict[str, Any]
Operation = Callable[[SharePartitionKey, Any], tuple[PartitionError | None, Fields]]
"""A handler's persister call for one checked partition of the request: its error
(None on success) and the extra fields of its PartitionResult."""

_MESSAGES = {
    ErrorCode.invalid_request: (
        "The share-partition state is not initialised, or the request is invalid."
    ),
    ErrorCode.fenced_state_epoch: "The state epoch is older than the stored one.",
    ErrorCode.fenced_leader_epoch: "The leader epoch is older than the stored one.",
    ErrorCode.unknown_topic_or_partition: "This server does not host this topic-partition.",
}

_CLUSTER_ACTION_DENIED = "Cluster authorization failed: CLUSTER_ACTION on the cluster is needed."


def checked_key(
    ctx: RequestContext,
    *,
    group_id: str,
    topic_id: uuid.UUID | None,
    partition: int,
    epochs: Mapping[str, int] | None = None,
) -> SharePartitionKey | PartitionError:
    """The share-partition's key, or why it is refused before the persister.
    `epochs` names the request's epoch fields (e.g. {"StateEpoch": 3})."""
    if not share_groups_enabled(ctx.services.config.current):
        return ErrorCode.unsupported_version, SHARE_GROUPS_DISABLED
    if not group_id:
        return ErrorCode.invalid_request, "GroupId must be non-empty."
    if topic_id is None:
        return ErrorCode.invalid_request, "TopicId must be set."
    if partition < 0:
        return ErrorCode.invalid_request, "Partition id must be non-negative."
    for name, value in (epochs or {}).items():
        if value < 0:
            return ErrorCode.invalid_request, f"{name} must be non-negative."
    info = ctx.services.logs.topic_by_id(topic_id)
    if info is None or partition >= info.partitions:
        return ErrorCode.unknown_topic_or_partition, _MESSAGES[ErrorCode.unknown_topic_or_partition]
    return SharePartitionKey(group_id, topic_id, partition)


def log_refused(
    ctx: RequestContext, api: str, group_id: str, refused: Mapping[str, PartitionError]
) -> None:
    """One line per request naming every refused share-partition."""
    if refused:
        log.info(
            "%s of group %r (client %s): %s",
            api,
            group_id,
            ctx.client_id,
            {key: f"{code.name}: {message}" for key, (code, message) in refused.items()},
        )


def persister_error(code: ErrorCode) -> PartitionError:
    """The code and message of an error the persister answered."""
    failed = f"Share-partition state operation failed: {error_name(code)}."
    return code, _MESSAGES.get(code, failed)


def serve(
    ctx: RequestContext,
    request: Any,
    *,
    api_key: int,
    api_name: str,
    result_type: str,
    epochs: Callable[[Any], Mapping[str, int]],
    operation: Operation,
    refused_fields: Callable[[], Fields] = dict,
) -> Any:
    """Answer a state RPC: every requested partition is checked (`checked_key` with
    the request partition's `epochs`), valid ones go to `operation`, refused ones get
    `refused_fields()`; the response lists `result_type` entries per topic."""
    schema = response_schema(api_key, ctx.api_version)
    refused: dict[str, PartitionError] = {}
    results = []
    denied: PartitionError | None = None
    if not authz.cluster_allowed(ctx, AclOperation.CLUSTER_ACTION):
        denied = ErrorCode.cluster_authorization_failed, _CLUSTER_ACTION_DENIED
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            key = denied or checked_key(
                ctx,
                group_id=request.group_id,
                topic_id=topic.topic_id,
                partition=p.partition,
                epochs=epochs(p),
            )
            if isinstance(key, tuple):
                error: PartitionError | None = key
                fields = refused_fields()
            else:
                error, fields = operation(key, p)
            if error is not None:
                refused[f"{topic.topic_id}-{p.partition}"] = error
            partitions.append(
                schema.make(
                    "PartitionResult",
                    partition=p.partition,
                    error_code=ErrorCode.none if error is None else error[0],
                    error_message=None if error is None else error[1],
                    **fields,
                )
            )
        results.append(
            schema.make(result_type, topic_id=topic.topic_id, partitions=tuple(partitions))
        )
    log_refused(ctx, api_name, request.group_id, refused)
    return schema.response(results=tuple(results))


def outcome(error: ErrorCode | None) -> tuple[PartitionError | None, Fields]:
    """The result of a persister call answering only an error (or None)."""
    return (None if error is None else persister_error(error)), {}
