"""Config APIs against Kafka 4.2: DescribeConfigs (32), AlterConfigs (33),
IncrementalAlterConfigs (44) and ListConfigResources (74) (docs/reference/configs.md).

Shoal is started with the static configuration the reference broker runs with (every
key of Kafka's server.properties but its listeners and data directory), so that both
answer from the same settings: Kafka's own keys must be accepted, and DescribeConfigs
must list the same keys with the same values, sources, flags and types. The
differences that remain are deliberate; each is listed below with its reason.
"""

from __future__ import annotations

import datetime
import time
import uuid
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource
from confluent_kafka.admin import ResourceType as AdminResourceType
from kio.schema.alter_configs.v2.request import AlterableConfig as AlterConfig
from kio.schema.alter_configs.v2.request import AlterConfigsRequest, AlterConfigsResource
from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest
from kio.schema.create_topics.v7.request import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from kio.schema.describe_configs.v4.request import DescribeConfigsRequest, DescribeConfigsResource
from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.incremental_alter_configs.v1.request import (
    AlterableConfig as IncrementalConfig,
)
from kio.schema.incremental_alter_configs.v1.request import (
    AlterConfigsResource as IncrementalResource,
)
from kio.schema.incremental_alter_configs.v1.request import IncrementalAlterConfigsRequest
from kio.schema.list_config_resources.v0.request import (
    ListConfigResourcesRequest as ListConfigResourcesV0,
)
from kio.schema.list_config_resources.v1.request import (
    ListConfigResourcesRequest as ListConfigResourcesV1,
)
from kio.static.primitive import i8, i16, i32

from tests.differential.conftest import Pair, unique
from tests.support import kafka_reference
from tests.support.broker import BrokerProcess, running
from tests.support.topics import create_topic
from tests.support.wire import call1

with warnings.catch_warnings():  # kafka-python's import warns on this Python
    warnings.filterwarnings("ignore", r"(read|open)_text is deprecated", DeprecationWarning)
    from kafka.admin import ConfigResource as KafkaConfigResource
    from kafka.admin import KafkaAdminClient

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
TIMEOUT_S = 30

HARNESS_ONLY = {"log.initial.task.delay.ms"}
"""An internal Kafka key (not in its documented configs) the reference broker is
started with for the tests' sake (no retention pass during a test): Kafka lists it
as a static setting; it is not compared."""
NOT_GIVEN_TO_SHOAL = {
    "listeners",
    "advertised.listeners",
    "listener.security.protocol.map",
    *HARNESS_ONLY,
}
"""Kafka's static keys Shoal is not started with: its own listener (and the data
directory, `running`'s) stand for them."""

# ---- deliberate differences of DescribeConfigs, per key: (value, source, read_only,
# is_sensitive, config_type) may differ
BROKER_DIFFERENCES = {
    "listeners": "ports differ, and Kafka has a CONTROLLER listener for its KRaft quorum",
    "advertised.listeners": "ports differ; Shoal advertises its listener unless told",
    "listener.security.protocol.map": "Kafka's maps its CONTROLLER listener; Shoal's is static",
    "log.dirs": "machine-specific path; Shoal has one data directory (a STRING)",
    "log.dir": "Shoal has one data directory: log.dir is unset unless given",
    "max.connections": "Shoal's default is a named limit (limits.CONNECTIONS_MAX_DEFAULT)",
    "min.insync.replicas": "Kafka's storage format sets a cluster-wide value (ELR); one node",
    "sasl.enabled.mechanisms": "no GSSAPI; SASL mechanisms are read at start-up",
    "ssl.keystore.type": "PEM files only; TLS settings are read at start-up",
    "ssl.truststore.type": "PEM files only; TLS settings are read at start-up",
    **dict.fromkeys(
        (
            "ssl.cipher.suites",
            "ssl.client.auth",
            "ssl.enabled.protocols",
            "ssl.key.password",
            "ssl.keystore.certificate.chain",
            "ssl.keystore.key",
            "ssl.keystore.location",
            "ssl.truststore.certificates",
            "ssl.truststore.location",
        ),
        "TLS settings are read at start-up (files reloaded when they change), not dynamic",
    ),
    **dict.fromkeys(
        ("auto.create.topics.enable", "num.partitions"),
        "Shoal also changes topic auto-creation at run time (read_only false)",
    ),
    **dict.fromkeys(
        (
            "group.share.assignors",
            "group.share.delivery.count.limit",
            "group.share.heartbeat.interval.ms",
            "group.share.max.heartbeat.interval.ms",
            "group.share.max.record.lock.duration.ms",
            "group.share.max.session.timeout.ms",
            "group.share.max.share.sessions",
            "group.share.max.size",
            "group.share.min.heartbeat.interval.ms",
            "group.share.min.record.lock.duration.ms",
            "group.share.min.session.timeout.ms",
            "group.share.partition.max.record.locks",
            "group.share.record.lock.duration.ms",
            "group.share.session.timeout.ms",
        ),
        "Shoal also changes share-group settings at run time (read_only false)",
    ),
}
BROKER_SYNONYM_DIFFERENCES = {
    "node.id": "Shoal has a default node id (1); Kafka requires one",
    **dict.fromkeys(
        (
            "offsets.topic.replication.factor",
            "share.coordinator.state.topic.replication.factor",
            "share.coordinator.state.topic.min.isr",
        ),
        "Shoal's defaults are those of one node (1), Kafka's of three replicas",
    ),
}
TOPIC_DIFFERENCES = {"min.insync.replicas": BROKER_DIFFERENCES["min.insync.replicas"]}

