"""What the share coordinator's state RPCs (83-87) share on the wire: validation and
error mapping of one requested share-partition.

Each of InitializeShareGroupState, ReadShareGroupState, WriteShareGroupState,
DeleteShareGroupState and ReadShareGroupStateSummary answers every requested
partition. Before `broker.persister` (the `Persister` protocol: the in-process or the
durable share coordinator) sees a partition, it is checked here (coordinators.md §2.3
item 6): an empty group id, a null topic id, a negative partition or a negative epoch
is INVALID_REQUEST; a topic id the log manager does not know, or a partition beyond
the topic's, is UNKNOWN_TOPIC_OR_PARTITION. The persister's own error names (fencing,
uninitialised keys) map to their codes here, with a message saying what failed.
With `share.version`=0 every partition answers UNSUPPORTED_VERSION.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping

from shoal.protocol.errors import ErrorCode, code_for
from shoal.server.context import RequestContext
from shoal.server.group_service import SHARE_GROUPS_DISABLED, share_groups_enabled
from shoal.share.persister import SharePartitionKey

log = logging.getLogger(__name__)
PartitionError = tuple[ErrorCode, str]

_MESSAGES = {
    "INVALID_REQUEST": "The share-partition state is not initialised, or the request is invalid.",
    "FENCED_STATE_EPOCH": "The state epoch is older than the stored one.",
    "FENCED_LEADER_EPOCH": "The leader epoch is older than the stored one.",
    "UNKNOWN_TOPIC_OR_PARTITION": "This server does not host this topic-partition.",
}


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
    if not share_groups_enabled(ctx.broker.config):
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
    info = ctx.broker.logs.topic_by_id(topic_id)
    if info is None or partition >= info.partitions:
        return ErrorCode.unknown_topic_or_partition, _MESSAGES["UNKNOWN_TOPIC_OR_PARTITION"]
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


def persister_error(name: str) -> PartitionError:
    """The code and message of an error name the persister answered."""
    try:
        code = code_for(name)
    except KeyError:
        return ErrorCode.unknown_server_error, f"Share-partition state operation failed: {name}."
    return code, _MESSAGES.get(name, f"Share-partition state operation failed: {name}.")
