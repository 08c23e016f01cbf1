"""Where the tools' admin calls go, on the client's in-memory 3-broker cluster
(tests/unit/client/fake_cluster.py): topics from metadata, ListOffsets to each
partition's leader, group requests to the coordinator, ListGroups to every broker.
A real `Client` runs the calls; only its transport is the fake cluster. (An API the
cluster does not serve is named in the error: tests/e2e/test_cluster_cli.py, against
librdkafka's mock cluster.)"""

from __future__ import annotations

from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.cli.share_group_admin import delete_group, list_share_groups
from shoal.cli.topic_admin import describe_topics, list_offsets
from shoal.client import Client, KafkaError
from shoal.client.operations import Effect
from shoal.client.requests import API_LIST_GROUPS, API_LIST_OFFSETS, LATEST_TIMESTAMP
from shoal.client.settings import ClientSettings
from shoal.protocol.schema import response_schema
from tests.unit.client.fake_cluster import FakeCluster, node

SETTINGS = ClientSettings(api_timeout_ms=5_000, request_timeout_ms=1_000)


class FakeClusterClient(Client):
    """The blocking client with the fake cluster as its transport."""

    def __init__(self, cluster: FakeCluster) -> None:
        super().__init__([node(1)], clock=cluster.clock, settings=SETTINGS)
        self.cluster = cluster

    def _execute(self, effect: Effect) -> Any:
        return self.cluster.execute(effect)


def sent_to(cluster: FakeCluster, api_key: int) -> list[int]:
    return [node_id for node_id, key, _ in cluster.sent if key == api_key]


def test_topics_are_described_with_their_leaders() -> None:
    cluster = FakeCluster(leaders={("t", 0): 2, ("t", 1): 3})
    found, failed = describe_topics(FakeClusterClient(cluster), ["t", "missing"])
    assert {p: v.leader for p, v in found["t"].partitions.items()} == {0: 2, 1: 3}
    assert failed["missing"].name == "UNKNOWN_TOPIC_OR_PARTITION"
    assert str(failed["missing"]).startswith("topic 'missing': ")


def test_list_offsets_asks_each_leader_for_its_partitions() -> None:
    cluster = FakeCluster(leaders={("t", 0): 2, ("t", 1): 3, ("t", 2): 2, ("u", 0): 1})
    partitions = [("t", 0), ("t", 1), ("t", 2), ("u", 0)]
    offsets = list_offsets(FakeClusterClient(cluster), partitions, LATEST_TIMESTAMP)
    assert offsets == {("t", 0): 100, ("t", 1): 101, ("t", 2): 102, ("u", 0): 100}
    assert sorted(sent_to(cluster, API_LIST_OFFSETS)) == [1, 2, 3], "one request per leader"
    asked = {
        node_id: sorted(
            (str(t.name), int(p.partition_index)) for t in r.topics for p in t.partitions
        )
        for node_id, key, r in cluster.sent
        if key == API_LIST_OFFSETS
    }
    assert asked == {1: [("u", 0)], 2: [("t", 0), ("t", 2)], 3: [("t", 1)]}


def test_list_offsets_follows_a_moved_leader() -> None:
    cluster = FakeCluster(leaders={("t", 0): 2})
    client = FakeClusterClient(cluster)
    assert list_offsets(client, [("t", 0)], LATEST_TIMESTAMP) == {("t", 0): 100}
    cluster.leaders[("t", 0)] = 3
    assert list_offsets(client, [("t", 0)], LATEST_TIMESTAMP) == {("t", 0): 100}
    assert sent_to(cluster, API_LIST_OFFSETS) == [2, 2, 3]


def test_a_partition_error_names_the_partition() -> None:
    cluster = FakeCluster(leaders={("t", 0): 2})
    cluster.offset_error = lambda target, topic, p: ErrorCode.offset_not_available  # type: ignore[method-assign]
    with pytest.raises(KafkaError, match=r"ListOffsets of t-0: .*OFFSET_NOT_AVAILABLE"):
        list_offsets(FakeClusterClient(cluster), [("t", 0)], LATEST_TIMESTAMP)


def test_a_group_is_deleted_at_its_coordinator() -> None:
    cluster = FakeCluster(coordinator_id=3)
    assert delete_group(FakeClusterClient(cluster), "g") is None
    assert sent_to(cluster, 42) == [3]
    assert sent_to(cluster, 10) == [1], "FindCoordinator from the bootstrap broker"


def list_groups_answer(groups: dict[int, list[tuple[str, str]]]) -> Any:
    def answer(target: Any, request: Any) -> Any:
        s = response_schema(API_LIST_GROUPS, int(request.__version__))
        return s.response(
            throttle_time=0,
            error_code=ErrorCode.none,
            groups=tuple(
                s.make(
                    "ListedGroup",
                    group_id=g,
                    protocol_type="share",
                    group_state=state,
                    group_type="share",
                )
                for g, state in groups[target.node_id]
            ),
        )

    return answer


def test_share_groups_are_listed_from_every_broker() -> None:
    cluster = FakeCluster()
    answer = list_groups_answer({1: [("b", "Empty")], 2: [], 3: [("a", "Stable")]})
    cluster.script(API_LIST_GROUPS, answer, answer, answer)
    listed = list_share_groups(FakeClusterClient(cluster), ["Stable", "Empty"])
    assert [(g.group_id, g.state) for g in listed] == [("a", "Stable"), ("b", "Empty")]
    assert sorted(sent_to(cluster, API_LIST_GROUPS)) == [1, 2, 3]
    (_, _, request), *_ = (s for s in cluster.sent if s[1] == API_LIST_GROUPS)
    assert (tuple(request.types_filter), tuple(request.states_filter)) == (
        ("share",),
        ("Stable", "Empty"),
    )