# ---- keys Shoal has that Kafka 4.2 does not list, by reason
SHOAL_ONLY_BROKER = {
    **dict.fromkeys(
        (
            "group.share.min.delivery.count.limit",
            "group.share.max.delivery.count.limit",
            "group.share.min.partition.max.record.locks",
            "group.share.max.partition.max.record.locks",
            "group.share.assignment.interval.ms",
            "group.share.initialize.retry.interval.ms",
            "group.share.persister.class.name",
            "share.coordinator.cold.partition.snapshot.interval.ms",
            "share.version",
            "errors.deadletterqueue.topic.name.prefix",
        ),
        "share-group keys of later Kafka releases (KIP-932 follow-ups, KIP-1191)",
    ),
    **dict.fromkeys(
        ("super.users", "allow.everyone.if.no.acl.found"),
        "Kafka's authorizer reads these but DescribeConfigs does not list them",
    ),
    **dict.fromkeys(
        (
            "cluster.id",
            "log.level",
            "metrics.listener",
            "console.allow.writes",
            "console.inflight.max.records",
            "offsets.topic.prune.interval.ms",
            "offsets.topic.rewrite.window.records",
            "transaction.state.log.prune.interval.ms",
            "transaction.state.log.rewrite.window.records",
            "share.coordinator.state.topic.prune.interval.ms",
        ),
        "Shoal's own settings (README)",
    ),
}
SHOAL_ONLY_TOPIC = {"errors.deadletterqueue.group.enable": "KIP-1191 (a later Kafka)"}
SHOAL_ONLY_GROUP: dict[str, str] = {}
"""None: Shoal's extension group keys are listed only once a group sets them
(tests/differential/test_group_configs.py SHOAL_EXTENSIONS)."""


def _shoal_only_ok(name: str, listed: dict[str, str]) -> bool:
    return name in listed or name.startswith("shoal.")


@pytest.fixture(scope="module")
def shoal(
    kafka: kafka_reference.KafkaBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BrokerProcess]:
    """Shoal with the reference broker's static configuration (see the docstring)."""
    given = {k: v for k, v in kafka.properties().items() if k not in NOT_GIVEN_TO_SHOAL}
    given.pop("log.dirs")
    yield from running(
        tmp_path_factory.mktemp("shoal") / "data", *(f"{k}={v}" for k, v in given.items())
    )


# ---- observations


def describe(bootstrap: str, resource_type: int, name: str) -> dict[str, dict[str, Any]]:
    """Every config of one resource as a user sees it (synonyms and documentation
    included), by name; raises on an error."""
    request = DescribeConfigsRequest(
        resources=(
            DescribeConfigsResource(
                resource_type=i8(resource_type), resource_name=name, configuration_keys=None
            ),
        ),
        include_synonyms=True,
        include_documentation=True,
    )
    (result,) = call1(bootstrap, request).results
    assert result.error_code == ErrorCode.none, result
    return {
        c.name: {
            "entry": (c.value, int(c.config_source), c.read_only, c.is_sensitive, c.config_type),
            "synonyms": [(s.name, s.value, int(s.source)) for s in c.synonyms],
            "documented": c.documentation is not None,
        }
        for c in result.configs
    }


def settled(
    bootstrap: str, resource_type: int, name: str, expected: dict[str, str]
) -> dict[str, dict[str, Any]]:
    """`describe` once the resource shows the values just set: Kafka's broker applies
    a change when its metadata log reaches it (Shoal answers once it is applied)."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        described = describe(bootstrap, resource_type, name)
        shown = {k: described[k]["entry"][0] for k in expected if k in described}
        if shown == expected or time.monotonic() > deadline:
            return described
        time.sleep(0.1)


def _default_of(described: dict[str, Any]) -> str | None:
    """The value of a key's DEFAULT_CONFIG synonym (None if it has none)."""
    return next((v for _, v, source in described["synonyms"] if source == 5), None)


