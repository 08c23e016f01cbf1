"""`shoal topics` as a subprocess against a real broker: create, list, describe,
alter and delete, their kafka-topics.sh output, and the exits on errors."""

from __future__ import annotations

import base64
import re
import socket
import threading
import time
from pathlib import Path

from shoal.client.requests import metadata
from tests.support.broker import BrokerProcess
from tests.support.cli import shoal
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1


def topics(broker: BrokerProcess, *args: str) -> tuple[int, str, str]:
    done = shoal("topics", "--bootstrap-server", broker.bootstrap, *args)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def fields(line: str) -> dict[str, str]:
    """`Topic: t\tPartition: 0\t...` as {"Topic": "t", "Partition": "0", ...}."""
    out = {}
    for item in line.strip("\t").split("\t"):
        key, _, value = item.partition(": ")
        out[key] = value
    return out


def test_create_then_describe_shows_the_topic_like_kafka(broker: BrokerProcess) -> None:
    name = topic_name("cli-create")
    code, out, err = topics(
        broker,
        "--create",
        "--topic",
        name,
        "--partitions",
        "3",
        "--replication-factor",
        "1",
        "--config",
        "retention.ms=123456",
        "--config",
        "cleanup.policy = delete",
    )
    assert (code, out, err) == (0, f"Created topic {name}.\n", "")

    code, out, err = topics(broker, "--describe", "--topic", name)
    assert code == 0, err
    head, *partition_lines = out.splitlines()
    (described,) = call1(broker.bootstrap, metadata([name])).topics
    topic_id = base64.urlsafe_b64encode(described.topic_id.bytes).decode().rstrip("=")
    summary = fields(head)
    assert summary["Topic"] == name
    assert summary["TopicId"] == topic_id
    assert (summary["PartitionCount"], summary["ReplicationFactor"]) == ("3", "1")
    assert set(summary["Configs"].split(",")) >= {"retention.ms=123456", "cleanup.policy=delete"}
    leaders = {p.partition_index: str(p.leader_id) for p in described.partitions}
    assert [fields(line) for line in partition_lines] == [
        {
            "Topic": name,
            "Partition": str(p),
            "Leader": leaders[p],
            "Replicas": leaders[p],
            "Isr": leaders[p],
            "Elr": "",
            "LastKnownElr": "",
        }
        for p in range(3)
    ]
    assert all(line.startswith("\tTopic: ") for line in partition_lines)


def test_describe_reads_partitions_a_page_at_a_time(broker: BrokerProcess) -> None:
    """DescribeTopicPartitions pages of one partition still describe every partition of
    every topic, each topic once (the eligible leader replicas are empty lists, not N/A:
    the answer is API 75's, not Metadata's)."""
    prefix = topic_name("cli-paged")
    names = [f"{prefix}-a", f"{prefix}-b"]
    for name in names:
        create_topic(broker.bootstrap, name, partitions=3)
    code, out, err = topics(
        broker, "--describe", "--topic", f"{prefix}-.*", "--partition-size-limit-per-response", "1"
    )
    assert code == 0, err
    heads = [fields(line) for line in out.splitlines() if line.startswith("Topic: ")]
    assert sorted(h["Topic"] for h in heads) == names
    described = [fields(line) for line in out.splitlines() if line.startswith("\t")]
    assert sorted((d["Topic"], d["Partition"]) for d in described) == [
        (name, str(p)) for name in names for p in range(3)
    ]
    assert {(d["Elr"], d["LastKnownElr"]) for d in described} == {("", "")}


def test_a_default_topic_shows_no_configs(broker: BrokerProcess) -> None:
    name = topic_name("cli-plain")
    assert topics(broker, "--create", "--topic", name)[0] == 0
    code, out, _ = topics(broker, "--describe", "--topic", name)
    assert code == 0
    assert out.splitlines()[0].endswith("\tConfigs: ")


def test_create_existing_fails_unless_if_not_exists(broker: BrokerProcess) -> None:
    name = topic_name("cli-dup")
    create_topic(broker.bootstrap, name)
    code, out, err = topics(broker, "--create", "--topic", name)
    assert code == 1
    assert out == ""
    assert err == (
        f"Error while executing topic command : Topic '{name}' already exists. "
        "(TOPIC_ALREADY_EXISTS)\n"
    )
    assert topics(broker, "--create", "--topic", name, "--if-not-exists") == (0, "", "")


def test_broker_refusals_are_reported(broker: BrokerProcess) -> None:
    code, _, err = topics(
        broker, "--create", "--topic", topic_name("cli-bad"), "--config", "retention.ms=soon"
    )
    assert code == 1
    assert "(INVALID_CONFIG)" in err
    code, _, err = topics(broker, "--create", "--topic", "bad/name")
    assert code == 1
    assert "(INVALID_TOPIC_EXCEPTION)" in err


