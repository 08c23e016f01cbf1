"""The admin tools, unchanged, against a 3-broker cluster: librdkafka's mock cluster.

The mock is an independent Kafka implementation whose topic partitions have leaders
on different brokers and whose group coordinator is one of them, so a tool that only
talks to its bootstrap broker, or hard-codes a request version, fails here. The mock
lacks some APIs (`MOCK_MISSING`): the steps that need one check that the tool says
plainly which API the cluster cannot answer, then skip, naming it. A topic describe
goes on without configs when DescribeConfigs is missing, and says so.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from shoal.client import Node, requests
from shoal.client.sync import Connection
from tests.support.cli import rows, shoal
from tests.support.mock_cluster import MOCK_MISSING, MOCK_PARTITIONS, MockCluster

pytest.importorskip("confluent_kafka")

TOPIC = "cluster-orders"
RECORDS = 200


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as mock:
        yield mock


@pytest.fixture(scope="module")
def topic(cluster: MockCluster) -> str:
    """A topic of the mock with records, whose leaders are on more than one broker."""
    name = cluster.spread_topic(TOPIC)
    assert cluster.produce(name, [b"order-%d" % i for i in range(RECORDS)]) == RECORDS
    return name


def _skip_missing(output: str, api_key: int) -> None:
    """The tool failed because the cluster lacks `api_key`: the message must name the
    API as Kafka does ("ListGroups (API 16)") so a user knows why; then skip this step."""
    name = MOCK_MISSING[api_key]
    assert f"{name} (API {api_key})" in output and "UNSUPPORTED_VERSION" in output, output
    pytest.skip(f"librdkafka's mock cluster does not serve {name} (API {api_key})")


def test_the_cluster_spreads_leaders_over_brokers(cluster: MockCluster, topic: str) -> None:
    leaders = cluster.leaders(topic)
    assert len(leaders) == MOCK_PARTITIONS
    assert len(set(leaders.values())) > 1, leaders


def test_topics_list_reaches_the_cluster(cluster: MockCluster, topic: str) -> None:
    done = shoal("topics", "--bootstrap-server", cluster.bootstrap, "--list")
    assert done.returncode == 0, done.stderr
    assert topic in done.stdout.split()


def test_topics_list_from_any_one_broker(cluster: MockCluster, topic: str) -> None:
    """Bootstrapping from the last broker alone finds the whole cluster's topics."""
    last = cluster.bootstrap.split(",")[-1]
    done = shoal("topics", "--bootstrap-server", last, "--list")
    assert done.returncode == 0, done.stderr
    assert topic in done.stdout.split()


@pytest.mark.parametrize("bootstrap", ["every broker", "the last broker"])
def test_topics_describe_shows_each_partition_leader(
    cluster: MockCluster, topic: str, bootstrap: str
) -> None:
    servers = cluster.bootstrap if bootstrap == "every broker" else cluster.bootstrap.split(",")[-1]
    done = shoal("topics", "--bootstrap-server", servers, "--describe", "--topic", topic)
    assert done.returncode == 0, done.stderr
    if done.stderr:  # the mock serves no DescribeConfigs: said, and configs left out
        assert "DescribeConfigs (API 32)" in done.stderr, done.stderr
        assert "configs are not shown" in done.stderr, done.stderr
    assert f"PartitionCount: {MOCK_PARTITIONS}" in done.stdout, done.stdout
    shown: dict[int, int] = {}
    for line in done.stdout.splitlines():
        fields = line.split()
        if "Partition:" in fields and "Leader:" in fields:
            partition = int(fields[fields.index("Partition:") + 1])
            shown[partition] = int(fields[fields.index("Leader:") + 1])
    assert shown == cluster.leaders(topic)


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


def _coordinator_of(bootstrap: str, group: str) -> str:
    """The address FindCoordinator names for `group`, asked on one raw connection."""
    host, port = bootstrap.rsplit(":", 1)
    connection = Connection.open(Node(host, int(port)), timeout_ms=10_000)
    try:
        response = connection.call(requests.find_coordinator(group), timeout_ms=10_000)
    finally:
        connection.close()
    found = requests.found_coordinator(response)
    assert found.error_code == 0, found
    return found.node.address


def test_a_group_command_reaches_the_coordinator_on_another_broker(cluster: MockCluster) -> None:
    """Bootstrapped from one broker, a group command goes to the group's coordinator,
    which is another broker. The mock answers FindCoordinator but not
    ShareGroupDescribe, so the proof is where the tool's request went: the refusal
    names the coordinator's address, not the bootstrap broker's (with a cluster that
    serves the API, the COORDINATOR column names it)."""
    first = cluster.bootstrap.split(",")[0]
    group, coordinator = next(
        (g, c)
        for g in (f"cluster-group-{i}" for i in range(64))
        if (c := _coordinator_of(first, g)) != first
    )
    done = shoal(
        "share-groups",
        "--bootstrap-server",
        first,
        "--describe",
        "--group",
        group,
        "--state",
        "--timeout",
        "10000",
    )
    if done.returncode == 0:
        (state,) = rows(done.stdout)
        assert state["COORDINATOR (ID)"].split()[0] == coordinator, done.stdout
        return
    assert f"the broker at {coordinator} cannot answer ShareGroupDescribe (API 77)" in (
        done.stderr
    ), done.stderr
    assert first not in done.stderr, done.stderr
