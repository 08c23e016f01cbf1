"""Shoal's client, both drivers, against a real Shoal broker and against librdkafka's
3-broker mock cluster: metadata, ListOffsets and Fetch routed to each partition's
leader, FindCoordinator, versions chosen from ApiVersions, the raw connection."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.client import AsyncClient, BrokerUnreachable, Client, KafkaError, requests, sync
from shoal.client.aio import Connection
from shoal.client.calls import Call
from shoal.client.metadata import TopicPartition
from tests.support.batches import values_batch
from tests.support.broker import BrokerProcess, wait_until
from tests.support.mock_cluster import MOCK_PARTITIONS, MockCluster

TOPIC = "client-e2e"
RECORDS = 120


def offsets_by_partition(response: Any) -> dict[TopicPartition, tuple[int, int]]:
    return {
        (str(t.name), int(p.partition_index)): (int(p.error_code), int(p.offset))
        for t in response.topics
        for p in t.partitions
    }


def latest_offsets(client: Client, topic: str, partitions: int) -> dict[int, int]:
    wanted = [(topic, p) for p in range(partitions)]
    answered = client.to_leaders(
        wanted,
        lambda tps: requests.list_offsets({tp: requests.LATEST_TIMESTAMP for tp in tps}),
        lambda r: {tp: code for tp, (code, _) in offsets_by_partition(r).items()},
    )
    out = {}
    for tp, response in answered.items():
        code, offset = offsets_by_partition(response)[tp]
        assert code == 0
        out[tp[1]] = offset
    return out


def fetch_error(response: Any) -> int:
    if response.error_code:
        return int(response.error_code)
    return int(response.responses[0].partitions[0].error_code)


def fetch_one(client: Client, topic: str, partition: int) -> Any:
    call = requests.fetch({(topic, partition): requests.FetchPosition(0, 1 << 20)}, max_wait_ms=100)
    response = client.to_leader(topic, partition, call, fetch_error)
    assert fetch_error(response) == 0
    return response.responses[0].partitions[0]


# ---- one Shoal broker


def test_sync_client_against_shoal(broker: BrokerProcess) -> None:
    with Client(broker.bootstrap, api_timeout_ms=10_000) as client:
        (node,) = client.brokers()
        created = client.call(requests.create_topic(TOPIC, partitions=2))
        assert created.topics[0].error_code == ErrorCode.none
        view = client.metadata([TOPIC])
        assert sorted(view.topics[TOPIC].partitions) == [0, 1]
        assert latest_offsets(client, TOPIC, 2) == {0: 0, 1: 0}
        assert fetch_one(client, TOPIC, 1).high_watermark == 0
        assert client.coordinator("client-e2e-group").node_id == node.node_id
        assert client.supports(requests.API_LIST_GROUPS)
        unknown = client.metadata(["client-e2e-missing"]).topics["client-e2e-missing"]
        assert unknown.error_code == ErrorCode.unknown_topic_or_partition


def test_async_client_against_shoal(broker: BrokerProcess) -> None:
    async def go() -> None:
        async with AsyncClient(broker.bootstrap, api_timeout_ms=10_000) as client:
            await client.call(requests.create_topic(TOPIC + "-a", partitions=1))
            response = await client.to_leader(
                TOPIC + "-a",
                0,
                requests.list_offsets({(TOPIC + "-a", 0): requests.EARLIEST_TIMESTAMP}),
                lambda r: int(r.topics[0].partitions[0].error_code),
            )
            assert int(response.topics[0].partitions[0].offset) == 0
            groups = await client.call(requests.list_groups(types=["share"]))
            assert groups.error_code == ErrorCode.none
            node = await client.coordinator("client-e2e-group")
            assert node.port == int(broker.bootstrap.rsplit(":", 1)[1])

    asyncio.run(go())


def test_raw_async_connection_pipelines_and_sees_the_broker_close(broker: BrokerProcess) -> None:
    host, port = broker.bootstrap.rsplit(":", 1)

    async def go() -> None:
        connection = await Connection.open(host, int(port), client_id="raw")
        try:
            versions = await connection.handshake(timeout_s=10)
            metadata = connection.core.build(requests.metadata(None))
            first = await connection.send(metadata)
            second = await connection.send(Call.exact(metadata).build(0))
            assert first is not None and second is not None
            assert (await first).brokers == (await second).brokers
            assert requests.API_METADATA in versions
            await connection.send_raw(b"\x7f\xff\xff\xff")  # a 2 GiB request: refused
            assert await connection.wait_closed_by_peer(10)
            assert connection.closed_by_peer
        finally:
            await connection.close()

    asyncio.run(go())


def test_sync_connection_and_a_produce_without_response(broker: BrokerProcess) -> None:
    topic = TOPIC + "-acks0"
    with Client(broker.bootstrap) as client:
        client.call(requests.create_topic(topic, partitions=1))
        (node,) = client.brokers()
    connection = sync.Connection.open(node, timeout_ms=10_000)
    try:
        produce = requests.produce({(topic, 0): values_batch(3)}, acks=0)
        assert connection.call(produce, timeout_ms=10_000) is None
        assert connection.core.in_flight == 0
        call = requests.list_offsets({(topic, 0): requests.LATEST_TIMESTAMP})

        def written() -> bool:
            response = connection.call(call, timeout_ms=10_000)
            return offsets_by_partition(response)[(topic, 0)] == (0, 3)

        assert wait_until(written, timeout_s=10)
    finally:
        connection.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_broker_is_reported_by_both_drivers() -> None:
    address = f"127.0.0.1:{free_port()}"
    with Client(address, api_timeout_ms=300) as client, pytest.raises(BrokerUnreachable) as info:
        client.metadata()
    assert str(info.value).startswith(f"cannot reach the broker at {address} within 300 ms")

    async def go() -> None:
        async with AsyncClient(address, api_timeout_ms=300) as client:
            with pytest.raises(BrokerUnreachable, match=f"cannot reach the broker at {address}"):
                await client.brokers()

    asyncio.run(go())


def test_both_drivers_reconnect_after_the_broker_restarts(fresh_broker: BrokerProcess) -> None:
    sync_client = Client(fresh_broker.bootstrap, api_timeout_ms=20_000)
    async_client = AsyncClient(fresh_broker.bootstrap, api_timeout_ms=20_000)

    async def go() -> None:
        await async_client.brokers()
        sync_client.brokers()
        fresh_broker.restart()
        assert len(sync_client.brokers()) == 1, "the dropped connection was replaced"
        assert len(await async_client.brokers()) == 1
        await async_client.close()

    try:
        asyncio.run(go())
    finally:
        sync_client.close()


# ---- librdkafka's 3-broker mock cluster


@pytest.fixture(scope="module")
def cluster() -> Iterator[tuple[MockCluster, str]]:
    """The mock cluster and a topic of it whose leaders are on more than one broker (the
    mock places leaders at random: the first of a few topics that are spread)."""
    pytest.importorskip("confluent_kafka")
    with MockCluster(brokers=3) as mock:
        topic = mock.spread_topic("client-e2e")
        assert mock.produce(topic, [b"record-%d" % i for i in range(RECORDS)]) == RECORDS
        yield mock, topic


def test_sync_client_routes_to_each_leader(cluster: tuple[MockCluster, str]) -> None:
    mock, topic = cluster
    leaders = mock.leaders(topic)
    assert len(set(leaders.values())) > 1, "the mock spreads leaders"
    last = mock.bootstrap.split(",")[-1]
    with Client(last, api_timeout_ms=10_000) as client:
        assert [n.node_id for n in client.brokers()] == sorted(mock.brokers)
        view = client.metadata([topic])
        assert {p: v.leader for p, v in view.topics[topic].partitions.items()} == leaders
        offsets = latest_offsets(client, topic, MOCK_PARTITIONS)
        assert sum(offsets.values()) == RECORDS
        for partition, offset in offsets.items():
            fetched = fetch_one(client, topic, partition)
            assert int(fetched.high_watermark) == offset
            assert bool(fetched.records) == (offset > 0)
        coordinator = client.coordinator("client-e2e-group")
        assert coordinator.node_id in mock.brokers
        with pytest.raises(KafkaError) as info:
            client.call(requests.share_group_describe(["client-e2e-group"]))
        assert info.value.code == ErrorCode.unsupported_version
        assert "ShareGroupDescribe (API 77)" in str(info.value)


def test_async_client_routes_to_each_leader(cluster: tuple[MockCluster, str]) -> None:
    mock, topic = cluster
    leaders = mock.leaders(topic)

    async def go() -> None:
        async with AsyncClient(mock.bootstrap, api_timeout_ms=10_000) as client:
            for partition, leader in leaders.items():
                call = requests.list_offsets({(topic, partition): requests.LATEST_TIMESTAMP})
                await client.to_leader(
                    topic, partition, call, lambda r: int(r.topics[0].partitions[0].error_code)
                )
                node = client.cache.leader(topic, partition)
                assert node is not None and node.node_id == leader
            node = await client.coordinator("client-e2e-group")
            assert node.node_id in mock.brokers
            assert not await client.supports(requests.API_LIST_GROUPS)

    asyncio.run(go())


def test_threads_share_one_sync_client(cluster: tuple[MockCluster, str]) -> None:
    mock, topic = cluster
    leaders = mock.leaders(topic)
    with Client(mock.bootstrap, api_timeout_ms=10_000) as client:

        def latest(partition: int) -> tuple[int, int]:
            call = requests.list_offsets({(topic, partition): requests.LATEST_TIMESTAMP})
            response = client.to_leader(
                topic, partition, call, lambda r: int(r.topics[0].partitions[0].error_code)
            )
            node = client.cache.leader(topic, partition)
            assert node is not None
            return node.node_id, offsets_by_partition(response)[(topic, partition)][1]

        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(latest, [p % MOCK_PARTITIONS for p in range(32)]))
    assert {p % MOCK_PARTITIONS: leader for p, (leader, _) in enumerate(results)} == leaders
    assert sum(offset for _, offset in results[:MOCK_PARTITIONS]) == RECORDS
