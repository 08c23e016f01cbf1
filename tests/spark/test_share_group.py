"""The shoal-share source's driver-side member and driver against a real broker, without
Spark: acquisition, acknowledgement, RENEW keeping locks alive, replay reclaim and
AvailableNow bounds (share_group.py, share_driver.py)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from shoal.client.ranges import Span
from shoal.spark.share_driver import ShareDriver
from shoal.spark.share_group import ACCEPT, MemberSettings, ShareGroupMember, ShareMemberError
from shoal.spark.share_offsets import INITIAL_OFFSET, ShareOffset, TopicPartition
from tests.support.broker import BrokerProcess, running
from tests.support.share_consumers import SHARE_TEST_BROKER_OVERRIDES
from tests.support.share_wire import produce_values
from tests.support.topics import create_topic, topic_name

EARLIEST = {"share.auto.offset.reset": "earliest"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    yield from running(
        tmp_path_factory.mktemp("share-member") / "data", *SHARE_TEST_BROKER_OVERRIDES
    )


def _member(broker: BrokerProcess, group: str, topic: str, **settings: object) -> ShareGroupMember:
    configs = settings.pop("group_configs", EARLIEST)
    member = ShareGroupMember(
        MemberSettings(broker.bootstrap, group, (topic,), configs, **settings)  # type: ignore[arg-type]
    )
    member.start()
    return member


def _acquire_all(member: ShareGroupMember, count: int) -> dict[TopicPartition, list[Span]]:
    got: dict[TopicPartition, list[Span]] = {}
    deadline = time.monotonic() + 30
    while sum(s.size for spans in got.values() for s in spans) < count:
        assert time.monotonic() < deadline, got
        for tp, spans in member.acquire(records_max=count, wait_ms=500).items():
            got.setdefault(tp, []).extend(spans)
    return got


def test_renew_keeps_locks_alive_past_the_lock_duration(broker: BrokerProcess) -> None:
    topic = topic_name("renew")
    create_topic(broker.bootstrap, topic)
    produce_values(broker.bootstrap, topic, 10)
    configs = {**EARLIEST, "share.record.lock.duration.ms": "1000"}
    renewing = _member(broker, "renewing", topic, group_configs=configs)
    idle = _member(
        broker, "not-renewing", topic, group_configs=configs, lock_renew_interval_ms=60_000
    )
    try:
        held = _acquire_all(renewing, 10)
        unrenewed = _acquire_all(idle, 10)
        assert renewing.lock_duration_ms == 1000
        time.sleep(3.0)  # three lock durations
        assert renewing.acknowledge(held, ACCEPT) == {}
        assert idle.acknowledge(unrenewed, ACCEPT) == {
            TopicPartition(topic, 0): "INVALID_RECORD_STATE"
        }
    finally:
        renewing.close()
        idle.close()


def test_driver_acks_a_batch_only_when_the_next_one_is_asked_for(broker: BrokerProcess) -> None:
    topic = topic_name("driver")
    create_topic(broker.bootstrap, topic, partitions=2)
    produce_values(broker.bootstrap, topic, 30)
    produce_values(broker.bootstrap, topic, 20, partition=1)
    driver = ShareDriver(_member(broker, "drv", topic), acquire_wait_ms=500)
    try:
        ends = []
        start = INITIAL_OFFSET
        while (end := driver.latest_offset(start, records_max=20)) is not None:
            assert end.seq == start.seq + 1
            assert end.record_count <= 20
            assert driver.batch(end) == end.spans  # planned here: what the JSON names
            ends.append(end)
            start = end
        offsets = sorted(
            (tp.partition, o)
            for e in ends
            for tp, spans in e.spans.items()
            for s in spans
            for o in range(s.first, s.last + 1)
        )
        assert offsets == [(0, o) for o in range(30)] + [(1, o) for o in range(20)]
        assert driver.status()["accepted"] == 50
        assert driver.status()["pending"] == 0
    finally:
        driver.stop()
        driver.stop()  # idempotent


def _first_run(broker: BrokerProcess, group: str, topic: str) -> ShareOffset:
    """A run that planned batches 1 and 2, accepted batch 1 (Spark committed it) and
    died; returns the end of batch 2."""
    first = ShareDriver(_member(broker, group, topic), acquire_wait_ms=500)
    end1 = first.latest_offset(INITIAL_OFFSET, records_max=10)
    assert end1 is not None
    end2 = first.latest_offset(end1, records_max=10)
    assert end2 is not None
    assert first.status()["accepted"] == 10
    first.member.close()  # the run dies: its records go back to the group
    return end2


def test_a_restarted_driver_replays_an_uncommitted_batch_from_the_group(
    broker: BrokerProcess,
) -> None:
    topic = topic_name("replay")
    create_topic(broker.bootstrap, topic)
    produce_values(broker.bootstrap, topic, 30)
    end2 = _first_run(broker, "replay", topic)
    second = ShareDriver(_member(broker, "replay", topic), acquire_wait_ms=500)
    try:
        # batch 2 was not committed: Spark replays it, and the group redelivers it
        replay = second.batch(end2)
        assert replay == {TopicPartition(topic, 0): (Span(10, 19, 2),)}
        assert second.batch(end2) == replay  # reclaimed once
        end3 = second.latest_offset(end2, records_max=10)  # batch 2 committed now
        assert end3 is not None
        # the dead run held 20-29 too (it acquired the whole log batch of 30, unplanned
        # beyond batch 2): they went back with its session, one delivery counted, and
        # come as suspects of a failing batch would, at most 6 of 10 a batch
        # (share_bisect.py)
        assert end3.spans == {TopicPartition(topic, 0): (Span(20, 25, 2),)}
        end3 = second.latest_offset(end3, records_max=10)
        assert end3 is not None
        assert end3.spans == {TopicPartition(topic, 0): (Span(26, 29, 2),)}
        assert second.latest_offset(end3, records_max=10) is None
        status = second.status()
        assert status["accepted"] == 20
        assert status["archived"] == 0
    finally:
        second.stop()


def test_a_restarted_driver_accepts_a_committed_batch_instead_of_redelivering_it(
    broker: BrokerProcess,
) -> None:
    topic = topic_name("committed")
    create_topic(broker.bootstrap, topic)
    produce_values(broker.bootstrap, topic, 30)
    end2 = _first_run(broker, "committed", topic)
    second = ShareDriver(_member(broker, "committed", topic), acquire_wait_ms=500)
    try:
        # batch 2 was committed but never acknowledged: Spark goes on after it
        end3 = second.latest_offset(end2, records_max=10)
        assert end3 is not None
        assert second.status()["accepted"] == 10  # batch 2's records, handed back
        # the dead run held 20-29 too (it acquired the whole log batch of 30, unplanned
        # beyond batch 2): they went back with its session, one delivery counted, and
        # come as suspects of a failing batch would, at most 6 of 10 a batch
        # (share_bisect.py)
        assert end3.spans == {TopicPartition(topic, 0): (Span(20, 25, 2),)}
        end3 = second.latest_offset(end3, records_max=10)
        assert end3 is not None
        assert end3.spans == {TopicPartition(topic, 0): (Span(26, 29, 2),)}
        assert second.latest_offset(end3, records_max=10) is None
    finally:
        second.stop()


def test_available_now_reads_only_what_was_there(broker: BrokerProcess) -> None:
    topic = topic_name("bounded")
    create_topic(broker.bootstrap, topic)
    produce_values(broker.bootstrap, topic, 10)
    driver = ShareDriver(_member(broker, "bounded", topic), acquire_wait_ms=200)
    try:
        driver.bound()
        produce_values(broker.bootstrap, topic, 5)
        end = driver.latest_offset(INITIAL_OFFSET, records_max=100)
        assert end is not None
        assert end.spans == {TopicPartition(topic, 0): (Span(0, 9, 1),)}
        assert driver.latest_offset(end, records_max=100) is None
    finally:
        driver.stop()
    # the 5 later records were released, not lost
    other = _member(broker, "bounded", topic)
    try:
        assert _acquire_all(other, 5) == {TopicPartition(topic, 0): [Span(10, 14, 2)]}
    finally:
        other.close()


def test_mistakes_are_reported_with_the_option(broker: BrokerProcess, tmp_path: Path) -> None:
    topic = topic_name("errors")
    create_topic(broker.bootstrap, topic)
    with pytest.raises(ShareMemberError, match="option topic"):
        _member(broker, "g", "no-such-topic")
    with pytest.raises(ShareMemberError, match=re.escape("share.auto.offset.reset")):
        _member(broker, "g", topic, group_configs={"share.auto.offset.reset": "sometimes"})
    with pytest.raises(ShareMemberError, match=re.escape("bootstrap.servers='127.0.0.1:1'")):
        ShareGroupMember(MemberSettings("127.0.0.1:1", "g", (topic,))).start()


def test_the_member_reads_the_groups_delivery_count_limit(broker: BrokerProcess) -> None:
    """Shoal serves `share.delivery.count.limit` as a group config (README, share groups);
    Kafka 4.2 only as the brokers' `group.share.delivery.count.limit`
    (tests/spark/test_on_kafka.py reads that one)."""
    topic = topic_name("count-limit")
    create_topic(broker.bootstrap, topic)
    configs = {**EARLIEST, "share.delivery.count.limit": "3"}
    member = _member(broker, "count-limit", topic, group_configs=configs)
    try:
        assert member.delivery_count_limit == 3
    finally:
        member.close()
