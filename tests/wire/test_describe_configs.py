"""DescribeConfigs (32) v1-v4: topic and broker configs with sources and synonyms
(share-group configs: test_group_configs.py)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.config import BROKER_KEYS, TOPIC_KEYS, ConfigType
from shoal.protocol.schema import request_schema
from shoal.server.metadata.config_resources import LISTED_ONLY_WHEN_SET
from tests.support.broker import BrokerProcess, running
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1

TOPIC, BROKER, GROUP = 2, 4, 32
TOPIC_CONFIG, STATIC_BROKER, DEFAULT = 1, 4, 5


def describe(
    bootstrap: str,
    version: int,
    *resources: tuple[int, str, Sequence[str] | None],
    synonyms: bool = False,
    documentation: bool = False,
) -> list[Any]:
    schema = request_schema(32, version)
    request = schema.make(
        "DescribeConfigsRequest",
        resources=tuple(
            schema.make(
                "DescribeConfigsResource",
                resource_type=resource_type,
                resource_name=name,
                configuration_keys=None if keys is None else tuple(keys),
            )
            for resource_type, name, keys in resources
        ),
        include_synonyms=synonyms,
        include_documentation=documentation,
    )
    return list(call1(bootstrap, request).results)


def configs_of(result: Any) -> dict[str, Any]:
    assert result.error_code == ErrorCode.none, result
    return {c.name: c for c in result.configs}


@pytest.fixture(scope="module")
def static_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker with a static log.retention.bytes and log.retention.hours."""
    yield from running(
        tmp_path_factory.mktemp("static") / "data",
        "log.retention.bytes=123456",
        "log.retention.hours=24",
    )


@pytest.mark.parametrize("version", [1, 4])
def test_topic_defaults_and_overrides(broker: BrokerProcess, version: int) -> None:
    name = topic_name("dc")
    create_topic(broker.bootstrap, name, configs={"retention.ms": "3600000"})
    (result,) = describe(broker.bootstrap, version, (TOPIC, name, None))
    assert (result.resource_type, result.resource_name) == (TOPIC, name)
    configs = configs_of(result)
    assert set(configs) == set(TOPIC_KEYS)
    retention = configs["retention.ms"]
    assert (retention.value, retention.config_source, retention.read_only) == (
        "3600000",
        TOPIC_CONFIG,
        False,
    )
    segment = configs["segment.bytes"]
    assert (segment.value, segment.config_source) == ("1073741824", DEFAULT)
    assert configs["cleanup.policy"].value == "delete"
    assert all(c.synonyms == () for c in configs.values())
    assert not any(c.is_sensitive for c in configs.values())
    if version >= 3:
        assert retention.config_type == ConfigType.LONG
        assert configs["cleanup.policy"].config_type == ConfigType.LIST
        assert retention.documentation is None


def test_synonyms_and_documentation(broker: BrokerProcess) -> None:
    name = topic_name("dc-syn")
    create_topic(broker.bootstrap, name, configs={"retention.ms": "3600000"})
    (result,) = describe(
        broker.bootstrap, 4, (TOPIC, name, ["retention.ms", "segment.bytes", "no.such.key"]),
        synonyms=True, documentation=True,
    )  # fmt: skip
    configs = configs_of(result)
    assert set(configs) == {"retention.ms", "segment.bytes"}  # unknown keys are left out
    retention = [(s.name, s.value, s.source) for s in configs["retention.ms"].synonyms]
    # as Kafka: log.retention.ms has no default (log.retention.hours gives the value),
    # and defaults count only for a synonym's own spelling
    assert retention == [("retention.ms", "3600000", TOPIC_CONFIG)]
    segment = [(s.name, s.value, s.source) for s in configs["segment.bytes"].synonyms]
    assert segment == [("log.segment.bytes", "1073741824", DEFAULT)]
    assert configs["retention.ms"].documentation == TOPIC_KEYS["retention.ms"].doc


def test_static_broker_values_show_as_static(static_broker: BrokerProcess) -> None:
    name = topic_name("dc-static")
    create_topic(static_broker.bootstrap, name)
    (result,) = describe(static_broker.bootstrap, 2, (TOPIC, name, None), synonyms=True)
    configs = configs_of(result)
    size = configs["retention.bytes"]
    assert (size.value, size.config_source) == ("123456", STATIC_BROKER)
    assert [(s.name, s.source) for s in size.synonyms] == [
        ("log.retention.bytes", STATIC_BROKER),
        ("log.retention.bytes", DEFAULT),
    ]
    time = configs["retention.ms"]
    # as Kafka 4.2: log.retention.hours gives the value but is no synonym of retention.ms
    assert (time.value, time.config_source, time.synonyms) == (str(24 * 3_600_000), DEFAULT, ())
    (node,) = describe(
        static_broker.bootstrap, 1, (BROKER, "1", ["log.retention.ms", "log.retention.hours"])
    )
    broker_configs = configs_of(node)
    assert broker_configs["log.retention.ms"].value is None  # unset, as Kafka shows it
    assert broker_configs["log.retention.hours"].value == "24"


@pytest.mark.parametrize("version", [1, 4])
def test_broker_resource(broker: BrokerProcess, version: int) -> None:
    (result,) = describe(broker.bootstrap, version, (BROKER, "1", None), synonyms=True)
    assert (result.resource_type, result.resource_name) == (BROKER, "1")
    configs = configs_of(result)
    assert set(configs) == set(BROKER_KEYS) - LISTED_ONLY_WHEN_SET  # as Kafka lists them
    node_id = configs["node.id"]
    assert (node_id.value, node_id.read_only) == ("1", True)
    listeners = configs["listeners"]
    assert listeners.config_source == STATIC_BROKER  # set by `shoal serve --port`
    assert listeners.value == "PLAINTEXT://127.0.0.1:0"
    retention = configs["log.retention.ms"]
    assert (retention.value, retention.config_source, retention.read_only) == (
        None,  # Kafka's log.retention.ms is null unless set: log.retention.hours applies
        DEFAULT,
        False,
    )
    assert configs["log.retention.check.interval.ms"].read_only is True
    assert configs["log.retention.minutes"].value is None
    if version >= 3:
        assert configs["auto.create.topics.enable"].config_type == ConfigType.BOOLEAN


def test_cluster_default_resource_is_empty_until_set(broker: BrokerProcess) -> None:
    (result,) = describe(broker.bootstrap, 4, (BROKER, "", None))
    assert result.error_code == ErrorCode.none
    assert result.configs == ()


@pytest.mark.parametrize(
    ("resource", "code"),
    [
        ((TOPIC, "dc-no-such-topic", None), ErrorCode.unknown_topic_or_partition),
        ((BROKER, "2", None), ErrorCode.invalid_request),
        ((BROKER, "one", None), ErrorCode.invalid_request),
        ((GROUP, "", None), ErrorCode.invalid_request),
        ((99, "x", None), ErrorCode.invalid_request),
    ],
)
def test_refusals(
    broker: BrokerProcess, resource: tuple[int, str, Sequence[str] | None], code: ErrorCode
) -> None:
    ok_topic = topic_name("dc-ok")
    create_topic(broker.bootstrap, ok_topic)
    refused, ok = describe(broker.bootstrap, 4, resource, (TOPIC, ok_topic, ["retention.ms"]))
    assert refused.error_code == code
    assert refused.error_message
    assert refused.configs == ()
    assert (refused.resource_type, refused.resource_name) == resource[:2]
    assert ok.error_code == ErrorCode.none  # one refused resource does not spoil the others
