"""Group configs (resource type GROUP) against Kafka 4.2: which keys each broker takes,
how it validates them, and what it describes (docs/reference/configs.md, "Group configs").

Both brokers run with the same lowered `group.share.*`, `group.consumer.*` and
`group.streams.*` minimums (`BOUNDS`), so that Kafka's session > heartbeat rule is
reachable (with its default minimums a share session timeout below 45 s is refused on
its range first), and with
broker heartbeat intervals that differ from Kafka's fixed group-config defaults, so
that the cases show which value Kafka's check assumes for a key the group does not
set: 5000 ms for `share.heartbeat.interval.ms` whatever the broker says, the broker's
value for `consumer.heartbeat.interval.ms`.

Each case sends the same IncrementalAlterConfigs (44) or AlterConfigs (33) to a fresh
group on both and compares the (error, message) and what the group describes after.
The one deliberate difference is `SHOAL_EXTENSIONS`: group keys Kafka 4.2 refuses as
unknown and Shoal keeps, each for the reason given.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from kio.schema.alter_configs.v2.request import AlterableConfig as AlterConfig
from kio.schema.alter_configs.v2.request import AlterConfigsRequest, AlterConfigsResource
from kio.static.primitive import i8

from shoal.group.configs import KAFKA_42_GROUP_KEYS, SHOAL_GROUP_EXTENSIONS
from tests.differential.conftest import Pair, unique
from tests.differential.test_configs import GROUP, NOT_GIVEN_TO_SHOAL, describe, incremental
from tests.support import kafka_reference
from tests.support.broker import BrokerProcess, running, wait_until
from tests.support.wire import call1

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
GROUP_CONFIG_SOURCE = 8

BOUNDS = (
    "group.share.min.session.timeout.ms=1000",
    "group.share.min.heartbeat.interval.ms=500",
    "group.share.heartbeat.interval.ms=1000",
    "group.share.session.timeout.ms=10000",
    "group.share.min.record.lock.duration.ms=1000",
    "group.consumer.min.session.timeout.ms=1000",
    "group.consumer.min.heartbeat.interval.ms=500",
    "group.consumer.heartbeat.interval.ms=2000",
    "group.streams.min.session.timeout.ms=1000",
)
"""The broker settings both brokers start with (see the module docstring)."""

SHOAL_EXTENSIONS = {
    "share.delivery.count.limit": "README: a group's own delivery limit (a later Kafka's key)",
    "share.partition.max.record.locks": "README: a group's own in-flight window (later Kafka)",
    "share.renew.acknowledge.enable": "turns RENEW acknowledgements off per group (later Kafka)",
    "errors.deadletterqueue.topic.name": "KIP-1191 dead-letter queue of the group",
    "errors.deadletterqueue.copy.record.enable": "KIP-1191: copy the record onto the DLQ",
    "shoal.share.redelivery.backoff.ms": "Shoal's delayed redelivery (README)",
    "shoal.share.redelivery.backoff.multiplier": "Shoal's delayed redelivery (README)",
    "shoal.share.redelivery.backoff.max.ms": "Shoal's delayed redelivery (README)",
    "shoal.share.delivery.paused": "`shoal share-groups --pause` (README)",
    "shoal.share.delivery.order": "Shoal's per-key ordered delivery (docs/design/key-order.md)",
    "shoal.share.delivery.delay.max.ms": (
        "Shoal's scheduled delivery (docs/design/scheduled-delivery.md)"
    ),
}
"""Group keys Kafka 4.2 refuses (`Unknown group config name`) and Shoal keeps on
purpose: each is read by the share-partitions. DescribeConfigs lists one only once the
group sets it, so Kafka's tools see Kafka's keys on a group that sets none."""

EXTENSION_VALUES = {
    "share.delivery.count.limit": "3",
    "share.partition.max.record.locks": "200",
    "share.renew.acknowledge.enable": "false",
    "errors.deadletterqueue.topic.name": "dlq-topic",
    "errors.deadletterqueue.copy.record.enable": "true",
    "shoal.share.redelivery.backoff.ms": "100",
    "shoal.share.redelivery.backoff.multiplier": "1.5",
    "shoal.share.redelivery.backoff.max.ms": "1000",
    "shoal.share.delivery.paused": "true",
    "shoal.share.delivery.order": "key",
    "shoal.share.delivery.delay.max.ms": "60000",
}

Ops = list[tuple[str, int, str | None]]

IAC_CASES: list[tuple[str, Ops, Ops]] = [
    # (case, ops set before (must be accepted), ops compared)
    ("share session alone, below the fixed 5000 ms heartbeat", [],
     [("share.session.timeout.ms", SET, "2000")]),
    ("share session at the fixed heartbeat", [], [("share.session.timeout.ms", SET, "5000")]),
    ("share session just above the fixed heartbeat", [],
     [("share.session.timeout.ms", SET, "5001")]),
    ("share pair valid", [],
     [("share.session.timeout.ms", SET, "2000"), ("share.heartbeat.interval.ms", SET, "1000")]),
    ("share pair equal", [],
     [("share.session.timeout.ms", SET, "2000"), ("share.heartbeat.interval.ms", SET, "2000")]),
    ("share heartbeat alone above the fixed session default", [],
     [("share.heartbeat.interval.ms", SET, "15000")]),
    ("share heartbeat above its broker maximum", [],
     [("share.heartbeat.interval.ms", SET, "15001")]),
    ("share heartbeat below its broker minimum", [],
     [("share.heartbeat.interval.ms", SET, "499")]),
    ("share session below its broker minimum", [], [("share.session.timeout.ms", SET, "999")]),
    ("share session above its broker maximum", [],
     [("share.session.timeout.ms", SET, "60001")]),
    ("share session zero", [], [("share.session.timeout.ms", SET, "0")]),
    ("share session not a number", [], [("share.session.timeout.ms", SET, "abc")]),
    ("share session beyond an int", [], [("share.session.timeout.ms", SET, "99999999999")]),
    ("share session empty", [], [("share.session.timeout.ms", SET, "")]),
    ("share session trimmed and signed", [], [("share.session.timeout.ms", SET, " +6000 ")]),
    ("deleting the heartbeat leaves the session below the fixed default",
     [("share.session.timeout.ms", SET, "2000"), ("share.heartbeat.interval.ms", SET, "1000")],
     [("share.heartbeat.interval.ms", DELETE, None)]),
    ("raising the heartbeat to the set session",
     [("share.session.timeout.ms", SET, "2000"), ("share.heartbeat.interval.ms", SET, "1000")],
     [("share.heartbeat.interval.ms", SET, "2000")]),
    ("lock below the fixed minimum", [], [("share.record.lock.duration.ms", SET, "999")]),
    ("lock at the lowered broker minimum", [], [("share.record.lock.duration.ms", SET, "1000")]),
    ("lock above the broker maximum", [],
     [("share.record.lock.duration.ms", SET, "3600001")]),
    ("reset earliest, trimmed", [], [("share.auto.offset.reset", SET, " earliest ")]),
    ("reset upper case", [], [("share.auto.offset.reset", SET, "EARLIEST")]),
    ("reset by duration", [], [("share.auto.offset.reset", SET, "by_duration:PT1H")]),
    ("reset by lower-case duration", [], [("share.auto.offset.reset", SET, "by_duration:pt1h")]),
    ("reset by negative duration", [], [("share.auto.offset.reset", SET, "by_duration:-PT1H")]),
    ("reset by empty duration", [], [("share.auto.offset.reset", SET, "by_duration:")]),
    ("isolation upper case", [], [("share.isolation.level", SET, "READ_COMMITTED")]),
    ("isolation read_committed", [], [("share.isolation.level", SET, "read_committed")]),
    ("consumer session at the broker's heartbeat", [],
     [("consumer.session.timeout.ms", SET, "2000")]),
    ("consumer session above the broker's heartbeat", [],
     [("consumer.session.timeout.ms", SET, "2001")]),
    ("consumer pair equal", [],
     [("consumer.session.timeout.ms", SET, "3000"), ("consumer.heartbeat.interval.ms", SET,
                                                     "3000")]),
    ("consumer heartbeat above its broker maximum", [],
     [("consumer.heartbeat.interval.ms", SET, "15001")]),
    ("consumer session above its broker maximum", [],
     [("consumer.session.timeout.ms", SET, "60001")]),
    ("streams session below its broker minimum", [],
     [("streams.session.timeout.ms", SET, "999")]),
    ("streams heartbeat above its broker maximum", [],
     [("streams.heartbeat.interval.ms", SET, "45000")]),
    ("streams standby replicas negative", [], [("streams.num.standby.replicas", SET, "-1")]),
    ("streams standby replicas above the broker maximum", [],
     [("streams.num.standby.replicas", SET, "3")]),
    ("unknown name before a bad value", [],
     [("share.session.timeout.ms", SET, "abc"), ("no.such", SET, "1")]),
    ("removed: share.assignment.interval.ms", [], [("share.assignment.interval.ms", SET, "0")]),
    ("removed: share.assignor.offload.enable", [],
     [("share.assignor.offload.enable", SET, "true")]),
    ("null value", [], [("share.session.timeout.ms", SET, None)]),
    ("append to an int", [], [("share.session.timeout.ms", APPEND, "6000")]),
    ("subtract from a string", [], [("share.auto.offset.reset", SUBTRACT, "latest")]),
    ("duplicate keys", [],
     [("share.session.timeout.ms", SET, "6000"), ("share.session.timeout.ms", SET, "7000")]),
    ("delete of a key never set", [], [("share.session.timeout.ms", DELETE, None)]),
    ("delete of an unknown key", [], [("no.such", DELETE, None)]),
    ("streams pair equal", [],
     [("streams.session.timeout.ms", SET, "5000"), ("streams.heartbeat.interval.ms", SET,
                                                    "5000")]),
    ("streams session alone below the fixed heartbeat", [],
     [("streams.session.timeout.ms", SET, "4000")]),
]  # fmt: skip

AC_CASES: list[tuple[str, dict[str, str | None]]] = [
    ("share session alone", {"share.session.timeout.ms": "2000"}),
    (
        "share pair valid",
        {"share.session.timeout.ms": "2000", "share.heartbeat.interval.ms": "1000"},
    ),
    ("consumer session at the broker's heartbeat", {"consumer.session.timeout.ms": "2000"}),
    ("lock below the fixed minimum", {"share.record.lock.duration.ms": "999"}),
    ("reset bogus", {"share.auto.offset.reset": "bogus"}),
    ("unknown key", {"no.such": "1"}),
    ("null value", {"share.session.timeout.ms": None}),
    ("replaces the earlier set", {"share.isolation.level": "read_committed"}),
]


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kafka_reference.KafkaBroker]:
    try:
        kafka_reference.install()
    except kafka_reference.ReferenceUnavailable as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no Kafka reference broker: {exc}")
    with kafka_reference.running(tmp_path_factory.mktemp("kafka") / "data", *BOUNDS) as broker:
        yield broker


@pytest.fixture(scope="module")
def shoal(
    kafka: kafka_reference.KafkaBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BrokerProcess]:
    """Shoal with the reference broker's static configuration, `BOUNDS` included."""
    given = {k: v for k, v in kafka.properties().items() if k not in NOT_GIVEN_TO_SHOAL}
    given.pop("log.dirs")
    yield from running(
        tmp_path_factory.mktemp("shoal") / "data", *(f"{k}={v}" for k, v in given.items())
    )


