"""DescribeLogDirs (35) v1-v4: the broker's log directory and the partitions in it.

Shoal has one log directory, its data directory, answered by its absolute path (as
Kafka answers each of `log.dirs`, ReplicaManager.describeLogDirs). Null topics means
every partition there, internal topics' too; otherwise the partitions named that
exist (unknown topics and partitions are left out, and so is a topic none of whose
partitions is, as in Kafka). Each partition's size is the bytes of its log segments,
its offset lag 0 (no replica is ever moving between directories: there is one), and
it is never a future replica. From v4 the directory's total and usable bytes come from
the file system (statvfs, as Java's FileStore reports them); if it cannot be read the
directory is answered KAFKA_STORAGE_ERROR with no topics.

Authorization (Kafka's handleDescribeLogDirsRequest): DESCRIBE on the cluster, else no
directories and CLUSTER_AUTHORIZATION_FAILED at the top (v3+; earlier versions have no
top-level error and see just no directories).
"""

from __future__ import annotations

import datetime
import logging
import os
from collections.abc import Iterable
from typing import Any

from shoal.log.api import TopicInfo
from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 35
_ZERO = datetime.timedelta(0)
_INT64_MAX = 2**63 - 1


@api(API_KEY, 1, 4)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    if not authz.cluster_allowed(ctx, AclOperation.DESCRIBE):
        log.info("DescribeLogDirs refused: no DESCRIBE on the cluster (client %s)", ctx.client_id)
        return schema.response(
            throttle_time=_ZERO, error_code=ErrorCode.cluster_authorization_failed, results=()
        )
    logs = ctx.services.logs
    log_dir = str(logs.data_dir.absolute())
    try:
        space = os.statvfs(log_dir)
    except OSError as exc:
        log.warning("DescribeLogDirs could not read the file system of %s: %s", log_dir, exc)
        result = schema.make(
            "DescribeLogDirsResult",
            error_code=ErrorCode.kafka_storage_error,
            log_dir=log_dir,
            topics=(),
        )
        return schema.response(throttle_time=_ZERO, error_code=ErrorCode.none, results=(result,))
    result = schema.make(
        "DescribeLogDirsResult",
        error_code=ErrorCode.none,
        log_dir=log_dir,
        topics=tuple(_topics(ctx, schema, request.topics)),
        total_bytes=min(space.f_blocks * space.f_frsize, _INT64_MAX),
        usable_bytes=min(space.f_bavail * space.f_frsize, _INT64_MAX),
    )
    return schema.response(throttle_time=_ZERO, error_code=ErrorCode.none, results=(result,))


def _topics(ctx: RequestContext, schema: Schema, asked: Any) -> Iterable[Any]:
    logs = ctx.services.logs
    wanted: dict[str, set[int]] | None = None
    if asked is not None:
        wanted = {}
        for topic in asked:
            wanted.setdefault(topic.topic, set()).update(int(p) for p in topic.partitions)
    infos: Iterable[TopicInfo | None] = (
        logs.topics() if wanted is None else (logs.topic(name) for name in wanted)
    )
    for info in infos:
        if info is None:
            continue
        indexes = range(info.partitions) if wanted is None else sorted(wanted[info.name])
        partitions = []
        for index in indexes:
            partition_log = logs.partition(info.name, index)
            if partition_log is None:
                continue
            partitions.append(
                schema.make(
                    "DescribeLogDirsPartition",
                    partition_index=index,
                    partition_size=partition_log.size_bytes,
                    offset_lag=0,
                    is_future_key=False,
                )
            )
        if partitions:
            yield schema.make("DescribeLogDirsTopic", name=info.name, partitions=tuple(partitions))
