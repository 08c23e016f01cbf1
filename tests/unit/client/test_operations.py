"""The retry and routing operations against a scripted in-memory cluster, on a manual
clock: leader moves, coordinator moves, loading coordinators, dropped connections,
unreachable brokers and deadlines."""

from __future__ import annotations

from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.client import requests
from shoal.client.bootstrap import Node
from shoal.client.errors import BrokerUnreachable, KafkaError, RequestTimeout
from shoal.client.operations import Disconnected, Router
from shoal.client.settings import ClientSettings
from tests.unit.client.fake_cluster import FakeCluster, delete_groups_response, node

SETTINGS = ClientSettings(api_timeout_ms=5_000, request_timeout_ms=1_000)


def router(cluster: FakeCluster, bootstrap: list[Node] | None = None) -> Router:
    return Router(bootstrap or [node(1)], settings=SETTINGS, clock=cluster.clock)


def offset_error(response: Any) -> int:
    return int(response.topics[0].partitions[0].error_code)


def group_error(response: Any) -> int:
    return int(response.results[0].error_code)


def sent_to(cluster: FakeCluster, api_key: int) -> list[int]:
    return [node_id for node_id, key, _ in cluster.sent if key == api_key]


def test_to_leader_routes_by_metadata() -> None:
    cluster = FakeCluster(leaders={("t", 0): 2, ("t", 1): 3})
    r = router(cluster)
    response = cluster.run(r.to_leader("t", 1, requests.list_offsets({("t", 1): -1}), offset_error))
    assert offset_error(response) == 0
    assert int(response.topics[0].partitions[0].offset) == 101
    assert sent_to(cluster, 3) == [1]  # metadata from the bootstrap broker
    assert sent_to(cluster, 2) == [3]  # the request to the leader
    cluster.run(r.to_leader("t", 0, requests.list_offsets({("t", 0): -1}), offset_error))
    assert sent_to(cluster, 3) == [1], "the cached leaders serve the second call"
    assert sent_to(cluster, 2) == [3, 2]


def test_not_leader_refreshes_metadata_and_follows_the_leader() -> None:
    cluster = FakeCluster(leaders={("t", 0): 2})
    r = router(cluster)
    cluster.run(r.metadata(["t"]))

    def moved(target: Node, request: Any) -> Any:
        cluster.leaders[("t", 0)] = 3  # leadership moves while the request is under way
        return cluster.answer(target, request)

    cluster.script(2, moved)
    response = cluster.run(r.to_leader("t", 0, requests.list_offsets({("t", 0): -2}), offset_error))
    assert offset_error(response) == 0
    assert sent_to(cluster, 2) == [2, 3]
    assert sent_to(cluster, 3) == [1, 1], "one refresh after NOT_LEADER_OR_FOLLOWER"
    assert cluster.slept_ms == [SETTINGS.retry_backoff_ms]


def test_leadership_error_past_the_deadline_is_raised() -> None:
    cluster = FakeCluster(leaders={("t", 0): 2})
    r = router(cluster)

    def always(target: Node, request: Any) -> Any:
        from tests.unit.client.fake_cluster import list_offsets_response

        return list_offsets_response(request, lambda *_: ErrorCode.not_leader_or_follower)

    cluster.script(2, *[always] * 100)
    with pytest.raises(KafkaError) as info:
        cluster.run(r.to_leader("t", 0, requests.list_offsets({("t", 0): -1}), offset_error))
    assert info.value.code == ErrorCode.not_leader_or_follower
    assert "ListOffsets (API 2) to t-0" in str(info.value)
    assert cluster.clock.monotonic_ms() >= SETTINGS.api_timeout_ms
    # 100, 200, 400, 800, then 1000 each: the backoff doubles up to its maximum
    assert cluster.slept_ms[:6] == [100, 200, 400, 800, 1000, 1000]


def test_unknown_partition_of_a_known_topic_fails_at_once() -> None:
    cluster = FakeCluster(leaders={("t", 0): 2})
    with pytest.raises(KafkaError) as info:
        cluster.run(
            router(cluster).to_leader("t", 5, requests.list_offsets({("t", 5): -1}), offset_error)
        )
    assert info.value.code == ErrorCode.unknown_topic_or_partition
    assert "no partition 5" in str(info.value)
    assert cluster.clock.monotonic_ms() < 10


def test_to_leaders_groups_partitions_by_leader_and_resends_the_moved_ones() -> None:
    cluster = FakeCluster(leaders={("t", 0): 1, ("t", 1): 2, ("t", 2): 2, ("u", 0): 3})
    r = router(cluster)
    cluster.run(r.metadata(["t", "u"]))
    cluster.leaders[("t", 2)] = 3  # the cache is now stale for t-2

    def errors(response: Any) -> dict[tuple[str, int], int]:
        return {
            (str(t.name), int(p.partition_index)): int(p.error_code)
            for t in response.topics
            for p in t.partitions
        }

    wanted = [("t", 0), ("t", 1), ("t", 2), ("u", 0)]
    answered = cluster.run(
        r.to_leaders(wanted, lambda tps: requests.list_offsets({tp: -1 for tp in tps}), errors)
    )
    assert set(answered) == set(wanted)
    assert all(errors(answered[tp])[tp] == 0 for tp in wanted)
    list_offsets = [(n, req) for n, key, req in cluster.sent if key == 2]
    first_round = {
        n: sorted((str(t.name), int(p.partition_index)) for t in req.topics for p in t.partitions)
        for n, req in list_offsets[:3]
    }
    assert first_round == {1: [("t", 0)], 2: [("t", 1), ("t", 2)], 3: [("u", 0)]}
    assert [n for n, _ in list_offsets[3:]] == [3], "only t-2 is resent, to its new leader"


