"""DescribeClientQuotas (48) and AlterClientQuotas (49) v0-v1, durable across a
restart, with Kafka's errors and the cluster authorization each needs; and a Produce
or Fetch over its quota answered with throttle_time_ms and the connection muted."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.client import requests
from shoal.client.aio import Connection
from shoal.client.quota_requests import (
    MATCH_ANY,
    MATCH_DEFAULT,
    MATCH_EXACT,
    alter_client_quotas,
    describe_client_quotas,
)
from tests.support.batches import values_batch
from tests.support.broker import BrokerProcess, running
from tests.support.share_wire import acquired, fetch_now, join, produce_values, set_group_configs
from tests.support.topics import create_topic, topic_name
from tests.support.wire import CLIENT_ID, call1, send, with_connection

AUTHORIZER = "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
P, C = "producer_byte_rate", "consumer_byte_rate"


@pytest.fixture(scope="module")
def quota_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A short quota window (3 x 1 s): throttle times are at most 3 s."""
    yield from running(tmp_path_factory.mktemp("quotas") / "data", "quota.window.num=3")


@pytest.fixture(scope="module")
def locked_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """The authorizer on and no ACL: User:ANONYMOUS may do nothing."""
    yield from running(tmp_path_factory.mktemp("quotas-locked") / "data", AUTHORIZER)


def alter(bootstrap: str, *entries: Any, validate_only: bool = False) -> list[tuple[int, Any]]:
    response = call1(bootstrap, alter_client_quotas(entries, validate_only=validate_only))
    return [(int(e.error_code), e.error_message) for e in response.entries]


def describe(bootstrap: str, *components: Any, strict: bool = False) -> dict[Any, dict[str, float]]:
    response = call1(bootstrap, describe_client_quotas(components, strict=strict))
    assert response.error_code == ErrorCode.none, response
    return {
        tuple((e.entity_type, e.entity_name) for e in entry.entity): {
            v.key: v.value for v in entry.values
        }
        for entry in response.entries
    }


def test_alter_describe_and_remove(quota_broker: BrokerProcess) -> None:
    b = quota_broker.bootstrap
    assert (
        alter(
            b,
            ([("client-id", "app")], {P: 1024.0, C: 2048.0}),
            ([("user", "alice"), ("client-id", None)], {P: 10.0}),
            ([("user", None)], {C: 5.0}),
        )
        == [(0, None)] * 3
    )
    app = (("client-id", "app"),)
    alice_default = (("client-id", None), ("user", "alice"))
    assert describe(b, ("client-id", MATCH_EXACT, "app")) == {app: {P: 1024.0, C: 2048.0}}
    # non-strict: the user+client-id entity also has a client-id component
    assert set(describe(b, ("client-id", MATCH_DEFAULT, None))) == {alice_default}
    assert set(describe(b, ("client-id", MATCH_ANY, None), strict=True)) == {app}
    assert set(describe(b, ("user", MATCH_ANY, None))) == {alice_default, (("user", None),)}
    assert len(describe(b)) >= 3
    assert alter(b, ([("client-id", "app")], {P: None})) == [(0, None)]
    assert describe(b, ("client-id", MATCH_EXACT, "app")) == {app: {C: 2048.0}}
    assert alter(b, ([("client-id", "app")], {C: None})) == [(0, None)]
    assert describe(b, ("client-id", MATCH_EXACT, "app")) == {}
    # the user default would outrank client-id quotas for every later test: remove it
    assert alter(b, ([("user", None)], {C: None})) == [(0, None)]
    assert set(describe(b, ("user", MATCH_DEFAULT, None), strict=True)) == set()


def test_validate_only_changes_nothing(quota_broker: BrokerProcess) -> None:
    b = quota_broker.bootstrap
    assert alter(b, ([("client-id", "dry")], {P: 1.0}), validate_only=True) == [(0, None)]
    assert describe(b, ("client-id", MATCH_EXACT, "dry")) == {}


@pytest.mark.parametrize(
    ("entity", "changes"),
    [
        ([], {P: 1.0}),
        ([("ip", "1.2.3.4")], {P: 1.0}),  # ip entities take only connection_creation_rate
        ([("ip", "not-an-ip")], {"connection_creation_rate": 1.0}),
        ([("ip", "1.2.3.4"), ("user", "u")], {"connection_creation_rate": 1.0}),
        ([("client-id", "x")], {"connection_creation_rate": 1.0}),
        ([("ip", None)], {"connection_creation_rate": 1.5}),
        ([("client-id", "x"), ("client-id", "y")], {P: 1.0}),
        ([("client-id", "x")], {"no_such_quota": 1.0}),
        ([("client-id", "x")], {P: 0.5}),
        ([("client-id", "x")], {P: -5.0}),
        ([("client-id", "x")], {"request_percentage": -1.0}),
    ],
)
def test_invalid_entries_are_refused_alone(
    quota_broker: BrokerProcess, entity: Any, changes: Any
) -> None:
    b = quota_broker.bootstrap
    results = alter(b, (entity, changes), ([("client-id", "fine")], {P: 7.0}))
    assert results[0][0] == ErrorCode.invalid_request and results[0][1]
    assert results[1] == (0, None)
    assert describe(b, ("client-id", MATCH_EXACT, "fine")) == {(("client-id", "fine"),): {P: 7.0}}


