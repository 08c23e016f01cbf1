"""Share-group membership with confluent-kafka 2.16.1's ShareConsumer (librdkafka 2.16).

Two ShareConsumers subscribe to a one-partition topic: ShareGroupDescribe shows the
group Stable with both members, each assigned the partition (share groups share
partitions). Closing one leaves one member (its leave heartbeat); closing both leaves
the group Empty. Nothing is produced; only membership is checked here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import ShareConsumer

from shoal.client import requests
from tests.support.broker import Brokers
from tests.support.share_groups import described_assignment
from tests.support.topics import create_topic, topic_name
from tests.support.wire import call1

WAIT_S = 30.0


def describe(bootstrap: str, group: str) -> Any:
    (described,) = call1(bootstrap, requests.share_group_describe([group]).build(1)).groups
    return described


def wait_for(
    what: str, check: Callable[[], bool], consumers: list[Any], *, timeout_s: float = WAIT_S
) -> None:
    """Poll the consumers (serving their callbacks) until `check()` holds."""
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        for consumer in consumers:
            consumer.poll(0.1)
        if not consumers:
            time.sleep(0.05)


def test_two_share_consumers_share_one_partition(brokers: Brokers) -> None:
    broker = brokers.start()
    topic, group = topic_name("queue"), topic_name("share-group")
    create_topic(broker.bootstrap, topic)
    consumers = []
    for _ in range(2):
        consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
        consumer.subscribe([topic])
        consumers.append(consumer)
    open_consumers = list(consumers)
    try:

        def both_assigned() -> bool:
            described = describe(broker.bootstrap, group)
            return (
                described.group_state == "Stable"
                and len(described.members) == 2
                and all(described_assignment(m) == {topic: (0,)} for m in described.members)
                # The first member reaches the epoch of the second join at its next
                # heartbeat (HeartbeatIntervalMs), as in Kafka.
                and all(m.member_epoch == described.assignment_epoch for m in described.members)
            )

        wait_for("two members sharing partition 0", both_assigned, open_consumers)
        described = describe(broker.bootstrap, group)
        assert described.group_epoch == described.assignment_epoch
        for member in described.members:
            assert len(member.member_id) == 22, "librdkafka's base64 member id, verbatim"
            assert member.client_host == "/127.0.0.1"
            assert member.subscribed_topic_names == (topic,)
            assert member.member_epoch == described.assignment_epoch

        open_consumers.remove(first := consumers[0])
        first.close()
        wait_for(
            "one member after the first close",
            lambda: len(describe(broker.bootstrap, group).members) == 1,
            open_consumers,
        )
        remaining = describe(broker.bootstrap, group)
        assert remaining.group_state == "Stable"
        assert described_assignment(remaining.members[0]) == {topic: (0,)}

        open_consumers.remove(second := consumers[1])
        second.close()
        wait_for(
            "no members after both closed",
            lambda: describe(broker.bootstrap, group).group_state == "Empty",
            open_consumers,
        )
        assert describe(broker.bootstrap, group).members == ()
    finally:
        for consumer in open_consumers:
            consumer.close()
