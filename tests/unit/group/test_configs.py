"""Share-group configs (group/configs.py): validation of every key against its fixed and
broker bounds, effective values, clamping when broker bounds change, DELETE."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from shoal.config import GROUP_KEYS, BrokerConfig
from shoal.group.configs import (
    KAFKA_42_GROUP_KEYS,
    SHOAL_GROUP_EXTENSIONS,
    GroupConfigError,
    GroupConfigs,
    effective_group_config,
    render_overrides,
    validate_overrides,
)
from shoal.protocol.errors import ErrorCode
from tests.support.docs_site import code_names, docsgen, table_rows

DEFAULT_BROKER = BrokerConfig.from_raw({})
LOCK = "share.record.lock.duration.ms"
SESSION = "share.session.timeout.ms"
HEARTBEAT = "share.heartbeat.interval.ms"
MIN_LOCK, MAX_LOCK = (
    "group.share.min.record.lock.duration.ms",
    "group.share.max.record.lock.duration.ms",
)
MIN_SESSION, MAX_SESSION = (
    "group.share.min.session.timeout.ms",
    "group.share.max.session.timeout.ms",
)
MIN_HEARTBEAT = "group.share.min.heartbeat.interval.ms"
MAX_HEARTBEAT = "group.share.max.heartbeat.interval.ms"
RESET_REFUSED = (
    "Invalid value {0} for configuration share.auto.offset.reset: Invalid value `{0}` for "
    "configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' "
    "or of the format 'by_duration:<PnDTnHnMn.nS>'."
)


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
        "shoal.share.redelivery.backoff.ms": 0,
        "shoal.share.redelivery.backoff.multiplier": 2.0,
        "shoal.share.redelivery.backoff.max.ms": 60_000,
        "shoal.share.delivery.paused": False,
        "shoal.share.delivery.order": "none",
        "shoal.share.delivery.delay.max.ms": 0,
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
    )
    effective = effective_group_config({}, config)
    assert effective[LOCK] == 20_000
    assert effective["share.delivery.count.limit"] == 3


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
        (SESSION, " 50000 ", 50_000),  # Kafka trims, and takes a sign
        (SESSION, "+50000", 50_000),
        ("share.auto.offset.reset", " earliest ", "earliest"),
        ("share.auto.offset.reset", "by_duration:pt1h", "by_duration:pt1h"),
    ],
)
def test_accepted_values_are_typed(key: str, raw: str, typed: Any) -> None:
    assert validate_overrides({key: raw}, DEFAULT_BROKER) == {key: typed}


@pytest.mark.parametrize(
    ("key", "raw", "says"),
    [
        # Kafka 4.2's keys, in Kafka's words (the reference broker's answers)
        (LOCK, "10000", f"{LOCK} must be greater than or equal to {MIN_LOCK}"),
        (LOCK, "70000", f"{LOCK} must be less than or equal to {MAX_LOCK}"),
        (LOCK, "999", f"Invalid value 999 for configuration {LOCK}: Value must be at least 1000"),
        ("share.auto.offset.reset", "by_duration:1h", RESET_REFUSED.format("by_duration:1h")),
        ("share.auto.offset.reset", "by_duration:-PT1H", RESET_REFUSED.format("by_duration:-PT1H")),
        ("share.auto.offset.reset", "by_duration:", RESET_REFUSED.format("by_duration:")),
        ("share.auto.offset.reset", "by_duration", RESET_REFUSED.format("by_duration")),
        ("share.auto.offset.reset", "EARLIEST", RESET_REFUSED.format("EARLIEST")),
        ("share.auto.offset.reset", "", RESET_REFUSED.format("")),
        (SESSION, "44999", f"{SESSION} must be greater than or equal to {MIN_SESSION}"),
        (SESSION, "60001", f"{SESSION} must be less than or equal to {MAX_SESSION}"),
        (SESSION, "0", f"Invalid value 0 for configuration {SESSION}: Value must be at least 1"),
        (HEARTBEAT, "4999", f"{HEARTBEAT} must be greater than or equal to {MIN_HEARTBEAT}"),
        (HEARTBEAT, "15001", f"{HEARTBEAT} must be less than or equal to {MAX_HEARTBEAT}"),
        (
            "share.isolation.level",
            "read_commit",
            "Invalid value read_commit for configuration share.isolation.level: "
            "String must be one of: read_committed, read_uncommitted",
        ),
        (LOCK, "abc", f"Invalid value abc for configuration {LOCK}: Not a number of type INT"),
        (LOCK, "1.5", f"Invalid value 1.5 for configuration {LOCK}: Not a number of type INT"),
        (LOCK, "1_000", f"Invalid value 1_000 for configuration {LOCK}: Not a number of type INT"),
        (LOCK, "", f"Invalid value  for configuration {LOCK}: Not a number of type INT"),
        (LOCK, str(2**31), f"Invalid value {2**31} for configuration {LOCK}: Not a number"),
        # Shoal's extension keys, in Shoal's words
        ("share.delivery.count.limit", "1", "below the minimum 2"),
        ("share.delivery.count.limit", "11", "in the range 2 to 10 inclusive"),
        ("share.partition.max.record.locks", "99", "below the minimum 100"),
        ("share.partition.max.record.locks", "4001", "in the range 100 to 4000 inclusive"),
        ("share.renew.acknowledge.enable", "1", "not a valid boolean"),
    ],
)
def test_refused_values_name_the_key(key: str, raw: str | None, says: str) -> None:
    error = refused({key: raw})
    assert error.key == key
    assert says in error.message
    if key in KAFKA_42_GROUP_KEYS:  # Kafka's words, whole
        assert error.message.startswith(says)


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


def test_session_timeout_must_exceed_kafkas_fixed_default_heartbeat_interval() -> None:
    """As Kafka 4.2: a key the group does not set is taken at Kafka's fixed default
    (5000 ms heartbeat, 45000 ms session), not at the broker's group.share.* value."""
    low_bounds = broker(
        group_share_min_session_timeout_ms=1_000,
        group_share_min_heartbeat_interval_ms=500,
        group_share_max_heartbeat_interval_ms=60_000,
        group_share_heartbeat_interval_ms=1_000,
        group_share_session_timeout_ms=10_000,
    )
    error = refused({SESSION: "2000"}, low_bounds)
    assert (error.key, error.message) == (SESSION, f"{SESSION} must be greater than {HEARTBEAT}")
    assert refused({SESSION: "5000"}, low_bounds).key == SESSION
    assert validate_overrides({SESSION: "5001"}, low_bounds) == {SESSION: 5_001}
    # Only the heartbeat interval set: compared with the fixed session default (45000).
    assert refused({HEARTBEAT: "45000"}, low_bounds).key == SESSION
    assert validate_overrides({HEARTBEAT: "44999"}, low_bounds) == {HEARTBEAT: 44_999}
    # Both set: compared with each other.
    assert refused({SESSION: "2000", HEARTBEAT: "2000"}, low_bounds).key == SESSION
    assert validate_overrides({SESSION: "2000", HEARTBEAT: "1000"}, low_bounds) == {
        SESSION: 2_000,
        HEARTBEAT: 1_000,
    }


