"""Record content and volume through real ShareConsumers (docs/design/conformance.md 86, 87, 90).

- 100 headers, null and empty keys, values and header values, and every
  compression codec arrive intact through ShareFetch.
- 20,000 records over 5 partitions, 4 explicit-mode consumers acknowledging each
  record at random (ACCEPT / RELEASE / REJECT): nothing is lost, nothing is accepted
  twice, delivery counts rise by one per redelivery, released records stop at the
  delivery limit, and every acknowledgement the broker confirmed succeeded.
"""

from __future__ import annotations

import random
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
from confluent_kafka import AcknowledgeType, Message

from tests.support.broker import BrokerProcess, running
from tests.support.share_consumers import (
    SHARE_TEST_BROKER_OVERRIDES,
    AckLog,
    Got,
    close_all,
    got,
    poll_until,
    producer,
    share_consumer,
    share_group,
    wait_for_members,
)
from tests.support.topics import create_topic, topic_name

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


@pytest.fixture(scope="module")
def share_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(tmp_path_factory.mktemp("share-data") / "data", *SHARE_TEST_BROKER_OVERRIDES)


Headers = list[tuple[str, bytes | None]]


def odd_records(rng: random.Random) -> list[tuple[bytes | None, bytes | None, Headers | None]]:
    """(key, value, headers) covering nulls, empties, many headers, big values."""
    hundred: Headers = []
    for i in range(100):
        value: bytes | None
        if i % 10 == 3:
            value = None
        elif i % 10 == 7:
            value = b""
        else:
            value = rng.randbytes(rng.randrange(1, 300))
        hundred.append((f"h{i:03d}", value))
    return [
        (None, None, None),
        (b"", b"", None),
        (None, b"value with a null key", None),
        (b"key with a null value", None, None),
        (b"k", b"v", [("", b""), ("empty", b""), ("null", None)]),
        (b"many", b"100 headers", hundred),
        (b"dup", b"repeated header names", [("x", b"1"), ("x", b"2"), ("x", None)]),
        (b"big", rng.randbytes(200_000), [("kind", b"random"), ("large", rng.randbytes(65_536))]),
        (b"compressible", b"abc" * 100_000, [("kind", b"repetitive")]),
        ("ключ ✓".encode(), "значение ✓".encode(), [("ünïcode", "✓".encode())]),
    ]


def test_headers_nulls_and_every_codec_intact(share_broker: BrokerProcess) -> None:
    """90: every record, produced with each codec, arrives through a ShareConsumer
    with its key, value and headers (order, duplicates, nulls) unchanged."""
    bootstrap = share_broker.bootstrap
    topic = topic_name("codecs")
    create_topic(bootstrap, topic, partitions=len(CODECS))
    rng = random.Random(90)
    sent = odd_records(rng)
    for partition, codec in enumerate(CODECS):
        p = producer(bootstrap, compression_type=codec, linger_ms=50)
        for key, value, headers in sent:
            p.produce(topic, key=key, value=value, headers=headers, partition=partition)
        assert p.flush(60) == 0, codec
    group = share_group(bootstrap, topic_name("codecs"))
    consumer = share_consumer(bootstrap, group, [topic], fetch_max_bytes=52428800)
    received: list[Got] = []
    try:
        poll_until(
            [consumer],
            lambda: len(received) >= len(sent) * len(CODECS),
            on_message=lambda _, m: received.append(got(m)),
            what="every record of every codec",
        )
        consumer.commit_sync(30)
    finally:
        consumer.close()
    for partition, codec in enumerate(CODECS):
        mine = sorted((r for r in received if r.partition == partition), key=lambda r: r.offset)
        assert [r.offset for r in mine] == list(range(len(sent))), codec
        for r, (key, value, headers) in zip(mine, sent, strict=True):
            assert r.key == key, (codec, r.offset)
            assert r.value == value, (codec, r.offset)
            assert r.headers == headers, (codec, r.offset)
            assert r.delivery_count == 1


