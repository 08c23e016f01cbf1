"""Delayed redelivery and paused delivery (Shoal's share-group extensions) end to end:
a real broker process, unmodified confluent-kafka ShareConsumers, and `shoal
share-groups --pause/--resume/--describe` as a subprocess.

Times are measured on the test's side with generous upper bounds; lower bounds hold
by causality (the broker releases a record only after the test received it, and
cannot deliver it again before its backoff has passed).
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import AcknowledgeType, ShareConsumer

from tests.support.broker import BrokerProcess, running, wait_until
from tests.support.cli import shoal
from tests.support.share_consumers import (
    SHARE_TEST_BROKER_OVERRIDES,
    alter_group_configs,
    first_batch,
    produce_values,
    records_of,
    share_consumer,
    share_group,
)
from tests.support.topics import create_topic, topic_name

BASE_MS = 100
"""Backoff of the end-to-end check (the core test uses 1 s, exactly, on the manual
clock); 100 ms doubling gives t, t+0.1 s, t+0.3 s, t+0.7 s."""
SLACK_S = 5.0
"""Upper bound on how late a delivery may come after its backoff (shared machine)."""
QUIET_S = 2.0
"""How long a paused group is watched for deliveries (librdkafka's fetch wait is
0.5 s, so four fetch waits)."""


@pytest.fixture(scope="module")
def share_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(
        tmp_path_factory.mktemp("share-redelivery") / "data", *SHARE_TEST_BROKER_OVERRIDES
    )


def test_a_released_record_comes_back_after_a_growing_backoff(
    share_broker: BrokerProcess,
) -> None:
    broker = share_broker
    topic = topic_name("backoff")
    create_topic(broker.bootstrap, topic, partitions=1)
    group = share_group(broker.bootstrap, topic_name("backoff-group"))
    alter_group_configs(
        broker.bootstrap,
        group,
        {
            "shoal.share.redelivery.backoff.ms": BASE_MS,
            "shoal.share.redelivery.backoff.multiplier": 2,
        },
    )
    produce_values(broker.bootstrap, topic, [b"again"])
    consumer = share_consumer(broker.bootstrap, group, [topic], explicit=True)
    try:
        received: list[float] = []
        for delivery in range(1, 5):
            (message,) = first_batch(consumer)
            received.append(time.monotonic())
            assert (message.offset(), message.delivery_count()) == (0, delivery)
            kind = AcknowledgeType.RELEASE if delivery < 4 else AcknowledgeType.ACCEPT
            consumer.acknowledge(message, kind)
            result = consumer.commit_sync(30)
            assert result and all(error is None for error in result.values()), result
    finally:
        consumer.close()
    gaps = [later - earlier for earlier, later in itertools.pairwise(received)]
    for gap, delay_s in zip(gaps, (0.1, 0.2, 0.4), strict=True):
        assert delay_s - 0.005 <= gap <= delay_s + SLACK_S, (gaps, delay_s)


def _sg(broker: BrokerProcess, *args: str) -> tuple[int, str, str]:
    done = shoal("share-groups", "--bootstrap-server", broker.bootstrap, *args)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


def _quiet(consumer: ShareConsumer, seconds: float) -> list[int]:
    """Poll for `seconds`; the offsets delivered meanwhile (none expected)."""
    offsets = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        offsets += [int(m.offset() or 0) for m in records_of(consumer.poll(0.2))]
    return offsets


def _loads(broker: BrokerProcess, group: str) -> int:
    """How often a share-partition of `group` was loaded (by a ShareFetch)."""
    return len(re.findall(rf"share-partition {re.escape(group)}:\S+ loaded", broker.log_text()))


def test_pause_survives_a_restart_and_resume_delivers_at_once(
    share_broker: BrokerProcess,
) -> None:
    """Pause stops deliveries within a fetch wait (acknowledgements still work),
    holds across a SIGKILL restart while the member keeps fetching, shows in
    --describe; resume delivers at once. (A resume is the DELETE of the group config,
    whose durability tests/wire/test_group_configs.py checks across a crash.)"""
    broker = share_broker
    topic = topic_name("pause")
    create_topic(broker.bootstrap, topic, partitions=1)
    group = share_group(broker.bootstrap, topic_name("pause-group"))
    produce_values(broker.bootstrap, topic, [b"a0", b"a1", b"a2"])
    consumer = share_consumer(broker.bootstrap, group, [topic], explicit=True)
    try:
        before = first_batch(consumer)
        assert [m.offset() for m in before] == [0, 1, 2]

        code, out, err = _sg(broker, "--pause", "--group", group)
        assert code == 0, err
        assert f"Share group '{group}' paused" in out
        # Acknowledgements still work while paused.
        for message in before:
            consumer.acknowledge(message, AcknowledgeType.ACCEPT)
        result = consumer.commit_sync(30)
        assert result and all(error is None for error in result.values()), result
        produce_values(broker.bootstrap, topic, [b"b3", b"b4", b"b5"])
        assert _quiet(consumer, QUIET_S) == [], "delivered while paused"

        loads = _loads(broker, group)
        broker.restart()
        # The member fetches again (its share-partition reloads) and still gets nothing.
        polled: list[int] = []
        assert wait_until(
            lambda: polled.extend(_quiet(consumer, 0.2)) or _loads(broker, group) > loads,
            timeout_s=30,
        ), "no ShareFetch after the restart"
        assert polled + _quiet(consumer, QUIET_S) == [], "delivered while paused, after a restart"
        code, out, err = _sg(broker, "--describe", "--group", group)
        assert code == 0, err
        assert f"Share group '{group}' is paused" in out

        code, out, err = _sg(broker, "--resume", "--group", group)
        assert code == 0, err
        resumed_at = time.monotonic()
        after = first_batch(consumer, timeout_s=30)
        waited = time.monotonic() - resumed_at
        assert [(m.offset(), m.value()) for m in after] == [(3, b"b3"), (4, b"b4"), (5, b"b5")]
        assert waited < SLACK_S, f"first delivery {waited:.2f} s after --resume"
        for message in after:
            consumer.acknowledge(message, AcknowledgeType.ACCEPT)
        result = consumer.commit_sync(30)
        assert result and all(error is None for error in result.values()), result
    finally:
        consumer.close()
