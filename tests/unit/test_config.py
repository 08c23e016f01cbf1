"""Broker and topic config parsing, bounds and synonyms."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoal.config import (
    BROKER_KEYS,
    BrokerConfig,
    ConfigError,
    effective_topic_config,
    parse_properties,
    validate_topic_configs,
)
from shoal.iso_duration import parse_iso_duration_ms


def test_defaults_are_kafkas() -> None:
    config = BrokerConfig.from_raw({})
    assert config["num.partitions"] == 1
    assert config["socket.request.max.bytes"] == 104_857_600
    assert config["message.max.bytes"] == 1_048_588
    assert config["group.share.record.lock.duration.ms"] == 30_000
    assert config["group.share.delivery.count.limit"] == 5
    assert config.listener == ("127.0.0.1", 9092)
    assert config.data_dir == Path("shoal-data")


def test_every_default_is_within_its_bounds() -> None:
    for definition in BROKER_KEYS.values():
        if definition.default is not None:
            assert definition.parse(definition.default) == definition.default, definition.name


def test_unknown_key_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match=r"^no\.such\.key: unknown"):
        BrokerConfig.from_raw({"no.such.key": "1"})


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("num.partitions", "0", "below the minimum 1"),
        ("group.share.max.size", "1001", "above the maximum 1000"),
        ("auto.create.topics.enable", "yes", "not a valid boolean"),
        ("socket.request.max.bytes", "lots", "not a valid int"),
        ("log.cleanup.policy", "shrink", "not one of compact, delete"),
        ("listeners", "127.0.0.1:9092", "not of the form"),
        ("group.consumer.max.size", "0", "below the minimum 1"),
        ("group.consumer.assignors", "sticky", "not one of"),
        ("group.consumer.heartbeat.interval.ms", "45000", "lower than group.consumer.session"),
    ],
)
def test_bad_values_are_refused_by_name(key: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        BrokerConfig.from_raw({key: value})
    assert info.value.key == key


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("retention.ms", "abc", "Invalid value abc for configuration retention.ms: "
         "Not a number of type LONG"),
        ("retention.ms", "-5", "Invalid value -5 for configuration retention.ms: "
         "Value must be at least -1"),
        ("segment.index.bytes", "99999999999", "Invalid value 99999999999 for configuration "
         "segment.index.bytes: Not a number of type INT"),
        ("min.cleanable.dirty.ratio", "abc", "Invalid value abc for configuration "
         "min.cleanable.dirty.ratio: Not a number of type DOUBLE"),
        ("min.cleanable.dirty.ratio", "2", "Invalid value 2.0 for configuration "
         "min.cleanable.dirty.ratio: Value must be no more than 1"),
        ("min.cleanable.dirty.ratio", "-0.5", "Invalid value -0.5 for configuration "
         "min.cleanable.dirty.ratio: Value must be at least 0"),
        ("preallocate", "1", "Invalid value 1 for configuration preallocate: "
         "Expected value to be either true or false"),
        ("no.such.key", "1", "Unknown topic config name: no.such.key"),
    ],
)  # fmt: skip
def test_topic_config_refusals_in_kafkas_words(key: str, value: str, message: str) -> None:
    """What CreateTopics and IncrementalAlterConfigs answer (`wire_message`): Kafka
    4.2's ConfigException text, as the reference broker answers the same values."""
    with pytest.raises(ConfigError) as info:
        validate_topic_configs({key: value})
    assert info.value.wire_message == message
    assert info.value.key == key


def test_min_default_max_triples_are_checked() -> None:
    with pytest.raises(ConfigError, match=r"group\.share\.record\.lock\.duration\.ms"):
        BrokerConfig.from_raw({"group.share.record.lock.duration.ms": "10000"})
    lowered = BrokerConfig.from_raw(
        {
            "group.share.min.record.lock.duration.ms": "1000",
            "group.share.record.lock.duration.ms": "1000",
        }
    )
    assert lowered["group.share.record.lock.duration.ms"] == 1000