def _compare(
    kafka: dict[str, dict[str, Any]],
    shoal: dict[str, dict[str, Any]],
    *,
    differences: dict[str, str],
    synonym_differences: dict[str, str],
    shoal_only: dict[str, str],
) -> None:
    missing = sorted(set(kafka) - set(shoal) - HARNESS_ONLY)
    extra = sorted(n for n in set(shoal) - set(kafka) if not _shoal_only_ok(n, shoal_only))
    assert (missing, extra) == ([], []), "keys Kafka lists and Shoal not; unexplained extras"
    unequal = {
        name: (kafka[name]["entry"], shoal[name]["entry"])
        for name in kafka.keys() - HARNESS_ONLY
        if name not in differences and kafka[name]["entry"] != shoal[name]["entry"]
    }
    assert unequal == {}, "(Kafka's, Shoal's) (value, source, read_only, sensitive, type)"
    skip_synonyms = differences.keys() | synonym_differences.keys()
    synonyms = {
        name: (kafka[name]["synonyms"], shoal[name]["synonyms"])
        for name in kafka.keys() - HARNESS_ONLY
        if name not in skip_synonyms and kafka[name]["synonyms"] != shoal[name]["synonyms"]
    }
    assert synonyms == {}, "(Kafka's, Shoal's) synonyms"
    undocumented = sorted(
        n for n in kafka.keys() - HARNESS_ONLY if shoal[n]["documented"] != kafka[n]["documented"]
    )
    assert undocumented == []
    # the listed differences are real (a key that became equal leaves the list)
    same = sorted(n for n in differences if n in kafka and kafka[n]["entry"] == shoal[n]["entry"])
    assert same == [], "listed as different on purpose, but equal"


def test_describe_the_broker_lists_kafkas_keys_as_kafka_does(pair: Pair) -> None:
    kafka, shoal = pair.run(describe, BROKER, "1")
    _compare(
        kafka,
        shoal,
        differences=BROKER_DIFFERENCES,
        synonym_differences=BROKER_SYNONYM_DIFFERENCES,
        shoal_only=SHOAL_ONLY_BROKER,
    )
    # one Kafka key each Shoal lacked before, spot-checked by value
    assert shoal["background.threads"]["entry"] == ("10", 5, False, False, 3)
    assert (
        shoal["log.cleaner.io.max.bytes.per.second"] == kafka["log.cleaner.io.max.bytes.per.second"]
    )


def test_describe_a_topic_lists_kafkas_keys_as_kafka_does(pair: Pair) -> None:
    def scenario(bootstrap: str, name: str) -> dict[str, dict[str, Any]]:
        create_topic(bootstrap, name, configs={"retention.ms": "3600000"})
        return describe(bootstrap, TOPIC, name)

    kafka, shoal = pair.run(scenario, unique("cfg-describe"))
    _compare(
        kafka,
        shoal,
        differences=TOPIC_DIFFERENCES,
        synonym_differences={},
        shoal_only=SHOAL_ONLY_TOPIC,
    )
    assert shoal["message.timestamp.before.max.ms"]["entry"][0] == str(2**63 - 1)
    assert shoal["retention.ms"]["entry"][:2] == ("3600000", 1)


def test_describe_a_group_lists_kafkas_keys_as_kafka_does(pair: Pair) -> None:
    def scenario(bootstrap: str, group_id: str) -> tuple[Any, dict[str, dict[str, Any]]]:
        changed = incremental(
            bootstrap,
            (
                GROUP,
                group_id,
                [
                    ("consumer.session.timeout.ms", SET, "50000"),
                    ("consumer.heartbeat.interval.ms", SET, "6000"),
                    ("streams.num.standby.replicas", SET, "1"),
                    ("share.auto.offset.reset", SET, "earliest"),
                ],
            ),
        )
        expected = {"consumer.session.timeout.ms": "50000", "streams.num.standby.replicas": "1"}
        return changed, settled(bootstrap, GROUP, group_id, expected)

    (kafka_codes, kafka), (shoal_codes, shoal) = pair.run(scenario, unique("cfg-group"))
    assert kafka_codes == shoal_codes == [("none", None)]
    _compare(kafka, shoal, differences={}, synonym_differences={}, shoal_only=SHOAL_ONLY_GROUP)
    assert shoal["consumer.session.timeout.ms"]["entry"][:2] == ("50000", 8)


def test_a_groups_heartbeat_interval_reaches_its_members(pair: Pair) -> None:
    """consumer.heartbeat.interval.ms set on a group is the interval a joining
    ConsumerGroupHeartbeat member is told (and consumer.session.timeout.ms its session:
    tests/unit/group/test_consumer_group_configs.py)."""

    def scenario(bootstrap: str, topic: str, group: str) -> tuple[Any, ...]:
        create_topic(bootstrap, topic)
        ops = [("consumer.heartbeat.interval.ms", SET, "7000")]
        assert incremental(bootstrap, (GROUP, group, ops)) == [("none", None)]
        settled(bootstrap, GROUP, group, {"consumer.heartbeat.interval.ms": "7000"})
        request = ConsumerGroupHeartbeatRequest(
            group_id=group,
            member_id=str(uuid.uuid4()),
            member_epoch=i32(0),
            rebalance_timeout=datetime.timedelta(seconds=30),
            subscribed_topic_names=(topic,),
            topic_partitions=(),
        )
        deadline = time.monotonic() + TIMEOUT_S
        while True:  # Kafka creates and loads __consumer_offsets on FindCoordinator
            call1(bootstrap, FindCoordinatorRequest(key_type=i8(0), coordinator_keys=(group,)))
            response = call1(bootstrap, request)
            if response.error_code == ErrorCode.none or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        return response.error_code.name, response.heartbeat_interval

    kafka, shoal = pair.run(scenario, unique("cfg-hb"), unique("cfg-hb-group"))
    assert kafka == shoal == ("none", datetime.timedelta(milliseconds=7000))


