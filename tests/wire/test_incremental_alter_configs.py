"""IncrementalAlterConfigs (44) v0-v1: topic and broker configs, validation, persistence
(share-group configs: test_group_configs.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from kio.schema.describe_configs.v4.request import DescribeConfigsRequest, DescribeConfigsResource
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

from shoal.protocol.schema import request_schema
from tests.support.broker import BrokerProcess
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call, call1

TOPIC, BROKER, GROUP = 2, 4, 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
TOPIC_CONFIG, DYNAMIC_BROKER, DYNAMIC_DEFAULT, DEFAULT = 1, 2, 3, 5

Op = tuple[str, int, str | None]


def alter(
    bootstrap: str,
    version: int,
    *resources: tuple[int, str, Sequence[Op]],
    validate_only: bool = False,
) -> list[Any]:
    schema = request_schema(44, version)
    request = schema.make(
        "IncrementalAlterConfigsRequest",
        resources=tuple(
            schema.make(
                "AlterConfigsResource",
                resource_type=resource_type,
                resource_name=name,
                configs=tuple(
                    schema.make("AlterableConfig", name=k, config_operation=op, value=v)
                    for k, op, v in ops
                ),
            )
            for resource_type, name, ops in resources
        ),
        validate_only=validate_only,
    )
    return list(call1(bootstrap, request).responses)


def alter_one(bootstrap: str, resource_type: int, name: str, *ops: Op, **kw: Any) -> Any:
    (result,) = alter(bootstrap, 1, (resource_type, name, ops), **kw)
    assert (result.resource_type, result.resource_name) == (resource_type, name)
    return result


def described(bootstrap: str, resource_type: int, name: str) -> dict[str, tuple[str | None, int]]:
    response = call1(
        bootstrap,
        DescribeConfigsRequest(
            resources=(
                DescribeConfigsResource(
                    resource_type=resource_type, resource_name=name, configuration_keys=None
                ),
            ),
            include_synonyms=False,
            include_documentation=False,
        ),
    )
    (result,) = response.results
    assert result.error_code == ErrorCode.none, result
    return {c.name: (c.value, c.config_source) for c in result.configs}


@pytest.mark.parametrize("version", [0, 1])
def test_topic_set_and_delete(broker: BrokerProcess, version: int) -> None:
    name = topic_name("iac")
    create_topic(broker.bootstrap, name, configs={"segment.bytes": "1048576"})
    (result,) = alter(broker.bootstrap, version, (TOPIC, name, [("retention.ms", SET, "60000")]))
    assert (result.error_code, result.error_message) == (ErrorCode.none, None)
    configs = described(broker.bootstrap, TOPIC, name)
    assert configs["retention.ms"] == ("60000", TOPIC_CONFIG)
    assert configs["segment.bytes"] == ("1048576", TOPIC_CONFIG)  # untouched keys stay
    result = alter_one(broker.bootstrap, TOPIC, name, ("retention.ms", DELETE, None))
    assert result.error_code == ErrorCode.none
    configs = described(broker.bootstrap, TOPIC, name)
    assert configs["retention.ms"] == ("604800000", DEFAULT)
    assert configs["segment.bytes"] == ("1048576", TOPIC_CONFIG)
    deleted_again = alter_one(broker.bootstrap, TOPIC, name, ("retention.ms", DELETE, None))
    assert deleted_again.error_code == ErrorCode.none


def test_topic_append_and_subtract(broker: BrokerProcess) -> None:
    name = topic_name("iac-list")
    create_topic(broker.bootstrap, name)
    appended = alter_one(broker.bootstrap, TOPIC, name, ("cleanup.policy", APPEND, "delete"))
    assert appended.error_code == ErrorCode.none
    assert described(broker.bootstrap, TOPIC, name)["cleanup.policy"] == ("delete", TOPIC_CONFIG)
    subtracted = alter_one(broker.bootstrap, TOPIC, name, ("cleanup.policy", SUBTRACT, "delete"))
    assert subtracted.error_code == ErrorCode.none
    assert described(broker.bootstrap, TOPIC, name)["cleanup.policy"] == ("", TOPIC_CONFIG)
    compact = alter_one(broker.bootstrap, TOPIC, name, ("cleanup.policy", APPEND, "compact"))
    assert compact.error_code == ErrorCode.none
    assert described(broker.bootstrap, TOPIC, name)["cleanup.policy"] == ("compact", TOPIC_CONFIG)
    unknown = alter_one(broker.bootstrap, TOPIC, name, ("cleanup.policy", APPEND, "shrink"))
    assert unknown.error_code == ErrorCode.invalid_config
    assert "cleanup.policy" in unknown.error_message


@pytest.mark.parametrize(
    ("ops", "code", "mentions"),
    [
        ([("no.such.key", SET, "1")], ErrorCode.invalid_config, "no.such.key"),
        ([("retention.ms", SET, "1h")], ErrorCode.invalid_config, "retention.ms"),
        ([("retention.ms", SET, "5"), ("segment.bytes", SET, "1")], ErrorCode.invalid_config,
         "segment.bytes"),
        ([("retention.ms", APPEND, "5")], ErrorCode.invalid_config, "LIST"),
        ([("retention.ms", SET, None)], ErrorCode.invalid_request,
         "Null value not supported for : retention.ms"),
        ([("retention.ms", 7, "5")], ErrorCode.invalid_request, "operation"),
        ([("retention.ms", SET, "5"), ("retention.ms", DELETE, None)], ErrorCode.invalid_request,
         "duplicate"),
    ],
)  # fmt: skip
def test_topic_refusals_change_nothing(
    broker: BrokerProcess, ops: list[Op], code: ErrorCode, mentions: str
) -> None:
    name = topic_name("iac-bad")
    create_topic(broker.bootstrap, name)
    before = described(broker.bootstrap, TOPIC, name)
    result = alter_one(broker.bootstrap, TOPIC, name, *ops)
    assert result.error_code == code
    assert mentions in result.error_message
    assert described(broker.bootstrap, TOPIC, name) == before


def test_validate_only_changes_nothing(broker: BrokerProcess) -> None:
    name = topic_name("iac-dry")
    create_topic(broker.bootstrap, name)
    ok = alter_one(broker.bootstrap, TOPIC, name, ("retention.ms", SET, "5"), validate_only=True)
    assert ok.error_code == ErrorCode.none
    assert described(broker.bootstrap, TOPIC, name)["retention.ms"] == ("604800000", DEFAULT)
    bad = alter_one(broker.bootstrap, TOPIC, name, ("retention.ms", SET, "x"), validate_only=True)
    assert bad.error_code == ErrorCode.invalid_config


def test_resource_refusals(broker: BrokerProcess) -> None:
    name = topic_name("iac-res")
    create_topic(broker.bootstrap, name)
    op = [("retention.ms", SET, "5")]
    results = alter(
        broker.bootstrap, 1,
        (TOPIC, name, op), (TOPIC, name, op), (TOPIC, topic_name("iac-missing"), op),
        (GROUP, "", [("share.auto.offset.reset", SET, "earliest")]),
        (BROKER, "7", [("num.partitions", SET, "2")]),
        (99, "x", []),
    )  # fmt: skip
    assert [r.error_code for r in results] == [
        ErrorCode.invalid_request,
        ErrorCode.invalid_request,
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.invalid_request,
        ErrorCode.invalid_request,
        ErrorCode.invalid_request,
    ]
    assert "Default group resources are not allowed" in results[3].error_message
    assert described(broker.bootstrap, TOPIC, name)["retention.ms"] == ("604800000", DEFAULT)


def auto_created_partitions(bootstrap: str) -> int:
    name = topic_name("iac-auto")
    asks = [
        MetadataRequest(
            topics=(MetadataRequestTopic(topic_id=None, name=name),),
            allow_auto_topic_creation=allow,
            include_topic_authorized_operations=False,
        )
        for allow in (True, False)
    ]
    # The creating request is answered unknown (as in Kafka); the next one describes it.
    _creating, described = call(bootstrap, *asks)
    return len(described.topics[0].partitions)


def test_broker_configs_apply_and_persist(fresh_broker: BrokerProcess) -> None:
    bootstrap = fresh_broker.bootstrap
    name = topic_name("iac-broker")
    create_topic(bootstrap, name)
    node = alter_one(
        bootstrap, BROKER, "1", ("log.retention.ms", SET, "7200000"), ("num.partitions", SET, "3")
    )
    assert node.error_code == ErrorCode.none
    cluster = alter_one(bootstrap, BROKER, "", ("log.retention.bytes", SET, "1000000"))
    assert cluster.error_code == ErrorCode.none

    def check() -> None:
        broker_configs = described(bootstrap, BROKER, "1")
        assert broker_configs["log.retention.ms"] == ("7200000", DYNAMIC_BROKER)
        assert broker_configs["log.retention.bytes"] == ("1000000", DYNAMIC_DEFAULT)
        assert broker_configs["num.partitions"] == ("3", DYNAMIC_BROKER)
        assert described(bootstrap, BROKER, "") == {"log.retention.bytes": ("1000000", 3)}
        topic_configs = described(bootstrap, TOPIC, name)
        assert topic_configs["retention.ms"] == ("7200000", DYNAMIC_BROKER)
        assert topic_configs["retention.bytes"] == ("1000000", DYNAMIC_DEFAULT)
        assert auto_created_partitions(bootstrap) == 3

    check()
    fresh_broker.restart()  # SIGKILL, then start again on the same data directory
    check()
    reset = alter_one(bootstrap, BROKER, "1", ("num.partitions", DELETE, None))
    assert reset.error_code == ErrorCode.none
    assert auto_created_partitions(bootstrap) == 1
    fresh_broker.restart()
    assert auto_created_partitions(bootstrap) == 1
    assert described(bootstrap, BROKER, "1")["log.retention.ms"] == ("7200000", DYNAMIC_BROKER)


@pytest.mark.parametrize(
    ("ops", "mentions"),
    [
        ([("log.retention.check.interval.ms", SET, "1000")], "dynamically"),
        ([("node.id", SET, "2")], "dynamically"),
        ([("log.retention.hours", SET, "2")], "dynamically"),  # not dynamic in Kafka either
        ([("num.partitions", SET, "0")], "num.partitions"),
        ([("num.partitions", SET, "2"), ("message.max.bytes", SET, "-1")], "message.max.bytes"),
        ([("group.share.heartbeat.interval.ms", SET, "50000")], "group.share"),
    ],
)
def test_broker_refusals_change_nothing(
    broker: BrokerProcess, ops: list[Op], mentions: str
) -> None:
    before = described(broker.bootstrap, BROKER, "1")
    result = alter_one(broker.bootstrap, BROKER, "1", *ops)
    # Kafka's controller refuses a broker change with INVALID_REQUEST (a key that is
    # not dynamic: "Cannot update these configs dynamically: Set(...)"; a bad value)
    assert result.error_code == ErrorCode.invalid_request
    assert mentions in result.error_message
    assert described(broker.bootstrap, BROKER, "1") == before


def test_a_custom_broker_key_is_stored_as_kafka_stores_it(broker: BrokerProcess) -> None:
    """Kafka keeps a broker key it does not know (a plug-in's, say) and shows it as
    sensitive, of unknown type and read-only; DELETE removes it."""
    name = "shoal.test.custom.key"
    assert alter_one(broker.bootstrap, BROKER, "1", (name, SET, "x")).error_code == 0
    (entry,) = _described_keys(broker.bootstrap, name)
    assert (entry.value, entry.config_source, entry.is_sensitive, entry.read_only) == (
        None,
        DYNAMIC_BROKER,
        True,
        True,
    )
    assert entry.config_type == 0  # UNKNOWN
    assert alter_one(broker.bootstrap, BROKER, "1", (name, DELETE, None)).error_code == 0
    assert _described_keys(broker.bootstrap, name) == ()


def _described_keys(bootstrap: str, *keys: str) -> tuple[Any, ...]:
    request = DescribeConfigsRequest(
        resources=(
            DescribeConfigsResource(
                resource_type=BROKER, resource_name="1", configuration_keys=keys
            ),
        ),
        include_synonyms=False,
        include_documentation=False,
    )
    (result,) = call1(bootstrap, request).results
    assert result.error_code == ErrorCode.none, result
    return tuple(result.configs)


def test_broker_validate_only(broker: BrokerProcess) -> None:
    result = alter_one(
        broker.bootstrap, BROKER, "1", ("num.partitions", SET, "4"), validate_only=True
    )
    assert result.error_code == ErrorCode.none
    assert described(broker.bootstrap, BROKER, "1")["num.partitions"] == ("1", DEFAULT)
