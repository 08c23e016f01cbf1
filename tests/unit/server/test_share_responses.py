"""share_response: the leader-hint NodeEndpoint is the endpoint of the listener the
request came in on (as Metadata answers), not the first listener's."""

from __future__ import annotations

from shoal.protocol.schema import response_schema
from shoal.server.services import NodeIdentity
from shoal.server.share_responses import share_response

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
