"""What only the KIP-848 consumer group protocol does, with confluent-kafka
`Consumer({"group.protocol": "consumer"})`: a static member (`group.instance.id`)
restarts into its partitions without a group epoch bump; a regex subscription picks up
a topic created later.

The scenarios both protocols pass (three consumers share six partitions, a fourth
joins and one leaves under load, commits survive SIGKILL) are parametrised by
protocol in test_consumer_groups.py.
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Consumer

from tests.support.broker import Brokers, wait_until
from tests.support.clients import create_topic
from tests.support.consumer_groups import (
    FAST_GROUPS,
    PARTITIONS,
    group_consumer,
    owners,
    poll_all,
    settled,
)
from tests.support.topics import topic_name


def _consumer(bootstrap: str, group: str, **extra: Any) -> Consumer:
    return group_consumer(bootstrap, group, protocol="consumer", **extra)


def test_static_member_restart_keeps_its_partitions(brokers: Brokers) -> None:
    broker = brokers.start(*FAST_GROUPS)
    topic = topic_name("kip848-static")
    create_topic(broker.bootstrap, topic, partitions=PARTITIONS)
    a = _consumer(broker.bootstrap, "g848-static", **{"group.instance.id": "a"})
    b = _consumer(broker.bootstrap, "g848-static", **{"group.instance.id": "b"})
    a.subscribe([topic])
    b.subscribe([topic])
    seen: dict[int, list[bytes]] = {}
    assert wait_until(lambda: poll_all([a, b], seen) or settled([a, b]), timeout_s=90)
    end = time.monotonic() + 3
    while time.monotonic() < end:
        poll_all([a, b], seen)
    before = owners([a, b])
    a.close()  # a static member leaves with epoch -2
    restarted = _consumer(broker.bootstrap, "g848-static", **{"group.instance.id": "a"})
    restarted.subscribe([topic])
    try:
        assert wait_until(
            lambda: poll_all([restarted, b], seen) or settled([restarted, b]), timeout_s=90
        )
        assert owners([restarted, b]) == before
    finally:
        restarted.close()
        b.close()


def test_regex_subscription_picks_up_a_new_topic(brokers: Brokers) -> None:
    broker = brokers.start(*FAST_GROUPS)
    prefix = topic_name("kip848rx")
    first, second = f"{prefix}-one", f"{prefix}-two"
    create_topic(broker.bootstrap, first, partitions=2)
    c = _consumer(broker.bootstrap, "g848-regex", **{"topic.metadata.refresh.interval.ms": 500})
    c.subscribe([f"^{prefix}-.*"])

    def owned() -> set[tuple[str, int]]:
        c.poll(0.05)
        return {(tp.topic, tp.partition) for tp in c.assignment()}

    try:
        assert wait_until(lambda: owned() == {(first, 0), (first, 1)}, timeout_s=60)
        create_topic(broker.bootstrap, second, partitions=1)
        assert wait_until(lambda: owned() == {(first, 0), (first, 1), (second, 0)}, timeout_s=60)
    finally:
        c.close()
