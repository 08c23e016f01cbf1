"""The admin APIs through a real client: confluent-kafka's AdminClient (librdkafka)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
)

from tests.support.broker import BrokerProcess
from tests.support.topics import topic_name

TIMEOUT_S = 30


@pytest.fixture(scope="module")
def admin(broker: BrokerProcess) -> Iterator[AdminClient]:
    yield AdminClient({"bootstrap.servers": broker.bootstrap, "socket.timeout.ms": 10_000})


def test_topic_lifecycle(admin: AdminClient) -> None:
    name = topic_name("admin")
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=2, replication_factor=1, config={"retention.ms": "60000"})],
        request_timeout=TIMEOUT_S,
    )
    futures[name].result(TIMEOUT_S)
    listed = admin.list_topics(timeout=TIMEOUT_S)
    assert len(listed.topics[name].partitions) == 2
    assert listed.topics[name].partitions[0].leader == 1

    resource = ConfigResource(ConfigResource.Type.TOPIC, name)
    configs = admin.describe_configs([resource])[resource].result(TIMEOUT_S)
    assert configs["retention.ms"].value == "60000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value

    change = ConfigResource(
        ConfigResource.Type.TOPIC,
        name,
        incremental_configs=[
            ConfigEntry("retention.ms", "120000", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("segment.bytes", None, incremental_operation=AlterConfigOpType.DELETE),
        ],
    )
    admin.incremental_alter_configs([change])[change].result(TIMEOUT_S)
    configs = admin.describe_configs([resource])[resource].result(TIMEOUT_S)
    assert configs["retention.ms"].value == "120000"

    admin.create_partitions([NewPartitions(name, 4)])[name].result(TIMEOUT_S)
    assert len(admin.list_topics(name, timeout=TIMEOUT_S).topics[name].partitions) == 4
    with pytest.raises(KafkaException, match="INVALID_PARTITIONS"):
        admin.create_partitions([NewPartitions(name, 3)])[name].result(TIMEOUT_S)

    admin.delete_topics([name], request_timeout=TIMEOUT_S)[name].result(TIMEOUT_S)
    assert name not in admin.list_topics(timeout=TIMEOUT_S).topics


def test_errors_reach_the_client(admin: AdminClient) -> None:
    name = topic_name("admin-bad")
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=1, replication_factor=3)], request_timeout=TIMEOUT_S
    )
    with pytest.raises(KafkaException, match="INVALID_REPLICATION_FACTOR"):
        futures[name].result(TIMEOUT_S)
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=1, config={"retention.ms": "never"})],
        request_timeout=TIMEOUT_S,
    )
    with pytest.raises(KafkaException, match=r"retention\.ms"):
        futures[name].result(TIMEOUT_S)
    with pytest.raises(KafkaException, match="UNKNOWN_TOPIC"):
        admin.delete_topics([name], request_timeout=TIMEOUT_S)[name].result(TIMEOUT_S)


def test_describe_cluster_and_broker_configs(admin: AdminClient, broker: BrokerProcess) -> None:
    cluster = admin.describe_cluster(request_timeout=TIMEOUT_S).result(TIMEOUT_S)
    assert cluster.cluster_id is not None and len(cluster.cluster_id) == 22
    assert cluster.controller.id == 1
    assert [(n.id, n.host, n.port) for n in cluster.nodes] == [(1, "127.0.0.1", broker.port)]

    resource = ConfigResource(ConfigResource.Type.BROKER, "1")
    configs = admin.describe_configs([resource])[resource].result(TIMEOUT_S)
    assert configs["node.id"].value == "1"
    assert configs["node.id"].is_read_only
