"""Share-group configs (group/configs.py): validation of every key against its fixed and
broker bounds, effective values, clamping when broker bounds change, DELETE."""

from __future__ import annotations

from typing import Any

import pytest

from shoal.config import GROUP_KEYS, BrokerConfig
from shoal.group.configs import (
    GroupConfigError,
    GroupConfigs,
    effective_group_config,
    render_overrides,
    validate_overrides,
)
from shoal.protocol.errors import ErrorCode

DEFAULT_BROKER = BrokerConfig.from_raw({})
LOCK = "share.record.lock.duration.ms"
SESSION = "share.session.timeout.ms"
HEARTBEAT = "share.heartbeat.interval.ms"


def broker(**raw: object) -> BrokerConfig:
    """A broker config with keys given as `group_share_x=...` for `group.share.x`."""
    return BrokerConfig.from_raw({k.replace("_", "."): v for k, v in raw.items()})


def refused(proposed: dict[str, Any], config: BrokerConfig = DEFAULT_BROKER) -> GroupConfigError:
    with pytest.raises(GroupConfigError) as caught:
        validate_overrides(proposed, config)
    assert caught.value.code is ErrorCode.invalid_config
    return caught.value


def test_a_group_that_sets_nothing_gets_the_broker_values_and_key_defaults() -> None:
    assert effective_group_config({}, DEFAULT_BROKER) == {
        "share.session.timeout.ms": 45_000,
        "share.heartbeat.interval.ms": 5_000,
        "share.record.lock.duration.ms": 30_000,
        "share.auto.offset.reset": "latest",
        "share.isolation.level": "read_uncommitted",
        "share.delivery.count.limit": 5,
        "share.partition.max.record.locks": 2_000,
        "share.renew.acknowledge.enable": True,
        "share.assignment.interval.ms": 0,
        "share.assignor.offload.enable": True,
        "shoal.share.redelivery.backoff.ms": 0,
        "shoal.share.redelivery.backoff.multiplier": 2.0,
        "shoal.share.redelivery.backoff.max.ms": 60_000,
        "shoal.share.delivery.paused": False,
        "errors.deadletterqueue.topic.name": "",
        "errors.deadletterqueue.copy.record.enable": False,
        "consumer.session.timeout.ms": 45_000,
        "consumer.heartbeat.interval.ms": 5_000,
        "streams.heartbeat.interval.ms": 5_000,
        "streams.initial.rebalance.delay.ms": 3_000,
        "streams.num.standby.replicas": 0,
        "streams.session.timeout.ms": 45_000,
    }
    assert set(GroupConfigs().effective("never-seen", DEFAULT_BROKER)) == set(GROUP_KEYS)


def test_broker_values_are_the_defaults_of_groups() -> None:
    config = broker(
        group_share_record_lock_duration_ms=20_000,
        group_share_delivery_count_limit=3,
        group_share_assignment_interval_ms=250,
    )
    effective = effective_group_config({}, config)
    assert effective[LOCK] == 20_000
    assert effective["share.delivery.count.limit"] == 3
    assert effective["share.assignment.interval.ms"] == 250


@pytest.mark.parametrize(
    ("key", "raw", "typed"),
    [
        (SESSION, "45000", 45_000),
        (SESSION, "60000", 60_000),
        (HEARTBEAT, "5000", 5_000),
        (HEARTBEAT, "15000", 15_000),
        (LOCK, "15000", 15_000),
        (LOCK, "60000", 60_000),
        ("share.auto.offset.reset", "earliest", "earliest"),
        ("share.auto.offset.reset", "latest", "latest"),
        ("share.auto.offset.reset", "by_duration:PT1H", "by_duration:PT1H"),
        ("share.auto.offset.reset", "by_duration:P1DT0.5S", "by_duration:P1DT0.5S"),
        ("share.isolation.level", "read_committed", "read_committed"),
        ("share.delivery.count.limit", "2", 2),
        ("share.delivery.count.limit", "10", 10),
        ("share.partition.max.record.locks", "100", 100),
        ("share.partition.max.record.locks", "4000", 4_000),
        ("share.renew.acknowledge.enable", "false", False),
        ("share.renew.acknowledge.enable", "TRUE", True),
        ("share.assignment.interval.ms", "0", 0),
        ("share.assignment.interval.ms", "5000", 5_000),
        ("share.assignor.offload.enable", "false", False),
    ],
)
def test_accepted_values_are_typed(key: str, raw: str, typed: Any) -> None:
    assert validate_overrides({key: raw}, DEFAULT_BROKER) == {key: typed}