def test_invalid_filter(quota_broker: BrokerProcess) -> None:
    for components in (
        [("client-id", MATCH_EXACT, None)],
        [("client-id", MATCH_ANY, None), ("client-id", MATCH_ANY, None)],
        [("ip", MATCH_ANY, None), ("user", MATCH_ANY, None)],
        [("client-id", 7, None)],
    ):
        response = call1(quota_broker.bootstrap, describe_client_quotas(components))
        assert response.error_code == ErrorCode.invalid_request, components


def test_quotas_survive_a_restart(quota_broker: BrokerProcess) -> None:
    b = quota_broker.bootstrap
    assert alter(b, ([("user", "bob"), ("client-id", "kept")], {C: 4096.0})) == [(0, None)]
    quota_broker.restart()
    found = describe(b, ("user", MATCH_EXACT, "bob"), strict=False)
    assert found == {(("client-id", "kept"), ("user", "bob")): {C: 4096.0}}


def test_authorization(locked_broker: BrokerProcess) -> None:
    b = locked_broker.bootstrap
    (result,) = alter(b, ([("client-id", "x")], {P: 1.0}))
    assert result[0] == ErrorCode.cluster_authorization_failed
    response = call1(b, describe_client_quotas([]))
    assert response.error_code == ErrorCode.cluster_authorization_failed


def test_produce_and_fetch_over_quota_are_throttled_and_muted(
    quota_broker: BrokerProcess,
) -> None:
    b = quota_broker.bootstrap
    topic = topic_name("quota")
    create_topic(b, topic)
    # 1000 B/s over a 3 x 1 s window: 2000 B fit, 100 KB are ~100 s over (capped at 3 s)
    assert alter(b, ([("client-id", CLIENT_ID)], {P: 1000.0, C: 1000.0})) == [(0, None)]
    batch = values_batch(50, prefix=b"x" * 2000)
    small = values_batch(1, prefix=b"y")

    async def go(conn: Connection) -> tuple[float, float, Any, Any]:
        await send(conn, requests.produce({(topic, 0): small}))  # offset 0, within quota
        first = await send(conn, requests.produce({(topic, 0): batch}))
        (partition,) = first.responses[0].partition_responses
        assert partition.error_code == ErrorCode.none
        started = time.monotonic()
        # the next request on this connection waits out the mute
        first_fetch = await send(
            conn, requests.fetch({(topic, 0): requests.FetchPosition(0, 1 << 20)})
        )
        muted_s = time.monotonic() - started
        fetch = await send(conn, requests.fetch({(topic, 0): requests.FetchPosition(1, 1 << 20)}))
        return first.throttle_time.total_seconds() * 1000, muted_s, first_fetch, fetch

    try:
        throttle_ms, muted_s, first_fetch, fetch = with_connection(b, go)
    finally:
        assert alter(b, ([("client-id", CLIENT_ID)], {P: None, C: None})) == [(0, None)]
    assert throttle_ms == 3_000  # bounded by the whole window
    assert muted_s >= 2.5
    # MaxBytes was bounded to 2000 B: only the small first batch came (it fits the quota)
    (partition,) = first_fetch.responses[0].partitions
    assert first_fetch.throttle_time.total_seconds() == 0
    assert 0 < len(partition.records) < 2000
    # the big batch (a first batch always goes whole) is over the quota: answered empty
    assert fetch.throttle_time.total_seconds() > 0 and fetch.responses == ()
    assert "throttling produce of client 'shoal-test'" in quota_broker.log_text()


def test_a_throttled_share_fetch_still_carries_its_acquired_records(
    quota_broker: BrokerProcess,
) -> None:
    b = quota_broker.bootstrap
    topic, group = topic_name("quota-sf"), topic_name("quota-sf-group")
    topic_id = create_topic(b, topic)
    set_group_configs(b, group, {"share.auto.offset.reset": "earliest"})
    member = join(b, group, topic)
    produce_values(b, topic, 200)
    assert alter(b, ([("client-id", CLIENT_ID)], {C: 100.0})) == [(0, None)]
    try:
        response = call1(b, fetch_now(group, member, 0, partitions=[(topic_id, 0)]).build(1))
    finally:
        assert alter(b, ([("client-id", CLIENT_ID)], {C: None})) == [(0, None)]
    assert acquired(response) == {(topic_id, 0): [(0, 199, 1)]}
    assert response.throttle_time.total_seconds() > 0
