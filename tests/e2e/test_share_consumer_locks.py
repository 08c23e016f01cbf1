"""Acquisition locks with real ShareConsumers (docs/design/conformance.md 84, 85).

A member that stops acknowledging loses its records to another member once the
group's `share.record.lock.duration.ms` passes; a member whose process dies loses
them as soon as the broker sees its connection close (docs/design/share-partition.md section 11:
a share session belongs to its connection); a member acknowledging after its lock
expired and another member took the records gets INVALID_RECORD_STATE for the
partition, and none of its acknowledgements apply.

These tests are about time: they wait for locks of 1-3 s to expire. The last one is
about how many records may be locked at once: the group's
`share.partition.max.record.locks`, changed live.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType, KafkaError, Message

from tests.support.broker import BrokerProcess, running
from tests.support.share_consumers import (
    SHARE_TEST_BROKER_OVERRIDES,
    Got,
    alter_group_configs,
    close_all,
    error_code,
    first_batch,
    got,
    poll_until,
    produce_values,
    share_consumer,
    share_group,
    wait_for_members,
)
from tests.support.topics import create_topic, topic_name

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def share_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(
        tmp_path_factory.mktemp("share-locks") / "data", *SHARE_TEST_BROKER_OVERRIDES
    )


def setup(broker: BrokerProcess, prefix: str, *, lock_ms: int) -> tuple[str, str]:
    topic = topic_name(prefix)
    create_topic(broker.bootstrap, topic)
    group = share_group(broker.bootstrap, topic_name(prefix), lock_ms=lock_ms)
    return topic, group


def test_silent_member_loses_records_after_the_lock(share_broker: BrokerProcess) -> None:
    """84: a consumer that takes records and then neither acknowledges nor polls
    (its object abandoned, not closed; librdkafka keeps its connection and
    heartbeats) loses them to another member only when the 3 s lock expires; they
    come back with delivery count 2."""
    bootstrap = share_broker.bootstrap
    lock_s = 3.0
    topic, group = setup(share_broker, "silent", lock_ms=int(lock_s * 1000))
    produce_values(bootstrap, topic, [b"s0", b"s1", b"s2"])
    started = time.monotonic()  # acquisition happens after this
    silent = share_consumer(bootstrap, group, [topic], explicit=True)
    other = None
    try:
        held = [got(m) for m in first_batch(silent)]
        acquired_by = time.monotonic()
        assert [(r.offset, r.delivery_count) for r in held] == [(0, 1), (1, 1), (2, 1)]
        other = share_consumer(bootstrap, group, [topic], explicit=True)
        again: list[Got] = []

        def on_message(_: int, message: Message) -> None:
            again.append(got(message))
            assert other is not None
            other.acknowledge(message, AcknowledgeType.ACCEPT)

        poll_until(
            [other],
            lambda: len(again) >= 3,
            on_message=on_message,
            timeout_s=lock_s + 30,
            what="the records of the silent member",
        )
        redelivered_at = time.monotonic()
        assert [(r.offset, r.value, r.delivery_count) for r in again] == [
            (0, b"s0", 2),
            (1, b"s1", 2),
            (2, b"s2", 2),
        ]
        assert redelivered_at - started >= lock_s * 0.95, (
            f"redelivered {redelivered_at - started:.2f} s after the silent member began: "
            f"before its {lock_s} s lock expired"
        )
        assert redelivered_at - acquired_by < lock_s + 10
        assert list(other.commit_sync(30).values()) == [None]
    finally:
        close_all([c for c in (other, silent) if c is not None])


def test_killed_consumer_process_releases_its_records(share_broker: BrokerProcess) -> None:
    """84 (crash): a consumer process SIGKILLed while holding records; its
    connection closes with it, so the broker releases them and another member gets
    them with delivery count 2 well before the 15 s lock would expire."""
    bootstrap = share_broker.bootstrap
    lock_s = 15.0
    topic, group = setup(share_broker, "killed", lock_ms=int(lock_s * 1000))
    produce_values(bootstrap, topic, [b"k0", b"k1", b"k2"])
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.share_child",
            "--bootstrap",
            bootstrap,
            "--group",
            group,
            "--topic",
            topic,
            "--count",
            "3",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    survivor = None
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        held = json.loads(line)
        assert held == [[0, 0, 1], [0, 1, 1], [0, 2, 1]], line
        survivor = share_consumer(bootstrap, group, [topic], explicit=True)
        wait_for_members(bootstrap, group, [survivor], topic, partitions=1, members=2)
        child.send_signal(signal.SIGKILL)
        child.wait(30)
        killed_at = time.monotonic()
        again: list[Got] = []

        def on_message(_: int, message: Message) -> None:
            again.append(got(message))
            assert survivor is not None
            survivor.acknowledge(message, AcknowledgeType.ACCEPT)

        poll_until(
            [survivor],
            lambda: len(again) >= 3,
            on_message=on_message,
            timeout_s=lock_s + 30,
            what="the killed consumer's records",
        )
        elapsed = time.monotonic() - killed_at
        assert [(r.offset, r.value, r.delivery_count) for r in again] == [
            (0, b"k0", 2),
            (1, b"k1", 2),
            (2, b"k2", 2),
        ]
        assert elapsed < lock_s * 0.6, (
            f"redelivered {elapsed:.1f} s after the kill: by lock expiry, not on the "
            f"connection drop"
        )
        assert list(survivor.commit_sync(30).values()) == [None]
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(30)
        if child.stdout is not None:
            child.stdout.close()
        if survivor is not None:
            survivor.close()


def test_ack_after_lock_expiry_fails_for_the_whole_partition(
    share_broker: BrokerProcess,
) -> None:
    """85: A holds five records past its 1 s lock; B takes them (count 2); A's
    ACCEPT of all five then fails with INVALID_RECORD_STATE for the partition and
    changes nothing: B still owns all five, releases them, and gets them back with
    count 3."""
    bootstrap = share_broker.bootstrap
    topic, group = setup(share_broker, "expired", lock_ms=1000)
    produce_values(bootstrap, topic, [b"e%d" % i for i in range(5)])
    a = share_consumer(bootstrap, group, [topic], explicit=True)
    consumers = [a]
    try:
        held = first_batch(a)
        offsets = [m.offset() for m in held]
        assert offsets == [0, 1, 2, 3, 4]
        b = share_consumer(bootstrap, group, [topic], explicit=True)
        consumers.append(b)
        taken: list[Message] = []
        poll_until(
            [b],
            lambda: len(taken) >= 5,
            on_message=lambda _, m: taken.append(m),
            timeout_s=30,
            what="B taking the expired records",
        )
        assert [(m.offset(), m.delivery_count()) for m in taken] == [(o, 2) for o in offsets]

        for message in held:
            a.acknowledge(message, AcknowledgeType.ACCEPT)
        result = a.commit_sync(30)
        assert [(tp.topic, tp.partition) for tp in result] == [(topic, 0)]
        (error,) = result.values()
        assert error_code(error) == KafkaError.INVALID_RECORD_STATE, error

        for message in taken:
            b.acknowledge(message, AcknowledgeType.RELEASE)
        assert list(b.commit_sync(30).values()) == [None], "B's records were touched by A"
        back = first_batch(b)
        assert [(m.offset(), m.delivery_count()) for m in back] == [(o, 3) for o in offsets]
        for message in back:
            b.acknowledge(message, AcknowledgeType.ACCEPT)
        assert list(b.commit_sync(30).values()) == [None]
    finally:
        close_all(consumers)


def test_group_record_lock_cap_bounds_a_poll_and_changes_live(
    share_broker: BrokerProcess,
) -> None:
    """The group config `share.partition.max.record.locks` = 100 on
    a one-partition topic with 200 records (log batches of 10): a poll with
    max.poll.records=200 gets 100; while they are held another member gets nothing;
    raising the cap to 200 (IncrementalAlterConfigs on the group) lets it take the
    other 100 without any record being acknowledged. (A single 200-record log batch
    would go out whole, as Kafka acquires whole batches:
    docs/design/share-partition.md section 5.)"""
    bootstrap = share_broker.bootstrap
    topic, group = setup(share_broker, "cap", lock_ms=30_000)
    alter_group_configs(bootstrap, group, {"share.partition.max.record.locks": 100})
    produce_values(bootstrap, topic, [b"c%d" % i for i in range(200)], flush_every=10)
    a = share_consumer(bootstrap, group, [topic], explicit=True, max_poll_records=200)
    consumers = [a]
    try:
        held = first_batch(a)
        assert [m.offset() for m in held] == list(range(100))
        b = share_consumer(bootstrap, group, [topic], explicit=True, max_poll_records=200)
        consumers.append(b)
        wait_for_members(bootstrap, group, [b], topic, partitions=1, members=2)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            assert not [m for m in b.poll(0.2)], "the cap is reached: nothing for B"
        alter_group_configs(bootstrap, group, {"share.partition.max.record.locks": 200})
        taken: list[Message] = []
        poll_until(
            [b],
            lambda: len(taken) >= 100,
            on_message=lambda _, m: taken.append(m),
            timeout_s=30,
            what="B taking the rest once the cap is raised",
        )
        assert sorted(m.offset() for m in taken) == list(range(100, 200))
        for consumer, messages in ((a, held), (b, taken)):
            for message in messages:
                consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            assert list(consumer.commit_sync(30).values()) == [None]
    finally:
        close_all(consumers)
