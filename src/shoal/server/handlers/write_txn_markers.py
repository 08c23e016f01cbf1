"""WriteTxnMarkers (27) v1-v2: write COMMIT/ABORT control batches for producers (the
coordinator's request to partition leaders; here, and for tools, served by the same
marker writer the coordinator uses, server/services/txn_service.py). Each partition answers
its own error: UNKNOWN_TOPIC_OR_PARTITION for a partition this broker does not have,
the log's fencing errors, or NONE. A principal without CLUSTER_ACTION on the cluster
gets CLUSTER_AUTHORIZATION_FAILED on every partition, as in Kafka.
"""

from __future__ import annotations

import logging
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.registry import api
from shoal.txn import ABORT, COMMIT, WriteMarkers

log = logging.getLogger(__name__)
API_KEY = 27


@api(API_KEY, 1, 2)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    results = []
    cluster_action = authz.cluster_allowed(ctx, AclOperation.CLUSTER_ACTION)
    for marker in request.markers:
        if not cluster_action:
            results.append(_denied(schema, marker))
            continue
        markers = WriteMarkers(
            transactional_id="",
            producer_id=int(marker.producer_id),
            producer_epoch=int(marker.producer_epoch),
            control=COMMIT if marker.transaction_result else ABORT,
            coordinator_epoch=int(marker.coordinator_epoch),
            partitions=tuple((t.name, int(p)) for t in marker.topics for p in t.partition_indexes),
        )
        errors = await ctx.services.txn.write_markers(markers)
        by_topic: dict[str, list[Any]] = {}
        for (topic, partition), error in errors.items():
            by_topic.setdefault(topic, []).append(
                schema.make(
                    "WritableTxnMarkerPartitionResult", partition_index=partition, error_code=error
                )
            )
        log.info(
            "WriteTxnMarkers %s for producer %d epoch %d on %d partitions (client %s)",
            "COMMIT" if marker.transaction_result else "ABORT",
            marker.producer_id,
            marker.producer_epoch,
            len(errors),
            ctx.client_id,
        )
        results.append(
            schema.make(
                "WritableTxnMarkerResult",
                producer_id=marker.producer_id,
                topics=tuple(
                    schema.make("WritableTxnMarkerTopicResult", name=name, partitions=tuple(parts))
                    for name, parts in by_topic.items()
                ),
            )
        )
    return schema.response(markers=tuple(results))


def _denied(schema: Any, marker: Any) -> Any:
    """Every partition of `marker` refused: WriteTxnMarkers needs CLUSTER_ACTION."""
    return schema.make(
        "WritableTxnMarkerResult",
        producer_id=marker.producer_id,
        topics=tuple(
            schema.make(
                "WritableTxnMarkerTopicResult",
                name=t.name,
                partitions=tuple(
                    schema.make(
                        "WritableTxnMarkerPartitionResult",
                        partition_index=p,
                        error_code=ErrorCode.cluster_authorization_failed,
                    )
                    for p in t.partition_indexes
                ),
            )
            for t in marker.topics
        ),
    )
