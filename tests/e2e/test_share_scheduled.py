"""Scheduled share delivery (`shoal.share.delivery.delay.max.ms` > 0, header
`shoal.deliver.at`, docs/design/scheduled-delivery.md) with unmodified confluent-kafka
ShareConsumers and a real broker process.

A record's due time is min(deliver.at, its timestamp + delay.max.ms); it must not be
received before then (the test and the broker share the machine's wall clock; a small
tolerance covers millisecond rounding) and must be received within a generous bound
after (parked fetches are woken when it comes due). Records without the header, with
a malformed one, or in a group with scheduled delivery off go at once. Delays survive
a broker SIGKILL; a due record whose consumer is SIGKILLed comes back; with key order
on too, a waiting record holds back the later records of its key.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType, KafkaException, ShareConsumer

from tests.support import metrics, processes
from tests.support.broker import BrokerProcess, running, wait_until
from tests.support.share_consumers import (
    SHARE_TEST_BROKER_OVERRIDES,
    alter_group_configs,
    describe,
    records_of,
    share_consumer,
    wait_for_members,
)
from tests.support.share_deliveries import produce_keyed
from tests.support.topics import create_topic, topic_name

REPO = Path(__file__).resolve().parents[2]
HEADER = "shoal.deliver.at"
EARLY_TOLERANCE_MS = 20
"""How much earlier than its due time a record may be received (ms rounding of the
broker's clock and the test's)."""
LATE_S = 8.0
"""How late after its due time (or after being produced, for a record that goes at
once) a record may be received on a loaded machine."""
DELAY_MAX_MS = 60_000
WOKEN_WITHIN_MS = 1_500
"""A due record reaches a consumer whose fetch is parked (for up to 5 s) within this."""


@pytest.fixture(scope="module")
def share_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(
        tmp_path_factory.mktemp("share-scheduled") / "data",
        *SHARE_TEST_BROKER_OVERRIDES,
        metrics.METRICS_OVERRIDE,
    )


@dataclass(frozen=True)
class Received:
    value: str
    offset: int
    key: str | None
    count: int
    timestamp_ms: int
    at_ms: float
    """Wall clock (epoch ms) when poll returned it."""


def now_ms() -> int:
    return int(time.time() * 1000)


def configure(broker: BrokerProcess, prefix: str, configs: Mapping[str, object]) -> tuple[str, str]:
    """A topic and a group with `configs` (and earliest reset)."""
    topic = topic_name(prefix)
    create_topic(broker.bootstrap, topic)
    group = topic_name(f"{prefix}-group")
    alter_group_configs(
        broker.bootstrap,
        group,
        {"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": 15_000, **configs},
    )
    return topic, group


def member(broker: BrokerProcess, group: str, topic: str, *, members: int = 1) -> ShareConsumer:
    """A ShareConsumer (explicit mode) of `group`, once the group has `members`."""
    consumer = share_consumer(broker.bootstrap, group, [topic], explicit=True)
    wait_for_members(broker.bootstrap, group, [consumer], topic, partitions=1, members=members)
    return consumer


def setup(
    broker: BrokerProcess, prefix: str, configs: Mapping[str, object]
) -> tuple[str, str, ShareConsumer]:
    """A topic, a group with `configs` (and earliest reset), and one member of it."""
    topic, group = configure(broker, prefix, configs)
    return topic, group, member(broker, group, topic)


def receive(
    consumer: ShareConsumer,
    count: int,
    *,
    timeout_s: float,
    into: list[Received] | None = None,
    tolerate_errors: bool = False,
) -> list[Received]:
    """Poll until `count` records arrived (ACCEPTing each); `tolerate_errors` rides
    out a broker restart."""
    got = [] if into is None else into
    deadline = time.monotonic() + timeout_s
    while len(got) < count:
        assert time.monotonic() < deadline, f"only {[r.value for r in got]} in {timeout_s} s"
        try:
            messages = records_of(consumer.poll(0.1))
        except KafkaException:
            if not tolerate_errors:
                raise
            continue
        at = time.time() * 1000
        for message in messages:
            key = message.key()
            got.append(
                Received(
                    (message.value() or b"").decode(),
                    int(message.offset() or 0),
                    None if key is None else key.decode(),
                    int(message.delivery_count() or 0),
                    int(message.timestamp()[1]),
                    at,
                )
            )
            consumer.acknowledge(message, AcknowledgeType.ACCEPT)
        if messages:
            try:
                result = consumer.commit_sync(15)
            except KafkaException:
                if not tolerate_errors:
                    raise
                continue
            assert tolerate_errors or all(e is None for e in result.values()), result
    return got


def check_due(record: Received, due_ms: float) -> None:
    assert record.at_ms >= due_ms - EARLY_TOLERANCE_MS, (
        f"{record.value} received {due_ms - record.at_ms:.0f} ms before it was due"
    )
    assert record.at_ms <= due_ms + LATE_S * 1000, (
        f"{record.value} received {record.at_ms - due_ms:.0f} ms after it was due"
    )
    print(f"{record.value}: received {record.at_ms - due_ms:.0f} ms after it was due")


def test_records_wait_for_their_time_and_the_rest_go_at_once(share_broker: BrokerProcess) -> None:
    """Two records scheduled 2.5 s and 4 s ahead wait (the share-partition's
    scheduled-records gauge shows 2 meanwhile); a plain record, one scheduled in the
    past and five with malformed headers go at once (the malformed ones counted)."""
    topic, group, consumer = setup(
        share_broker, "sched", {"shoal.share.delivery.delay.max.ms": DELAY_MAX_MS}
    )
    labels = {"group": group, "topic": topic, "partition": "0"}
    try:
        base = now_ms()
        later, latest = base + 2_500, base + 4_000
        malformed = [b"soon", b"12345678901234567890", b"-5", b"", b"1.5e12"]
        records: list[tuple[str | None, str, Mapping[str, bytes] | None]] = [
            (None, "later", {HEADER: str(later).encode()}),
            (None, "plain", None),
            (None, "latest", {HEADER: str(latest).encode()}),
            (None, "past", {HEADER: str(base - 10_000).encode()}),
        ]
        records += [(None, f"bad-{i}", {HEADER: raw}) for i, raw in enumerate(malformed)]
        produce_keyed(share_broker.bootstrap, topic, records)
        produced = now_ms()
        got = receive(consumer, len(records) - 2, timeout_s=30)
        samples = metrics.scrape(metrics.metrics_url(share_broker))
        assert now_ms() < later, "too slow for the waiting records to be seen waiting"
        assert metrics.value(samples, "shoal_share_partition_scheduled_records", labels) == 2
        receive(consumer, len(records), timeout_s=30, into=got)
        samples = metrics.scrape(metrics.metrics_url(share_broker))
    finally:
        consumer.close()
    assert metrics.value(samples, "shoal_share_partition_scheduled_records", labels) == 0
    malformed_total = metrics.value(
        samples, "shoal_share_partition_malformed_deliver_at_total", labels
    )
    assert malformed_total == len(malformed)
    by_value = {r.value: r for r in got}
    assert sorted(by_value) == sorted(v for _, v, _ in records)
    assert all(r.count == 1 for r in got)
    at_once = ["plain", "past"] + [f"bad-{i}" for i in range(len(malformed))]
    for value in at_once:
        record = by_value[value]
        assert record.at_ms < later, f"{value} waited for the scheduled records"
        assert record.at_ms <= produced + LATE_S * 1000
    check_due(by_value["later"], later)
    check_due(by_value["latest"], latest)
    assert [r.value for r in got][-2:] == ["later", "latest"]


def test_the_delay_is_capped_at_timestamp_plus_delay_max(share_broker: BrokerProcess) -> None:
    """delay.max.ms=2000: a record scheduled an hour ahead goes at its timestamp +
    2 s; one scheduled 1 s ahead goes at its own time (the smaller of the two)."""
    cap_ms = 2_000
    topic, _, consumer = setup(
        share_broker, "sched-cap", {"shoal.share.delivery.delay.max.ms": cap_ms}
    )
    try:
        base = now_ms()
        soon = base + 1_000
        produce_keyed(
            share_broker.bootstrap,
            topic,
            [
                (None, "far", {HEADER: str(base + 3_600_000).encode()}),
                (None, "soon", {HEADER: str(soon).encode()}),
            ],
        )
        got = receive(consumer, 2, timeout_s=30)
    finally:
        consumer.close()
    by_value = {r.value: r for r in got}
    check_due(by_value["far"], by_value["far"].timestamp_ms + cap_ms)
    check_due(by_value["soon"], min(soon, by_value["soon"].timestamp_ms + cap_ms))


def test_a_group_without_scheduled_delivery_ignores_the_header(
    share_broker: BrokerProcess,
) -> None:
    """delay.max.ms=0 (the default): the header is not read, as in Kafka."""
    topic, _, consumer = setup(share_broker, "sched-off", {})
    try:
        base = now_ms()
        produce_keyed(
            share_broker.bootstrap, topic, [(None, "ahead", {HEADER: str(base + 60_000).encode()})]
        )
        (record,) = receive(consumer, 1, timeout_s=30)
    finally:
        consumer.close()
    assert record.at_ms < base + 60_000 - 50_000, "the header was obeyed with scheduling off"


def test_waiting_records_keep_waiting_across_a_broker_sigkill(
    share_broker: BrokerProcess,
) -> None:
    """The broker is SIGKILLed and restarted on its data directory while records
    wait: they still come no earlier than their time (read again from the header),
    and they do come."""
    broker = share_broker
    topic, _, consumer = setup(
        broker, "sched-crash", {"shoal.share.delivery.delay.max.ms": DELAY_MAX_MS}
    )
    try:
        base = now_ms()
        due = {"w1": base + 5_000, "w2": base + 6_500}
        produce_keyed(
            broker.bootstrap,
            topic,
            [
                (None, "w1", {HEADER: str(due["w1"]).encode()}),
                (None, "now", None),
                (None, "w2", {HEADER: str(due["w2"]).encode()}),
            ],
        )
        got = receive(consumer, 1, timeout_s=10)
        assert [r.value for r in got] == ["now"]
        broker.kill()
        killed = now_ms()
        broker.start()
        assert now_ms() < due["w1"], "the restart took too long for this test to mean anything"
        receive(consumer, 3, timeout_s=40, into=got, tolerate_errors=True)
    finally:
        consumer.close()
    by_value = {r.value: r for r in got}
    assert killed < due["w1"]
    check_due(by_value["w1"], due["w1"])
    check_due(by_value["w2"], due["w2"])


def test_a_due_record_held_by_a_killed_consumer_comes_back(
    share_broker: BrokerProcess,
) -> None:
    """A consumer process (the group's only member) takes a scheduled record once it
    is due and is SIGKILLed holding it; a second member gets it again (delivery count
    2) soon after: only the first delivery waits."""
    bootstrap = share_broker.bootstrap
    topic, group = configure(
        share_broker, "sched-kill", {"shoal.share.delivery.delay.max.ms": DELAY_MAX_MS}
    )
    python_path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.share_child",
            "--bootstrap",
            bootstrap,
            "--group",
            group,
            "--topic",
            topic,
            "--count",
            "1",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": python_path},
    )
    survivor = None
    try:
        assert wait_until(lambda: len(describe(bootstrap, group).members) == 1, timeout_s=60)
        due = now_ms() + 2_000
        produce_keyed(bootstrap, topic, [(None, "due", {HEADER: str(due).encode()})])
        assert child.stdout is not None
        line = child.stdout.readline()
        held_at = now_ms()
        assert json.loads(line) == [[0, 0, 1]], line
        assert held_at >= due - EARLY_TOLERANCE_MS, f"held {due - held_at} ms before due"
        survivor = member(share_broker, group, topic, members=2)
        processes.kill(child)
        killed = now_ms()
        (again,) = receive(survivor, 1, timeout_s=30)
        assert (again.value, again.offset, again.count) == ("due", 0, 2)
        assert again.at_ms - killed < LATE_S * 1000
    finally:
        processes.kill(child)
        if child.stdout is not None:
            child.stdout.close()
        if survivor is not None:
            survivor.close()


def test_a_waiting_record_holds_back_its_key(share_broker: BrokerProcess) -> None:
    """Key order and scheduling together: k@0 waits 2.5 s; k@1 (no header) waits
    for it; j@2 (another key) goes at once."""
    topic, _, consumer = setup(
        share_broker,
        "sched-key",
        {"shoal.share.delivery.delay.max.ms": DELAY_MAX_MS, "shoal.share.delivery.order": "key"},
    )
    try:
        due = now_ms() + 2_500
        produce_keyed(
            share_broker.bootstrap,
            topic,
            [
                ("k", "k0", {HEADER: str(due).encode()}),
                ("k", "k1", None),
                ("j", "j2", None),
            ],
        )
        got = receive(consumer, 3, timeout_s=30)
    finally:
        consumer.close()
    by_value = {r.value: r for r in got}
    assert by_value["j2"].at_ms < due
    check_due(by_value["k0"], due)
    check_due(by_value["k1"], due)
    assert by_value["k1"].at_ms >= by_value["k0"].at_ms


def test_a_waiting_record_holds_back_its_key_across_a_broker_sigkill(
    share_broker: BrokerProcess,
) -> None:
    """Key order and scheduling, and the broker SIGKILLed while k@0 waits (k@1 held
    back behind it, j@2 and j@3 accepted, so the group's state has offsets after the
    waiting ones): after the restart the keys and the due time are read again, and
    k@1 still waits for k@0."""
    broker = share_broker
    topic, _, consumer = setup(
        broker,
        "sched-key-crash",
        {"shoal.share.delivery.delay.max.ms": DELAY_MAX_MS, "shoal.share.delivery.order": "key"},
    )
    try:
        due = now_ms() + 6_000
        produce_keyed(
            broker.bootstrap,
            topic,
            [
                ("k", "k0", {HEADER: str(due).encode()}),
                ("k", "k1", None),
                ("j", "j2", None),
                ("j", "j3", None),
            ],
        )
        got = receive(consumer, 2, timeout_s=10)
        assert sorted(r.value for r in got) == ["j2", "j3"]
        quiet_until = time.monotonic() + 1.0
        while time.monotonic() < quiet_until:
            assert records_of(consumer.poll(0.1)) == [], "k@0 or k@1 went early"
        broker.kill()
        broker.start()
        assert now_ms() < due, "the restart took too long for this test to mean anything"
        receive(consumer, 4, timeout_s=40, into=got, tolerate_errors=True)
    finally:
        consumer.close()
    by_value = {r.value: r for r in got}
    check_due(by_value["k0"], due)
    check_due(by_value["k1"], due)
    assert by_value["k1"].at_ms >= by_value["k0"].at_ms


def test_waiting_records_take_no_room_in_the_window(share_broker: BrokerProcess) -> None:
    """The group's window is 100 records (share.partition.max.record.locks); 150
    records wait 3 s and 50 plain ones follow them in the log. The plain ones go at
    once (waiting records hold no lock and take no room); the waiting ones come at
    their time."""
    topic, _, consumer = setup(
        share_broker,
        "sched-room",
        {
            "shoal.share.delivery.delay.max.ms": DELAY_MAX_MS,
            "share.partition.max.record.locks": 100,
        },
    )
    try:
        due = now_ms() + 3_000
        waiting = [(None, f"w{i}", {HEADER: str(due).encode()}) for i in range(150)]
        plain: list[tuple[str | None, str, Mapping[str, bytes] | None]] = [
            (None, f"p{i}", None) for i in range(50)
        ]
        produce_keyed(share_broker.bootstrap, topic, [*waiting, *plain], batch_records=10)
        got = receive(consumer, 200, timeout_s=30)
    finally:
        consumer.close()
    plain_got = [r for r in got if r.value.startswith("p")]
    assert len(plain_got) == 50
    assert all(r.at_ms < due for r in plain_got), "plain records waited behind waiting ones"
    waited = [r for r in got if r.value.startswith("w")]
    assert len(waited) == 150 and all(r.count == 1 for r in waited)
    check_due(min(waited, key=lambda r: r.at_ms), due)
    check_due(max(waited, key=lambda r: r.at_ms), due)


def test_a_parked_fetch_is_woken_when_a_record_comes_due(share_broker: BrokerProcess) -> None:
    """The consumer's ShareFetch waits up to 5 s at the broker (fetch.wait.max.ms);
    a record due 2 s after it is produced comes within a second of its time, not when
    the fetch would have run out: the broker wakes the parked fetch when it comes due."""
    topic, group = configure(
        share_broker, "sched-wake", {"shoal.share.delivery.delay.max.ms": DELAY_MAX_MS}
    )
    consumer = share_consumer(
        share_broker.bootstrap, group, [topic], explicit=True, fetch_wait_max_ms=5_000
    )
    try:
        wait_for_members(share_broker.bootstrap, group, [consumer], topic, partitions=1)
        due = now_ms() + 2_000
        produce_keyed(share_broker.bootstrap, topic, [(None, "due", {HEADER: str(due).encode()})])
        (record,) = receive(consumer, 1, timeout_s=30)
    finally:
        consumer.close()
    check_due(record, due)
    assert record.at_ms - due < WOKEN_WITHIN_MS, "the parked fetch was not woken"


def test_due_records_are_acquired_within_the_lock_limit(share_broker: BrokerProcess) -> None:
    """Waiting records hold no lock, but once due they are held like any other:
    share.partition.max.record.locks (100) must bound a poll of 600 records that all
    came due at once (MaxRecords 1000)."""
    topic, group = configure(
        share_broker,
        "sched-cap-locks",
        {
            "shoal.share.delivery.delay.max.ms": DELAY_MAX_MS,
            "share.partition.max.record.locks": 100,
        },
    )
    consumer = share_consumer(
        share_broker.bootstrap, group, [topic], explicit=True, max_poll_records=1000
    )
    try:
        wait_for_members(share_broker.bootstrap, group, [consumer], topic, partitions=1)
        due = str(now_ms() + 2_000).encode()
        produce_keyed(
            share_broker.bootstrap,
            topic,
            [(None, f"w{i}", {HEADER: due}) for i in range(600)],
            batch_records=10,
        )
        deadline = time.monotonic() + 30
        polled: list[object] = []
        while not polled:
            assert time.monotonic() < deadline, "nothing came"
            polled = list(records_of(consumer.poll(0.2)))
    finally:
        consumer.close()
    # (up to one more log batch of 10: acquisitions take whole batches, as Kafka's do)
    assert len(polled) <= 110, f"one poll holds {len(polled)} records, the limit is 100"
