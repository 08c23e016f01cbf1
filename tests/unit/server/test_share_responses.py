"""share_response: the leader-hint NodeEndpoint is the endpoint of the listener the
request came in on (as Metadata answers), not the first listener's; ShareFetch's shared
CurrentLeader equals the one `Schema.make` builds."""

from __future__ import annotations

import uuid

from shoal.protocol.errors import ErrorCode
from shoal.protocol.schema import response_schema
from shoal.server.handler_services import NodeIdentity
from shoal.server.handlers.common.share_responses import share_response
from shoal.server.handlers.share_fetch import _partition
from shoal.server.services.share_service import PartitionOutcome
from shoal.share.sessions import TopicIdPartition

_ENDPOINTS = {None: ("plain.example", 9092), "PLAINTEXT": ("plain.example", 9092)}
_ENDPOINTS["SASL_SSL"] = ("secure.example", 9094)

NODE = NodeIdentity(node_id=3, cluster_id="c", advertised=lambda name: _ENDPOINTS[name])


def _endpoints(api_key: int, topic_type: str, listener: str, *, hint: bool) -> list[tuple]:
    response = share_response(
        response_schema(api_key, 1),
        NODE,
        listener_name=listener,
        topic_type=topic_type,
        by_topic={},
        leader_hint=hint,
        lock_duration_ms=15000,
    )
    return [(e.node_id, e.host, e.port) for e in response.node_endpoints]


def test_leader_hint_names_the_request_listener() -> None:
    for api_key, topic_type in (
        (78, "ShareFetchableTopicResponse"),
        (79, "ShareAcknowledgeTopicResponse"),
    ):
        assert _endpoints(api_key, topic_type, "SASL_SSL", hint=True) == [
            (3, "secure.example", 9094)
        ]
        assert _endpoints(api_key, topic_type, "PLAINTEXT", hint=True) == [
            (3, "plain.example", 9092)
        ]
        assert _endpoints(api_key, topic_type, "SASL_SSL", hint=False) == []


def test_share_fetch_current_leader_is_the_one_made_for_the_version() -> None:
    """ShareFetch's CurrentLeader is built once per (version, leader) and shared: equal
    to what `Schema.make` builds, this node at epoch 0, or -1/-1 for a partition that
    does not exist."""
    tp = TopicIdPartition(uuid.UUID(int=7), 0)
    for version in (1, 2):
        schema = response_schema(78, version)
        for error, expected in ((None, (3, 0)), (ErrorCode.unknown_topic_id, (-1, -1))):
            first = _partition(schema, 3, PartitionOutcome(tp, error=error)).current_leader
            again = _partition(schema, 3, PartitionOutcome(tp, error=error)).current_leader
            reference = schema.make(
                "LeaderIdAndEpoch", leader_id=expected[0], leader_epoch=expected[1]
            )
            assert first == reference and type(first) is type(reference)
            assert again is first
