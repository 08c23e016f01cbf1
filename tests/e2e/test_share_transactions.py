"""Share groups over transactional topics through real clients (conformance G91-G95):
a confluent-kafka Producer with `transactional.id` writes committed, aborted and
open transactions between plain records; confluent-kafka ShareConsumers read them
in groups whose `share.isolation.level` is set with IncrementalAlterConfigs.

- G91/G95: read_uncommitted delivers committed and aborted records, read_committed
  only committed and plain ones; markers reach no application; two groups with
  different levels on one topic each see their own result.
- G92: 2 plain + 3 committed + 3 aborted + 2 plain -> exactly 7 under read_committed.
- G93: an open transaction blocks a read_committed group at its first offset until
  the transaction commits.
- G94: a level switched at run time applies to records acquired afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Message, Producer, ShareConsumer

from tests.support.broker import BrokerProcess, running
from tests.support.share_consumers import (
    SHARE_TEST_BROKER_OVERRIDES,
    alter_group_configs,
    close_all,
    poll_until,
    producer,
    records_of,
    share_consumer,
    share_group,
)
from tests.support.topics import create_topic, topic_name

QUIET_S = 2.0
"""How long a consumer must see nothing more after its expected records."""

COMMITTED, UNCOMMITTED = "read_committed", "read_uncommitted"


@pytest.fixture(scope="module")
def share_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(tmp_path_factory.mktemp("share-txn") / "data", *SHARE_TEST_BROKER_OVERRIDES)


def level_group(bootstrap: str, prefix: str, level: str) -> str:
    group = share_group(bootstrap, topic_name(prefix))
    alter_group_configs(bootstrap, group, {"share.isolation.level": level})
    return group


def transactional(bootstrap: str, name: str) -> Producer:
    p = producer(bootstrap, transactional_id=topic_name(name), linger_ms=0)
    p.init_transactions(30)
    return p


def plain(bootstrap: str, topic: str, *values: bytes) -> None:
    p = producer(bootstrap)
    for value in values:
        p.produce(topic, value=value, partition=0)
    assert p.flush(60) == 0


def in_transaction(p: Producer, topic: str, *values: bytes, commit: bool) -> None:
    p.begin_transaction()
    for value in values:
        p.produce(topic, value=value, partition=0)
    # written to the log before the outcome: librdkafka's abort purges records it has
    # not sent, and then no aborted record would exist to test
    assert p.flush(30) == 0
    if commit:
        p.commit_transaction(30)
    else:
        p.abort_transaction(30)


def consume(consumer: ShareConsumer, count: int, *, quiet_s: float = QUIET_S) -> list[bytes]:
    """Values of exactly `count` records (implicitly accepted), then `quiet_s` with
    nothing more."""
    seen: list[bytes] = []

    def take(_index: int, message: Message) -> None:
        seen.append(message.value())

    poll_until([consumer], lambda: len(seen) >= count, on_message=take, what=f"{count} records")
    deadline = time.monotonic() + quiet_s
    while time.monotonic() < deadline:
        seen.extend(m.value() for m in records_of(consumer.poll(0.2)))
    return seen


def mixed_topic(bootstrap: str) -> str:
    """2 plain, 3 committed, 3 aborted, 2 plain on one partition."""
    topic = topic_name("txn-mixed")
    create_topic(bootstrap, topic)
    plain(bootstrap, topic, b"p0", b"p1")
    p = transactional(bootstrap, "txn-mixed")
    in_transaction(p, topic, b"c0", b"c1", b"c2", commit=True)
    in_transaction(p, topic, b"x0", b"x1", b"x2", commit=False)
    plain(bootstrap, topic, b"p2", b"p3")
    return topic


def test_g91_g92_g95_two_groups_with_different_levels_on_one_topic(
    share_broker: BrokerProcess,
) -> None:
    bootstrap = share_broker.bootstrap
    topic = mixed_topic(bootstrap)
    committed = share_consumer(bootstrap, level_group(bootstrap, "rc", COMMITTED), [topic])
    uncommitted = share_consumer(bootstrap, level_group(bootstrap, "ru", UNCOMMITTED), [topic])
    try:
        assert consume(committed, 7) == [b"p0", b"p1", b"c0", b"c1", b"c2", b"p2", b"p3"]
        assert sorted(consume(uncommitted, 10)) == sorted(
            [b"p0", b"p1", b"c0", b"c1", b"c2", b"x0", b"x1", b"x2", b"p2", b"p3"]
        )
    finally:
        close_all([committed, uncommitted])


def test_g93_an_open_transaction_blocks_a_read_committed_group(
    share_broker: BrokerProcess,
) -> None:
    bootstrap = share_broker.bootstrap
    topic = topic_name("txn-open")
    create_topic(bootstrap, topic)
    plain(bootstrap, topic, b"p0", b"p1")
    p = transactional(bootstrap, "txn-open")
    p.begin_transaction()
    for value in (b"t0", b"t1", b"t2"):
        p.produce(topic, value=value, partition=0)
    assert p.flush(30) == 0  # written to the log, not committed
    plain(bootstrap, topic, b"p2", b"p3")  # behind the open transaction
    consumer = share_consumer(bootstrap, level_group(bootstrap, "open", COMMITTED), [topic])
    try:
        assert consume(consumer, 2, quiet_s=3.0) == [b"p0", b"p1"]
        p.commit_transaction(30)
        assert consume(consumer, 5) == [b"t0", b"t1", b"t2", b"p2", b"p3"]
    finally:
        close_all([consumer])


def test_g94_switching_the_level_applies_to_records_acquired_afterwards(
    share_broker: BrokerProcess,
) -> None:
    bootstrap = share_broker.bootstrap
    topic = topic_name("txn-switch")
    create_topic(bootstrap, topic)
    group = level_group(bootstrap, "switch", UNCOMMITTED)
    p = transactional(bootstrap, "txn-switch")
    in_transaction(p, topic, b"x0", b"x1", commit=False)
    consumer = share_consumer(bootstrap, group, [topic])
    try:
        assert consume(consumer, 2) == [b"x0", b"x1"], "aborted records under read_uncommitted"
        alter_group_configs(bootstrap, group, {"share.isolation.level": COMMITTED})
        in_transaction(p, topic, b"y0", b"y1", commit=False)
        plain(bootstrap, topic, b"p0")
        assert consume(consumer, 1) == [b"p0"], "aborted records skipped after the switch"
    finally:
        close_all([consumer])


def test_read_committed_over_plain_records_delivers_them_all(share_broker: BrokerProcess) -> None:
    """Without transactions the LSO is the log end: a read_committed group sees
    every record, as a read_uncommitted one does."""
    bootstrap = share_broker.bootstrap
    topic = topic_name("txn-none")
    create_topic(bootstrap, topic)
    plain(bootstrap, topic, *(b"v%d" % i for i in range(20)))
    consumer = share_consumer(bootstrap, level_group(bootstrap, "none", COMMITTED), [topic])
    try:
        assert consume(consumer, 20) == [b"v%d" % i for i in range(20)]
    finally:
        close_all([consumer])