def test_properties_file_and_overrides(tmp_path: Path) -> None:
    file = tmp_path / "server.properties"
    file.write_text(
        "# comment\n! also a comment\n\nnum.partitions = 3\nlog.dirs=/x\nlog.retention.hours: 2\n"
    )
    config = BrokerConfig.load(file=file, overrides={"num.partitions": "5"})
    assert config["num.partitions"] == 5
    assert config.data_dir == Path("/x")
    assert config["log.retention.ms"] == 2 * 3_600_000
    assert config.explicit == {"num.partitions", "log.dirs", "log.retention.hours"}


def test_properties_line_without_separator_is_an_error() -> None:
    with pytest.raises(ConfigError, match="line 2"):
        parse_properties("a=1\njunk\n")


def test_listeners_give_host_and_port() -> None:
    config = BrokerConfig.from_raw(
        {
            "listeners": "PLAINTEXT://127.0.0.2:19092",
            "advertised.listeners": "PLAINTEXT://localhost:29092",
        }
    )
    assert config.listener == ("127.0.0.2", 19092)
    assert config.advertised_listener == ("localhost", 29092)


def test_topic_configs_fall_back_to_broker_synonyms() -> None:
    broker = BrokerConfig.from_raw({"log.retention.ms": "1000", "log.segment.bytes": "4096"})
    overrides = validate_topic_configs({"segment.bytes": "8192"})
    effective = effective_topic_config(broker, overrides)
    assert effective["retention.ms"] == 1000
    assert effective["segment.bytes"] == 8192
    assert effective["max.message.bytes"] == 1_048_588


def test_topic_config_errors_name_the_key() -> None:
    with pytest.raises(ConfigError, match=r"^retention\.ms:"):
        validate_topic_configs({"retention.ms": "-5"})
    with pytest.raises(ConfigError, match=r"^log\.retention\.ms: unknown topic"):
        validate_topic_configs({"log.retention.ms": "5"})


def test_with_overrides_revalidates() -> None:
    config = BrokerConfig.from_raw({"num.partitions": "2"})
    changed = config.with_overrides({"log.retention.ms": "5000"})
    assert changed["num.partitions"] == 2
    assert changed["log.retention.ms"] == 5000
    with pytest.raises(ConfigError):
        config.with_overrides({"num.partitions": "0"})


@pytest.mark.parametrize(
    ("text", "ms"),
    [("PT1H", 3_600_000), ("P1D", 86_400_000), ("PT0.5S", 500), ("P1DT1H1M1S", 90_061_000)],
)
def test_iso_durations(text: str, ms: int) -> None:
    assert parse_iso_duration_ms(text) == ms


@pytest.mark.parametrize("text", ["1h", "PT", "P", "-PT1H", "PT1X", ""])
def test_bad_iso_durations(text: str) -> None:
    with pytest.raises(ValueError):
        parse_iso_duration_ms(text)


def test_typed_accessors_check_the_declared_type() -> None:
    config = BrokerConfig.from_raw({"num.partitions": "3"})
    assert config.get_int("num.partitions") == 3
    assert config.get_bool("auto.create.topics.enable") is True
    assert config.get_list("listeners") == ["PLAINTEXT://127.0.0.1:9092"]
    with pytest.raises(KeyError, match=r"no\.such\.key"):
        config.get_int("no.such.key")
    with pytest.raises(TypeError, match=r"num\.partitions is a INT"):
        config.get_bool("num.partitions")


def test_config_int_reads_a_resolved_mapping_with_defaults() -> None:
    from shoal.config import TOPIC_KEYS, config_int, config_str

    assert config_int({"segment.bytes": 2048}, "segment.bytes") == 2048
    assert config_int({}, "segment.bytes") == TOPIC_KEYS["segment.bytes"].default
    assert config_int({"flush.ms": None}, "flush.ms") == TOPIC_KEYS["flush.ms"].default
    assert config_int({"producer.id.expiration.ms": 7}, "producer.id.expiration.ms") == 7
    assert config_str({}, "message.timestamp.type") == "CreateTime"


def test_config_int_refuses_unknown_keys_and_wrong_types() -> None:
    from shoal.config import config_int, config_str

    with pytest.raises(KeyError, match=r"segment\.byte"):
        config_int({}, "segment.byte")
    with pytest.raises(TypeError, match=r"message\.timestamp\.type is a STRING"):
        config_int({}, "message.timestamp.type")
    with pytest.raises(TypeError, match=r"segment\.bytes is a INT"):
        config_str({}, "segment.bytes")