def test_list_is_sorted_and_filters_by_regex(broker: BrokerProcess) -> None:
    prefix = topic_name("cli-list")
    names = [f"{prefix}-b", f"{prefix}-a", f"{prefix}-c"]
    for name in names:
        create_topic(broker.bootstrap, name)
    code, out, _ = topics(broker, "--list")
    assert code == 0
    listed = out.splitlines()
    assert listed == sorted(listed)
    assert set(names) <= set(listed)
    code, out, _ = topics(broker, "--list", "--topic", f"{prefix}-[ab],{prefix}-c")
    assert (code, out.splitlines()) == (0, sorted(names))
    code, out, _ = topics(broker, "--list", "--topic", f"{prefix}-a-nothing")
    assert (code, out) == (0, "")


def test_internal_topics_are_listed_unless_excluded(broker: BrokerProcess) -> None:
    user = topic_name("cli-internal")
    create_topic(broker.bootstrap, user)
    everything = call1(broker.bootstrap, _all_topics()).topics
    internal = {t.name for t in everything if t.is_internal}
    _, out, _ = topics(broker, "--list")
    assert internal | {user} <= set(out.splitlines())
    _, out, _ = topics(broker, "--list", "--exclude-internal")
    assert user in out.splitlines()
    assert not internal & set(out.splitlines())


def _all_topics() -> object:
    from kio.schema.metadata.v12.request import MetadataRequest

    return MetadataRequest(
        topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )


def test_alter_adds_partitions_and_refuses_to_shrink(broker: BrokerProcess) -> None:
    name = topic_name("cli-alter")
    create_topic(broker.bootstrap, name, partitions=2)
    assert topics(broker, "--alter", "--topic", name, "--partitions", "5") == (0, "", "")
    _, out, _ = topics(broker, "--describe", "--topic", name)
    assert fields(out.splitlines()[0])["PartitionCount"] == "5"
    assert len(out.splitlines()) == 6
    code, _, err = topics(broker, "--alter", "--topic", name, "--partitions", "3")
    assert code == 1
    assert f"cannot alter '{name}'" in err
    assert "(INVALID_PARTITIONS)" in err


def test_delete_removes_the_topic(broker: BrokerProcess) -> None:
    name = topic_name("cli-delete")
    create_topic(broker.bootstrap, name)
    assert topics(broker, "--delete", "--topic", name) == (0, "", "")
    _, out, _ = topics(broker, "--list")
    assert name not in out.splitlines()


def test_unknown_topics(broker: BrokerProcess) -> None:
    name = topic_name("cli-absent")
    expected = f"Error while executing topic command : Topic '{name}' does not exist as expected\n"
    for action in (("--describe",), ("--delete",), ("--alter", "--partitions", "2")):
        code, out, err = topics(broker, *action, "--topic", name)
        assert (code, out, err) == (1, "", expected), action
        assert topics(broker, *action, "--topic", name, "--if-exists") == (0, "", ""), action


def test_usage_errors_exit_2_with_kafkas_message_and_usage(broker: BrokerProcess) -> None:
    code, out, err = topics(broker, "--alter", "--topic", "x")
    assert (code, out) == (2, "")
    assert 'shoal topics: Missing required argument "[partitions]"' in err
    assert "usage: shoal topics" in err
    code, _, err = topics(broker, "--list", "--describe")
    assert code == 2
    assert "Command must include exactly one action" in err


def test_unreachable_broker_fails_within_the_api_timeout(tmp_path: Path) -> None:
    config = tmp_path / "admin.properties"
    config.write_text("default.api.timeout.ms=1500\nrequest.timeout.ms=1000\n")
    started = time.monotonic()
    done = shoal(
        "topics", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(config), "--list"
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert "cannot reach the broker at 127.0.0.1:1 within 1500 ms" in done.stderr
    assert "Traceback" not in done.stderr
    assert time.monotonic() - started < 30


def test_a_broker_that_never_answers_fails_within_the_request_timeout(tmp_path: Path) -> None:
    """A listener that accepts connections but never replies: each attempt gives up
    after request.timeout.ms, the command after default.api.timeout.ms."""
    silent = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept_forever() -> None:
        silent.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(silent.accept()[0])
            except TimeoutError:
                continue

    acceptor = threading.Thread(target=accept_forever, daemon=True)
    acceptor.start()
    config = tmp_path / "admin.properties"
    config.write_text("request.timeout.ms=500\ndefault.api.timeout.ms=2000\n")
    port = silent.getsockname()[1]
    try:
        started = time.monotonic()
        done = shoal(
            "topics",
            "--bootstrap-server",
            f"127.0.0.1:{port}",
            "--command-config",
            str(config),
            "--list",
        )
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        acceptor.join(10)
        for connection in accepted:
            connection.close()
        silent.close()
    assert done.returncode == 1
    assert f"cannot reach the broker at 127.0.0.1:{port} within 2000 ms" in done.stderr
    assert re.search(r"ApiVersions failed: .*no answer within \d+ ms", done.stderr), done.stderr
    assert len(accepted) >= 2, "the client retried within its API timeout"
    assert elapsed < 30
