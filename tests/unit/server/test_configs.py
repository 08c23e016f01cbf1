"""Config entries, sources and synonyms; the four alter operations; dynamic broker layers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from shoal.config import BROKER_KEYS, TOPIC_KEYS, BrokerConfig, ConfigError
from shoal.protocol.errors import ErrorCode
from shoal.server.metadata.config_resources import (
    LISTED_ONLY_WHEN_SET,
    AlterOp,
    ConfigSource,
    Synonym,
    apply_ops,
    broker_entries,
    broker_layer_for,
    topic_entries,
)
from shoal.server.metadata.dynamic_config import DynamicBrokerConfig, DynamicLayer
from shoal.server.refused import Refused
from tests.support.metadata import metadata_at


def dynamic(tmp_path: Path, **static: str) -> DynamicBrokerConfig:
    config = BrokerConfig.from_raw({"log.dirs": str(tmp_path), **static})
    return DynamicBrokerConfig.load(config, metadata_at(tmp_path).image)


def topic_ops(current: dict[str, str], *ops: tuple[str, int, str | None]) -> dict[str, str]:
    return apply_ops(
        current, list(ops), definitions=TOPIC_KEYS, effective_value=lambda _: "delete", kind="topic"
    )


def test_set_delete_append_subtract() -> None:
    current = {"retention.ms": "5", "segment.bytes": "1000"}
    assert topic_ops(current, ("retention.ms", AlterOp.SET, "7")) == {
        "retention.ms": "7",
        "segment.bytes": "1000",
    }
    assert topic_ops(current, ("retention.ms", AlterOp.DELETE, None)) == {"segment.bytes": "1000"}
    assert topic_ops({}, ("cleanup.policy", AlterOp.APPEND, "delete,x"))["cleanup.policy"] == (
        "delete,x"
    )  # starts from the effective value; validation is the caller's
    assert topic_ops({"cleanup.policy": "a,b"}, ("cleanup.policy", AlterOp.SUBTRACT, "a")) == {
        "cleanup.policy": "b"
    }
    assert current == {"retention.ms": "5", "segment.bytes": "1000"}  # not modified


@pytest.mark.parametrize(
    ("ops", "code"),
    [
        ([("nope", AlterOp.SET, "1")], ErrorCode.invalid_config),
        ([("retention.ms", AlterOp.APPEND, "1")], ErrorCode.invalid_config),
        ([("retention.ms", AlterOp.SET, None)], ErrorCode.invalid_request),
        ([("retention.ms", 9, "1")], ErrorCode.invalid_request),
        ([("retention.ms", AlterOp.SET, "1"), ("retention.ms", AlterOp.SET, "2")],
         ErrorCode.invalid_request),
    ],
)  # fmt: skip
def test_refused_ops(ops: list[tuple[str, int, str | None]], code: ErrorCode) -> None:
    with pytest.raises(Refused) as refused:
        topic_ops({}, *ops)
    assert refused.value.code == code


def test_topic_entry_sources(tmp_path: Path) -> None:
    config = dynamic(tmp_path, **{"log.retention.bytes": "500"})
    config = config.with_layer(DynamicLayer.BROKER, {"log.segment.bytes": "4096"})
    config = config.with_layer(DynamicLayer.CLUSTER_DEFAULT, {"log.flush.interval.messages": "9"})
    entries = {e.name: e for e in topic_entries({"retention.ms": 60_000}, config)}
    assert (entries["retention.ms"].value, entries["retention.ms"].source) == (
        "60000",
        ConfigSource.TOPIC,
    )
    assert (entries["segment.bytes"].value, entries["segment.bytes"].source) == (
        "4096",
        ConfigSource.DYNAMIC_BROKER,
    )
    assert entries["flush.messages"].source == ConfigSource.DYNAMIC_DEFAULT_BROKER
    assert entries["retention.bytes"].source == ConfigSource.STATIC_BROKER
    assert entries["max.message.bytes"].source == ConfigSource.DEFAULT
    assert [s.source for s in entries["segment.bytes"].synonyms] == [
        ConfigSource.DYNAMIC_BROKER,
        ConfigSource.DEFAULT,
    ]


def test_broker_entries(tmp_path: Path) -> None:
    config = dynamic(tmp_path).with_layer(DynamicLayer.CLUSTER_DEFAULT, {"num.partitions": "3"})
    node = {e.name: e for e in broker_entries(config, DynamicLayer.BROKER)}
    assert set(node) == set(BROKER_KEYS) - LISTED_ONLY_WHEN_SET
    assert (node["num.partitions"].value, node["num.partitions"].source) == (
        "3",
        ConfigSource.DYNAMIC_DEFAULT_BROKER,
    )
    assert node["node.id"].read_only and not node["num.partitions"].read_only
    cluster = broker_entries(config, DynamicLayer.CLUSTER_DEFAULT)
    assert [(e.name, e.value) for e in cluster] == [("num.partitions", "3")]


def test_replication_throttles_are_listed_once_set(tmp_path: Path) -> None:
    """As Kafka 4.2: its dynamic-only replication quota keys appear once set, with the
    value set as their one synonym (kafka-reassign-partitions --verify deletes them)."""
    key = "leader.replication.throttled.rate"
    config = dynamic(tmp_path).with_layer(DynamicLayer.BROKER, {key: "100"})
    node = {e.name: e for e in broker_entries(config, DynamicLayer.BROKER)}
    assert (node[key].value, node[key].synonyms) == (
        "100",
        (Synonym(key, "100", ConfigSource.DYNAMIC_BROKER),),
    )
    assert "follower.replication.throttled.rate" not in node
    with pytest.raises(ConfigError, match=key):
        dynamic(tmp_path).with_layer(DynamicLayer.BROKER, {key: "-1"})


def test_broker_resource_names() -> None:
    assert broker_layer_for("", 1) is DynamicLayer.CLUSTER_DEFAULT
    assert broker_layer_for("1", 1) is DynamicLayer.BROKER
    for name in ("2", "one"):
        with pytest.raises(Refused):
            broker_layer_for(name, 1)


def test_dynamic_layers_persist_and_win(tmp_path: Path) -> None:
    config = dynamic(tmp_path, **{"num.partitions": "2"})
    config = config.with_layer(DynamicLayer.CLUSTER_DEFAULT, {"num.partitions": "3"})
    config = config.with_layer(DynamicLayer.BROKER, {"num.partitions": "4"})
    assert config.effective["num.partitions"] == 4
    metadata = metadata_at(tmp_path)
    asyncio.run(metadata.write(config.written(metadata)))
    reloaded = dynamic(tmp_path, **{"num.partitions": "2"})
    assert (dict(reloaded.broker), dict(reloaded.cluster_default)) == (
        {"num.partitions": "4"},
        {"num.partitions": "3"},
    )
    assert reloaded.effective["num.partitions"] == 4
    assert reloaded.static["num.partitions"] == 2


def test_only_dynamic_keys(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="dynamically"):
        dynamic(tmp_path).with_layer(DynamicLayer.BROKER, {"log.dirs": "/elsewhere"})


def test_invalid_persisted_entries_are_dropped(tmp_path: Path) -> None:
    (tmp_path / "dynamic-broker.properties").write_text(
        "num.partitions=0\nnode.id=7\nmax.connections=5\n"
    )
    loaded = dynamic(tmp_path)
    assert dict(loaded.broker) == {"max.connections": "5"}
    assert loaded.effective["max.connections"] == 5