def test_describe_a_client_metrics_resource_as_kafka(pair: Pair) -> None:
    def scenario(bootstrap: str, name: str) -> dict[str, dict[str, Any]]:
        ops = [("metrics", SET, "org.apache.kafka.producer."), ("match", SET, "client_id=a.*")]
        assert incremental(bootstrap, (CLIENT_METRICS, name, ops)) == [("none", None)]
        return settled(bootstrap, CLIENT_METRICS, name, {"match": "client_id=a.*"})

    kafka, shoal = pair.run(scenario, unique("cfg-metrics"))
    _compare(kafka, shoal, differences={}, synonym_differences={}, shoal_only={})
    assert shoal["metrics"]["entry"][:2] == ("org.apache.kafka.producer.", 7)


def test_describe_refusals_in_kafkas_words(pair: Pair) -> None:
    def scenario(bootstrap: str) -> list[tuple[str, str | None]]:
        resources = [
            (BROKER, "x"),
            (BROKER, "2"),
            (BROKER_LOGGER, "x"),
            (BROKER_LOGGER, "2"),
            (GROUP, ""),
            (CLIENT_METRICS, ""),
            (TOPIC, "cfg-describe-no-such-topic"),
        ]
        request = DescribeConfigsRequest(
            resources=tuple(
                DescribeConfigsResource(
                    resource_type=i8(t), resource_name=n, configuration_keys=None
                )
                for t, n in resources
            ),
            include_synonyms=False,
            include_documentation=False,
        )
        return [(r.error_code.name, r.error_message) for r in call1(bootstrap, request).results]

    kafka, shoal = pair.run(scenario)
    assert [code for code, _ in kafka] == [code for code, _ in shoal]
    assert kafka[:-1] == shoal[:-1]  # the unknown topic's message is worded apart


# ---- changes


def incremental(
    bootstrap: str, *resources: tuple[int, str, Sequence[tuple[str, int, str | None]]]
) -> list[tuple[str, str | None]]:
    """IncrementalAlterConfigs: each resource's (error name, message)."""
    request = IncrementalAlterConfigsRequest(
        resources=tuple(
            IncrementalResource(
                resource_type=i8(resource_type),
                resource_name=name,
                configs=tuple(
                    IncrementalConfig(name=k, config_operation=i8(op), value=v) for k, op, v in ops
                ),
            )
            for resource_type, name, ops in resources
        ),
        validate_only=False,
    )
    return [(r.error_code.name, r.error_message) for r in call1(bootstrap, request).responses]


def alter(
    bootstrap: str,
    *resources: tuple[int, str, Sequence[tuple[str, str | None]]],
    validate_only: bool = False,
) -> list[str]:
    """AlterConfigs: each resource's error name."""
    request = AlterConfigsRequest(
        resources=tuple(
            AlterConfigsResource(
                resource_type=i8(resource_type),
                resource_name=name,
                configs=tuple(AlterConfig(name=k, value=v) for k, v in configs),
            )
            for resource_type, name, configs in resources
        ),
        validate_only=validate_only,
    )
    return [r.error_code.name for r in call1(bootstrap, request).responses]


def _admin_alter(bootstrap: str, resource: ConfigResource) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    with pytest.deprecated_call():  # AlterConfigs (33): deprecated, yet still used
        futures = admin.alter_configs([resource])
    for future in futures.values():
        future.result(timeout=TIMEOUT_S)


def _admin_describe(bootstrap: str, resource: ConfigResource, *keys: str) -> dict[str, Any]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    (future,) = admin.describe_configs([resource]).values()
    configs = future.result(timeout=TIMEOUT_S)
    return {k: (configs[k].value, int(configs[k].source)) for k in keys}


