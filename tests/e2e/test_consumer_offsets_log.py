"""`__consumer_offsets` with real clients: it stays bounded under steady commits and a
broker killed after pruning comes back with exactly the committed offsets; deleting a
topic deletes every group's committed offsets of it, for good.
Offsets retention (`offsets.retention.minutes`, at least a minute) is tested on the
manual clock: tests/unit/server/test_group_log_maintenance.py drives it through the
broker's timers and a reload, tests/unit/group/ the rules (idle classic groups only,
subscribed topics of consumer groups kept, pending transactional offsets kept)."""

from __future__ import annotations

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.support.broker import Brokers, wait_until
from tests.support.clients import consumer, create_topic, watermarks
from tests.support.topics import topic_name

OFFSETS_TOPIC = "__consumer_offsets"
WINDOW = 20
TIGHT_BOUND = (
    "offsets.topic.num.partitions=1",
    "offsets.topic.segment.bytes=4096",
    "offsets.topic.prune.interval.ms=100",
    f"offsets.topic.rewrite.window.records={WINDOW}",
)


def _committer(bootstrap: str, group: str) -> Consumer:
    return consumer(bootstrap, **{"group.id": group, "enable.auto.commit": False})


def _commit(c: Consumer, topic: str, offsets: dict[int, int]) -> None:
    done = c.commit(
        offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False
    )
    assert done is not None and all(tp.error is None for tp in done), done


def _committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    c = _committer(bootstrap, group)
    try:
        stored = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
        return {tp.partition: tp.offset for tp in stored}
    finally:
        c.close()


def _group_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """Every committed offset of the group (OffsetFetch without topics, as describe)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
    result = futures[group].result(timeout=30)
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions}


def test_steady_commits_stay_bounded_and_a_pruned_log_recovers_after_sigkill(
    brokers: Brokers,
) -> None:
    broker = brokers.start(*TIGHT_BOUND)
    topic = topic_name("bounded")
    create_topic(broker.bootstrap, topic, partitions=4)
    once = _committer(broker.bootstrap, "once")
    _commit(once, topic, {0: 11, 1: 12, 2: 13})  # never again: re-written, not lost
    once.close()
    busy = _committer(broker.bootstrap, "busy")
    commits = 400
    try:
        for n in range(commits):
            _commit(busy, topic, {3: n})
    finally:
        busy.close()
    live_keys = 4  # three of "once", one of "busy"
    bound = WINDOW + 2 * live_keys  # the window, the live keys' span, their re-writes

    def pruned() -> bool:
        low, high = watermarks(broker.bootstrap, OFFSETS_TOPIC, 1)[0]
        return high >= commits + 3 and low > 3 and high - low <= bound

    assert wait_until(pruned, timeout_s=60, interval_s=0.2), watermarks(
        broker.bootstrap, OFFSETS_TOPIC, 1
    )
    broker.kill()
    broker.restart()
    assert _committed(broker.bootstrap, "once", topic, 4) == {0: 11, 1: 12, 2: 13, 3: -1001}
    assert _committed(broker.bootstrap, "busy", topic, 4)[3] == commits - 1
    assert _group_offsets(broker.bootstrap, "once") == {
        (topic, 0): 11,
        (topic, 1): 12,
        (topic, 2): 13,
    }


def test_deleting_a_topic_deletes_its_committed_offsets_for_good(brokers: Brokers) -> None:
    broker = brokers.start()
    doomed, kept = topic_name("doomed"), topic_name("kept")
    for name in (doomed, kept):
        create_topic(broker.bootstrap, name, partitions=2)
    for group in ("g1", "g2"):
        c = _committer(broker.bootstrap, group)
        _commit(c, doomed, {0: 5, 1: 6})
        _commit(c, kept, {0: 7})
        c.close()
    assert _group_offsets(broker.bootstrap, "g1") == {(doomed, 0): 5, (doomed, 1): 6, (kept, 0): 7}

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.delete_topics([doomed], operation_timeout=30)[doomed].result(timeout=30)
    for group in ("g1", "g2"):
        assert _group_offsets(broker.bootstrap, group) == {(kept, 0): 7}
        assert _committed(broker.bootstrap, group, doomed, 2) == {0: -1001, 1: -1001}
    broker.kill()
    broker.restart()
    for group in ("g1", "g2"):
        assert _group_offsets(broker.bootstrap, group) == {(kept, 0): 7}


def test_groups_on_every_offsets_partition_keep_their_offsets_after_sigkill(
    brokers: Brokers,
) -> None:
    """A shard per `__consumer_offsets` partition: each group's commits go to its own
    partition (Kafka's placement), and after a kill -9 every partition's shard is
    rebuilt from its own records, each group with exactly its offsets."""
    partitions = 4
    broker = brokers.start(f"offsets.topic.num.partitions={partitions}")
    topic = topic_name("spread")
    create_topic(broker.bootstrap, topic, partitions=2)
    groups = [f"spread-{i}" for i in range(12)]
    for index, group in enumerate(groups):
        c = _committer(broker.bootstrap, group)
        try:
            _commit(c, topic, {0: index, 1: 100 + index})
            _commit(c, topic, {1: 200 + index})  # the later commit wins
        finally:
            c.close()
    ends = watermarks(broker.bootstrap, OFFSETS_TOPIC, partitions)
    assert sum(1 for _low, high in ends.values() if high > 0) >= 3, ends  # spread, not one
    broker.kill()
    broker.restart()
    for index, group in enumerate(groups):
        assert _group_offsets(broker.bootstrap, group) == {
            (topic, 0): index,
            (topic, 1): 200 + index,
        }, group
