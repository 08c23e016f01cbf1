"""Share-group configs (resource type GROUP = 32) through DescribeConfigs and
IncrementalAlterConfigs: defaults, overrides, refusals that change nothing, ValidateOnly,
persistence across a crash, broker bounds, and confluent-kafka's AdminClient."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)
from kio.schema.errors import ErrorCode

from shoal.config import GROUP_KEYS
from shoal.group.configs import KAFKA_42_GROUP_KEYS
from shoal.protocol.schema import request_schema
from shoal.server.metadata.metadata_log import METADATA_DIR
from tests.support.broker import BrokerProcess, running
from tests.support.topics import topic_name
from tests.support.wire import call1

GROUP = 32
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
DEFAULT, GROUP_CONFIG = 5, 8
LOCK = "share.record.lock.duration.ms"
RESET = "share.auto.offset.reset"
TIMEOUT_S = 30

DEFAULTS = {
    "share.session.timeout.ms": "45000",
    "share.heartbeat.interval.ms": "5000",
    "share.record.lock.duration.ms": "30000",
    "share.auto.offset.reset": "latest",
    "share.isolation.level": "read_uncommitted",
    "consumer.session.timeout.ms": "45000",
    "consumer.heartbeat.interval.ms": "5000",
    "streams.heartbeat.interval.ms": "5000",
    "streams.initial.rebalance.delay.ms": "3000",
    "streams.num.standby.replicas": "0",
    "streams.session.timeout.ms": "45000",
}

"""Kafka 4.2's group keys: all a group that sets nothing lists (Shoal's extension keys,
group/configs.py SHOAL_GROUP_EXTENSIONS, are listed only once set)."""

DEFAULT_VIEW = {key: (value, DEFAULT) for key, value in DEFAULTS.items()}
"""What `described` shows for a group that sets nothing."""

Op = tuple[str, int, str | None]


def describe(
    bootstrap: str,
    group_id: str,
    keys: Sequence[str] | None = None,
    *,
    version: int = 4,
    synonyms: bool = False,
    documentation: bool = False,
) -> Any:
    schema = request_schema(32, version)
    request = schema.make(
        "DescribeConfigsRequest",
        resources=(
            schema.make(
                "DescribeConfigsResource",
                resource_type=GROUP,
                resource_name=group_id,
                configuration_keys=None if keys is None else tuple(keys),
            ),
        ),
        include_synonyms=synonyms,
        include_documentation=documentation,
    )
    (result,) = call1(bootstrap, request).results
    assert (result.resource_type, result.resource_name) == (GROUP, group_id)
    return result


def described(bootstrap: str, group_id: str) -> dict[str, tuple[str | None, int]]:
    result = describe(bootstrap, group_id)
    assert result.error_code == ErrorCode.none, result
    return {c.name: (c.value, c.config_source) for c in result.configs}


def alter(
    bootstrap: str, group_id: str, *ops: Op, version: int = 1, validate_only: bool = False
) -> Any:
    schema = request_schema(44, version)
    request = schema.make(
        "IncrementalAlterConfigsRequest",
        resources=(
            schema.make(
                "AlterConfigsResource",
                resource_type=GROUP,
                resource_name=group_id,
                configs=tuple(
                    schema.make("AlterableConfig", name=k, config_operation=op, value=v)
                    for k, op, v in ops
                ),
            ),
        ),
        validate_only=validate_only,
    )
    (result,) = call1(bootstrap, request).responses
    assert (result.resource_type, result.resource_name) == (GROUP, group_id)
    return result


def group_name(prefix: str) -> str:
    return topic_name(prefix)


def test_the_shoal_extensions_say_so_in_their_documentation(broker: BrokerProcess) -> None:
    """Delayed redelivery and paused delivery are not Kafka keys: DescribeConfigs'
    documentation says so; a bad value is INVALID_CONFIG naming the key."""
    group_id = group_name("gc-doc")
    names = [
        "shoal.share.delivery.paused",
        "shoal.share.redelivery.backoff.max.ms",
        "shoal.share.redelivery.backoff.ms",
        "shoal.share.redelivery.backoff.multiplier",
    ]
    fresh = describe(broker.bootstrap, group_id, documentation=True)
    assert not [c.name for c in fresh.configs if c.name.startswith("shoal.")]  # none set yet
    values = {names[0]: "false", names[1]: "60000", names[2]: "0", names[3]: "2.0"}
    set_all = alter(broker.bootstrap, group_id, *((k, SET, v) for k, v in values.items()))
    assert set_all.error_code == ErrorCode.none
    result = describe(broker.bootstrap, group_id, documentation=True)
    docs = {c.name: c.documentation for c in result.configs}
    extensions = [name for name in docs if name.startswith("shoal.")]
    assert sorted(extensions) == names
    assert all(docs[name].startswith("Shoal extension (not a Kafka config)") for name in extensions)
    refused = alter(
        broker.bootstrap, group_name("gc-doc"), ("shoal.share.redelivery.backoff.ms", 0, "-1")
    )
    assert refused.error_code == ErrorCode.invalid_config
    assert "shoal.share.redelivery.backoff.ms" in refused.error_message


@pytest.mark.parametrize("version", [1, 3, 4])
def test_a_never_seen_group_shows_the_defaults(broker: BrokerProcess, version: int) -> None:
    result = describe(broker.bootstrap, group_name("gc-new"), version=version)
    assert result.error_code == ErrorCode.none
    configs = {c.name: c for c in result.configs}
    assert set(configs) == set(KAFKA_42_GROUP_KEYS) == set(DEFAULTS)
    assert {name: c.value for name, c in configs.items()} == DEFAULTS
    assert all(c.config_source == DEFAULT for c in configs.values())
    assert not any(c.read_only or c.is_sensitive for c in configs.values())
    assert all(c.synonyms == () for c in configs.values())
    if version >= 3:
        assert all(c.config_type == GROUP_KEYS[n].type for n, c in configs.items())


def test_synonyms_are_the_group_value_or_the_default_as_kafka_shows_them(
    broker: BrokerProcess,
) -> None:
    group_id = group_name("gc-syn")
    assert alter(broker.bootstrap, group_id, (LOCK, SET, "20000")).error_code == ErrorCode.none
    result = describe(broker.bootstrap, group_id, [LOCK, RESET, "no.such.key"], synonyms=True)
    configs = {c.name: c for c in result.configs}
    assert set(configs) == {LOCK, RESET}  # unknown keys are left out, as for topics
    assert [(s.name, s.value, s.source) for s in configs[LOCK].synonyms] == [
        (LOCK, "20000", GROUP_CONFIG)
    ]
    assert [(s.name, s.value, s.source) for s in configs[RESET].synonyms] == [
        (RESET, "latest", DEFAULT)
    ]


@pytest.mark.parametrize("version", [0, 1])
def test_set_then_describe(broker: BrokerProcess, version: int) -> None:
    group_id = group_name("gc-set")
    result = alter(
        broker.bootstrap, group_id,
        (RESET, SET, "earliest"), (LOCK, SET, "45000"), ("share.isolation.level", SET,
        "read_committed"), ("share.renew.acknowledge.enable", SET, "false"),
        version=version,
    )  # fmt: skip
    assert (result.error_code, result.error_message) == (ErrorCode.none, None)
    configs = described(broker.bootstrap, group_id)
    assert configs[RESET] == ("earliest", GROUP_CONFIG)
    assert configs[LOCK] == ("45000", GROUP_CONFIG)
    assert configs["share.isolation.level"] == ("read_committed", GROUP_CONFIG)
    assert configs["share.renew.acknowledge.enable"] == ("false", GROUP_CONFIG)
    assert "share.delivery.count.limit" not in configs  # an extension, not set
    other = described(broker.bootstrap, group_name("gc-other"))
    assert other == DEFAULT_VIEW  # values are per group


def test_delete_restores_the_broker_default(broker: BrokerProcess) -> None:
    group_id = group_name("gc-del")
    alter(broker.bootstrap, group_id, (RESET, SET, "earliest"), (LOCK, SET, "20000"))
    result = alter(broker.bootstrap, group_id, (LOCK, DELETE, None))
    assert result.error_code == ErrorCode.none
    configs = described(broker.bootstrap, group_id)
    assert configs[LOCK] == ("30000", DEFAULT)
    assert configs[RESET] == ("earliest", GROUP_CONFIG)
    again = alter(broker.bootstrap, group_id, (LOCK, DELETE, None), (RESET, DELETE, None))
    assert again.error_code == ErrorCode.none
    assert described(broker.bootstrap, group_id) == DEFAULT_VIEW


@pytest.mark.parametrize(
    ("ops", "code", "mentions"),
    [
        # conformance 78: a lock below the broker minimum, or an unparsable by_duration
        ([(LOCK, SET, "10000")], ErrorCode.invalid_config,
         "share.record.lock.duration.ms must be greater than or equal to "
         "group.share.min.record.lock.duration.ms"),
        ([(LOCK, SET, "1000")], ErrorCode.invalid_config, LOCK),
        ([(RESET, SET, "by_duration:1h")], ErrorCode.invalid_config, RESET),
        ([(RESET, SET, "by_duration:-PT1H")], ErrorCode.invalid_config, "by_duration:-PT1H"),
        ([(RESET, SET, "by_duration:PT1H"), (LOCK, SET, "999")], ErrorCode.invalid_config,
         LOCK),
        ([("share.session.timeout.ms", SET, "30000")], ErrorCode.invalid_config,
         "share.session.timeout.ms"),
        ([("share.heartbeat.interval.ms", SET, "20000")], ErrorCode.invalid_config,
         "share.heartbeat.interval.ms"),
        ([("share.delivery.count.limit", SET, "1")], ErrorCode.invalid_config,
         "share.delivery.count.limit"),
        ([("share.partition.max.record.locks", SET, "50")], ErrorCode.invalid_config,
         "share.partition.max.record.locks"),
        ([("share.isolation.level", SET, "read_commit")], ErrorCode.invalid_config,
         "share.isolation.level"),
        ([("share.renew.acknowledge.enable", SET, "yes")], ErrorCode.invalid_config,
         "share.renew.acknowledge.enable"),
        ([("share.assignment.interval.ms", SET, "1")], ErrorCode.invalid_config,
         "Unknown group config name: share.assignment.interval.ms"),
        ([("share.session.timeout.ms", SET, "50000"), ("share.heartbeat.interval.ms", SET,
          "50000")], ErrorCode.invalid_config,
         "share.heartbeat.interval.ms must be less than or equal to"),
        ([("errors.deadletterqueue.copy.record.enable", SET, "yes")], ErrorCode.invalid_config,
         "errors.deadletterqueue.copy.record.enable"),
        ([(LOCK, APPEND, "20000")], ErrorCode.invalid_config, "LIST"),
        ([(RESET, SUBTRACT, "latest")], ErrorCode.invalid_config, "LIST"),
        ([(LOCK, SET, None)], ErrorCode.invalid_request, f"Null value not supported for : {LOCK}"),
        ([(LOCK, SET, "20000"), (LOCK, DELETE, None)], ErrorCode.invalid_request, "duplicate"),
        ([(LOCK, 9, "20000")], ErrorCode.invalid_request, "operation"),
    ],
)  # fmt: skip
def test_refusals_change_nothing(
    broker: BrokerProcess, ops: list[Op], code: ErrorCode, mentions: str
) -> None:
    group_id = group_name("gc-bad")
    alter(broker.bootstrap, group_id, ("share.delivery.count.limit", SET, "3"))
    before = described(broker.bootstrap, group_id)
    result = alter(broker.bootstrap, group_id, *ops)
    assert result.error_code == code
    assert mentions in result.error_message
    assert described(broker.bootstrap, group_id) == before


def test_validate_only_changes_nothing(broker: BrokerProcess) -> None:
    group_id = group_name("gc-dry")
    ok = alter(broker.bootstrap, group_id, (RESET, SET, "earliest"), validate_only=True)
    assert ok.error_code == ErrorCode.none
    bad = alter(broker.bootstrap, group_id, (LOCK, SET, "1000"), validate_only=True)
    assert bad.error_code == ErrorCode.invalid_config
    assert described(broker.bootstrap, group_id) == DEFAULT_VIEW


def test_an_empty_group_id_is_an_invalid_request(broker: BrokerProcess) -> None:
    refused = describe(broker.bootstrap, "")
    assert refused.error_code == ErrorCode.invalid_request
    assert refused.error_message == "Group name must not be empty"
    assert refused.configs == ()
    result = alter(broker.bootstrap, "", (RESET, SET, "earliest"))
    assert result.error_code == ErrorCode.invalid_request
    assert result.error_message == "Default group resources are not allowed."


def test_group_configs_survive_a_crash(fresh_broker: BrokerProcess) -> None:
    bootstrap = fresh_broker.bootstrap
    alter(bootstrap, "kept", (RESET, SET, "earliest"), (LOCK, SET, "20000"))
    alter(bootstrap, "emptied", (LOCK, SET, "20000"))
    alter(bootstrap, "emptied", (LOCK, DELETE, None))
    alter(bootstrap, "kept", (LOCK, SET, "1"))  # refused: must not reach the file
    fresh_broker.restart()  # SIGKILL, then start on the same data directory and port
    configs = described(fresh_broker.bootstrap, "kept")
    assert configs[RESET] == ("earliest", GROUP_CONFIG)
    assert configs[LOCK] == ("20000", GROUP_CONFIG)
    assert described(fresh_broker.bootstrap, "emptied") == DEFAULT_VIEW
    assert (fresh_broker.data_dir / METADATA_DIR).is_dir()


@pytest.fixture(scope="module")
def short_lock_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker whose group lock minimum is lowered to 1000 ms (docs/reference/configs.md)."""
    yield from running(
        tmp_path_factory.mktemp("short-lock") / "data",
        "group.share.min.record.lock.duration.ms=1000",
    )