def test_alter_configs_replaces_a_topics_configs(pair: Pair) -> None:
    """confluent-kafka's alter_configs (AlterConfigs): the second call's set replaces
    the first; retention.ms, not given again, goes back to its default."""

    def scenario(bootstrap: str, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
        create_topic(bootstrap, name)
        resource = ConfigResource(AdminResourceType.TOPIC, name)
        seen = []
        for given, expected in (
            ({"retention.ms": "3600000"}, "3600000"),
            ({"segment.ms": "7200000"}, "604800000"),
        ):
            _admin_alter(bootstrap, ConfigResource(AdminResourceType.TOPIC, name, set_config=given))
            deadline = time.monotonic() + TIMEOUT_S  # Kafka applies it a little later
            while True:
                shown = _admin_describe(bootstrap, resource, "retention.ms", "segment.ms")
                if shown["retention.ms"][0] == expected or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            seen.append(shown)
        return seen[0], seen[1]

    kafka, shoal = pair.run(scenario, unique("cfg-replace"))
    assert kafka == shoal
    first, second = shoal
    assert first == {"retention.ms": ("3600000", 1), "segment.ms": ("604800000", 5)}
    assert second == {"retention.ms": ("604800000", 5), "segment.ms": ("7200000", 1)}


def test_alter_configs_replaces_the_brokers_dynamic_configs(pair: Pair) -> None:
    """AlterConfigs on broker "1": the per-broker layer becomes the set given."""

    def scenario(bootstrap: str) -> list[Any]:
        keys = ("background.threads", "max.connections", "log.cleaner.threads")
        seen = []
        for configs in (
            [("background.threads", "12"), ("log.cleaner.threads", "2")],
            [("log.cleaner.threads", "3")],
            [],
        ):
            codes = alter(bootstrap, (BROKER, "1", configs))
            # Kafka's broker applies a change once its metadata log reaches it: wait
            # until the per-broker layer shows the keys given (Shoal: at once)
            deadline = time.monotonic() + TIMEOUT_S
            while True:
                described = describe(bootstrap, BROKER, "1")
                layer = {k: v["entry"][0] for k, v in described.items() if v["entry"][1] == 2}
                defaults_back = all(
                    described[k]["entry"][0] == _default_of(described[k])
                    for k in keys
                    if k not in dict(configs)
                )
                if (layer == dict(configs) and defaults_back) or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            seen.append((codes, {k: described[k]["entry"][:2] for k in keys}))
        return seen

    kafka, shoal = pair.run(scenario)
    max_connections = "max.connections"  # a different default on purpose (see above)
    for observations in (kafka, shoal):
        for _, values in observations:
            values.pop(max_connections)
    assert kafka == shoal
    assert shoal[1][1] == {"background.threads": ("10", 5), "log.cleaner.threads": ("3", 2)}


def test_kafka_python_alter_configs_works_as_against_kafka(pair: Pair) -> None:
    """kafka-python's non-incremental alter_configs (AlterConfigs, after it describes
    the topic to carry the keys already set, and checks the keys are dynamic)."""

    def scenario(bootstrap: str, name: str) -> dict[str, Any]:
        create_topic(bootstrap, name)
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
        try:
            for configs in ({"retention.ms": "3600000"}, {"segment.ms": "7200000"}):
                resource = KafkaConfigResource("TOPIC", name, configs=configs)
                admin.alter_configs([resource], incremental=False)
            return settled(
                bootstrap, TOPIC, name, {"retention.ms": "3600000", "segment.ms": "7200000"}
            )
        finally:
            admin.close()

    kafka, shoal = pair.run(scenario, unique("cfg-kafka-python"))
    keys = ("retention.ms", "segment.ms")
    assert {k: kafka[k]["entry"] for k in keys} == {k: shoal[k]["entry"] for k in keys}
    assert shoal["retention.ms"]["entry"][:2] == ("3600000", 1)


@pytest.mark.parametrize(
    "resources",
    [
        [(TOPIC, "cfg-ac-no-such-topic", [("retention.ms", "1")])],
        [(TOPIC, "{topic}", [("no.such.key", "1")])],
        [(TOPIC, "{topic}", [("retention.ms", "abc")])],
        [(TOPIC, "{topic}", [("retention.ms", None)])],
        [(TOPIC, "{topic}", [("remote.storage.enable", "true")])],
        [(TOPIC, "{topic}", [("preallocate", "true"), ("min.compaction.lag.ms", "5")])],
        [(BROKER, "1", [("log.retention.check.interval.ms", "5")])],
        [(BROKER, "2", [("max.connections", "100")])],
        [(BROKER, "x", [("max.connections", "100")])],
        [(BROKER, "1", [("shoal.test.custom.key", "1")])],
        [(GROUP, "", [("consumer.session.timeout.ms", "50000")])],
        [(GROUP, "{group}", [("consumer.session.timeout.ms", "50000")])],
        [(GROUP, "{group}", [("no.such.key", "1")])],
        [(BROKER_LOGGER, "1", [("root", "DEBUG")])],
        [(CLIENT_METRICS, "{group}", [("interval.ms", "1000"), ("metrics", "org.")])],
        [(CLIENT_METRICS, "{group}", [("interval.ms", "99")])],
        [(1, "x", [("a", "1")])],
    ],
    ids=lambda r: "-".join(f"{t}:{n}:{','.join(k for k, _ in c)}" for t, n, c in r),
)
def test_alter_configs_answers_each_resource_as_kafka(
    pair: Pair, resources: list[tuple[int, str, list[tuple[str, str | None]]]]
) -> None:
    def scenario(bootstrap: str, topic: str, group: str) -> tuple[list[str], list[str]]:
        create_topic(bootstrap, topic)
        named = [(t, n.format(topic=topic, group=group), c) for t, n, c in resources]
        checked = alter(bootstrap, *named, validate_only=True)
        return checked, alter(bootstrap, *named)

    kafka, shoal = pair.run(scenario, unique("cfg-ac"), unique("cfg-ac-group"))
    assert kafka == shoal


IAC_CASES: list[tuple[int, str, list[tuple[str, int, str | None]]]] = [
    (BROKER, "1", [("background.threads", SET, "12")]),
    (BROKER, "1", [("log.retention.check.interval.ms", SET, "1000")]),
    (BROKER, "1", [("node.id", SET, "2")]),
    (BROKER, "1", [("log.retention.hours", SET, "2")]),
    (BROKER, "1", [("message.max.bytes", SET, "-1")]),
    (BROKER, "1", [("max.connections", SET, "abc")]),
    (BROKER, "1", [("max.connections", SET, None)]),
    (BROKER, "1", [("background.threads", SET, "0")]),
    (BROKER, "1", [("compression.gzip.level", SET, "10")]),
    (BROKER, "1", [("shoal.test.custom.key", SET, "1")]),
    (BROKER, "", [("log.cleaner.threads", SET, "2")]),
    (BROKER, "", [("log.cleaner.threads", DELETE, None)]),
    (TOPIC, "{topic}", [("no.such", SET, "1")]),
    (TOPIC, "{topic}", [("preallocate", SET, "true")]),
    (TOPIC, "{topic}", [("message.timestamp.before.max.ms", SET, "3600000")]),
    (TOPIC, "{topic}", [("remote.storage.enable", SET, "true")]),
    (TOPIC, "{topic}", [("retention.ms", SET, "-5")]),
    (TOPIC, "{topic}", [("retention.ms", APPEND, "5")]),
    (TOPIC, "{topic}", [("min.compaction.lag.ms", SET, "-1")]),
    (TOPIC, "{topic}", [("local.retention.ms", SET, "-2")]),
    (TOPIC, "cfg-iac-no-such-topic", [("retention.ms", SET, "1")]),
    (GROUP, "{group}", [("consumer.session.timeout.ms", SET, "1000")]),
    (GROUP, "{group}", [("consumer.heartbeat.interval.ms", SET, "60000")]),
    (GROUP, "{group}", [("consumer.session.timeout.ms", SET, "abc")]),
    (GROUP, "{group}", [("streams.num.standby.replicas", SET, "1")]),
    (GROUP, "{group}", [("streams.num.standby.replicas", SET, "3")]),
    (GROUP, "{group}", [("streams.session.timeout.ms", SET, "1000")]),
    (GROUP, "{group}", [("streams.initial.rebalance.delay.ms", SET, "-1")]),
    (GROUP, "{group}", [("no.such", SET, "1")]),
    (GROUP, "{group}", [("no.such", DELETE, None)]),
    (TOPIC, "{topic}", [("no.such", DELETE, None)]),
    (CLIENT_METRICS, "{group}", [("no.such", DELETE, None)]),
    (GROUP, "", [("consumer.session.timeout.ms", SET, "50000")]),
    (CLIENT_METRICS, "{group}", [("interval.ms", SET, "50")]),
    (CLIENT_METRICS, "{group}", [("interval.ms", SET, "abc")]),
    (CLIENT_METRICS, "{group}", [("match", SET, "client_id=abc.*"), ("metrics", SET, "org.")]),
    (CLIENT_METRICS, "{group}", [("match", SET, "bogus=1")]),
    (CLIENT_METRICS, "{group}", [("metrics", APPEND, "org.")]),
    (CLIENT_METRICS, "{group}", [("no.such", SET, "1")]),
    (CLIENT_METRICS, "", [("interval.ms", SET, "1000")]),
    (1, "x", [("a", SET, "1")]),
]


@pytest.mark.parametrize(
    "case", IAC_CASES, ids=lambda c: f"{c[0]}:{c[1]}:{','.join(f'{k}{o}' for k, o, _ in c[2])}"
)
def test_incremental_alter_configs_answers_as_kafka(
    pair: Pair, case: tuple[int, str, list[tuple[str, int, str | None]]]
) -> None:
    """Every Kafka key accepted (or refused) as Kafka does, with Kafka's error code;
    messages are compared only where Shoal words them as Kafka."""

    def scenario(bootstrap: str, topic: str, group: str) -> list[str]:
        create_topic(bootstrap, topic)
        resource_type, name, ops = case
        answers = incremental(
            bootstrap, (resource_type, name.format(topic=topic, group=group), ops)
        )
        return [code for code, _ in answers]

    kafka, shoal = pair.run(scenario, unique("cfg-iac"), unique("cfg-iac-group"))
    assert kafka == shoal


@pytest.mark.parametrize(
    "configs",
    [{"remote.storage.enable": "true"}, {"preallocate": "true"}, {"min.compaction.lag.ms": "-1"}],
)
def test_create_topics_takes_kafkas_topic_keys(pair: Pair, configs: dict[str, str]) -> None:
    def scenario(bootstrap: str, name: str) -> str:
        request = CreateTopicsRequest(
            topics=(
                CreatableTopic(
                    name=name,
                    num_partitions=i32(1),
                    replication_factor=i16(1),
                    assignments=(),
                    configs=tuple(
                        CreatableTopicConfig(name=k, value=v) for k, v in configs.items()
                    ),
                ),
            ),
            timeout=datetime.timedelta(seconds=TIMEOUT_S),
            validate_only=False,
        )
        (topic,) = call1(bootstrap, request).topics
        return str(topic.error_code.name)

    kafka, shoal = pair.run(scenario, unique("cfg-create"))
    assert kafka == shoal


def test_refusal_messages_in_kafkas_words(pair: Pair) -> None:
    def scenario(bootstrap: str, topic: str, group: str) -> list[tuple[str, str | None]]:
        create_topic(bootstrap, topic)
        return incremental(
            bootstrap,
            (BROKER, "1", [("log.retention.check.interval.ms", SET, "1000")]),
            (TOPIC, topic, [("no.such", SET, "1")]),
            (TOPIC, "cfg-msg-no-such-topic", [("retention.ms", SET, "1")]),
            (GROUP, group, [("consumer.session.timeout.ms", SET, "1000")]),
            (GROUP, group + "-b", [("no.such", SET, "1")]),
            (GROUP, "", [("consumer.session.timeout.ms", SET, "50000")]),
            (BROKER, "2", [("max.connections", SET, "100")]),
            (BROKER, "x", [("max.connections", SET, "100")]),
        )

    kafka, shoal = pair.run(scenario, unique("cfg-msg"), unique("cfg-msg-group"))
    assert kafka == shoal


# ---- ListConfigResources


def list_resources(
    bootstrap: str, version: int, types: Sequence[int], mine: Sequence[str]
) -> tuple[str, list[tuple[int, str]]]:
    """(error, the resources listed of this scenario's names and of the broker)."""
    if version == 0:
        response = call1(bootstrap, ListConfigResourcesV0())
        listed = [(CLIENT_METRICS, r.resource_name) for r in response.config_resources]
    else:
        request = ListConfigResourcesV1(resource_types=tuple(i8(t) for t in types))
        response = call1(bootstrap, request)
        listed = [(int(r.resource_type), r.resource_name) for r in response.config_resources]
    kept = [(t, n) for t, n in listed if n in mine or t == BROKER]
    return response.error_code.name, sorted(kept)


@pytest.mark.parametrize(
    ("version", "types"),
    [(0, ()), (1, ()), (1, (TOPIC,)), (1, (BROKER, GROUP)), (1, (1,)), (1, (TOPIC, 64))],
)
def test_list_config_resources_as_kafka(pair: Pair, version: int, types: tuple[int, ...]) -> None:
    def scenario(bootstrap: str, topic: str, group: str, bare: str, metrics: str) -> Any:
        create_topic(bootstrap, topic)
        configured = incremental(
            bootstrap,
            (GROUP, group, [("share.auto.offset.reset", SET, "earliest")]),
            (CLIENT_METRICS, metrics, [("interval.ms", SET, "60000")]),
        )
        assert configured == [("none", None)] * 2
        settled(bootstrap, GROUP, group, {"share.auto.offset.reset": "earliest"})
        settled(bootstrap, CLIENT_METRICS, metrics, {"interval.ms": "60000"})
        return list_resources(bootstrap, version, types, (topic, group, bare, metrics))

    names = (
        unique("cfg-list"),
        unique("cfg-list-group"),
        unique("cfg-list-bare"),
        unique("cfg-list-metrics"),
    )
    kafka, shoal = pair.run(scenario, *names)
    assert kafka == shoal
    topic, group, _, metrics = names
    if version == 1 and not types:
        expected = [(TOPIC, topic), (BROKER, "1"), (CLIENT_METRICS, metrics), (GROUP, group)]
        assert shoal == ("none", expected)
    if version == 0:
        assert shoal == ("none", [(CLIENT_METRICS, metrics)])


def test_list_config_resources_lists_this_node_as_broker_logger(pair: Pair) -> None:
    def scenario(bootstrap: str) -> list[tuple[int, str]]:
        response = call1(bootstrap, ListConfigResourcesV1(resource_types=(i8(BROKER_LOGGER),)))
        return [(int(r.resource_type), r.resource_name) for r in response.config_resources]

    kafka, shoal = pair.run(scenario)
    assert kafka == shoal == [(BROKER_LOGGER, "1")]


# ---- broker loggers


def test_broker_loggers_are_described_and_changed_as_kafka(pair: Pair) -> None:
    """BROKER_LOGGER "1": every logger (Kafka's are log4j's, Shoal's Python's, so only
    root is compared by name) shown alike; SET and DELETE of levels, and the refusals."""

    def scenario(bootstrap: str) -> dict[str, Any]:
        before = describe(bootstrap, BROKER_LOGGER, "1")
        shapes = {(*v["entry"][1:], v["documented"], v["synonyms"] == []) for v in before.values()}
        levels = {v["entry"][0] for v in before.values()}
        answers = [
            incremental(bootstrap, (BROKER_LOGGER, "1", [("root", SET, level)]))
            for level in ("DEBUG", "BOGUS", "debug")
        ]
        debug = describe(bootstrap, BROKER_LOGGER, "1")["root"]["entry"][0]
        answers += [
            incremental(bootstrap, (BROKER_LOGGER, name, ops))
            for name, ops in (
                ("1", [("root", DELETE, None)]),
                ("1", [("root", APPEND, "INFO")]),
                ("1", [("no.such.logger", SET, "DEBUG")]),
                ("2", [("root", SET, "INFO")]),
                ("x", [("root", SET, "INFO")]),
                ("1", [("root", SET, "INFO")]),
            )
        ]
        after = describe(bootstrap, BROKER_LOGGER, "1")["root"]["entry"][0]
        return {
            "root": before["root"]["entry"],
            "shapes": shapes,
            "levels": levels <= {"TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF"},
            "answers": [[code for code, _ in a] for a in answers],
            "messages": [a[0][1] for a in answers[1:]],
            "debug": debug,
            "after": after,
        }

    kafka, shoal = pair.run(scenario)
    assert kafka == shoal
    assert shoal["root"] == ("INFO", 6, False, False, 0)
    assert shoal["shapes"] == {(6, False, False, 0, True, True)}


# ---- static settings


STATIC = (
    "log.retention.hours=24",
    "log.retention.bytes=123456",
    "log.cleaner.threads=2",
    "background.threads=4",
    "group.consumer.session.timeout.ms=50000",
)
"""Static settings of a second pair of brokers: Kafka keys Shoal applies and keys it
only stores, a key with several spellings (log.retention.hours) and a group default."""


def test_static_settings_show_as_kafka_shows_them(
    kafka: kafka_reference.KafkaBroker, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Values, sources and synonyms of statically set keys, on the broker, a topic that
    falls back to them and a group, as Kafka shows them."""
    broker_keys = (
        "log.retention.ms",
        "log.retention.hours",
        "log.retention.bytes",
        "log.cleaner.threads",
        "background.threads",
        "group.consumer.session.timeout.ms",
    )
    topic_keys = ("retention.ms", "retention.bytes")
    group_keys = ("consumer.session.timeout.ms",)

    def scenario(bootstrap: str, topic: str, group: str) -> dict[str, Any]:
        create_topic(bootstrap, topic)
        seen: dict[str, Any] = {}
        for resource_type, name, keys in (
            (BROKER, "1", broker_keys),
            (TOPIC, topic, topic_keys),
            (GROUP, group, group_keys),
        ):
            described = describe(bootstrap, resource_type, name)
            seen |= {f"{resource_type}/{k}": (described[k]["entry"], described[k]["synonyms"])
                     for k in keys}  # fmt: skip
        return seen

    base = tmp_path_factory.mktemp("static")
    names = (unique("cfg-static"), unique("cfg-static-group"))
    with kafka_reference.running(base / "kafka", *STATIC) as reference:
        kafka_seen = scenario(reference.bootstrap, *names)
    overrides = [f"{k}={v}" for k, v in kafka.properties().items() if k not in NOT_GIVEN_TO_SHOAL]
    shoal_brokers = running(base / "shoal", *[o for o in overrides if not o.startswith("log.dirs")],
                            *STATIC)  # fmt: skip
    shoal = next(shoal_brokers)
    try:
        shoal_seen = scenario(shoal.bootstrap, *names)
    finally:
        shoal_brokers.close()
    assert kafka_seen == shoal_seen
    # log.retention.hours gives the value; only log.retention.ms would be a synonym
    assert shoal_seen[f"{TOPIC}/retention.ms"] == ((str(24 * 3_600_000), 5, False, False, 5), [])
    assert shoal_seen[f"{BROKER}/log.retention.ms"][0][:2] == (None, 5)


def test_the_cluster_wide_resource_shows_its_own_settings(pair: Pair) -> None:
    """Broker "" (`--entity-default`): only the cluster-wide dynamic settings, each with
    its DYNAMIC_DEFAULT_BROKER_CONFIG synonym; Kafka's own cluster-wide
    min.insync.replicas (written by its storage format, see above) left aside."""

    def scenario(bootstrap: str) -> dict[str, Any]:
        changed = incremental(bootstrap, (BROKER, "", [("log.cleaner.backoff.ms", SET, "20000")]))
        assert changed == [("none", None)]
        shown = settled(bootstrap, BROKER, "", {"log.cleaner.backoff.ms": "20000"})
        shown.pop("min.insync.replicas", None)
        node = settled(bootstrap, BROKER, "1", {"log.cleaner.backoff.ms": "20000"})
        removed = incremental(bootstrap, (BROKER, "", [("log.cleaner.backoff.ms", DELETE, None)]))
        assert removed == [("none", None)]
        return {"cluster": shown, "node": node["log.cleaner.backoff.ms"]}

    kafka, shoal = pair.run(scenario)
    assert kafka == shoal
    assert shoal["node"]["entry"][:2] == ("20000", 3)