@dataclass
class Ledger:
    """What happened to each record: its deliveries and the acknowledgement of each."""

    limit: int
    deliveries: dict[tuple[int, int], list[tuple[int, int, AcknowledgeType]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    settled: int = 0
    problems: list[str] = field(default_factory=list)

    def record(self, consumer: int, g: Got, ack: AcknowledgeType) -> None:
        history = self.deliveries[g.where]
        if history:
            _, last_count, last_ack = history[-1]
            if last_ack is not AcknowledgeType.RELEASE:
                self.problems.append(f"{g.where} delivered again after {last_ack.name}")
            if g.delivery_count != last_count + 1:
                self.problems.append(
                    f"{g.where} delivery count {g.delivery_count} after {last_count}"
                )
        elif g.delivery_count != 1:
            self.problems.append(f"{g.where} first delivered with count {g.delivery_count}")
        if g.delivery_count > self.limit:
            self.problems.append(f"{g.where} delivered {g.delivery_count} times")
        history.append((consumer, g.delivery_count, ack))
        if ack is not AcknowledgeType.RELEASE or g.delivery_count >= self.limit:
            self.settled += 1


def test_random_acknowledgements_lose_nothing_accept_nothing_twice(
    share_broker: BrokerProcess,
) -> None:
    """86, 87: 20k records over 5 partitions, 4 consumers (explicit mode) ACCEPT 60%,
    RELEASE 30%, REJECT 10% of deliveries at random."""
    bootstrap = share_broker.bootstrap
    total, partitions, members, limit = 20_000, 5, 4, 5
    topic = topic_name("random-acks")
    create_topic(bootstrap, topic, partitions=partitions)
    group = share_group(bootstrap, topic_name("random-acks"))
    logs = [AckLog() for _ in range(members)]
    consumers = [
        share_consumer(bootstrap, group, [topic], explicit=True, max_poll_records=200)
        for _ in range(members)
    ]
    for consumer, log in zip(consumers, logs, strict=True):
        consumer.set_acknowledgement_commit_callback(log)
    ledger = Ledger(limit)
    rngs = [random.Random(86 + i) for i in range(members)]
    kinds = [AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT]

    def on_message(index: int, message: Message) -> None:
        kind = rngs[index].choices(kinds, weights=(6, 3, 1))[0]
        consumers[index].acknowledge(message, kind)
        ledger.record(index, got(message, index), kind)

    try:
        wait_for_members(bootstrap, group, consumers, topic, partitions=partitions)
        p = producer(bootstrap, linger_ms=20)
        for i in range(total):
            p.produce(topic, value=b"%06d" % i, partition=i % partitions)
            if i % 5000 == 4999:
                p.poll(0)
        assert p.flush(60) == 0
        started = time.monotonic()
        poll_until(
            consumers,
            lambda: ledger.settled >= total,
            on_message=on_message,
            timeout_s=120,
            poll_s=0.05,
            what=f"{total} settled records",
        )
        elapsed = time.monotonic() - started
        for consumer in consumers:
            for tp, error in consumer.commit_sync(30).items():
                assert error is None, (tp.partition, error)
        # Nothing is left: markers on every partition are all that arrives.
        p.produce(topic, value=b"marker", partition=0)
        for partition in range(1, partitions):
            p.produce(topic, value=b"marker", partition=partition)
        assert p.flush(30) == 0
        markers: list[Got] = []
        extra: list[Got] = []

        def on_tail(index: int, message: Message) -> None:
            consumers[index].acknowledge(message, AcknowledgeType.ACCEPT)
            (markers if message.value() == b"marker" else extra).append(got(message, index))

        poll_until(
            consumers,
            lambda: len(markers) >= partitions,
            on_message=on_tail,
            what="the markers",
        )
        for consumer in consumers:
            consumer.commit_sync(30)
    finally:
        for consumer in consumers:
            consumer.set_acknowledgement_commit_callback(None)
        close_all(consumers)

    assert ledger.problems == []
    assert extra == [], f"delivered after settling: {extra[:5]}"
    per_partition = total // partitions
    expected = {(p, o) for p in range(partitions) for o in range(per_partition)}
    assert set(ledger.deliveries) == expected, "a record was never delivered"
    accepted = [w for w, h in ledger.deliveries.items() if h[-1][2] is AcknowledgeType.ACCEPT]
    accepts = sum(
        1 for h in ledger.deliveries.values() for d in h if d[2] is AcknowledgeType.ACCEPT
    )
    assert accepts == len(accepted), "a record was accepted twice"
    at_limit = [w for w, h in ledger.deliveries.items() if len(h) == limit]
    assert at_limit, "no record reached the delivery limit: the run proves nothing about it"
    assert all(
        h[-1][2] is not AcknowledgeType.RELEASE or len(h) == limit
        for h in ledger.deliveries.values()
    ), "a released record below the limit was never redelivered"
    assert [e for log in logs for e in log.errors] == []
    # Every acceptance and rejection was confirmed by the broker to its consumer.
    for (part, offset), history in ledger.deliveries.items():
        owner = history[-1][0]
        assert offset in logs[owner].confirmed(topic, part), (part, offset, history)
    shares = [sum(1 for h in ledger.deliveries.values() for d in h if d[0] == i) for i in range(4)]
    assert all(shares), f"deliveries per consumer {shares}"
    print(f"{total} records settled in {elapsed:.1f} s; deliveries per consumer {shares}")
