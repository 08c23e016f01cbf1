"""`shoal acls` and confluent-kafka's AdminClient against a real broker with the
StandardAuthorizer on: add, list, remove, Kafka's expansions, and ACLs kept across a
restart. Every connection is User:ANONYMOUS (no SASL yet), made a super user."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from tests.support.broker import BrokerProcess, Brokers, running
from tests.support.cli import ENV, TOOL_TIMEOUT_S, shoal

AUTHORIZER = "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ADMIN = "super.users=User:ANONYMOUS"
TOOL = [sys.executable, "-m", "shoal.cli.main", "acls"]


@pytest.fixture(scope="module")
def admin_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """The authorizer on, ANONYMOUS a super user; tests use distinct resource names."""
    yield from running(tmp_path_factory.mktemp("acl-admin") / "data", AUTHORIZER, ADMIN)


def acls(broker: BrokerProcess, *args: str, stdin: str | None = None) -> str:
    if stdin is None:
        done = shoal("acls", "--bootstrap-server", broker.bootstrap, *args)
    else:
        done = subprocess.run(
            [*TOOL, "--bootstrap-server", broker.bootstrap, *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=ENV,
            timeout=TOOL_TIMEOUT_S,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    return done.stdout


def topic_pattern(name: str, pattern: str = "LITERAL") -> str:
    return f"ResourcePattern(resourceType=TOPIC, name={name}, patternType={pattern})"


def entry(principal: str, operation: str, permission: str = "ALLOW", host: str = "*") -> str:
    return (
        f"\t(principal={principal}, host={host}, operation={operation}, "
        f"permissionType={permission})"
    )


def test_add_list_remove_and_restart(brokers: Brokers) -> None:
    broker = brokers.start(AUTHORIZER, ADMIN)
    added = acls(
        broker,
        "--add",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Read",
        "--operation",
        "Describe",
        "--deny-principal",
        "User:mallory",
        "--deny-host",
        "10.1.1.1",
        "--topic",
        "orders",
    )
    assert f"Adding ACLs for resource `{topic_pattern('orders')}`:" in added
    assert f"Current ACLs for resource `{topic_pattern('orders')}`:" in added
    for line in (
        entry("User:alice", "READ"),
        entry("User:alice", "DESCRIBE"),
        entry("User:mallory", "READ", "DENY", "10.1.1.1"),
    ):
        assert line in added
    acls(
        broker,
        "--add",
        "--allow-principal",
        "User:bob",
        "--producer",
        "--idempotent",
        "--topic",
        "pay",
        "--resource-pattern-type",
        "prefixed",
    )
    listed = acls(broker, "--list")
    assert f"Current ACLs for resource `{topic_pattern('pay', 'PREFIXED')}`:" in listed
    for op in ("WRITE", "DESCRIBE", "CREATE"):
        assert entry("User:bob", op) in listed
    # --idempotent adds the cluster's IDEMPOTENT_WRITE whatever the topics' pattern type
    assert entry("User:bob", "IDEMPOTENT_WRITE") in listed
    matched = acls(broker, "--list", "--topic", "payments", "--resource-pattern-type", "match")
    assert topic_pattern("pay", "PREFIXED") in matched and "orders" not in matched
    mine = acls(broker, "--list", "--principal", "User:alice")
    assert "ACLs for principal `User:alice`" in mine and "User:bob" not in mine

    broker.restart()
    after = acls(broker, "--list")
    assert after == listed, "the ACLs survive a restart"

    kept = acls(broker, "--remove", "--topic", "orders", stdin="n\n")
    assert "Are you sure you want to delete all ACLs for resource filter" in kept
    assert entry("User:alice", "READ") in acls(broker, "--list", "--topic", "orders")
    acls(
        broker,
        "--remove",
        "--force",
        "--deny-principal",
        "User:mallory",
        "--deny-host",
        "10.1.1.1",
        "--operation",
        "Read",
        "--operation",
        "describe",
        "--topic",
        "orders",
    )
    left = acls(broker, "--list", "--topic", "orders")
    assert "mallory" not in left and entry("User:alice", "READ") in left
    acls(broker, "--remove", "--topic", "orders", stdin="y\n")
    assert "orders" not in acls(broker, "--list")


def test_consumer_and_producer_expansions(admin_broker: BrokerProcess) -> None:
    broker = admin_broker
    out = acls(
        broker,
        "--add",
        "--allow-principal",
        "User:carol",
        "--consumer",
        "--producer",
        "--idempotent",
        "--topic",
        "events",
        "--group",
        "readers",
        "--transactional-id",
        "tx-1",
    )
    listed = acls(
        broker,
        "--list",
        "--topic",
        "events",
        "--group",
        "readers",
        "--transactional-id",
        "tx-1",
        "--cluster",
    )
    assert out.endswith(listed)
    topic = listed.split(f"`{topic_pattern('events')}`:")[1].split("Current ACLs")[0]
    assert {
        op for op in ("READ", "WRITE", "CREATE", "DESCRIBE") if f"operation={op}," in topic
    } == {
        "READ",
        "WRITE",
        "CREATE",
        "DESCRIBE",
    }
    group = "ResourcePattern(resourceType=GROUP, name=readers, patternType=LITERAL)"
    assert f"Current ACLs for resource `{group}`: \n {entry('User:carol', 'READ')} " in listed
    tid = "ResourcePattern(resourceType=TRANSACTIONAL_ID, name=tx-1, patternType=LITERAL)"
    assert tid in listed
    cluster = "ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)"
    assert f"`{cluster}`: \n {entry('User:carol', 'IDEMPOTENT_WRITE')} " in listed


def test_tool_errors(brokers: Brokers, broker: BrokerProcess) -> None:
    no_authorizer = shoal("acls", "--bootstrap-server", broker.bootstrap, "--list")
    assert no_authorizer.returncode == 1
    assert "SECURITY_DISABLED" in no_authorizer.stderr
    locked = brokers.start(AUTHORIZER)
    refused = shoal(
        "acls",
        "--bootstrap-server",
        locked.bootstrap,
        "--add",
        "--allow-principal",
        "User:x",
        "--topic",
        "t",
    )
    assert refused.returncode == 1 and "CLUSTER_AUTHORIZATION_FAILED" in refused.stderr
    usage = shoal(
        "acls",
        "--bootstrap-server",
        locked.bootstrap,
        "--add",
        "--topic",
        "t",
        "--resource-pattern-type",
        "MATCH",
        "--allow-principal",
        "User:x",
    )
    assert usage.returncode == 2 and "is not valid when adding acls" in usage.stderr


def test_confluent_admin_client(admin_broker: BrokerProcess) -> None:
    broker = admin_broker
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    bindings = [
        AclBinding(
            ResourceType.TOPIC,
            "ck-topic",
            ResourcePatternType.LITERAL,
            "User:dave",
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        ),
        AclBinding(
            ResourceType.GROUP,
            "ck-",
            ResourcePatternType.PREFIXED,
            "User:dave",
            "*",
            AclOperation.ALL,
            AclPermissionType.DENY,
        ),
    ]
    for future in admin.create_acls(bindings, request_timeout=30).values():
        assert future.result(timeout=30) is None
    any_filter = AclBindingFilter(
        ResourceType.ANY,
        None,
        ResourcePatternType.ANY,
        "User:dave",
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    described = admin.describe_acls(any_filter, request_timeout=30).result(timeout=30)
    assert sorted(described) == sorted(bindings)
    match_filter = AclBindingFilter(
        ResourceType.GROUP,
        "ck-group",
        ResourcePatternType.MATCH,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    matched = admin.describe_acls(match_filter, request_timeout=30).result(timeout=30)
    assert matched == [bindings[1]]
    deleted = admin.delete_acls([match_filter], request_timeout=30)
    assert [list(f.result(timeout=30)) for f in deleted.values()] == [[bindings[1]]]
    left = admin.describe_acls(any_filter, request_timeout=30).result(timeout=30)
    assert left == [bindings[0]]
    bad = AclBinding(
        ResourceType.BROKER,
        "not-the-cluster",
        ResourcePatternType.LITERAL,
        "User:dave",
        "*",
        AclOperation.ALTER,
        AclPermissionType.ALLOW,
    )
    with pytest.raises(KafkaException, match=r"(?i)invalid"):
        for future in admin.create_acls([bad], request_timeout=30).values():
            future.result(timeout=30)
