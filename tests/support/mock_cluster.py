"""librdkafka's mock cluster: an independent Kafka implementation with many brokers.

confluent-kafka starts it inside a client given `test.mock.num.brokers`; it listens on
loopback ports, serves Metadata, ListOffsets, Fetch, Produce, FindCoordinator and the
share-group APIs (76, 78, 79 at v1), spreads each topic's partition leaders over its
brokers, and places each group's coordinator on one of them. It auto-creates a topic
with four partitions on first use. It does not serve CreateTopics (no controller),
the configs APIs, ListGroups or the describe/admin group APIs: a test that needs one
of those says so and skips only that step (`MOCK_MISSING`).

`MockCluster` holds the owning client for as long as the cluster must live.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import TracebackType

from confluent_kafka import Producer

MOCK_PARTITIONS = 4
"""Partitions of a topic the mock creates on first use."""
MOCK_MISSING = {
    19: "CreateTopics",
    20: "DeleteTopics",
    32: "DescribeConfigs",
    44: "IncrementalAlterConfigs",
    16: "ListGroups",
    42: "DeleteGroups",
    77: "ShareGroupDescribe",
    90: "DescribeShareGroupOffsets",
}
"""APIs the mock does not serve (api key -> name), for the skip messages."""
SPREAD_TRIES = 10
"""Topics `MockCluster.spread_topic` creates at most to find one whose leaders are spread."""


class MockCluster:
    def __init__(self, *, brokers: int = 3) -> None:
        self._owner = Producer(
            {"test.mock.num.brokers": brokers, "bootstrap.servers": "", "log_level": 3}
        )
        metadata = self._owner.list_topics(timeout=10)
        self.brokers = {
            b.id: (b.host, b.port) for b in sorted(metadata.brokers.values(), key=lambda b: b.id)
        }
        assert len(self.brokers) == brokers, self.brokers
        self.bootstrap = ",".join(f"{host}:{port}" for host, port in self.brokers.values())

    def produce(self, topic: str, values: Iterable[bytes], *, key: bytes | None = None) -> int:
        """Produce `values` (acks=all; the topic is created with MOCK_PARTITIONS on first
        use, records spread over its partitions); returns how many were written."""
        producer = Producer(
            {"bootstrap.servers": self.bootstrap, "acks": "all", "log_level": 3, "linger.ms": 5}
        )
        count = 0
        failures: list[str] = []

        def report(error: object, _message: object) -> None:
            nonlocal count
            if error is None:
                count += 1
            else:
                failures.append(str(error))

        for value in values:
            producer.produce(topic, value=value, key=key, on_delivery=report)
            producer.poll(0)
        producer.flush(30)
        assert not failures, failures[:3]
        return count

    def spread_topic(self, prefix: str) -> str:
        """A new topic whose partition leaders are on more than one broker. The mock picks
        each partition's leader at random among its replicas, so all four land on one broker
        about once in 27 topics: the first of `SPREAD_TRIES` topics `prefix-0`, `prefix-1`, ...
        that is spread (every try left on one broker fails the test: 27**-10)."""
        for i in range(SPREAD_TRIES):
            topic = f"{prefix}-{i}"
            leaders = self.leaders(topic)  # creates the topic
            assert len(leaders) == MOCK_PARTITIONS, leaders
            if len(set(leaders.values())) > 1:
                return topic
        raise AssertionError(f"{SPREAD_TRIES} topics, each with every leader on one broker")

    def leaders(self, topic: str) -> dict[int, int]:
        """Partition -> leader node id (creates the topic if it does not exist)."""
        metadata = self._owner.list_topics(topic, timeout=10)
        return {p.id: p.leader for p in metadata.topics[topic].partitions.values()}

    def close(self) -> None:
        self._owner.flush(1)
        del self._owner

    def __enter__(self) -> MockCluster:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