@pytest.mark.parametrize(
    ("key", "raw", "says"),
    [
        # conformance 78: a lock below the broker minimum, an unparsable by_duration
        (LOCK, "10000", "share.record.lock.duration.ms must be in the range 15000 to 60000"),
        (LOCK, "70000", "in the range 15000 to 60000 inclusive"),
        (LOCK, "999", "below the minimum 1000"),
        ("share.auto.offset.reset", "by_duration:1h", "not an ISO-8601 duration"),
        ("share.auto.offset.reset", "by_duration:-PT1H", "negative"),
        ("share.auto.offset.reset", "by_duration:", "not an ISO-8601 duration"),
        ("share.auto.offset.reset", "by_duration", "must be latest, earliest or by_duration"),
        ("share.auto.offset.reset", "hello", "must be latest, earliest or by_duration"),
        (SESSION, "44999", "share.session.timeout.ms must be in the range 45000 to 60000"),
        (SESSION, "60001", "in the range 45000 to 60000"),
        (SESSION, "0", "below the minimum 1"),
        (HEARTBEAT, "4999", "share.heartbeat.interval.ms must be in the range 5000 to 15000"),
        (HEARTBEAT, "15001", "in the range 5000 to 15000"),
        ("share.delivery.count.limit", "1", "below the minimum 2"),
        ("share.delivery.count.limit", "11", "in the range 2 to 10 inclusive"),
        ("share.partition.max.record.locks", "99", "below the minimum 100"),
        ("share.partition.max.record.locks", "4001", "in the range 100 to 4000 inclusive"),
        ("share.isolation.level", "read_commit", "not one of read_committed, read_uncommitted"),
        ("share.renew.acknowledge.enable", "1", "not a valid boolean"),
        ("share.assignor.offload.enable", "maybe", "not a valid boolean"),
        ("share.assignment.interval.ms", "-1", "below the minimum 0"),
        (LOCK, "abc", "not a valid int"),
        (LOCK, "1.5", "not a valid int"),
        (LOCK, "", "not a valid int"),
        (LOCK, str(2**31), "does not fit an int"),
        (LOCK, None, "a value is required"),
    ],
)
def test_refused_values_name_the_key(key: str, raw: str | None, says: str) -> None:
    error = refused({key: raw})
    assert error.key == key
    assert key in error.message
    assert says in error.message


@pytest.mark.parametrize(
    "name",
    [
        "no.such.key",
        "errors.deadletterqueue.group.enable",  # the KIP-1191 topic key, not a group one
        "share.session.timeout",  # a misspelt group key
        "group.share.record.lock.duration.ms",  # the broker key, not the group key
    ],
)
def test_unknown_names_are_refused_by_name(name: str) -> None:
    error = refused({"share.auto.offset.reset": "earliest", name: "1"})
    assert error.key == name
    assert error.message == f"Unknown group config name: {name}"


def test_names_are_checked_before_values() -> None:
    error = refused({LOCK: "1", "no.such.key": "1"})
    assert error.key == "no.such.key"


def test_one_bad_value_refuses_the_whole_set() -> None:
    error = refused({"share.auto.offset.reset": "earliest", LOCK: "1000", HEARTBEAT: "6000"})
    assert error.key == LOCK


