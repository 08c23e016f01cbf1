"""Share groups (KIP-932): Apache Kafka 4.2 and Shoal, with confluent-kafka's
ShareConsumer, the raw share APIs and Kafka's own `kafka-share-groups` tool.

Each scenario runs against both brokers and returns what a user can observe (records,
delivery counts, acknowledgement results, errors, group descriptions) with ids and
times normalised; the test compares the two. Where Shoal differs on purpose the test
says so in one line and asserts Shoal's documented behaviour.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import ShareConsumer

from tests.differential.conftest import Pair, unique
from tests.support.share_consumers import (
    close_all,
    produce_values,
    records_of,
    share_consumer,
    share_group,
)
from tests.support.topics import create_topic

WAIT_S = 60.0
FIRST_RECORD_WAIT_S = 20.0

# ---- group formation ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Formation:
    """Seconds from each member's subscribe to its first record, and which
    partitions each member received records from in that first poll."""

    first_record_s: tuple[float | None, ...]
    partitions_seen: tuple[frozenset[int], ...]


def _formation(bootstrap: str, partitions: int) -> Formation:
    """Two ShareConsumers join a new group on a topic with records in every
    partition (batches of 100), back to back; each is polled until its first
    record, for at most `FIRST_RECORD_WAIT_S` (None: no record by then)."""
    topic, group = unique("formation"), unique("formation-group")
    create_topic(bootstrap, topic, partitions=partitions)
    share_group(bootstrap, group)
    for partition in range(partitions):
        produce_values(
            bootstrap,
            topic,
            (b"%d" % i for i in range(1000)),
            partition=partition,
            flush_every=100,
        )
    consumers: list[ShareConsumer] = []
    joined: list[float] = []
    first: dict[int, float] = {}
    seen: dict[int, frozenset[int]] = {}
    try:
        for _ in range(2):
            joined.append(time.monotonic())
            consumers.append(share_consumer(bootstrap, group, [topic], max_poll_records=100))
        deadline = time.monotonic() + FIRST_RECORD_WAIT_S
        while len(first) < len(consumers) and time.monotonic() < deadline:
            for index, consumer in enumerate(consumers):
                if index in first:
                    consumer.poll(0.02)
                    continue
                batch = records_of(consumer.poll(0.02))
                if batch:
                    first[index] = time.monotonic() - joined[index]
                    seen[index] = frozenset(int(m.partition() or 0) for m in batch)
    finally:
        close_all(consumers)
    return Formation(
        first_record_s=tuple(first.get(i) for i in range(len(consumers))),
        partitions_seen=tuple(seen.get(i, frozenset()) for i in range(len(consumers))),
    )


FORMATION_BOUND_S = 1.0
"""Shoal's bound on every member's first record after it subscribed: one heartbeat
interval (5 s) is what answering the join before the initialisation cost."""


def test_formation_every_member_gets_records_at_once_on_four_partitions(pair: Pair) -> None:
    """Differs on purpose: Shoal initialises share-partition state inside the join
    heartbeat (server/group_service.py), Kafka one heartbeat interval later."""
    kafka, shoal = pair.run(_formation, 4)
    print(f"first record per member, 4 partitions: Kafka {kafka}, Shoal {shoal}")
    assert all(s is not None and s < FORMATION_BOUND_S for s in shoal.first_record_s), shoal
    assert all(s is None or s > FORMATION_BOUND_S for s in kafka.first_record_s), (
        "Kafka's members wait for the heartbeat after the initialisation",
        kafka,
    )


def test_formation_every_member_gets_records_at_once_on_one_partition(pair: Pair) -> None:
    """Differs on purpose (as on four partitions); the one partition is shared."""
    kafka, shoal = pair.run(_formation, 1)
    print(f"first record per member, 1 partition: Kafka {kafka}, Shoal {shoal}")
    assert all(s is not None and s < FORMATION_BOUND_S for s in shoal.first_record_s), shoal
    assert shoal.partitions_seen == (frozenset({0}),) * 2
