"""DescribeQuorum (55) v0-v2: the KRaft quorum, as `kafka-metadata-quorum describe` asks.

One voter, this node, leads `__cluster_metadata`-0 (server/metadata/quorum.py: epoch 1, offsets
0, no observers). v1 adds the voter's last fetch and caught-up times: now, as Kafka
reports for the leader itself. v2 adds the voter's directory id (none: a static quorum)
and the voters' endpoints: this node at the listener the request came in on (Shoal has
no separate controller listener). Kafka answers only a request for exactly that one
partition; anything else gets UNKNOWN_TOPIC_OR_PARTITION on every partition asked, with
no nodes. v2's error messages are "" when there is no error, as Kafka's.

Authorization: DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED, top level).
"""

from __future__ import annotations

import logging
from typing import Any

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import Schema, response_schema
from shoal.security.acl import AclOperation
from shoal.server.context import RequestContext
from shoal.server.handlers.common import authorization as authz
from shoal.server.metadata import quorum
from shoal.server.registry import api

log = logging.getLogger(__name__)
API_KEY = 55
_NOT_HOSTED = "This server does not host this topic-partition."


@api(API_KEY, 0, 2)
async def handle(ctx: RequestContext, request: Any) -> Any:
    schema = response_schema(API_KEY, ctx.api_version)
    if not authz.cluster_allowed(ctx, AclOperation.DESCRIBE):
        code = ErrorCode.cluster_authorization_failed
        log.info("DescribeQuorum refused: %s (client %s)", code.name, ctx.client_id)
        return schema.response(
            error_code=code, error_message=authz.DENIED_MESSAGES[code], topics=(), nodes=()
        )
    asked = [(t.topic_name, int(p.partition_index)) for t in request.topics for p in t.partitions]
    if len(request.topics) != 1 or asked != [(quorum.METADATA_TOPIC, quorum.METADATA_PARTITION)]:
        log.info(
            "DescribeQuorum of %s: not the metadata partition (client %s)", asked, ctx.client_id
        )
        topics = tuple(
            schema.make(
                "TopicData",
                topic_name=t.topic_name,
                partitions=tuple(_not_hosted(schema, int(p.partition_index)) for p in t.partitions),
            )
            for t in request.topics
        )
        return schema.response(error_code=ErrorCode.none, error_message="", topics=topics, nodes=())
    node_id = ctx.services.node.node_id
    now_ms = ctx.services.clock.wall_ms()
    voter = schema.make(
        "ReplicaState",
        replica_id=node_id,
        replica_directory_id=None,
        log_end_offset=quorum.LOG_END_OFFSET,
        last_fetch_timestamp=now_ms,
        last_caught_up_timestamp=now_ms,
    )
    partition = schema.make(
        "PartitionData",
        partition_index=quorum.METADATA_PARTITION,
        error_code=ErrorCode.none,
        error_message="",
        leader_id=node_id,
        leader_epoch=quorum.LEADER_EPOCH,
        high_watermark=quorum.LOG_END_OFFSET,
        current_voters=(voter,),
        observers=(),
    )
    nodes: tuple[Any, ...] = ()
    if schema.has("DescribeQuorumResponse", "nodes"):  # v2+
        listener = ctx.connection.listener_name
        host, port = ctx.services.node.endpoint(listener)
        nodes = (
            schema.make(
                "Node",
                node_id=node_id,
                listeners=(schema.make("Listener", name=listener, host=host, port=port),),
            ),
        )
    topic = schema.make("TopicData", topic_name=quorum.METADATA_TOPIC, partitions=(partition,))
    return schema.response(
        error_code=ErrorCode.none, error_message="", topics=(topic,), nodes=nodes
    )


def _not_hosted(schema: Schema, index: int) -> Any:
    return schema.make(
        "PartitionData",
        partition_index=index,
        error_code=ErrorCode.unknown_topic_or_partition,
        error_message=_NOT_HOSTED,
        leader_id=0,
        leader_epoch=0,
        high_watermark=0,
        current_voters=(),
        observers=(),
    )