def test_session_timeout_must_exceed_the_effective_heartbeat_interval() -> None:
    low_bounds = broker(
        group_share_min_session_timeout_ms=1_000,
        group_share_min_heartbeat_interval_ms=1_000,
        group_share_max_heartbeat_interval_ms=60_000,
    )
    # Only the session timeout set: compared with the broker's heartbeat interval (5000).
    error = refused({SESSION: "5000"}, low_bounds)
    assert error.key == SESSION
    assert "must be greater than share.heartbeat.interval.ms" in error.message
    assert validate_overrides({SESSION: "5001"}, low_bounds) == {SESSION: 5_001}
    # Only the heartbeat interval set: compared with the broker's session timeout (45000).
    assert refused({HEARTBEAT: "45000"}, low_bounds).key == SESSION
    assert validate_overrides({HEARTBEAT: "44999"}, low_bounds) == {HEARTBEAT: 44_999}
    # Both set: compared with each other.
    assert refused({SESSION: "8000", HEARTBEAT: "8000"}, low_bounds).key == SESSION
    assert validate_overrides({SESSION: "8000", HEARTBEAT: "7000"}, low_bounds) == {
        SESSION: 8_000,
        HEARTBEAT: 7_000,
    }


def test_lowering_the_broker_minimum_admits_short_locks() -> None:
    assert refused({LOCK: "1000"}).key == LOCK
    short = broker(group_share_min_record_lock_duration_ms=1_000)
    assert validate_overrides({LOCK: "1000"}, short) == {LOCK: 1_000}


def test_validation_uses_the_broker_config_it_is_given() -> None:
    wide = broker(
        group_share_max_delivery_count_limit=25,
        group_share_max_partition_max_record_locks=10_000,
    )
    proposed = {"share.delivery.count.limit": "20", "share.partition.max.record.locks": "8000"}
    assert refused(proposed).key == "share.delivery.count.limit"
    assert validate_overrides(proposed, wide) == {
        "share.delivery.count.limit": 20,
        "share.partition.max.record.locks": 8_000,
    }


def test_overrides_are_clamped_into_current_broker_bounds() -> None:
    overrides = validate_overrides(
        {LOCK: "60000", SESSION: "45000", "share.delivery.count.limit": "10"}, DEFAULT_BROKER
    )
    assert effective_group_config(overrides, DEFAULT_BROKER)[LOCK] == 60_000
    narrower = broker(
        group_share_max_record_lock_duration_ms=45_000,
        group_share_session_timeout_ms=50_000,
        group_share_min_session_timeout_ms=50_000,
        group_share_max_delivery_count_limit=6,
    )
    effective = effective_group_config(overrides, narrower)
    assert effective[LOCK] == 45_000  # clamped down to the new maximum
    assert effective[SESSION] == 50_000  # clamped up to the new minimum
    assert effective["share.delivery.count.limit"] == 6
    assert overrides[LOCK] == 60_000  # the stored override itself is kept


def test_delete_restores_the_broker_default() -> None:
    configs = GroupConfigs().with_overrides(
        "g", {LOCK: 45_000, "share.isolation.level": "read_uncommitted"}
    )
    configs = configs.with_overrides("g", {"share.isolation.level": "read_committed"})
    assert configs.overrides("g") == {"share.isolation.level": "read_committed"}
    assert configs.effective("g", DEFAULT_BROKER)[LOCK] == 30_000
    emptied = configs.with_overrides("g", {})
    assert emptied.overrides("g") == {}
    assert emptied.group_ids() == []
    assert emptied.effective("g", DEFAULT_BROKER) == GroupConfigs().effective("g", DEFAULT_BROKER)


