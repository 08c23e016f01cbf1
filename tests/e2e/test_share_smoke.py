"""A quick real-client check of ShareFetch/ShareAcknowledge: confluent-kafka 2.16.1's
ShareConsumer (librdkafka 2.16) consumes 10 records from a Shoal broker.

Conformance (docs/design/conformance.md): F79 in short (implicit mode: every record
delivered once with delivery_count 1; after the acceptance a second consumer of the
same group gets nothing).
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.admin import ResourceType as AdminResourceType

from tests.support.broker import Brokers
from tests.support.clients import flush_all, producer
from tests.support.topics import create_topic, topic_name

RECORDS = 10
WAIT_S = 30.0
QUIET_S = 3.0


def set_group_config(bootstrap: str, group: str, name: str, value: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(
        AdminResourceType.GROUP,
        group,
        incremental_configs=[ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=WAIT_S)


def poll_messages(consumer: Any, timeout_s: float) -> list[Any]:
    messages = consumer.poll(timeout_s)
    return [m for m in messages if m.error() is None]


def test_share_consumer_consumes_each_record_once(brokers: Brokers) -> None:
    broker = brokers.start()
    topic, group = topic_name("smoke"), topic_name("smoke-group")
    create_topic(broker.bootstrap, topic)
    set_group_config(broker.bootstrap, group, "share.auto.offset.reset", "earliest")
    p = producer(broker.bootstrap)
    for i in range(RECORDS):
        p.produce(topic, value=f"v{i}".encode(), key=f"k{i}".encode())
    flush_all(p)

    first = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    second = None
    try:
        first.subscribe([topic])
        received: dict[int, Any] = {}
        deadline = time.monotonic() + WAIT_S
        while len(received) < RECORDS:
            assert time.monotonic() < deadline, f"only {sorted(received)} arrived"
            for message in poll_messages(first, 1.0):
                assert message.offset() not in received, f"{message.offset()} delivered twice"
                received[message.offset()] = message
        assert sorted(received) == list(range(RECORDS))
        assert {m.value() for m in received.values()} == {f"v{i}".encode() for i in range(RECORDS)}
        assert all(m.delivery_count() == 1 for m in received.values())
        results = first.commit_sync(WAIT_S)  # implicit mode: accepts the last poll's records
        assert all(error is None for error in results.values()), results

        second = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
        second.subscribe([topic])
        quiet_until = time.monotonic() + QUIET_S
        while time.monotonic() < quiet_until:
            assert poll_messages(second, 0.5) == []
            assert poll_messages(first, 0.1) == []
    finally:
        first.close()
        if second is not None:
            second.close()
