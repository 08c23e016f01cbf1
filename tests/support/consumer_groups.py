"""Consumer-group helpers shared by the end-to-end tests of both group protocols:
a group member of either protocol, records spread over every partition, polling a set
of consumers, and who owns what."""

from __future__ import annotations

from typing import Any

from confluent_kafka import Consumer, KafkaError

from tests.support.clients import flush_all, producer

PARTITIONS = 6
"""Partitions of the topics these tests share among their consumers."""
PROTOCOLS = ("classic", "consumer")
"""librdkafka's `group.protocol` values: classic JoinGroup/SyncGroup, and KIP-848."""
FAST_GROUPS = (
    "group.initial.rebalance.delay.ms=200",
    "group.consumer.heartbeat.interval.ms=500",
)
"""Broker overrides that make joins quick for both protocols (Kafka's defaults wait
3 s for a classic group's first join and heartbeat consumer-group members every 5 s)."""


def group_consumer(bootstrap: str, group: str, *, protocol: str, **extra: Any) -> Consumer:
    """A confluent-kafka Consumer of `group` with `group.protocol=protocol`, reading
    from the start, committing only when told; `extra` (dotted keys) overrides. A
    classic member heartbeats every 500 ms (a consumer-protocol member's interval is
    the broker's)."""
    settings: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": protocol,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "fetch.wait.max.ms": 100,
        "reconnect.backoff.ms": 20,
        "reconnect.backoff.max.ms": 500,
    }
    if protocol == "classic":
        settings.update({"session.timeout.ms": 10_000, "heartbeat.interval.ms": 500})
    settings.update(extra)
    return Consumer(settings)


def produce_spread(bootstrap: str, topic: str, *, per_partition: int, tag: str) -> set[bytes]:
    p = producer(bootstrap)
    values = set()
    for partition in range(PARTITIONS):
        for i in range(per_partition):
            value = f"{tag}-{partition}-{i}".encode()
            p.produce(topic, value=value, partition=partition)
            values.add(value)
    flush_all(p)
    return values


POLL_RECORDS_MAX = 500


TRANSIENT_ERRORS = frozenset({KafkaError._PARTITION_EOF, KafkaError.REBALANCE_IN_PROGRESS})
"""Consumer error events a round skips (see `poll_all`)."""


def poll_all(consumers: list[Consumer], seen: dict[int, list[bytes]]) -> None:
    """One round: each consumer hands over what it has (up to POLL_RECORDS_MAX,
    waiting at most 50 ms), appended to `seen[index]`; rebalance callbacks run.

    Errors other than end-of-partition fail the round, except REBALANCE_IN_PROGRESS:
    a classic group converted to the consumer protocol while a JoinGroup waits answers
    that JoinGroup so (as Kafka does), librdkafka hands the answer to the application
    as an error event and joins again on its own."""
    for index, c in enumerate(consumers):
        for message in c.consume(num_messages=POLL_RECORDS_MAX, timeout=0.05):
            error = message.error()
            if error is not None:
                assert error.code() in TRANSIENT_ERRORS, error
                continue
            value = message.value()
            assert value is not None
            seen.setdefault(index, []).append(value)


def owners(consumers: list[Consumer]) -> list[set[int]]:
    return [{tp.partition for tp in c.assignment()} for c in consumers]


def settled(consumers: list[Consumer]) -> bool:
    owned = owners(consumers)
    every = [p for parts in owned for p in parts]
    return sorted(every) == list(range(PARTITIONS)) and all(owned)
