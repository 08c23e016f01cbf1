"""Share-partition state comes back after a restart, even from a torn state log.

Conformance 71: after a restart, acknowledged records never return, released ones
return with their delivery count, and records that were only acquired return with
the count they were delivered with. A torn write at the end of `__share_group_state`
(the process died in the middle of appending a state batch) is cut off by log
recovery: the share-partition comes back in the last complete state, and nothing
acknowledged before that state was written is delivered again.
"""

from __future__ import annotations

import struct
from pathlib import Path

from confluent_kafka import AcknowledgeType, Message, ShareConsumer

from tests.support.broker import Brokers
from tests.support.clients import create_topic
from tests.support.share_consumers import (
    SHARE_TEST_BROKER_OVERRIDES,
    first_batch,
    produce_values,
    share_consumer,
    share_group,
)
from tests.support.topics import topic_name

_BATCH_HEADER = struct.Struct(">qi")  # base offset, batch length


def _ack_all(consumer: ShareConsumer, batch: list[Message], how: AcknowledgeType) -> None:
    for message in batch:
        consumer.acknowledge(message, how)
    results = consumer.commit_sync(30.0)
    assert results and all(error is None for error in results.values()), results


def _offsets(batch: list[Message]) -> list[int]:
    return sorted(int(m.offset() or 0) for m in batch)


def _state_segments(data_dir: Path) -> list[Path]:
    """The segment files of `__share_group_state` that hold records."""
    return [
        path
        for path in sorted(data_dir.glob("__share_group_state-*/*.log"))
        if path.stat().st_size > 0
    ]


def _batch_starts(path: Path) -> list[int]:
    data = path.read_bytes()
    starts, position = [], 0
    while position + _BATCH_HEADER.size <= len(data):
        _base, length = _BATCH_HEADER.unpack_from(data, position)
        starts.append(position)
        position += _BATCH_HEADER.size + length
    assert position == len(data), f"{path} does not end on a batch boundary"
    return starts


def test_restart_restores_acked_released_and_acquired_records(brokers: Brokers) -> None:
    broker = brokers.start(*SHARE_TEST_BROKER_OVERRIDES)
    topic = topic_name("recover")
    create_topic(broker.bootstrap, topic, partitions=1)
    group = share_group(broker.bootstrap, "recover-group", lock_ms=60_000)
    produce_values(broker.bootstrap, topic, [f"v{i}".encode() for i in range(6)])

    consumer = share_consumer(broker.bootstrap, group, [topic], explicit=True)
    batch = first_batch(consumer)
    assert _offsets(batch) == list(range(6))
    for message in batch:
        offset = int(message.offset() or 0)
        if offset < 2:
            consumer.acknowledge(message, AcknowledgeType.ACCEPT)
        elif offset < 4:
            consumer.acknowledge(message, AcknowledgeType.RELEASE)
        else:
            consumer.acknowledge(message, AcknowledgeType.REJECT)
    results = consumer.commit_sync(30.0)
    assert results and all(error is None for error in results.values()), results
    # Acquire the released ones again (count 2) and crash while holding them.
    again = first_batch(consumer)
    assert [(int(m.offset() or 0), m.delivery_count()) for m in again] == [(2, 2), (3, 2)]
    broker.kill()
    consumer.close()

    broker.start()
    after = share_consumer(broker.bootstrap, group, [topic], explicit=True)
    try:
        redelivered = first_batch(after)
        # 0-1 accepted and 4-5 rejected never return; 2-3 were acquired a second
        # time (not persisted), so they come back with the count they had then.
        assert [(int(m.offset() or 0), m.delivery_count()) for m in redelivered] == [
            (2, 2),
            (3, 2),
        ]
    finally:
        after.close()


def test_torn_state_write_recovers_to_last_complete_state(brokers: Brokers) -> None:
    broker = brokers.start(*SHARE_TEST_BROKER_OVERRIDES)
    topic = topic_name("torn")
    create_topic(broker.bootstrap, topic, partitions=1)
    group = share_group(broker.bootstrap, "torn-group", lock_ms=60_000)
    produce_values(broker.bootstrap, topic, [f"v{i}".encode() for i in range(5)])

    consumer = share_consumer(broker.bootstrap, group, [topic], explicit=True)
    first = first_batch(consumer)
    assert _offsets(first) == list(range(5))
    _ack_all(consumer, first, AcknowledgeType.ACCEPT)
    produce_values(broker.bootstrap, topic, [f"v{i}".encode() for i in range(5, 10)])
    second = first_batch(consumer)
    assert _offsets(second) == list(range(5, 10))
    _ack_all(consumer, second, AcknowledgeType.ACCEPT)
    broker.kill()
    consumer.close()

    # The last state batch written is the ACCEPT of 5-9: tear it in half.
    (segment,) = _state_segments(broker.data_dir)
    last = _batch_starts(segment)[-1]
    size = segment.stat().st_size
    with segment.open("r+b") as file:
        file.truncate(last + (size - last) // 2)

    broker.start()
    recovered = broker.wait_for_log(r"truncating .*__share_group_state", timeout_s=30)
    assert recovered is not None, "no recovery of the torn state batch logged"
    after = share_consumer(broker.bootstrap, group, [topic], explicit=True)
    try:
        redelivered = first_batch(after)
        # 0-4 were accepted in a complete state batch and never return; the ACCEPT
        # of 5-9 was torn, and their acquisition was never persisted, so they are
        # delivered again as if for the first time.
        assert [(int(m.offset() or 0), m.delivery_count()) for m in redelivered] == [
            (offset, 1) for offset in range(5, 10)
        ]
    finally:
        after.close()
    assert _batch_starts(segment)[-1] < size, "the torn batch should be gone"


def test_idle_share_partition_reloads_its_state(brokers: Brokers) -> None:
    broker = brokers.start(*SHARE_TEST_BROKER_OVERRIDES, "shoal.share.partition.idle.unload.ms=500")
    topic = topic_name("idle")
    create_topic(broker.bootstrap, topic, partitions=1)
    group = share_group(broker.bootstrap, "idle-group", lock_ms=60_000)
    produce_values(broker.bootstrap, topic, [f"v{i}".encode() for i in range(6)])
    consumer = share_consumer(broker.bootstrap, group, [topic], explicit=True)
    try:
        batch = first_batch(consumer)
        for message in batch:
            offset = int(message.offset() or 0)
            how = AcknowledgeType.ACCEPT if offset < 3 else AcknowledgeType.RELEASE
            consumer.acknowledge(message, how)
        results = consumer.commit_sync(30.0)
        assert results and all(error is None for error in results.values()), results
        # The member stays in the group but stops polling: the share-partition has
        # nothing acquired and goes idle, is unloaded, and reloads on the next poll.
        unloaded = broker.wait_for_log(r"unloaded 1 idle share-partitions", timeout_s=30)
        assert unloaded is not None, "the idle share-partition was not unloaded"
        again = first_batch(consumer)
        assert [(int(m.offset() or 0), m.delivery_count()) for m in again] == [
            (3, 2),
            (4, 2),
            (5, 2),
        ]
    finally:
        consumer.close()
