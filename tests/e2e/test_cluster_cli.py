"""The admin tools, unchanged, against a 3-broker cluster: librdkafka's mock cluster.

The mock is an independent Kafka implementation whose topic partitions have leaders
on different brokers and whose group coordinator is one of them, so a tool that only
talks to its bootstrap broker, or hard-codes a request version, fails here. The mock
lacks some APIs (`MOCK_MISSING`): the steps that need one check that the tool says
plainly which API the cluster cannot answer, then skip, naming it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.cli import shoal
from tests.support.mock_cluster import MOCK_MISSING, MOCK_PARTITIONS, MockCluster

pytest.importorskip("confluent_kafka")

TOPIC = "cluster-orders"
RECORDS = 200


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as mock:
        assert mock.produce(TOPIC, [b"order-%d" % i for i in range(RECORDS)]) == RECORDS
        yield mock


def _skip_missing(output: str, api_key: int) -> None:
    """The tool failed because the cluster lacks `api_key`: the message must name the
    API (or Kafka's UNSUPPORTED_VERSION) so a user knows why; then skip this step."""
    name = MOCK_MISSING[api_key]
    assert name in output or "UNSUPPORTED_VERSION" in output, output
    pytest.skip(f"librdkafka's mock cluster does not serve {name} (API {api_key})")


def test_the_cluster_spreads_leaders_over_brokers(cluster: MockCluster) -> None:
    leaders = cluster.leaders(TOPIC)
    assert len(leaders) == MOCK_PARTITIONS
    assert len(set(leaders.values())) > 1, leaders


def test_topics_list_reaches_the_cluster(cluster: MockCluster) -> None:
    done = shoal("topics", "--bootstrap-server", cluster.bootstrap, "--list")
    assert done.returncode == 0, done.stderr
    assert TOPIC in done.stdout.split()


def test_topics_list_from_any_one_broker(cluster: MockCluster) -> None:
    """Bootstrapping from the last broker alone finds the whole cluster's topics."""
    last = cluster.bootstrap.split(",")[-1]
    done = shoal("topics", "--bootstrap-server", last, "--list")
    assert done.returncode == 0, done.stderr
    assert TOPIC in done.stdout.split()


def test_topics_describe_shows_each_partition_leader(cluster: MockCluster) -> None:
    done = shoal("topics", "--bootstrap-server", cluster.bootstrap, "--describe", "--topic", TOPIC)
    if done.returncode != 0:
        _skip_missing(done.stderr, 32)
    assert f"PartitionCount: {MOCK_PARTITIONS}" in done.stdout, done.stdout
    shown: dict[int, int] = {}
    for line in done.stdout.splitlines():
        fields = line.split()
        if "Partition:" in fields and "Leader:" in fields:
            partition = int(fields[fields.index("Partition:") + 1])
            shown[partition] = int(fields[fields.index("Leader:") + 1])
    assert shown == cluster.leaders(TOPIC)


def test_topics_create_needs_a_controller(cluster: MockCluster) -> None:
    done = shoal(
        "topics",
        "--bootstrap-server",
        cluster.bootstrap,
        "--create",
        "--topic",
        "cluster-new",
        "--partitions",
        "2",
    )
    if done.returncode != 0:
        _skip_missing(done.stderr, 19)
    assert "Created topic cluster-new." in done.stdout


def test_share_groups_list(cluster: MockCluster) -> None:
    done = shoal(
        "share-groups", "--bootstrap-server", cluster.bootstrap, "--list", "--timeout", "10000"
    )
    if done.returncode != 0:
        _skip_missing(done.stderr + done.stdout, 16)
    assert done.returncode == 0


def test_share_groups_describe(cluster: MockCluster) -> None:
    done = shoal(
        "share-groups",
        "--bootstrap-server",
        cluster.bootstrap,
        "--describe",
        "--group",
        "cluster-group",
        "--timeout",
        "10000",
    )
    if done.returncode != 0:
        _skip_missing(done.stderr + done.stdout, 77)
    assert "cluster-group" in done.stdout