def test_the_broker_minimum_decides_whether_a_short_lock_is_accepted(
    broker: BrokerProcess, short_lock_broker: BrokerProcess
) -> None:
    group_id = group_name("gc-short")
    refused = alter(broker.bootstrap, group_id, (LOCK, SET, "1000"))
    assert refused.error_code == ErrorCode.invalid_config
    assert refused.error_message == (
        "share.record.lock.duration.ms must be greater than or equal to "
        "group.share.min.record.lock.duration.ms"
    )
    accepted = alter(short_lock_broker.bootstrap, group_id, (LOCK, SET, "1000"))
    assert accepted.error_code == ErrorCode.none
    assert described(short_lock_broker.bootstrap, group_id)[LOCK] == ("1000", GROUP_CONFIG)
    too_short = alter(short_lock_broker.bootstrap, group_id, (LOCK, SET, "999"))
    assert too_short.error_code == ErrorCode.invalid_config  # the fixed minimum stays


def test_admin_client_round_trip(broker: BrokerProcess) -> None:
    """confluent-kafka 2.16.1: ResourceType.GROUP (3 in librdkafka's enum) goes on the
    wire as config resource type 32."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap, "socket.timeout.ms": 10_000})
    group_id = group_name("gc-admin")
    change = ConfigResource(
        ResourceType.GROUP,
        group_id,
        incremental_configs=[
            ConfigEntry(RESET, "earliest", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry(LOCK, "20000", incremental_operation=AlterConfigOpType.SET),
        ],
    )
    admin.incremental_alter_configs([change])[change].result(TIMEOUT_S)
    resource = ConfigResource(ResourceType.GROUP, group_id)
    configs = admin.describe_configs([resource])[resource].result(TIMEOUT_S)
    assert set(configs) == set(KAFKA_42_GROUP_KEYS)
    assert configs[RESET].value == "earliest"
    assert configs[RESET].source == ConfigSource.GROUP_CONFIG.value
    assert configs[LOCK].value == "20000"
    assert configs["share.isolation.level"].source == ConfigSource.DEFAULT_CONFIG.value
    assert not configs[LOCK].is_read_only

    bad = ConfigResource(
        ResourceType.GROUP,
        group_id,
        incremental_configs=[
            ConfigEntry(RESET, "by_duration:1h", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    with pytest.raises(KafkaException, match="INVALID_CONFIG") as caught:
        admin.incremental_alter_configs([bad])[bad].result(TIMEOUT_S)
    assert RESET in str(caught.value)

    reset = ConfigResource(
        ResourceType.GROUP,
        group_id,
        incremental_configs=[
            ConfigEntry(LOCK, None, incremental_operation=AlterConfigOpType.DELETE)
        ],
    )
    admin.incremental_alter_configs([reset])[reset].result(TIMEOUT_S)
    configs = admin.describe_configs([resource])[resource].result(TIMEOUT_S)
    assert (configs[LOCK].value, configs[LOCK].source) == (
        "30000",
        ConfigSource.DEFAULT_CONFIG.value,
    )
    assert configs[RESET].value == "earliest"