def test_group_configs_is_an_immutable_value() -> None:
    empty = GroupConfigs()
    one = empty.with_overrides("g1", {LOCK: 20_000})
    two = one.with_overrides("g2", {"share.auto.offset.reset": "earliest"})
    assert len(empty) == 0 and len(one) == 1 and len(two) == 2
    assert one.overrides("g2") == {}
    assert two.group_ids() == ["g1", "g2"]
    assert two == GroupConfigs(
        {"g2": {"share.auto.offset.reset": "earliest"}, "g1": {LOCK: 20_000}}
    )
    assert two != one
    with pytest.raises(TypeError):
        two.overrides("g1")[LOCK] = 1  # type: ignore[index]
    source = {LOCK: 20_000}
    held = GroupConfigs({"g": source})
    source[LOCK] = 1
    assert held.overrides("g") == {LOCK: 20_000}  # copied, not aliased


def test_unknown_keys_never_enter_a_group_configs() -> None:
    with pytest.raises(AssertionError):
        GroupConfigs({"g": {"no.such.key": 1}})
    with pytest.raises(AssertionError):
        GroupConfigs({"": {LOCK: 20_000}})


def test_render_overrides_gives_the_strings_kafka_shows() -> None:
    typed = validate_overrides(
        {
            LOCK: "20000",
            "share.renew.acknowledge.enable": "FALSE",
            "share.isolation.level": "read_committed",
        },
        DEFAULT_BROKER,
    )
    assert render_overrides(typed) == {
        LOCK: "20000",
        "share.renew.acknowledge.enable": "false",
        "share.isolation.level": "read_committed",
    }
    assert validate_overrides(render_overrides(typed), DEFAULT_BROKER) == typed


def test_the_shoal_extension_keys_are_validated_with_invalid_config() -> None:
    """Delayed redelivery and paused delivery (issue 16): typed, bounded, finite, and
    the backoff no larger than its maximum (either side from its default)."""
    backoff = "shoal.share.redelivery.backoff.ms"
    multiplier = "shoal.share.redelivery.backoff.multiplier"
    backoff_max = "shoal.share.redelivery.backoff.max.ms"
    paused = "shoal.share.delivery.paused"
    assert validate_overrides(
        {backoff: "1000", multiplier: "1.5", backoff_max: "8000", paused: "true"}, DEFAULT_BROKER
    ) == {backoff: 1000, multiplier: 1.5, backoff_max: 8000, paused: True}
    for proposed, key in [
        ({backoff: "-1"}, backoff),
        ({backoff: "soon"}, backoff),
        ({multiplier: "0.5"}, multiplier),
        ({multiplier: "nan"}, multiplier),
        ({multiplier: "inf"}, multiplier),
        ({backoff_max: "-5"}, backoff_max),
        ({paused: "maybe"}, paused),
        ({backoff: "5000", backoff_max: "4000"}, backoff_max),
        ({backoff: "120000"}, backoff_max),  # above the default maximum of 60 s
    ]:
        assert refused(proposed).key == key, proposed
    assert render_overrides({multiplier: 2.0, paused: True}) == {multiplier: "2.0", paused: "true"}


@pytest.mark.parametrize(
    ("key", "raw", "message"),
    [
        (
            "consumer.session.timeout.ms",
            "44999",
            "consumer.session.timeout.ms must be greater than or equal to "
            "group.consumer.min.session.timeout.ms",
        ),
        (
            "consumer.heartbeat.interval.ms",
            "15001",
            "consumer.heartbeat.interval.ms must be less than or equal to "
            "group.consumer.max.heartbeat.interval.ms",
        ),
    ],
)
def test_consumer_group_keys_are_bounded_by_the_broker_in_kafkas_words(
    key: str, raw: str, message: str
) -> None:
    error = refused({key: raw})
    assert (error.key, error.message) == (key, message)


def test_consumer_group_keys_within_the_broker_bounds_are_kept() -> None:
    typed = validate_overrides(
        {"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "6000"},
        DEFAULT_BROKER,
    )
    assert typed == {"consumer.session.timeout.ms": 50_000, "consumer.heartbeat.interval.ms": 6_000}