def own_configs(bootstrap: str, group_id: str) -> dict[str, str | None]:
    """The keys the group sets (source GROUP_CONFIG), as DescribeConfigs shows them."""
    return {
        name: config["entry"][0]
        for name, config in describe(bootstrap, GROUP, group_id).items()
        if config["entry"][1] == GROUP_CONFIG_SOURCE
    }


def settled_own(bootstrap: str, group_id: str, expected: dict[str, str | None]) -> dict[str, Any]:
    """`own_configs` once it shows `expected` (Kafka applies a change when its metadata
    log reaches it), or as it is after a few seconds."""
    wait_until(lambda: own_configs(bootstrap, group_id) == expected, timeout_s=10)
    return own_configs(bootstrap, group_id)


def alter_configs(
    bootstrap: str, group_id: str, configs: dict[str, str | None]
) -> tuple[str, str | None]:
    """AlterConfigs (33) of one group: its (error name, message)."""
    request = AlterConfigsRequest(
        resources=(
            AlterConfigsResource(
                resource_type=i8(GROUP),
                resource_name=group_id,
                configs=tuple(AlterConfig(name=k, value=v) for k, v in configs.items()),
            ),
        ),
        validate_only=False,
    )
    (result,) = call1(bootstrap, request).responses
    return result.error_code.name, result.error_message


