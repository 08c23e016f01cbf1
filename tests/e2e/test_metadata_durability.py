"""The metadata log across SIGKILL (docs/design/metadata-log.md): a stream of admin changes (topics,
ACLs, client quotas, SCRAM credentials, group configs, cluster-wide and client metrics
configs), some refused, is cut by `kill -9` mid-stream. After a restart on the same data
directory every acknowledged change is there and no refused one is; the change in
flight when the broker died may have landed or not (it was never answered). And the
upgrade: a data directory of the older JSON stores is migrated on first start."""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from shoal.client import requests
from shoal.client.acl_requests import create_acls, describe_acls, described_bindings
from shoal.client.quota_requests import alter_client_quotas, describe_client_quotas
from shoal.client.requests import (
    BROKER_RESOURCE,
    CLIENT_METRICS_RESOURCE,
    GROUP_RESOURCE,
    TOPIC_RESOURCE,
    ConfigChange,
)
from shoal.client.scram_requests import (
    alter_user_scram_credentials,
    describe_user_scram_credentials,
    upsertion,
)
from shoal.log.topics import write_partition_metadata
from shoal.security.acl import AclOperation, PatternType, PermissionType, ResourceType
from shoal.security.authorizer import AclBinding, AclBindingFilter
from tests.support.broker import BrokerProcess, running, wait_until
from tests.support.wire import call1

AUTHORIZER = "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SUPER = "super.users=User:ANONYMOUS"
LOCK = "share.record.lock.duration.ms"
P = "producer_byte_rate"
KINDS = ("topic", "acl", "quota", "scram", "group", "cluster", "metrics")
ACKED_BEFORE_KILL = 2 * len(KINDS) + 3


@pytest.fixture
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(tmp_path_factory.mktemp("metadata-kill") / "data", AUTHORIZER, SUPER)


def acl(i: int) -> AclBinding:
    return AclBinding(
        ResourceType.TOPIC,
        f"t{i}",
        PatternType.LITERAL,
        f"User:u{i}",
        "*",
        AclOperation.READ,
        PermissionType.ALLOW,
    )


def configs(bootstrap: str, rtype: int, name: str) -> dict[str, str]:
    (resource,) = call1(bootstrap, requests.describe_configs(rtype, [name])).results
    return {c.name: c.value for c in resource.configs}


def change(bootstrap: str, kind: str, i: int, *, refused: bool) -> bool:
    """Make change `i` of `kind` (a refused one is invalid on purpose); True if the
    broker acknowledged it."""
    if kind == "topic":
        partitions = 0 if refused else 1  # 0 partitions: INVALID_PARTITIONS
        (topic,) = call1(bootstrap, requests.create_topic(f"t{i}", partitions=partitions)).topics
        return int(topic.error_code) == 0
    if kind == "acl":
        binding = acl(i)
        if refused:  # an ANY operation Kafka cannot build: refused whole
            binding = dataclasses.replace(binding, operation=AclOperation.ANY)
        (result,) = call1(bootstrap, create_acls([binding])).results
        return int(result.error_code) == 0
    if kind == "quota":
        value = -1.0 if refused else float(i + 1)
        (entry,) = call1(
            bootstrap, alter_client_quotas([([("client-id", f"c{i}")], {P: value})])
        ).entries
        return int(entry.error_code) == 0
    if kind == "scram":
        iterations = 100 if refused else 4096  # below the minimum: UNACCEPTABLE_CREDENTIAL
        up = upsertion(f"s{i}", "SCRAM-SHA-256", "pw", iterations=iterations, salt=os.urandom(16))
        (result,) = call1(bootstrap, alter_user_scram_credentials(upsertions=[up])).results
        return int(result.error_code) == 0
    if kind == "group":
        value = "1" if refused else "20000"  # below the broker minimum
        resources = {(GROUP_RESOURCE, f"g{i}"): [ConfigChange(LOCK, value)]}
    elif kind == "cluster":
        key = "num.partitions" if not refused else "log.dirs"  # log.dirs is not dynamic
        resources = {(BROKER_RESOURCE, ""): [ConfigChange(key, str(i % 7 + 1))]}
    else:
        value = "50" if refused else "1000"  # interval.ms below 100: INVALID_REQUEST
        resources = {(CLIENT_METRICS_RESOURCE, f"m{i}"): [ConfigChange("interval.ms", value)]}
    (resource,) = call1(bootstrap, requests.incremental_alter_configs(resources)).responses
    return int(resource.error_code) == 0


def present(bootstrap: str, kind: str, i: int) -> bool:
    """Whether change `i` of `kind` is in the broker's metadata."""
    if kind == "topic":
        (topic,) = call1(bootstrap, requests.metadata([f"t{i}"])).topics
        return int(topic.error_code) == 0
    if kind == "acl":
        response = call1(bootstrap, describe_acls(AclBindingFilter(principal=f"User:u{i}")))
        return acl(i) in described_bindings(response)
    if kind == "quota":
        response = call1(
            bootstrap, describe_client_quotas([("client-id", 0, f"c{i}")], strict=True)
        )
        return any(v.key == P for entry in response.entries for v in entry.values)
    if kind == "scram":
        (result,) = call1(bootstrap, describe_user_scram_credentials([f"s{i}"])).results
        return int(result.error_code) == 0 and bool(result.credential_infos)
    if kind == "group":
        return configs(bootstrap, GROUP_RESOURCE, f"g{i}").get(LOCK) == "20000"
    if kind == "cluster":
        raise AssertionError("checked by value: later changes overwrite the key")
    return f"m{i}" in {
        r.resource_name
        for r in call1(
            bootstrap, requests.list_config_resources([CLIENT_METRICS_RESOURCE])
        ).config_resources
    }


