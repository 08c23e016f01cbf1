"""Consumer-group helpers shared by the end-to-end tests of both group protocols:
records spread over every partition, polling a set of consumers, and who owns what."""

from __future__ import annotations

from confluent_kafka import Consumer, KafkaError

from tests.support.clients import flush_all, producer

PARTITIONS = 6
"""Partitions of the topics these tests share among their consumers."""


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


def poll_all(consumers: list[Consumer], seen: dict[int, list[bytes]]) -> None:
    for index, c in enumerate(consumers):
        message = c.poll(0.05)
        if message is None:
            continue
        error = message.error()
        if error is not None:
            assert error.code() == KafkaError._PARTITION_EOF, error
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
