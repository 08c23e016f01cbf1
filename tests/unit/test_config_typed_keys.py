"""Typed config keys (shoal.config): each key declared once as a `Key[T]`, the table
built from the declarations, values read through the keys."""

from __future__ import annotations

from types import ModuleType

import pytest

from shoal.config import (
    BROKER_KEYS,
    DEFINITIONS,
    GROUP_KEYS,
    TOPIC_KEYS,
    BrokerConfig,
    ConfigError,
    ConfigType,
    Key,
    Scope,
    broker_keys,
    client_metrics_keys,
    effective_topic_config,
    group_keys,
    topic_keys,
    topic_value,
)
from shoal.config.definition import Declarer

MODULES: dict[Scope, ModuleType] = {
    Scope.BROKER: broker_keys,
    Scope.TOPIC: topic_keys,
    Scope.GROUP: group_keys,
    Scope.CLIENT_METRICS: client_metrics_keys,
}


def _declared(module: ModuleType) -> dict[str, Key[object]]:
    return {name: v for name, v in vars(module).items() if isinstance(v, Key)}


@pytest.mark.parametrize("scope", list(MODULES))
def test_every_declared_key_is_in_the_table_as_declared(scope: Scope) -> None:
    declared = _declared(MODULES[scope])
    assert declared, f"{scope} declares no keys"
    for constant, key in declared.items():
        assert key.scope is scope
        assert DEFINITIONS[(scope, key.name)] is key.definition, constant
        assert constant == key.name.upper().replace(".", "_").replace("-", "_")


def test_declaring_a_key_twice_is_refused() -> None:
    declare = Declarer(Scope.TOPIC)
    declare.integer("x.y", 1, "doc")
    with pytest.raises(AssertionError, match=r"x\.y declared twice"):
        declare.long("x.y", 2, "doc")


def test_a_broker_key_reads_as_its_declared_type() -> None:
    config = BrokerConfig.from_raw(
        {
            "num.partitions": "3",
            "log.cleanup.policy": "compact,delete",
            "log.cleaner.enable": "false",
        }
    )
    partitions: int = config.get(broker_keys.NUM_PARTITIONS)
    policy: list[str] = config.get(broker_keys.LOG_CLEANUP_POLICY)
    enabled: bool = config.get(broker_keys.LOG_CLEANER_ENABLE)
    ratio: float = config.get(broker_keys.LOG_CLEANER_MIN_CLEANABLE_RATIO)
    flush: int | None = config.get(broker_keys.LOG_FLUSH_INTERVAL_MS)
    assert (partitions, policy, enabled, ratio, flush) == (
        3,
        ["compact", "delete"],
        False,
        0.5,
        None,
    )
    assert config.get(broker_keys.NUM_PARTITIONS) == config.get_int("num.partitions")


def test_a_key_of_another_scope_is_not_a_broker_value() -> None:
    config = BrokerConfig.from_raw({})
    with pytest.raises(AssertionError):
        config.get(topic_keys.RETENTION_MS)


def test_key_parse_and_default_are_the_definitions() -> None:
    key = broker_keys.SHARE_VERSION
    assert key.definition.type is ConfigType.INT
    assert key.default == 1
    assert key.parse("0") == 0
    with pytest.raises(ConfigError, match=r"share\.version"):
        key.parse("2")


def test_a_topic_value_is_its_override_else_the_broker_synonym_else_the_default() -> None:
    broker = BrokerConfig.from_raw({"log.retention.ms": "5000"})
    resolved = effective_topic_config(broker, {"segment.bytes": 2048})
    assert topic_value(resolved, topic_keys.SEGMENT_BYTES) == 2048
    assert topic_value(resolved, topic_keys.RETENTION_MS) == 5000
    assert topic_value(resolved, topic_keys.MIN_CLEANABLE_DIRTY_RATIO) == 0.5
    assert topic_value({}, topic_keys.CLEANUP_POLICY) == ["delete"]
    assert topic_value({"flush.ms": None}, topic_keys.FLUSH_MS) == TOPIC_KEYS["flush.ms"].default


def test_a_per_listener_value_reads_through_the_key() -> None:
    config = BrokerConfig.from_raw(
        {
            "listeners": "PLAINTEXT://h:1,MTLS://h:3",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,MTLS:SSL",
            "ssl.keystore.location": "/k",
            "listener.name.mtls.ssl.client.auth": "required",
            "listener.name.mtls.plain.sasl.jaas.config": "x required;",
        }
    )
    assert config.listener_value("MTLS", broker_keys.SSL_CLIENT_AUTH) == "required"
    assert config.listener_value("PLAINTEXT", broker_keys.SSL_CLIENT_AUTH) == "none"
    assert config.listener_jaas_config("MTLS", "plain") == "x required;"
    assert config.listener_jaas_config("PLAINTEXT", "plain") is None


def test_the_group_keys_ranges_are_broker_keys_around_their_synonym() -> None:
    for ranges in (group_keys.SHARE_RANGES, group_keys.CONSUMER_RANGES):
        for r in ranges:
            synonym = r.key.definition.synonym
            assert synonym is not None and synonym in BROKER_KEYS
            assert r.key.name in GROUP_KEYS
            assert r.low.name in BROKER_KEYS and r.high.name in BROKER_KEYS
            assert r.low.default <= BROKER_KEYS[synonym].default <= r.high.default


def test_the_share_ranges_are_checked_at_start_up() -> None:
    with pytest.raises(ConfigError, match=r"group\.share\.record\.lock\.duration\.ms"):
        BrokerConfig.from_raw({"group.share.record.lock.duration.ms": "90000"})
