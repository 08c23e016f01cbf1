"""Share groups end to end with confluent-kafka 2.16.1's ShareConsumer (librdkafka 2.16):
delivery and acknowledgement semantics (docs/design/conformance.md section F, and 15).

One broker for the module (short locks allowed, 500 ms heartbeats); every test has
its own topic and group, configured through IncrementalAlterConfigs on the GROUP
resource before the first member (`share.auto.offset.reset=earliest`, and lock
duration or delivery limit where the test is about them).

"Nothing more is delivered" is checked with a marker: after the fact, a marker
record is produced and the consumer polls until it arrives. A share-partition
acquires from its start offset upward, so anything released or still available
below the marker would come first; the marker bounds the wait without sleeping.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import AcknowledgeType, IllegalStateException, Message, ShareConsumer

from tests.support.broker import BrokerProcess, running
from tests.support.share_consumers import (
    SHARE_TEST_BROKER_OVERRIDES,
    AckLog,
    Got,
    close_all,
    first_batch,
    got,
    poll_until,
    produce_values,
    records_of,
    share_consumer,
    share_group,
    wait_for_members,
)
from tests.support.topics import create_topic, topic_name

MARKER = b"marker"


@pytest.fixture(scope="module")
def share_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(
        tmp_path_factory.mktemp("share-broker") / "data", *SHARE_TEST_BROKER_OVERRIDES
    )


def new_topic(broker: BrokerProcess, prefix: str, partitions: int = 1) -> str:
    topic = topic_name(prefix)
    create_topic(broker.bootstrap, topic, partitions=partitions)
    return topic


def new_group(broker: BrokerProcess, prefix: str, **settings: int) -> str:
    return share_group(broker.bootstrap, topic_name(prefix), **settings)


def until_marker(consumer: ShareConsumer, *, explicit: bool, timeout_s: float = 60.0) -> list[Got]:
    """Poll until the marker arrives (accepting everything in explicit mode); returns
    every record seen before it, marker excluded."""
    seen: list[Got] = []
    marker_seen: list[Got] = []

    def on_message(_: int, message: Message) -> None:
        if explicit:
            consumer.acknowledge(message, AcknowledgeType.ACCEPT)
        (marker_seen if message.value() == MARKER else seen).append(got(message))

    poll_until(
        [consumer],
        lambda: bool(marker_seen),
        on_message=on_message,
        timeout_s=timeout_s,
        what="the marker",
    )
    return seen


def test_three_consumers_of_one_partition_get_disjoint_shares(
    share_broker: BrokerProcess,
) -> None:
    """15 / 86: three members of one group on a one-partition topic receive disjoint
    records whose union is everything produced, each a real share."""
    bootstrap = share_broker.bootstrap
    topic = new_topic(share_broker, "three")
    group = new_group(share_broker, "three")
    consumers = [share_consumer(bootstrap, group, [topic], max_poll_records=10) for _ in range(3)]
    try:
        wait_for_members(bootstrap, group, consumers, topic, partitions=1)
        total = 600
        # Batches of ~10 records, so one acquisition cannot take everything.
        produce_values(bootstrap, topic, (b"v%d" % i for i in range(total)), flush_every=10)
        received: list[Got] = []
        poll_until(
            consumers,
            lambda: len(received) >= total,
            on_message=lambda i, m: received.append(got(m, i)),
            what=f"{total} records",
        )
        # One more round sends the implicit acknowledgements of the last polls.
        for consumer in consumers:
            consumer.commit_sync(30)
    finally:
        close_all(consumers)

    offsets = [r.offset for r in received]
    assert len(offsets) == len(set(offsets)) == total, "a record was delivered twice"
    assert set(offsets) == set(range(total))
    assert {r.delivery_count for r in received} == {1}
    shares = [sum(1 for r in received if r.consumer == i) for i in range(3)]
    assert all(share > 0 for share in shares), f"shares {shares}"


def test_two_groups_each_receive_everything(share_broker: BrokerProcess) -> None:
    """15 (95-style): each share group keeps its own state; both get every record."""
    bootstrap = share_broker.bootstrap
    topic = new_topic(share_broker, "two-groups", partitions=2)
    for partition in (0, 1):
        produce_values(
            bootstrap, topic, (b"p%d-%d" % (partition, i) for i in range(25)), partition=partition
        )
    groups = [new_group(share_broker, "group-a"), new_group(share_broker, "group-b")]
    consumers = [share_consumer(bootstrap, g, [topic]) for g in groups]
    try:
        received: list[list[Got]] = [[], []]
        poll_until(
            consumers,
            lambda: all(len(r) >= 50 for r in received),
            on_message=lambda i, m: received[i].append(got(m, i)),
            what="50 records in each group",
        )
        for consumer in consumers:
            consumer.commit_sync(30)
    finally:
        close_all(consumers)
    expected = {(p, o) for p in (0, 1) for o in range(25)}
    for records in received:
        assert sorted(r.where for r in records) == sorted(expected)
        assert {r.delivery_count for r in records} == {1}


def test_implicit_mode_accepts_on_next_poll(share_broker: BrokerProcess) -> None:
    """79: implicit mode; produce 3, poll -> 3 with delivery count 1; the next poll
    accepts them, so a new consumer of the group gets nothing."""
    bootstrap = share_broker.bootstrap
    topic = new_topic(share_broker, "implicit")
    group = new_group(share_broker, "implicit")
    produce_values(bootstrap, topic, [b"a", b"b", b"c"])
    first = share_consumer(bootstrap, group, [topic])
    acks = AckLog()
    first.set_acknowledgement_commit_callback(acks)
    try:
        batch = [got(m) for m in first_batch(first)]
        assert [(r.offset, r.value, r.delivery_count) for r in batch] == [
            (0, b"a", 1),
            (1, b"b", 1),
            (2, b"c", 1),
        ]
        # The next poll carries the acceptance; its result reaches the callback.
        deadline = time.monotonic() + 30
        while acks.confirmed(topic, 0) != {0, 1, 2}:
            assert time.monotonic() < deadline, f"no acknowledgement result: {acks.results}"
            assert records_of(first.poll(0.2)) == []
        assert acks.errors == []
    finally:
        first.close()

    produce_values(bootstrap, topic, [MARKER])
    second = share_consumer(bootstrap, group, [topic])
    try:
        assert until_marker(second, explicit=False) == []
    finally:
        second.close()


def test_explicit_release_is_redelivered_with_count_2(share_broker: BrokerProcess) -> None:
    """80: explicit mode; ACCEPT 0, RELEASE 1, ACCEPT 2, commit_sync -> {tp: None};
    offset 1 comes back with delivery count 2, the others never."""
    bootstrap = share_broker.bootstrap
    topic = new_topic(share_broker, "release")
    group = new_group(share_broker, "release")
    produce_values(bootstrap, topic, [b"r0", b"r1", b"r2"])
    consumer = share_consumer(bootstrap, group, [topic], explicit=True)
    try:
        batch = first_batch(consumer)
        assert [(m.offset(), m.delivery_count()) for m in batch] == [(0, 1), (1, 1), (2, 1)]
        with pytest.raises(IllegalStateException):
            consumer.poll(0.1)  # explicit mode: every record must be acknowledged first
        for message in batch:
            kind = AcknowledgeType.RELEASE if message.offset() == 1 else AcknowledgeType.ACCEPT
            consumer.acknowledge(message, kind)
        result = consumer.commit_sync(30)
        assert {(tp.topic, tp.partition): error for tp, error in result.items()} == {
            (topic, 0): None
        }
        assert consumer.commit_sync(5) == {}, "nothing pending after a commit"

        again = [got(m) for m in first_batch(consumer)]
        assert [(r.offset, r.value, r.delivery_count) for r in again] == [(1, b"r1", 2)]
        consumer.acknowledge_offset(topic, 0, 1, AcknowledgeType.ACCEPT)
        produce_values(bootstrap, topic, [MARKER])
        assert until_marker(consumer, explicit=True) == []
    finally:
        consumer.close()


def test_reject_and_accept_are_final_release_then_reject_rejects(
    share_broker: BrokerProcess,
) -> None:
    """81: REJECT and ACCEPT are never redelivered; RELEASE then REJECT of the same
    record before the commit counts as REJECT."""
    bootstrap = share_broker.bootstrap
    topic = new_topic(share_broker, "reject")
    group = new_group(share_broker, "reject")
    produce_values(bootstrap, topic, [b"accept", b"reject", b"release-then-reject", b"accept"])
    consumer = share_consumer(bootstrap, group, [topic], explicit=True)
    try:
        batch = first_batch(consumer)
        assert [m.offset() for m in batch] == [0, 1, 2, 3]
        consumer.acknowledge(batch[0], AcknowledgeType.ACCEPT)
        consumer.acknowledge(batch[1], AcknowledgeType.REJECT)
        consumer.acknowledge(batch[2], AcknowledgeType.RELEASE)
        consumer.acknowledge(batch[2], AcknowledgeType.REJECT)
        consumer.acknowledge(batch[3])  # ACCEPT is the default
        result = consumer.commit_sync(30)
        assert list(result.values()) == [None]
        produce_values(bootstrap, topic, [MARKER])
        assert until_marker(consumer, explicit=True) == []
    finally:
        consumer.close()
    # A new member of the group finds nothing either.
    produce_values(bootstrap, topic, [MARKER])
    other = share_consumer(bootstrap, group, [topic], explicit=True)
    try:
        assert until_marker(other, explicit=True) == []
    finally:
        other.close()


@pytest.mark.parametrize("limit", [3, None], ids=["group-limit-3", "default-limit-5"])
def test_released_record_is_delivered_exactly_limit_times(
    share_broker: BrokerProcess, limit: int | None
) -> None:
    """82 (30): a record released on every delivery is delivered exactly
    `share.delivery.count.limit` times (group config 3, or the broker's 5), counts
    1, 2, ... limit, then archived."""
    bootstrap = share_broker.bootstrap
    topic = new_topic(share_broker, "limit")
    settings = {} if limit is None else {"delivery_limit": limit}
    group = new_group(share_broker, "limit", **settings)
    expected = limit or 5
    produce_values(bootstrap, topic, [b"poison"])
    consumer = share_consumer(bootstrap, group, [topic], explicit=True)
    counts: list[int] = []
    try:
        while len(counts) < expected:
            for message in first_batch(consumer, timeout_s=30):
                assert (message.offset(), message.value()) == (0, b"poison")
                counts.append(int(message.delivery_count() or 0))
                consumer.acknowledge(message, AcknowledgeType.RELEASE)
            assert list(consumer.commit_sync(30).values()) == [None]
        assert counts == list(range(1, expected + 1))
        produce_values(bootstrap, topic, [MARKER])
        assert until_marker(consumer, explicit=True) == [], "delivered past the limit"
    finally:
        consumer.close()


def test_implicit_close_hands_records_to_others_at_once(share_broker: BrokerProcess) -> None:
    """83: implicit mode; close() right after a poll does not accept that poll's
    records, it releases them: another member gets them at once (not after the 30 s
    lock), with delivery count 2."""
    bootstrap = share_broker.bootstrap
    topic = new_topic(share_broker, "close")
    group = new_group(share_broker, "close")  # broker default lock: 30 s
    produce_values(bootstrap, topic, [b"c0", b"c1", b"c2"])
    first = share_consumer(bootstrap, group, [topic])
    consumers = [first]
    try:
        held = [got(m) for m in first_batch(first)]
        assert [(r.offset, r.delivery_count) for r in held] == [(0, 1), (1, 1), (2, 1)]
        # A second member joins (it finds nothing: the first holds everything).
        second = share_consumer(bootstrap, group, [topic])
        consumers.append(second)
        again: list[Got] = []
        wait_for_members(
            bootstrap,
            group,
            [second],
            topic,
            partitions=1,
            members=2,
            on_message=lambda _, m: again.append(got(m)),
        )
        consumers.remove(first)
        closed_at = time.monotonic()
        first.close()
        poll_until(
            [second],
            lambda: len(again) >= 3,
            on_message=lambda _, m: again.append(got(m)),
            timeout_s=60,
            what="the released records",
        )
        elapsed = time.monotonic() - closed_at
        assert [(r.offset, r.value, r.delivery_count) for r in again] == [
            (0, b"c0", 2),
            (1, b"c1", 2),
            (2, b"c2", 2),
        ]
        assert elapsed < 15, f"released only after {elapsed:.1f} s: lock expiry, not close"
        second.commit_sync(30)
    finally:
        close_all(consumers)


def test_commit_sync_results_per_partition_and_commit_async_callback(
    share_broker: BrokerProcess,
) -> None:
    """80: commit_sync returns {TopicPartition: None} for each partition it
    acknowledged; commit_async returns None and its result reaches the
    acknowledgement-commit callback."""
    bootstrap = share_broker.bootstrap
    topic = new_topic(share_broker, "commit", partitions=2)
    group = new_group(share_broker, "commit")
    for partition in (0, 1):
        produce_values(bootstrap, topic, [b"p%d" % partition] * 3, partition=partition)
    consumer = share_consumer(bootstrap, group, [topic], explicit=True)
    try:
        assert consumer.commit_sync(5) == {}, "nothing pending yet"
        seen: set[tuple[int, int]] = set()
        committed: set[int] = set()
        deadline = time.monotonic() + 60
        while len(seen) < 6:
            assert time.monotonic() < deadline, f"only {sorted(seen)}"
            batch = records_of(consumer.poll(0.2))
            for message in batch:
                seen.add((int(message.partition() or 0), int(message.offset() or 0)))
                consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            if batch:
                result = consumer.commit_sync(30)
                by_partition = {(tp.topic, tp.partition): e for tp, e in result.items()}
                assert by_partition == {(topic, m.partition()): None for m in batch}
                committed |= {p for _, p in by_partition}
        assert seen == {(p, o) for p in (0, 1) for o in range(3)}
        assert committed == {0, 1}

        acks = AckLog()
        consumer.set_acknowledgement_commit_callback(acks)
        produce_values(bootstrap, topic, [b"async"], partition=1)
        batch = first_batch(consumer)
        assert [(m.partition(), m.offset(), m.value()) for m in batch] == [(1, 3, b"async")]
        consumer.acknowledge(batch[0], AcknowledgeType.ACCEPT)
        assert consumer.commit_async() is None
        deadline = time.monotonic() + 30
        while not acks.results:
            assert time.monotonic() < deadline, "the commit callback never ran"
            assert records_of(consumer.poll(0.1)) == []
        assert acks.results == [({(topic, 1): {3}}, None)]
    finally:
        consumer.set_acknowledgement_commit_callback(None)
        consumer.close()
