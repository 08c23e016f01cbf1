"""Kafka 4.2's keys in Shoal's config table (docs/reference/configs.md): accepted in a properties
file with Kafka's types and defaults, the dynamic ones changeable at run time, every
key without effect documented, DOUBLE values shown as Java shows them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from shoal.config import (
    BROKER_KEYS,
    DEFINITIONS,
    GROUP_KEYS,
    TOPIC_KEYS,
    BrokerConfig,
    ConfigError,
    java_double,
    parse_properties,
    render,
)
from shoal.server.metadata.dynamic_config import DYNAMIC_BROKER_KEYS, check_dynamic_key
from tests.support.docs_site import code_names, docsgen, table_rows

DOC = Path(__file__).resolve().parents[2] / "docs" / "reference" / "configs.md"

KAFKA_PROPERTIES = """
process.roles=broker,controller
controller.listener.names=CONTROLLER
controller.quorum.bootstrap.servers=localhost:9093
inter.broker.listener.name=PLAINTEXT
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
log.cleaner.min.cleanable.ratio=0.5
"""
"""Kafka's own config/server.properties (KRaft), less its listeners and data directory."""


def test_kafkas_server_properties_start_a_broker() -> None:
    config = BrokerConfig.from_raw(parse_properties(KAFKA_PROPERTIES))
    assert config.get_list("process.roles") == ["broker", "controller"]
    assert config.get_int("num.io.threads") == 8
    assert config["log.cleaner.min.cleanable.ratio"] == 0.5
    assert config.get_int("log.retention.ms") == 168 * 3_600_000


def test_kafka_keys_keep_their_types_and_check_them() -> None:
    with pytest.raises(ConfigError, match=re.escape("num.io.threads")):
        BrokerConfig.from_raw({"num.io.threads": "many"})
    with pytest.raises(ConfigError, match=re.escape("auto.leader.rebalance.enable")):
        BrokerConfig.from_raw({"auto.leader.rebalance.enable": "maybe"})


@pytest.mark.parametrize(
    ("key", "shown"),
    [
        ("log.cleaner.io.max.bytes.per.second", "1.7976931348623157E308"),
        ("log.cleaner.io.buffer.load.factor", "0.9"),
        ("sasl.kerberos.kinit.cmd", "/usr/bin/kinit"),
        ("config.providers", ""),
        ("broker.rack", None),
        ("metric.reporters", "org.apache.kafka.common.metrics.JmxReporter"),
    ],
)
def test_kafka_defaults_are_shown_as_kafka_shows_them(key: str, shown: str | None) -> None:
    definition = BROKER_KEYS[key]
    assert render(definition, definition.default) == shown


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.5, "0.5"), (2.0, "2.0"), (1e-4, "1.0E-4"), (1e7, "1.0E7"), (12345678.9, "1.23456789E7")],
)
def test_doubles_render_as_java(value: float, text: str) -> None:
    assert java_double(value) == text


def test_the_dynamic_kafka_keys_are_dynamic_and_the_others_not() -> None:
    for key in ("background.threads", "log.cleaner.threads", "max.connections.per.ip"):
        assert key in DYNAMIC_BROKER_KEYS
        check_dynamic_key(key)
    for key in ("num.replica.alter.log.dirs.threads", "log.retention.hours", "node.id"):
        with pytest.raises(ConfigError, match="dynamically"):
            check_dynamic_key(key)
    check_dynamic_key("a.plugins.own.key")  # custom keys are Kafka's to keep


def test_the_group_keys_of_kafka_42_exist() -> None:
    assert {"consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"} <= set(GROUP_KEYS)
    assert {"message.timestamp.before.max.ms", "min.cleanable.dirty.ratio"} <= set(TOPIC_KEYS)


def test_every_key_without_effect_is_documented_with_its_reason() -> None:
    """docs/reference/configs.md's generated tables (scripts/docsgen/) give every key
    without effect its `NoEffect` reason, and the page has every scope's table."""
    text = DOC.read_text(encoding="utf-8")
    documented: dict[tuple[str, str], str] = {}
    for scope in ("broker", "topic", "group", "client-metrics"):
        assert f"<!-- shoal:generate configs-{scope} -->" in text
        for row in table_rows(docsgen().generate(f"configs-{scope}")):
            reason = re.match(r"`(\w+)`: ", row[-1])
            if reason:
                documented[(scope, code_names(row[0])[0])] = reason.group(1)
    expected = {
        (d.scope.value.replace(" ", "-"), d.name): d.no_effect.name
        for d in DEFINITIONS.values()
        if d.no_effect
    }
    assert documented == expected