@dataclass
class Stream:
    """Changes made until the broker dies: each (kind, i, refused) answered, in order."""

    bootstrap: str
    answered: list[tuple[str, int, bool, bool]] = field(default_factory=list)
    """(kind, i, refused on purpose, acknowledged)."""
    error: BaseException | None = None

    def run(self) -> None:
        i = 0
        try:
            while True:
                kind = KINDS[i % len(KINDS)]
                refused = i % 3 == 2
                acked = change(self.bootstrap, kind, i, refused=refused)
                self.answered.append((kind, i, refused, acked))
                i += 1
        except (OSError, ConnectionError, TimeoutError, EOFError):
            return  # the broker was killed: the change in flight has no answer
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc

    def acked(self) -> int:
        return sum(1 for *_rest, acked in self.answered if acked)


def test_acknowledged_changes_survive_sigkill_and_refused_ones_never_appear(
    broker: BrokerProcess,
) -> None:
    stream = Stream(broker.bootstrap)
    thread = threading.Thread(target=stream.run, daemon=True)
    thread.start()
    assert wait_until(lambda: stream.acked() >= ACKED_BEFORE_KILL or stream.error, timeout_s=60)
    broker.kill()  # mid-stream: a change is usually in flight
    thread.join(30)
    assert not thread.is_alive() and stream.error is None, stream.error
    answered = list(stream.answered)
    for kind, i, refused, acked in answered:
        assert acked is not refused, f"{kind} {i}: refused={refused} but acked={acked}"

    broker.start()
    bootstrap = broker.bootstrap
    for kind, i, refused, _acked in answered:
        if kind == "cluster":
            continue
        assert present(bootstrap, kind, i) is not refused, f"{kind} {i} (refused={refused})"
    last_cluster = [i for kind, i, refused, _ in answered if kind == "cluster" and not refused]
    assert last_cluster, "the stream reached no cluster-wide change"
    in_flight = len(answered)  # the unanswered change, if it was a cluster-wide one
    expected = {str(last_cluster[-1] % 7 + 1)}
    if KINDS[in_flight % len(KINDS)] == "cluster" and in_flight % 3 != 2:
        expected.add(str(in_flight % 7 + 1))
    assert configs(bootstrap, BROKER_RESOURCE, "").get("num.partitions") in expected
    assert broker.wait_for_log(r"metadata log __cluster_metadata-0: \d+ records replayed")


def test_a_data_directory_of_the_json_stores_is_migrated_on_first_start(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Upgrade: the files older versions kept the metadata in are read once, written
    to the metadata log and renamed aside; a restart serves the same from the log."""
    data_dir = tmp_path_factory.mktemp("metadata-upgrade") / "data"
    data_dir.mkdir()
    topic_id = uuid.uuid4()
    old = {
        "topics.json": {
            "version": 1,
            "topics": [
                {
                    "name": "t1",
                    "topic_id": str(topic_id),
                    "partitions": 2,
                    "configs": {"retention.ms": "60000"},
                    "internal": False,
                }
            ],
        },
        "acls.json": {
            "version": 1,
            "acls": [["TOPIC", "t1", "LITERAL", "User:u1", "*", "READ", "ALLOW"]],
        },
        "client-quotas.json": {
            "version": 1,
            "quotas": [{"entity": [["client-id", "c1"]], "values": {P: 100}}],
        },
        "group-configs.json": {"version": 1, "groups": {"g1": {LOCK: "20000"}}},
        "client-metrics-configs.json": {"version": 1, "resources": {"m1": {"interval.ms": "1000"}}},
    }
    for name, document in old.items():
        (data_dir / name).write_text(json.dumps(document))
    (data_dir / "dynamic-cluster-default.properties").write_text("num.partitions=3\n")
    partition = data_dir / "t1-0"  # the old topic's data stays its own
    partition.mkdir()
    write_partition_metadata(partition, topic_id)
    broker = BrokerProcess(data_dir, overrides=[AUTHORIZER, SUPER])
    try:
        broker.start()
        for _ in range(2):  # first start: migrated; after SIGKILL: replayed from the log
            b = broker.bootstrap
            (topic,) = call1(b, requests.metadata(["t1"])).topics
            assert int(topic.error_code) == 0 and len(topic.partitions) == 2
            assert topic.topic_id == topic_id
            assert configs(b, TOPIC_RESOURCE, "t1").get("retention.ms") == "60000"
            assert present(b, "acl", 1)
            quotas = call1(b, describe_client_quotas([("client-id", 0, "c1")], strict=True))
            assert [(v.key, v.value) for e in quotas.entries for v in e.values] == [(P, 100.0)]
            assert present(b, "group", 1) and present(b, "metrics", 1)
            assert configs(b, BROKER_RESOURCE, "").get("num.partitions") == "3"
            assert not any((data_dir / name).exists() for name in old)
            assert (data_dir / "acls.json.migrated").exists()
            broker.restart()
        assert broker.wait_for_log(r"metadata log __cluster_metadata-0: \d+ records replayed")
    finally:
        broker.kill()
