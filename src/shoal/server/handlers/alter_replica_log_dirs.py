"""AlterReplicaLogDirs (34) v1-v2: move partitions' replicas between log directories.

Shoal has one log directory, its data directory, so a partition can only be "moved"
to where it is, which needs nothing. As Kafka's ReplicaManager.alterReplicaLogDirs
answers, per partition: a topic name too long for Kafka's future-replica directory
name (over 255 characters) gets INVALID_TOPIC_EXCEPTION, a path other than the data
directory's absolute path LOG_DIR_NOT_FOUND (whether or not the partition exists), an
unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION, and a partition here NONE. A
partition named under several paths takes the last (Kafka reads the request into a
map); the answer groups partitions by topic.

Authorization (Kafka's handleAlterReplicaLogDirsRequest): ALTER on the cluster, else
CLUSTER_AUTHORIZATION_FAILED for every partition as the request lists them.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 34
_ZERO = datetime.timedelta(0)
_DIR_NAME_MAX = 255
_FUTURE_SUFFIX_LENGTH = len(".") + 32 + len("-future")
"""What Kafka's future-replica directory name adds to `<topic>-<partition>`: a dot, a
32-digit unique id and "-future" (UnifiedLog.logFutureDirName)."""


@api(API_KEY, 1, 2)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    if not authz.cluster_allowed(ctx, AclOperation.ALTER):
        log.info("AlterReplicaLogDirs refused: no ALTER on the cluster (client %s)", ctx.client_id)
        return schema.response(
            throttle_time=_ZERO,
            results=tuple(
                _topic(
                    schema,
                    topic.name,
                    {int(p): ErrorCode.cluster_authorization_failed for p in topic.partitions},
                )
                for log_dir in request.dirs
                for topic in log_dir.topics
            ),
        )
    destinations: dict[tuple[str, int], str] = {}
    for log_dir in request.dirs:
        for topic in log_dir.topics:
            for index in topic.partitions:
                destinations[(topic.name, int(index))] = log_dir.path
    here = str(ctx.services.logs.data_dir.absolute())
    by_topic: dict[str, dict[int, ErrorCode]] = {}
    for (name, index), path in destinations.items():
        code = _outcome(ctx, name, index, path, here=here)
        if code is not ErrorCode.none:
            log.info(
                "AlterReplicaLogDirs of %s-%d to %s: %s (client %s)",
                name,
                index,
                path,
                code.name,
                ctx.client_id,
            )
        by_topic.setdefault(name, {})[index] = code
    return schema.response(
        throttle_time=_ZERO,
        results=tuple(_topic(schema, name, codes) for name, codes in by_topic.items()),
    )


def _outcome(ctx: RequestContext, name: str, index: int, path: str, *, here: str) -> ErrorCode:
    if len(f"{name}-{index}") + _FUTURE_SUFFIX_LENGTH > _DIR_NAME_MAX:
        return ErrorCode.invalid_topic_exception
    if path != here:
        return ErrorCode.log_dir_not_found
    if ctx.services.logs.partition(name, index) is None:
        return ErrorCode.unknown_topic_or_partition
    return ErrorCode.none  # already there


def _topic(schema: Schema, name: str, codes: dict[int, ErrorCode]) -> Any:
    return schema.make(
        "AlterReplicaLogDirTopicResult",
        topic_name=name,
        partitions=tuple(
            schema.make("AlterReplicaLogDirPartitionResult", partition_index=index, error_code=code)
            for index, code in codes.items()
        ),
    )