def test_not_coordinator_finds_the_coordinator_again() -> None:
    cluster = FakeCluster(coordinator_id=2)
    r = router(cluster)
    assert cluster.run(r.coordinator("g")) == node(2)
    cluster.coordinator_id = 3  # the group moves
    response = cluster.run(r.to_coordinator("g", requests.delete_groups(["g"]), group_error))
    assert group_error(response) == 0
    assert sent_to(cluster, 42) == [2, 3]
    assert sent_to(cluster, 10) == [1, 1]
    find = next(req for _, key, req in cluster.sent if key == 10)
    assert int(find.key_type) == 0 and list(find.coordinator_keys) == ["g"]


def test_coordinator_loading_backs_off_and_resends_to_the_same_node() -> None:
    cluster = FakeCluster(coordinator_id=2)
    r = router(cluster)

    def loading(_node: Node, request: Any) -> Any:
        return delete_groups_response(request, ErrorCode.coordinator_load_in_progress)

    cluster.script(42, loading, loading)
    response = cluster.run(r.to_coordinator("g", requests.delete_groups(["g"]), group_error))
    assert group_error(response) == 0
    assert sent_to(cluster, 42) == [2, 2, 2]
    assert sent_to(cluster, 10) == [1], "loading keeps the coordinator"
    assert cluster.slept_ms == [100, 200]


def test_coordinator_not_available_from_find_coordinator_is_retried() -> None:
    cluster = FakeCluster(coordinator_id=2)
    r = router(cluster)

    def unavailable(target: Node, request: Any) -> Any:
        response = cluster.answer(target, request)
        (found,) = response.coordinators
        import dataclasses

        bad = dataclasses.replace(found, error_code=ErrorCode.coordinator_not_available)
        return dataclasses.replace(response, coordinators=(bad,))

    cluster.script(10, unavailable)
    assert cluster.run(r.coordinator("g")) == node(2)
    assert sent_to(cluster, 10) == [1, 1]


def test_a_dropped_connection_is_resent() -> None:
    cluster = FakeCluster(coordinator_id=2)
    r = router(cluster)

    def drop(target: Node, request: Any) -> Any:
        raise Disconnected(target, "connection reset", phase="request")

    cluster.script(42, drop)
    response = cluster.run(r.to_coordinator("g", requests.delete_groups(["g"]), group_error))
    assert group_error(response) == 0
    assert sent_to(cluster, 42) == [2, 2]
    assert sent_to(cluster, 10) == [1, 1], "a lost coordinator is looked up again"


def test_any_broker_cycles_through_the_bootstrap_list() -> None:
    cluster = FakeCluster(down={1})
    r = router(cluster, [node(1), node(2)])
    cluster.run(r.metadata())
    assert sent_to(cluster, 3) == [2]
    assert cluster.slept_ms == [], "the next bootstrap broker is tried at once"


def test_unreachable_cluster_fails_at_the_deadline_with_every_address() -> None:
    cluster = FakeCluster(down={1, 2})
    r = router(cluster, [node(1), node(2)])
    with pytest.raises(BrokerUnreachable) as info:
        cluster.run(r.metadata())
    assert str(info.value) == (
        "cannot reach the broker at broker:9001,broker:9002 within 5000 ms "
        "(last error: connection refused)"
    )
    assert cluster.clock.monotonic_ms() >= 5_000


def test_lost_connection_past_the_deadline() -> None:
    cluster = FakeCluster()
    r = router(cluster)

    def drop(target: Node, request: Any) -> Any:
        cluster.clock.advance(10_000)
        raise Disconnected(target, "reset by peer", phase="request")

    cluster.script(3, drop)
    with pytest.raises(
        BrokerUnreachable, match="lost the connection to broker:9001 during Metadata"
    ):
        cluster.run(r.metadata())


def test_request_timeout_past_the_deadline() -> None:
    cluster = FakeCluster()
    r = router(cluster)
    timeouts: list[int] = []

    def silent(target: Node, request: Any) -> Any:
        cluster.clock.advance(SETTINGS.request_timeout_ms)
        raise Disconnected(target, "no answer", phase="timeout")

    cluster.script(3, *[silent] * 10)
    original = cluster.execute

    def spy(effect: Any) -> Any:
        if hasattr(effect, "timeout_ms"):
            timeouts.append(effect.timeout_ms)
        return original(effect)

    cluster.execute = spy  # type: ignore[method-assign]
    with pytest.raises(RequestTimeout, match="no answer to Metadata \\(API 3\\) from broker:9001"):
        cluster.run(r.metadata())
    assert timeouts[0] == 1_000
    assert timeouts[-1] < 1_000, "the last request gets only what is left of the deadline"


def test_supports_and_unsupported_versions() -> None:
    cluster = FakeCluster()
    r = router(cluster)
    assert cluster.run(r.supports(16))
    assert cluster.run(r.supports(90, 1))
    assert not cluster.run(r.supports(90, 99))
