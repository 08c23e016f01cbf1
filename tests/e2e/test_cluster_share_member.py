"""The sans-I/O share member (client/share_member.py) on a 3-broker cluster:
librdkafka's mock cluster, an independent Kafka implementation whose partition leaders
and group coordinator are different brokers, serving the share APIs at v1 only.

Heartbeats must go to the coordinator, ShareFetch and ShareAcknowledge to each
partition's leader with one share session per broker; at v1 the member acquires in
batch mode and cannot RENEW (refused before sending: nothing is lost).
"""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v2.request import FindCoordinatorRequest

from shoal.client.ranges import TopicIdPartition, record_count
from shoal.client.share_effects import COORDINATOR, Acknowledged, Acquired, Closed, Target
from shoal.client.share_member import MemberSettings, ShareMember
from shoal.client.share_requests import AcknowledgeType
from shoal.clock import SystemClock
from tests.support.mock_cluster import MOCK_PARTITIONS, MockCluster
from tests.support.share_member_driver import MemberDriver
from tests.support.wire import call1, metadata_request


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as mock:
        yield mock


def test_member_routes_to_the_coordinator_and_to_every_leader(
    cluster: MockCluster, caplog: pytest.LogCaptureFixture
) -> None:
    topic, group = "member-cluster", "member-cluster-group"
    leaders_by_index = cluster.leaders(topic)  # creates the topic
    assert len(set(leaders_by_index.values())) > 1, leaders_by_index
    bootstrap = cluster.bootstrap.split(",")[0]
    metadata = call1(bootstrap, metadata_request(topic))
    (described,) = metadata.topics
    leaders = {
        TopicIdPartition(described.topic_id, p.partition_index): p.leader_id
        for p in described.partitions
    }
    coordinator = call1(bootstrap, FindCoordinatorRequest(key=group, key_type=0))
    assert coordinator.error_code == ErrorCode.none, coordinator

    def address(target: Target) -> tuple[str, int]:
        if target == COORDINATOR:
            return coordinator.host, coordinator.port
        return cluster.brokers[target]

    member = ShareMember(
        group_id=group,
        member_id=base64.b64encode(uuid.uuid4().bytes).decode().rstrip("="),
        topics=[topic],
        clock=SystemClock(),
        settings=MemberSettings(lock_renew_interval_ms=200),
    )

    # The mock drops every share session on a broker when any connection to it closes,
    # so produce through one producer kept open until the member is done.
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "log_level": 3})

    async def scenario() -> None:
        driver = MemberDriver(member, address=address, leaders=leaders)
        try:
            await driver.run_until(lambda: member.assignment == set(leaders))
            # a new share group starts at the latest offset: open every session first
            outcome = await driver.result(member.acquire(records_max=100, wait_ms=100))
            assert isinstance(outcome, Acquired) and not outcome.errors, outcome
            nodes = set(leaders.values())
            assert {n: member.session_epoch(n) for n in nodes} == dict.fromkeys(nodes, 1)
            values = [b"member-%d" % i for i in range(40)]
            for i, value in enumerate(values):
                producer.produce(topic, value=value, partition=i % MOCK_PARTITIONS)
            assert producer.flush(30) == 0
            while record_count(member.held()) < len(values):
                outcome = await driver.result(member.acquire(records_max=100, wait_ms=500))
                assert isinstance(outcome, Acquired) and not outcome.errors, outcome
            held = member.held()
            assert record_count(held) == len(values) and len(held) == MOCK_PARTITIONS
            # RENEW is due every 200 ms; v1 brokers refuse it, nothing is lost
            start = SystemClock().monotonic_ms()
            await driver.run_until(lambda: SystemClock().monotonic_ms() - start > 500)
            assert member.take_lost() == {} and member.failure is None
            assert "cannot RENEW" in caplog.text
            acked = await driver.result(member.acknowledge(held, AcknowledgeType.ACCEPT))
            assert acked == Acknowledged({})
            assert await driver.result(member.close()) == Closed()
        finally:
            await driver.close()
        fetch_targets = {t for t, body in driver.sent if body.__api_key__ == 78}
        heartbeat_targets = {t for t, body in driver.sent if body.__api_key__ == 76}
        assert fetch_targets == nodes and heartbeat_targets == {COORDINATOR}
        closes = [
            t
            for t, body in driver.sent
            if body.__api_key__ == 79 and body.share_session_epoch == -1
        ]
        assert sorted(closes) == sorted(nodes)
        assert all(body.__version__ == 1 for _t, body in driver.sent)

    asyncio.run(scenario())
    producer.flush(1)
