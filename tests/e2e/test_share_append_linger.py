"""The share coordinator's append linger with real ShareConsumers
(`share.coordinator.append.linger.ms`): acknowledgements answered to the client are
in `__share_group_state` when the answer arrives, so a broker killed right after
`commit_sync` returned comes back with them, and nothing accepted is delivered again
(records produced after the restart arrive; none of the accepted ones do).
"""

from __future__ import annotations

import time

from confluent_kafka import AcknowledgeType

from tests.support.broker import Brokers
from tests.support.clients import create_topic
from tests.support.share_consumers import (
    SHARE_TEST_BROKER_OVERRIDES,
    WAIT_S,
    produce_values,
    records_of,
    share_consumer,
    share_group,
)
from tests.support.topics import topic_name

LINGER_MS = 300  # an answer sent before its flush would leave a window for the kill
RECORDS = 40
LATER = 4  # records produced after the restart: once they arrive, so would the rest


def test_acknowledgements_answered_under_a_linger_survive_a_kill(brokers: Brokers) -> None:
    broker = brokers.start(
        *SHARE_TEST_BROKER_OVERRIDES, f"share.coordinator.append.linger.ms={LINGER_MS}"
    )
    topic = topic_name("linger")
    create_topic(broker.bootstrap, topic, partitions=2)
    group = share_group(broker.bootstrap, "linger-group", lock_ms=60_000)
    produce_values(broker.bootstrap, topic, [f"v{i}".encode() for i in range(RECORDS)])

    consumer = share_consumer(broker.bootstrap, group, [topic], explicit=True)
    accepted: set[tuple[int, int]] = set()
    deadline = time.monotonic() + WAIT_S
    while len(accepted) < RECORDS:
        assert time.monotonic() < deadline, f"only {len(accepted)} of {RECORDS} records came"
        for message in records_of(consumer.poll(0.5)):
            consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            accepted.add((int(message.partition() or 0), int(message.offset() or 0)))
        results = consumer.commit_sync(30.0)
        assert all(error is None for error in results.values()), results
    broker.kill()  # SIGKILL: only what reached the log survives
    consumer.close()

    broker.start()
    produce_values(broker.bootstrap, topic, [f"after{i}".encode() for i in range(LATER)])
    after = share_consumer(broker.bootstrap, group, [topic], explicit=True)
    try:
        values: list[bytes] = []
        deadline = time.monotonic() + WAIT_S
        while sum(v.startswith(b"after") for v in values) < LATER:
            assert time.monotonic() < deadline, f"later records never came (state lost?): {values}"
            for message in records_of(after.poll(0.5)):
                after.acknowledge(message, AcknowledgeType.ACCEPT)
                values.append(message.value() or b"")
        again = [v for v in values if not v.startswith(b"after")]
        assert again == [], "accepted records came back: their state write was not durable"
    finally:
        after.close()
