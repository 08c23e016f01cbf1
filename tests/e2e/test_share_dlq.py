"""Dead-letter queues for share groups (KIP-1191) end to end, with confluent-kafka
ShareConsumers: REJECTed records and records at the delivery limit land on the group's
DLQ topic exactly once each, with the `__dlq.errors.*` context headers; a DLQ topic
without `errors.deadletterqueue.group.enable=true` gets no copies (the broker logs
Kafka's reason) and the records are archived as before.

"Nothing more is delivered" is checked with a marker record (see test_share_consumer).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import AcknowledgeType, ShareConsumer

from tests.support.broker import BrokerProcess, running, wait_until
from tests.support.cli import shoal
from tests.support.clients import read_partitions, watermarks
from tests.support.share_consumers import (
    SHARE_TEST_BROKER_OVERRIDES,
    alter_group_configs,
    produce_values,
    records_of,
    share_consumer,
    share_group,
)
from tests.support.topics import create_topic, topic_name

MARKER = b"marker"
ENABLE = {"errors.deadletterqueue.group.enable": "true"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(tmp_path_factory.mktemp("dlq-broker") / "data", *SHARE_TEST_BROKER_OVERRIDES)


def dlq_group(broker: BrokerProcess, dlq_topic: str, **configs: object) -> str:
    group = share_group(broker.bootstrap, topic_name("dlq-group"), delivery_limit=2)
    alter_group_configs(
        broker.bootstrap, group, {"errors.deadletterqueue.topic.name": dlq_topic, **configs}
    )
    return group


def settle(
    consumer: ShareConsumer, decide: dict[bytes, AcknowledgeType], bootstrap: str, topic: str
) -> list[tuple[bytes, int]]:
    """Acknowledge every record as `decide` says (RELEASE for the rest of the keys in
    `decide` order) until the marker arrives; returns (value, delivery count) seen."""
    produced_marker = False
    seen: list[tuple[bytes, int]] = []
    deadline_polls = 600
    for _ in range(deadline_polls):
        batch = records_of(consumer.poll(0.2))
        for message in batch:
            value = bytes(message.value() or b"")
            seen.append((value, int(message.delivery_count() or 0)))
            if value == MARKER:
                consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            else:
                consumer.acknowledge(message, decide[value[:1]])
        if batch:
            assert list(consumer.commit_sync(30).values()) == [None]
        elif not produced_marker and all_settled(seen, decide):
            produce_values(bootstrap, topic, [MARKER])
            produced_marker = True
        if any(v == MARKER for v, _ in seen):
            return seen
    raise AssertionError(f"the marker never came; seen {seen}")


def all_settled(seen: list[tuple[bytes, int]], decide: dict[bytes, AcknowledgeType]) -> bool:
    """Every record was rejected once or released up to the limit (2)."""
    counts: dict[bytes, int] = {}
    for value, count in seen:
        counts[value] = max(counts.get(value, 0), count)
    return bool(counts) and all(
        count >= (1 if decide[value[:1]] == AcknowledgeType.REJECT else 2)
        for value, count in counts.items()
    )


def test_rejected_and_exhausted_records_land_on_the_dlq_once(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    topic = topic_name("dlq-src")
    dlq = "dlq." + topic_name("orders")
    create_topic(bootstrap, topic)
    create_topic(bootstrap, dlq, configs=ENABLE)
    group = dlq_group(broker, dlq, **{"errors.deadletterqueue.copy.record.enable": "true"})
    values = [b"r%d" % i for i in range(5)] + [b"p%d" % i for i in range(3)]
    produce_values(bootstrap, topic, values)
    decide = {b"r": AcknowledgeType.REJECT, b"p": AcknowledgeType.RELEASE}
    consumer = share_consumer(bootstrap, group, [topic], explicit=True)
    try:
        seen = settle(consumer, decide, bootstrap, topic)
    finally:
        consumer.close()
    # Rejected ones once, poison ones twice (the limit), nothing after the limit.
    assert sorted(seen) == sorted(
        [(b"r%d" % i, 1) for i in range(5)]
        + [(b"p%d" % i, c) for i in range(3) for c in (1, 2)]
        + [(MARKER, 1)]
    )
    assert watermarks(bootstrap, dlq, 1) == {0: (0, 8)}, "not exactly 8 DLQ records"
    (copied,) = read_partitions(bootstrap, dlq, {0: 8}).values()
    by_offset = {}
    for record in copied:
        headers = {k: (v or b"").decode() for k, v in record.headers or []}
        by_offset[int(headers["__dlq.errors.offset"])] = (record.value, headers)
    assert sorted(by_offset) == list(range(8))
    for offset, (value, headers) in by_offset.items():
        assert value == values[offset]  # errors.deadletterqueue.copy.record.enable
        assert headers["__dlq.errors.topic"] == topic
        assert headers["__dlq.errors.partition"] == "0"
        assert headers["__dlq.errors.group"] == group
        rejected = offset < 5
        assert headers["__dlq.errors.delivery.count"] == ("1" if rejected else "2")
        assert headers["__dlq.errors.message"] == (
            "Record rejected by the consumer"
            if rejected
            else "Record reached the delivery count limit"
        )
    described = shoal(
        "share-groups", "--bootstrap-server", bootstrap, "--describe", "--group", group
    )
    assert described.returncode == 0, described.stderr
    assert (
        f"Share group '{group}' dead-letter queue topic: {dlq}, 8 DLQ records from this group"
    ) in described.stdout


def test_headers_only_by_default(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    topic = topic_name("dlq-plain")
    dlq = "dlq." + topic_name("plain")
    create_topic(bootstrap, topic)
    create_topic(bootstrap, dlq, partitions=1, configs=ENABLE)
    group = dlq_group(broker, dlq)
    produce_values(bootstrap, topic, [b"r-plain"])
    consumer = share_consumer(bootstrap, group, [topic], explicit=True)
    try:
        settle(consumer, {b"r": AcknowledgeType.REJECT}, bootstrap, topic)
    finally:
        consumer.close()
    ((record,),) = read_partitions(bootstrap, dlq, {0: 1}).values()
    assert record.key is None and record.value is None
    assert dict(record.headers or [])["__dlq.errors.offset"] == b"0"


def test_a_topic_not_enabled_as_dlq_gets_nothing_and_records_are_archived(
    broker: BrokerProcess,
) -> None:
    bootstrap = broker.bootstrap
    topic = topic_name("dlq-refused")
    dlq = "dlq." + topic_name("not-enabled")
    create_topic(bootstrap, topic)
    create_topic(bootstrap, dlq)  # no errors.deadletterqueue.group.enable
    group = dlq_group(broker, dlq)
    produce_values(bootstrap, topic, [b"r0", b"r1"])
    consumer = share_consumer(bootstrap, group, [topic], explicit=True)
    try:
        seen = settle(consumer, {b"r": AcknowledgeType.REJECT}, bootstrap, topic)
    finally:
        consumer.close()
    assert sorted(seen) == [(MARKER, 1), (b"r0", 1), (b"r1", 1)]  # archived: never again
    reason = f"DLQ is not enabled on configured DLQ topic for share group: {group}, topic: {dlq}"
    assert broker.wait_for_log(reason) is not None
    assert wait_until(lambda: watermarks(bootstrap, dlq, 1) == {0: (0, 0)}, timeout_s=5)


def test_a_name_without_the_prefix_gets_nothing(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    topic = topic_name("dlq-prefix")
    dlq = topic_name("no-prefix")
    create_topic(bootstrap, topic)
    create_topic(bootstrap, dlq, configs=ENABLE)
    group = dlq_group(broker, dlq)
    produce_values(bootstrap, topic, [b"r0"])
    consumer = share_consumer(bootstrap, group, [topic], explicit=True)
    try:
        settle(consumer, {b"r": AcknowledgeType.REJECT}, bootstrap, topic)
    finally:
        consumer.close()
    assert broker.wait_for_log(
        f"does not comply with the DLQ topic prefix in share group: {group}, topic: {dlq}, "
        "prefix: dlq."
    )
    assert watermarks(bootstrap, dlq, 1) == {0: (0, 0)}
