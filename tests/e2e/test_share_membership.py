"""Share-group membership with confluent-kafka 2.16.1's ShareConsumer (librdkafka 2.16).

Two ShareConsumers subscribe to a one-partition topic: ShareGroupDescribe shows the
group Stable with both members, each assigned the partition (share groups share
partitions). Closing one leaves one member (its leave heartbeat); closing both leaves
the group Empty. Nothing is produced there; only membership is checked.

Group formation: two ShareConsumers subscribing together to a fresh 4-partition topic
with records both get records from their first polls, and the partitions end split
2/2. The join that starts the share-state initialisation is answered after it, with
the partitions (server/services/group_service.py; a deliberate difference from Kafka, where
they come one heartbeat interval later): the first member is briefly given all four,
the second its two in its join reply, and the first learns it keeps two at its next
heartbeat.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import ShareConsumer

from shoal.client import requests
from tests.support.broker import Brokers
from tests.support.share_consumers import (
    SHARE_TEST_BROKER_OVERRIDES,
    close_all,
    poll_until,
    produce_values,
    share_consumer,
    share_group,
    wait_for_members,
)
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


def test_two_consumers_forming_a_group_split_a_fresh_topic(brokers: Brokers) -> None:
    """Both members receive records within a second of subscribing (no heartbeat
    interval, 2 s here, is waited for), everything is received once, and after the
    first member's next heartbeat each holds two of the four partitions."""
    broker = brokers.start(*SHARE_TEST_BROKER_OVERRIDES, "group.share.heartbeat.interval.ms=2000")
    topic = topic_name("formation")
    create_topic(broker.bootstrap, topic, partitions=4)
    group = share_group(broker.bootstrap, topic_name("formation-group"))
    for partition in range(4):
        produce_values(
            broker.bootstrap, topic, [b"%d" % i for i in range(100)], partition=partition
        )
    started = time.monotonic()
    consumers = [
        share_consumer(broker.bootstrap, group, [topic], max_poll_records=20) for _ in range(2)
    ]
    received: list[set[tuple[int, int]]] = [set(), set()]
    first: dict[int, float] = {}

    def on_message(index: int, message: Any) -> None:
        first.setdefault(index, time.monotonic() - started)
        where = (int(message.partition()), int(message.offset()))
        assert where not in received[0] | received[1], f"{where} delivered twice"
        received[index].add(where)

    try:
        poll_until(
            consumers,
            lambda: len(received[0] | received[1]) == 400,
            on_message=on_message,
            timeout_s=WAIT_S * 2,
            what="all 400 records",
        )
        wait_for_members(broker.bootstrap, group, consumers, topic, partitions=4)
        described = describe(broker.bootstrap, group)
        assigned = sorted(described_assignment(m).get(topic, ()) for m in described.members)
    finally:
        close_all(consumers)
    assert sorted(first) == [0, 1] and max(first.values()) < 1.0, (
        f"seconds to each member's first record: {first}"
    )
    assert len(assigned) == 2 and sorted(len(a) for a in assigned) == [2, 2], assigned
    assert set(assigned[0]).isdisjoint(assigned[1])


FORMATION_BOUND_S = 2.0
"""Every member's first record, after its subscribe, with the default 5 s share
heartbeat interval: generous against a loaded machine, yet well short of the one
heartbeat interval a member waited when its join was answered before the
share-partition initialisation (the first member got nothing until its second
heartbeat, 5 s later)."""


def test_four_consumers_on_four_partitions_get_records_within_the_default_heartbeat(
    brokers: Brokers,
) -> None:
    """Four ShareConsumers subscribe back to back to a fresh 4-partition topic with
    records in every partition, on a broker with the default share heartbeat
    interval (5 s): each receives records within `FORMATION_BOUND_S` of its
    subscribe, and every partition delivers within that bound too. Each member stops
    polling once it has a record, so that the others' records stay available."""
    broker = brokers.start()  # the default group.share.heartbeat.interval.ms (5 s)
    topic = topic_name("formation4")
    create_topic(broker.bootstrap, topic, partitions=4)
    group = share_group(broker.bootstrap, topic_name("formation4-group"))
    for partition in range(4):
        produce_values(
            broker.bootstrap,
            topic,
            (b"%d" % i for i in range(1000)),
            partition=partition,
            flush_every=50,
        )
    consumers: list[ShareConsumer] = []
    subscribed: list[float] = []
    first: dict[int, float] = {}
    partition_first: dict[int, float] = {}
    try:
        for _ in range(4):
            subscribed.append(time.monotonic())
            consumers.append(share_consumer(broker.bootstrap, group, [topic], max_poll_records=20))
        deadline = time.monotonic() + WAIT_S
        while (len(first) < 4 or len(partition_first) < 4) and time.monotonic() < deadline:
            for index, consumer in enumerate(consumers):
                if index in first and len(partition_first) == 4:
                    continue
                batch = consumer.poll(0.01)
                now = time.monotonic()
                for message in batch:
                    assert message.error() is None, message.error()
                    first.setdefault(index, now - subscribed[index])
                    partition_first.setdefault(int(message.partition() or 0), now - subscribed[0])
    finally:
        close_all(consumers)
    print(f"seconds to each member's first record {first}, to each partition's {partition_first}")
    assert sorted(first) == [0, 1, 2, 3], f"members without records in {WAIT_S} s: {first}"
    assert max(first.values()) < FORMATION_BOUND_S, f"seconds to each member's first: {first}"
    assert sorted(partition_first) == [0, 1, 2, 3], partition_first
    assert max(partition_first.values()) < FORMATION_BOUND_S, partition_first
