"""AlterConfigs (33) v0-v2 and ListConfigResources (74) v0-v1 on the wire
(docs/reference/configs.md): AlterConfigs replaces a resource's own configs (topic overrides, the
broker's dynamic layer, a group's overrides, a client metrics subscription) through
IncrementalAlterConfigs' change path, durably; ListConfigResources lists topics, this
broker, client metrics subscriptions and configured groups."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from shoal.protocol.schema import request_schema
from tests.support.broker import BrokerProcess
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
TOPIC_CONFIG, DYNAMIC_BROKER, DYNAMIC_DEFAULT, DEFAULT = 1, 2, 3, 5
CLIENT_METRICS_CONFIG, GROUP_CONFIG = 7, 8


def alter(
    bootstrap: str,
    *resources: tuple[int, str, Sequence[tuple[str, str | None]]],
    version: int = 2,
    validate_only: bool = False,
) -> list[Any]:
    schema = request_schema(33, version)
    request = schema.make(
        "AlterConfigsRequest",
        resources=tuple(
            schema.make(
                "AlterConfigsResource",
                resource_type=resource_type,
                resource_name=name,
                configs=tuple(schema.make("AlterableConfig", name=k, value=v) for k, v in configs),
            )
            for resource_type, name, configs in resources
        ),
        validate_only=validate_only,
    )
    return list(call1(bootstrap, request).responses)


def codes(responses: list[Any]) -> list[ErrorCode]:
    return [r.error_code for r in responses]


def described(bootstrap: str, resource_type: int, name: str) -> dict[str, tuple[str | None, int]]:
    schema = request_schema(32, 4)
    request = schema.make(
        "DescribeConfigsRequest",
        resources=(
            schema.make(
                "DescribeConfigsResource",
                resource_type=resource_type,
                resource_name=name,
                configuration_keys=None,
            ),
        ),
        include_synonyms=False,
        include_documentation=False,
    )
    (result,) = call1(bootstrap, request).results
    assert result.error_code == ErrorCode.none, result
    return {c.name: (c.value, c.config_source) for c in result.configs}


@pytest.mark.parametrize("version", [0, 1, 2])
def test_a_topics_configs_are_replaced(broker: BrokerProcess, version: int) -> None:
    name = topic_name("ac-topic")
    create_topic(broker.bootstrap, name, configs={"retention.ms": "3600000"})
    responses = alter(broker.bootstrap, (TOPIC, name, [("segment.ms", "7200000")]), version=version)
    assert [(r.error_code, r.resource_type, r.resource_name) for r in responses] == [
        (ErrorCode.none, TOPIC, name)
    ]
    configs = described(broker.bootstrap, TOPIC, name)
    assert configs["segment.ms"] == ("7200000", TOPIC_CONFIG)
    assert configs["retention.ms"] == ("604800000", DEFAULT)  # not given: back to default
    assert codes(alter(broker.bootstrap, (TOPIC, name, []))) == [ErrorCode.none]
    assert described(broker.bootstrap, TOPIC, name)["segment.ms"] == ("604800000", DEFAULT)


def test_validate_only_and_refusals_change_nothing(broker: BrokerProcess) -> None:
    name = topic_name("ac-refused")
    create_topic(broker.bootstrap, name, configs={"retention.ms": "3600000"})
    before = described(broker.bootstrap, TOPIC, name)
    checked = alter(
        broker.bootstrap, (TOPIC, name, [("segment.ms", "7200000")]), validate_only=True
    )
    assert codes(checked) == [ErrorCode.none]
    cases = [
        ([("retention.ms", "abc")], ErrorCode.invalid_config),
        ([("no.such.key", "1")], ErrorCode.invalid_config),
        ([("retention.ms", None)], ErrorCode.invalid_request),
        ([("segment.ms", "1"), ("segment.ms", "2")], ErrorCode.invalid_request),
    ]
    for configs, code in cases:
        assert codes(alter(broker.bootstrap, (TOPIC, name, configs))) == [code], configs
    assert described(broker.bootstrap, TOPIC, name) == before


def test_resources_are_answered_one_by_one(broker: BrokerProcess) -> None:
    group = topic_name("ac-group")
    responses = alter(
        broker.bootstrap,
        (TOPIC, "ac-no-such-topic", [("retention.ms", "1")]),
        (BROKER, "2", [("max.connections", "10")]),
        (BROKER, "1", [("log.retention.check.interval.ms", "5")]),
        (BROKER_LOGGER, "1", [("root", "DEBUG")]),
        (GROUP, "", [("share.auto.offset.reset", "earliest")]),
        (GROUP, group, [("share.auto.offset.reset", "earliest")]),
    )
    assert codes(responses) == [
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.invalid_request,
        ErrorCode.invalid_request,
        ErrorCode.invalid_request,
        ErrorCode.invalid_request,
        ErrorCode.none,
    ]
    assert "Cannot update these configs dynamically" in responses[2].error_message
    assert described(broker.bootstrap, GROUP, group)["share.auto.offset.reset"] == (
        "earliest",
        GROUP_CONFIG,
    )


def test_the_brokers_layers_are_replaced_and_survive_a_crash(fresh_broker: BrokerProcess) -> None:
    bootstrap = fresh_broker.bootstrap
    first = alter(
        bootstrap, (BROKER, "1", [("log.retention.ms", "7200000"), ("background.threads", "4")])
    )
    assert codes(first) == [ErrorCode.none]
    assert codes(alter(bootstrap, (BROKER, "", [("log.retention.bytes", "1000")]))) == [
        ErrorCode.none
    ]
    assert codes(alter(bootstrap, (BROKER, "1", [("background.threads", "6")]))) == [ErrorCode.none]

    def check() -> None:
        configs = described(bootstrap, BROKER, "1")
        assert configs["background.threads"] == ("6", DYNAMIC_BROKER)
        assert configs["log.retention.ms"] == (None, DEFAULT)  # replaced away
        assert configs["log.retention.bytes"] == ("1000", DYNAMIC_DEFAULT)

    check()
    fresh_broker.restart()  # SIGKILL, then start on the same data directory
    check()


def test_a_groups_configs_are_replaced(broker: BrokerProcess) -> None:
    group = topic_name("ac-group-replace")
    set_first = [("consumer.session.timeout.ms", "50000"), ("share.auto.offset.reset", "earliest")]
    assert codes(alter(broker.bootstrap, (GROUP, group, set_first))) == [ErrorCode.none]
    set_then = [("share.isolation.level", "read_committed")]
    assert codes(alter(broker.bootstrap, (GROUP, group, set_then))) == [ErrorCode.none]
    configs = described(broker.bootstrap, GROUP, group)
    assert configs["share.isolation.level"] == ("read_committed", GROUP_CONFIG)
    assert configs["consumer.session.timeout.ms"] == ("45000", DEFAULT)
    assert configs["share.auto.offset.reset"] == ("latest", DEFAULT)


# ---- ListConfigResources


def list_resources(bootstrap: str, version: int, types: Sequence[int] = ()) -> Any:
    schema = request_schema(74, version)
    values = {"resource_types": tuple(types)} if version >= 1 else {}
    return call1(bootstrap, schema.make("ListConfigResourcesRequest", **values))


def test_list_config_resources(broker: BrokerProcess) -> None:
    topic, group, bare = topic_name("lcr"), topic_name("lcr-group"), topic_name("lcr-bare")
    create_topic(broker.bootstrap, topic)
    configured = alter(broker.bootstrap, (GROUP, group, [("share.auto.offset.reset", "earliest")]))
    assert codes(configured) == [ErrorCode.none]
    everything = list_resources(broker.bootstrap, 1)
    assert everything.error_code == ErrorCode.none
    listed = {(int(r.resource_type), r.resource_name) for r in everything.config_resources}
    assert {(TOPIC, topic), (BROKER, "1"), (GROUP, group)} <= listed
    assert (GROUP, bare) not in listed and (TOPIC, bare) not in listed
    groups = list_resources(broker.bootstrap, 1, [GROUP])
    assert {int(r.resource_type) for r in groups.config_resources} == {GROUP}
    loggers = list_resources(broker.bootstrap, 1, [BROKER_LOGGER]).config_resources
    assert [(int(r.resource_type), r.resource_name) for r in loggers] == [(BROKER_LOGGER, "1")]
    unknown = list_resources(broker.bootstrap, 1, [TOPIC, 3])
    assert (unknown.error_code, unknown.config_resources) == (ErrorCode.unsupported_version, ())
    client_metrics = list_resources(broker.bootstrap, 0)
    assert client_metrics.error_code == ErrorCode.none


def test_client_metrics_resources_are_kept_across_a_crash(fresh_broker: BrokerProcess) -> None:
    """CLIENT_METRICS subscriptions (KIP-714) are stored, described and listed as Kafka
    does, durably; setting nothing removes one."""
    bootstrap = fresh_broker.bootstrap
    name = "ac-metrics"
    given = [("interval.ms", "60000"), ("metrics", "org.apache.kafka.producer.")]
    assert codes(alter(bootstrap, (CLIENT_METRICS, name, given))) == [ErrorCode.none]
    refused = alter(bootstrap, (CLIENT_METRICS, name, [("interval.ms", "99")]))
    assert codes(refused) == [ErrorCode.invalid_request]

    def check() -> None:
        configs = described(bootstrap, CLIENT_METRICS, name)
        assert configs == {
            "interval.ms": ("60000", CLIENT_METRICS_CONFIG),
            "match": ("", DEFAULT),
            "metrics": ("org.apache.kafka.producer.", CLIENT_METRICS_CONFIG),
        }
        (listed,) = list_resources(bootstrap, 0).config_resources
        assert listed.resource_name == name

    check()
    fresh_broker.restart()
    check()
    assert codes(alter(bootstrap, (CLIENT_METRICS, name, []))) == [ErrorCode.none]
    assert list_resources(bootstrap, 0).config_resources == ()
