"""The metadata cache: leaders from Metadata answers, forgotten where errors say."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from shoal.client import requests
from shoal.client.metadata import SHARE_KEY_TYPE, MetadataCache, cluster_view
from tests.unit.client.fake_cluster import FakeCluster, node


def test_leaders_come_from_metadata_and_go_on_invalidation() -> None:
    cluster = FakeCluster(leaders={("t", 0): 2, ("t", 1): 3})
    cache = MetadataCache()
    view = cluster_view(cluster.metadata_response(requests.metadata(None).build(12)))
    cache.update(view)
    assert view.brokers[2] == node(2) and view.controller_id == 1 and view.cluster_id == "fake"
    assert cache.leader("t", 1) == node(3)
    assert cache.leader("t", 9) is None
    assert [n.node_id for n in cache.brokers()] == [1, 2, 3]
    cache.invalidate_topic("t")
    assert cache.leader("t", 0) is None
    assert cache.broker(3) == node(3), "brokers stay known"


def test_a_topic_answered_with_an_error_is_forgotten() -> None:
    cluster = FakeCluster(leaders={("t", 0): 2})
    cache = MetadataCache()
    cache.update(cluster_view(cluster.metadata_response(requests.metadata(["t"]).build(12))))
    cluster.leaders.clear()
    view = cluster_view(cluster.metadata_response(requests.metadata(["t"]).build(12)))
    assert view.topics["t"].error_code == ErrorCode.unknown_topic_or_partition
    cache.update(view)
    assert cache.topic("t") is None


def test_coordinators_are_kept_per_key_type() -> None:
    cache = MetadataCache()
    cache.set_coordinator("g", node(2))
    cache.set_coordinator("g", node(3), SHARE_KEY_TYPE)
    assert cache.coordinator("g") == node(2)
    assert cache.coordinator("g", SHARE_KEY_TYPE) == node(3)
    cache.forget_coordinator("g")
    assert cache.coordinator("g") is None
    assert cache.coordinator("g", SHARE_KEY_TYPE) == node(3)