def _applied(ops: Sequence[tuple[str, int, str | None]]) -> dict[str, str | None]:
    """What a group shows after `ops` were accepted on a group that set nothing."""
    shown: dict[str, str | None] = {}
    for key, op, value in ops:
        if op == SET:
            shown[key] = value.strip() if value is not None else None
        else:
            shown.pop(key, None)
    return shown


@pytest.mark.parametrize(("case", "before", "ops"), IAC_CASES, ids=[c[0] for c in IAC_CASES])
def test_incremental_alter_configs_of_a_group_as_kafka(
    pair: Pair, case: str, before: Ops, ops: Ops
) -> None:
    def scenario(bootstrap: str, group_id: str) -> tuple[Any, ...]:
        if before:
            assert incremental(bootstrap, (GROUP, group_id, before)) == [("none", None)]
            settled_own(bootstrap, group_id, _applied(before))
        (answer,) = incremental(bootstrap, (GROUP, group_id, ops))
        expected = _applied([*before, *ops]) if answer[0] == "none" else _applied(before)
        return answer, settled_own(bootstrap, group_id, expected)

    kafka, shoal = pair.run(scenario, unique("gcfg"))
    assert kafka == shoal, case


@pytest.mark.parametrize(("case", "configs"), AC_CASES, ids=[c[0] for c in AC_CASES])
def test_alter_configs_of_a_group_as_kafka(
    pair: Pair, case: str, configs: dict[str, str | None]
) -> None:
    """AlterConfigs replaces the group's whole set: the second call's keys stand alone."""

    def scenario(bootstrap: str, group_id: str) -> tuple[Any, ...]:
        first = {"share.auto.offset.reset": "earliest"}
        assert alter_configs(bootstrap, group_id, dict(first)) == ("none", None)
        settled_own(bootstrap, group_id, dict(first))
        answer = alter_configs(bootstrap, group_id, configs)
        expected: dict[str, str | None] = dict(configs) if answer[0] == "none" else dict(first)
        return answer, settled_own(bootstrap, group_id, expected)

    kafka, shoal = pair.run(scenario, unique("gcfg-ac"))
    assert kafka == shoal, case


