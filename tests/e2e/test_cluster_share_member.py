"""The share member (client/share_member.py) driven by the client's `ShareRunner` on a
3-broker cluster: librdkafka's mock cluster, an independent Kafka implementation whose
partition leaders and group coordinator are different brokers, serving the share APIs
at v1 only.

Heartbeats must go to the coordinator, ShareFetch and ShareAcknowledge to each
partition's leader with one share session per broker; at v1 the member acquires in
batch mode and cannot RENEW (refused before sending: nothing is lost).
"""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer

from shoal.client import AsyncClient, ClientError, requests
from shoal.client.offsets import list_offsets_async
from shoal.client.ranges import record_count
from shoal.client.share_effects import COORDINATOR, Acknowledged, Closed, Target
from shoal.client.share_member import MemberSettings, ShareMember
from shoal.client.share_runner import ShareRunner
from shoal.client.share_thread import ShareMemberThread
from shoal.clock import SystemClock
from shoal.protocol.share import AcknowledgeType
from tests.support.mock_cluster import MOCK_PARTITIONS, MockCluster


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as mock:
        yield mock


def test_member_routes_to_the_coordinator_and_to_every_leader(
    cluster: MockCluster, caplog: pytest.LogCaptureFixture
) -> None:
    topic, group = cluster.spread_topic("member-cluster"), "member-cluster-group"
    leaders_by_index = cluster.leaders(topic)
    assert len(set(leaders_by_index.values())) > 1, leaders_by_index
    member = ShareMember(
        group_id=group,
        member_id=base64.b64encode(uuid.uuid4().bytes).decode().rstrip("="),
        topics=[topic],
        clock=SystemClock(),
        settings=MemberSettings(lock_renew_interval_ms=200),
    )
    nodes = set(leaders_by_index.values())
    sent: list[tuple[Target, Any]] = []

    # The mock drops every share session on a broker when any connection to it closes,
    # so produce through one producer kept open until the member is done.
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "log_level": 3})

    async def scenario() -> None:
        async with AsyncClient(cluster.bootstrap) as client:
            runner = ShareRunner(member, client, on_sent=lambda t, body: sent.append((t, body)))
            async with runner:
                assert await runner.wait_for(
                    lambda: len(member.assignment) == MOCK_PARTITIONS, timeout_ms=30_000
                )
                # a new share group starts at the latest offset: open every session first
                # (the leaders may still be being looked up: acquire until they are)
                while any(member.session_epoch(n) == 0 for n in nodes):
                    outcome = await runner.acquire(records_max=100, wait_ms=100)
                    assert not outcome.errors, outcome
                assert {n: member.session_epoch(n) for n in nodes} == dict.fromkeys(nodes, 1)
                values = [b"member-%d" % i for i in range(40)]
                for i, value in enumerate(values):
                    producer.produce(topic, value=value, partition=i % MOCK_PARTITIONS)
                assert producer.flush(30) == 0
                while record_count(member.held()) < len(values):
                    outcome = await runner.acquire(records_max=100, wait_ms=500)
                    assert not outcome.errors, outcome
                held = member.held()
                assert record_count(held) == len(values) and len(held) == MOCK_PARTITIONS
                # RENEW is due every 200 ms; v1 brokers refuse it, nothing is lost
                await asyncio.sleep(0.5)
                assert member.take_lost() == {} and member.failure is None
                assert "cannot RENEW" in caplog.text
                acked = await runner.acknowledge(held, AcknowledgeType.ACCEPT)
                assert acked == Acknowledged({})
                assert await runner.close() == Closed()
            assert member.closed
        fetch_targets = {t for t, body in sent if body.__api_key__ == 78}
        heartbeat_targets = {t for t, body in sent if body.__api_key__ == 76}
        assert fetch_targets == nodes and heartbeat_targets == {COORDINATOR}
        closes = [
            t for t, body in sent if body.__api_key__ == 79 and body.share_session_epoch == -1
        ]
        assert sorted(closes) == sorted(nodes)
        assert all(body.__version__ == 1 for _t, body in sent)

    asyncio.run(scenario())
    producer.flush(1)


def test_blocking_member_thread_and_end_offsets_at_each_leader(cluster: MockCluster) -> None:
    """`ShareMemberThread`, the blocking facade, on the mock: join, acquire from every
    leader, list end offsets at each leader on the thread's own client, ACCEPT, close."""
    topic, group = cluster.spread_topic("member-thread"), "member-thread-group"
    nodes = set(cluster.leaders(topic).values())
    member = ShareMember(
        group_id=group,
        member_id=base64.b64encode(uuid.uuid4().bytes).decode().rstrip("="),
        topics=[topic],
        clock=SystemClock(),
    )
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "log_level": 3})
    thread = ShareMemberThread(member, cluster.bootstrap)
    thread.start()
    try:
        assert thread.wait_for(lambda m: len(m.assignment) == MOCK_PARTITIONS, timeout_ms=30_000)
        while thread.read(lambda m: any(m.session_epoch(n) == 0 for n in nodes)):
            assert not thread.acquire(records_max=100, wait_ms=100).errors  # opens sessions
        for i in range(20):
            producer.produce(topic, value=b"thread-%d" % i, partition=i % MOCK_PARTITIONS)
        assert producer.flush(30) == 0
        while record_count(held := thread.read(lambda m: m.held())) < 20:
            assert not thread.acquire(records_max=100, wait_ms=500).errors
        latest = {(topic, p): requests.LATEST_TIMESTAMP for p in range(MOCK_PARTITIONS)}
        ends = thread.run(lambda client: list_offsets_async(client, latest), timeout_ms=30_000)
        assert ends == dict.fromkeys(latest, 20 // MOCK_PARTITIONS)
        assert thread.acknowledge(held, AcknowledgeType.ACCEPT) == Acknowledged({})
    finally:
        thread.close()
        thread.close()  # idempotent
    assert member.closed
    with pytest.raises(ClientError, match="is closed"):
        thread.acquire(records_max=1, wait_ms=0)
    producer.flush(1)
