"""Delayed redelivery and paused delivery (Shoal extensions, issue 16) end to end:
a real broker process, unmodified confluent-kafka ShareConsumers, and `shoal
share-groups --pause/--resume/--describe` as a subprocess.

Times are measured on the test's side with generous upper bounds; lower bounds hold
by causality (the broker releases a record only after the test received it, and
cannot deliver it again before its backoff has passed).
"""

from __future__ import annotations

import itertools
import time

from confluent_kafka import AcknowledgeType, ShareConsumer

from tests.support.broker import BrokerProcess, Brokers
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
QUIET_S = 3.0
"""How long a paused group is watched for deliveries (librdkafka's fetch wait is
0.5 s, so several fetch waits)."""


def test_a_released_record_comes_back_after_a_growing_backoff(brokers: Brokers) -> None:
    broker = brokers.start(*SHARE_TEST_BROKER_OVERRIDES)
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


def test_pause_and_resume_survive_a_restart(brokers: Brokers) -> None:
    broker = brokers.start(*SHARE_TEST_BROKER_OVERRIDES)
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
        code, out, err = _sg(broker, "--describe", "--group", group)
        assert code == 0, err
        assert f"Share group '{group}' is paused" in out

        broker.restart()
        assert _quiet(consumer, QUIET_S) == [], "delivered while paused, after a restart"
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
        consumer.commit_sync(30)
        code, out, err = _sg(broker, "--describe", "--group", group)
        assert code == 0, err
        assert "is paused" not in out

        broker.restart()  # resumed stays resumed
        produce_values(broker.bootstrap, topic, [b"c6"])
        (last,) = first_batch(consumer, timeout_s=30)
        assert (last.offset(), last.value()) == (6, b"c6")
    finally:
        consumer.close()