def test_a_fresh_group_describes_kafkas_keys_alone(pair: Pair) -> None:
    def scenario(bootstrap: str, group_id: str) -> dict[str, Any]:
        return {name: c["entry"] for name, c in describe(bootstrap, GROUP, group_id).items()}

    kafka, shoal = pair.run(scenario, unique("gcfg-fresh"))
    assert kafka == shoal
    assert set(kafka) == set(KAFKA_42_GROUP_KEYS)
    # the broker's heartbeat interval is what a group gets, though not what the check assumes
    assert shoal["share.heartbeat.interval.ms"][:2] == ("1000", 5)


def test_the_listed_extensions_are_exactly_shoals(pair: Pair) -> None:
    """Every extension key: Kafka refuses it as unknown; Shoal takes it, and describes it
    once set (Shoal's documented extension, SHOAL_EXTENSIONS)."""
    assert set(SHOAL_EXTENSIONS) == set(SHOAL_GROUP_EXTENSIONS) == set(EXTENSION_VALUES)

    def scenario(bootstrap: str, group_id: str) -> tuple[Any, ...]:
        answers = {
            key: incremental(bootstrap, (GROUP, f"{group_id}-{n}", [(key, SET, value)]))[0]
            for n, (key, value) in enumerate(EXTENSION_VALUES.items())
        }
        described = {
            key: own_configs(bootstrap, f"{group_id}-{n}").get(key)
            for n, key in enumerate(EXTENSION_VALUES)
        }
        return answers, described

    (kafka_answers, kafka_described), (shoal_answers, shoal_described) = pair.run(
        scenario, unique("gcfg-ext")
    )
    assert kafka_answers == {
        key: ("invalid_config", f"Unknown group config name: {key}") for key in EXTENSION_VALUES
    }
    assert kafka_described == dict.fromkeys(EXTENSION_VALUES)
    assert shoal_answers == dict.fromkeys(EXTENSION_VALUES, ("none", None))
    assert shoal_described == EXTENSION_VALUES


def test_kafka_configs_tool_describes_a_group_alike(pair: Pair) -> None:
    """`kafka-configs --describe [--all] --entity-type groups`: the same lines on both;
    Shoal's extension, set on Shoal only, adds its one line."""

    def scenario(bootstrap: str, group_id: str) -> tuple[list[str], list[str]]:
        ops: Ops = [("share.isolation.level", SET, "read_committed")]
        assert incremental(bootstrap, (GROUP, group_id, ops)) == [("none", None)]
        settled_own(bootstrap, group_id, {"share.isolation.level": "read_committed"})
        outputs = []
        for extra in ([], ["--all"]):
            done = kafka_reference.run_tool(
                "kafka-configs", "--bootstrap-server", bootstrap, "--describe", *extra,
                "--entity-type", "groups", "--entity-name", group_id,
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
            outputs.append(done.stdout.splitlines())
        return outputs[0], outputs[1]

    group_id = unique("gcfg-tool")
    kafka = scenario(pair.kafka.bootstrap, group_id)
    shoal_ops: Ops = [("share.delivery.count.limit", SET, "3")]
    assert incremental(pair.shoal.bootstrap, (GROUP, group_id, shoal_ops)) == [("none", None)]
    shoal = scenario(pair.shoal.bootstrap, group_id)
    extension = (
        "  share.delivery.count.limit=3 sensitive=false "
        "synonyms={DYNAMIC_GROUP_CONFIG:share.delivery.count.limit=3}"
    )
    assert kafka[0] == [
        f"Dynamic configs for group {group_id} are:",
        "  share.isolation.level=read_committed sensitive=false "
        "synonyms={DYNAMIC_GROUP_CONFIG:share.isolation.level=read_committed}",
    ]
    assert [line for line in shoal[0] if line != extension] == kafka[0]
    assert [line for line in shoal[1] if line != extension] == kafka[1]
    assert extension in shoal[0] and extension in shoal[1]