def test_consumer_keys_fall_back_to_the_brokers_values() -> None:
    """Kafka 4.2 lays a group's set over the broker's consumer session timeout and
    heartbeat interval (GroupConfigManager.validate), so those are compared."""
    config = broker(
        group_consumer_min_session_timeout_ms=1_000,
        group_consumer_min_heartbeat_interval_ms=500,
        group_consumer_heartbeat_interval_ms=2_000,
    )
    session = "consumer.session.timeout.ms"
    error = refused({session: "2000"}, config)
    assert error.message == f"{session} must be greater than consumer.heartbeat.interval.ms"
    assert validate_overrides({session: "2001"}, config) == {session: 2_001}


def test_every_range_is_checked_even_of_keys_the_group_does_not_set() -> None:
    """A broker whose share-session range excludes Kafka's default refuses any set."""
    narrow = broker(
        group_share_max_session_timeout_ms=30_000,
        group_share_session_timeout_ms=30_000,
        group_share_min_session_timeout_ms=6_000,
    )
    error = refused({"share.isolation.level": "read_committed"}, narrow)
    assert error.message == f"{SESSION} must be less than or equal to {MAX_SESSION}"


def test_docs_list_every_group_key_with_its_status() -> None:
    """docs/reference/configs.md's generated group-key table (scripts/docsgen/) names
    every key, the extensions (and only they) marked as such with their reason."""
    doc = (Path(__file__).resolve().parents[3] / "docs" / "reference" / "configs.md").read_text()
    assert "<!-- shoal:generate configs-group -->" in doc
    rows = {code_names(r[0])[0]: r for r in table_rows(docsgen().generate("configs-group"))}
    assert sorted(rows) == sorted(GROUP_KEYS)
    for key, row in rows.items():
        marked = row[-1].startswith("**Shoal extension**")
        assert marked == (key in SHOAL_GROUP_EXTENSIONS), key
        if marked:
            assert SHOAL_GROUP_EXTENSIONS[key] in row[-1]


def test_the_keys_kafka_refuses_are_gone_or_shoal_extensions() -> None:
    """share.assignment.interval.ms and share.assignor.offload.enable, never read, are
    no longer accepted (Kafka 4.2 refuses them too)."""
    for name in ("share.assignment.interval.ms", "share.assignor.offload.enable"):
        assert refused({name: "1"}).message == f"Unknown group config name: {name}"
    assert set(GROUP_KEYS) == set(KAFKA_42_GROUP_KEYS) | set(SHOAL_GROUP_EXTENSIONS)
    assert not set(KAFKA_42_GROUP_KEYS) & set(SHOAL_GROUP_EXTENSIONS)


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
    """Delayed redelivery and paused delivery (Shoal's extensions): typed, bounded, finite, and
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
