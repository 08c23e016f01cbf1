"""Compacted topics in end-to-end tests and the compaction benchmark: keyed produce
with the offsets each record got, sealing the active segment, and waiting until a
consumer reading from the beginning sees exactly the latest record of each key.

Compacted topics here have small segments and `min.cleanable.dirty.ratio` near zero
(`COMPACTED`), so the cleaner takes a segment as soon as it is sealed; `seal`
produces one more record after `segment.ms`, which rolls the segment (the active
segment is never cleaned).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaError, Message, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.admin import ResourceType as AdminResourceType

from tests.support.broker import wait_until
from tests.support.clients import Consumed, flush_all, producer, read_partitions, watermarks

SEGMENT_MS = 1000
COMPACTED = {
    "cleanup.policy": "compact",
    "segment.bytes": "16384",
    "segment.ms": str(SEGMENT_MS),
    "min.cleanable.dirty.ratio": "0.01",
}
CLEAN_WAIT_S = 90.0
BATCH_BYTES = 4096
"""The producers' batch.size: batches must fit the small segments."""


def produce_keyed(
    bootstrap: str,
    topic: str,
    records: Iterable[tuple[bytes, bytes | None]],
    *,
    timestamp_ms: int | None = None,
    batch_bytes: int = BATCH_BYTES,
) -> dict[bytes, list[tuple[int, bytes | None]]]:
    """Produce (key, value) records in order (idempotent, one partition), with
    `timestamp_ms` if given, in batches of at most `batch_bytes`; returns each key's
    (offset, value) in offset order."""
    extra: dict[str, Any] = {} if timestamp_ms is None else {"timestamp": timestamp_ms}
    written: dict[bytes, list[tuple[int, bytes | None]]] = {}
    failures: list[KafkaError] = []

    def delivered(error: KafkaError | None, message: Message) -> None:
        if error is not None:
            failures.append(error)
            return
        key = message.key()
        assert key is not None
        written.setdefault(key, []).append((message.offset(), message.value()))

    p = producer(bootstrap, enable_idempotence=True, batch_size=batch_bytes)
    for key, value in records:
        p.produce(topic, key=key, value=value, partition=0, on_delivery=delivered, **extra)
        p.poll(0)
    flush_all(p)
    assert not failures, failures[:3]
    for entries in written.values():
        entries.sort()
    return written


def seal(bootstrap: str, topic: str) -> int:
    """Produce one record after `segment.ms`: it rolls the segment, so every earlier
    record is in a sealed segment the cleaner may take. Returns its offset."""
    time.sleep(SEGMENT_MS / 1000 + 0.2)
    sealed = produce_keyed(bootstrap, topic, [(b"~seal-%d" % time.monotonic_ns(), b"seal")])
    ((entry,),) = sealed.values()
    return entry[0]


def read_all(bootstrap: str, topic: str, **config: object) -> list[Consumed]:
    (low, high) = watermarks(bootstrap, topic, 1)[0]
    if high <= low:
        return []
    return read_partitions(
        bootstrap, topic, {0: high}, start_offsets={0: low}, auto_offset_reset="earliest", **config
    )[0]


def latest(
    written: Mapping[bytes, list[tuple[int, bytes | None]]],
) -> dict[bytes, tuple[int, bytes | None]]:
    return {key: entries[-1] for key, entries in written.items()}


def compacted_view(records: list[Consumed], below: int) -> dict[bytes, tuple[int, bytes | None]]:
    """key -> (offset, value) of the records below `below`; fails on a repeated key."""
    view: dict[bytes, tuple[int, bytes | None]] = {}
    for record in records:
        if record.offset >= below:
            break
        assert record.key is not None
        view.setdefault(record.key, (record.offset, record.value))
    return view


def wait_compacted(
    bootstrap: str,
    topic: str,
    below: int,
    expected: Mapping[bytes, tuple[int, bytes | None]],
    *,
    timeout_s: float = CLEAN_WAIT_S,
) -> list[Consumed]:
    """Read until the records below `below` are exactly `expected` (one per key, at
    its offset); returns the last read."""
    last: list[list[Consumed]] = [[]]

    def done() -> bool:
        last[0] = read_all(bootstrap, topic)
        below_records = [r for r in last[0] if r.offset < below]
        return len(below_records) == len(expected) and compacted_view(last[0], below) == dict(
            expected
        )

    if not wait_until(done, timeout_s=timeout_s, interval_s=0.5):
        seen = [(r.offset, r.key) for r in last[0] if r.offset < below]
        raise AssertionError(
            f"not compacted within {timeout_s} s: {len(seen)} records below {below}, "
            f"want {len(expected)}; first ones {seen[:10]}"
        )
    return last[0]


def alter_broker_configs(bootstrap: str, configs: Mapping[str, object], node: str = "1") -> None:
    """Set dynamic broker configs (IncrementalAlterConfigs, resource type BROKER)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(
        AdminResourceType.BROKER,
        node,
        incremental_configs=[
            ConfigEntry(name, str(value), incremental_operation=AlterConfigOpType.SET)
            for name, value in configs.items()
        ],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)


def alter_topic_config(bootstrap: str, topic: str, key: str, value: str) -> None:
    """Set one topic config (IncrementalAlterConfigs, resource type TOPIC)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(
        AdminResourceType.TOPIC,
        topic,
        incremental_configs=[ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)


def delete_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_topics([topic], operation_timeout=30).values():
        future.result(timeout=30)


def delete_records(bootstrap: str, topic: str, before: int) -> None:
    """DeleteRecords of partition 0 below `before`."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_records([TopicPartition(topic, 0, before)]).values():
        future.result(timeout=30)
