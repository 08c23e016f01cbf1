"""confluent-kafka helpers shared by the end-to-end tests and the benchmark.

Everything polls with a bound: a helper returns as soon as its condition holds and
fails with what it saw when the bound passes.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

Headers = list[tuple[str, bytes | None]]
BASE_TIMESTAMP_MS = 1_700_000_000_000


@dataclass(frozen=True, slots=True)
class Consumed:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Headers | None
    timestamp_type: int
    timestamp_ms: int


def create_topic(
    bootstrap: str,
    name: str,
    *,
    partitions: int = 1,
    config: Mapping[str, str] | None = None,
    timeout_s: float = 30.0,
) -> None:
    """CreateTopics through AdminClient, then wait until Metadata shows every partition."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new_topic = NewTopic(
        name, num_partitions=partitions, replication_factor=1, config=dict(config or {})
    )
    futures = admin.create_topics(
        [new_topic],
        operation_timeout=timeout_s,
        request_timeout=timeout_s,
    )
    futures[name].result(timeout=timeout_s)
    deadline = time.monotonic() + timeout_s
    while True:
        metadata = admin.list_topics(name, timeout=timeout_s)
        topic = metadata.topics.get(name)
        if topic is not None and topic.error is None and len(topic.partitions) == partitions:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"topic {name} not visible in Metadata: {topic}")
        time.sleep(0.05)


def partition_count(bootstrap: str, name: str, *, timeout_s: float = 30.0) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = admin.list_topics(name, timeout=timeout_s).topics[name]
    if topic.error is not None:
        raise KafkaException(topic.error)
    return len(topic.partitions)


_VERBATIM_KEYS = frozenset(
    {"error_cb", "stats_cb", "throttle_cb", "on_delivery", "on_commit", "logger", "log_level"}
)


def _dotted(config: Mapping[str, Any]) -> dict[str, Any]:
    """linger_ms=5 -> {"linger.ms": 5}; callbacks and log_level keep their names."""
    return {k if k in _VERBATIM_KEYS else k.replace("_", "."): v for k, v in config.items()}


def producer(bootstrap: str, **config: Any) -> Producer:
    """A Producer with loopback-friendly timeouts; `config` uses underscores for dots
    (linger_ms=5 -> linger.ms)."""
    settings: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "linger.ms": 5,
        "message.timeout.ms": 60_000,
        "reconnect.backoff.ms": 20,
        "reconnect.backoff.max.ms": 500,
    }
    settings.update(_dotted(config))
    return Producer(settings)


def consumer(bootstrap: str, **config: Any) -> Consumer:
    """A Consumer for `assign()` reads: a group id (librdkafka wants one) but no commits."""
    settings: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": "shoal-e2e-reader",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "error",
        "check.crcs": True,
        "fetch.wait.max.ms": 100,
        "fetch.queue.backoff.ms": 10,  # not 1 s whenever 100k records wait locally
        "reconnect.backoff.ms": 20,
        "reconnect.backoff.max.ms": 500,
    }
    settings.update(_dotted(config))
    return Consumer(settings)


def flush_all(p: Producer, *, timeout_s: float = 60.0) -> None:
    remaining = p.flush(timeout_s)
    assert remaining == 0, f"{remaining} records still undelivered after {timeout_s} s"


def read_partitions(
    bootstrap: str,
    topic: str,
    end_offsets: Mapping[int, int],
    *,
    start_offsets: Mapping[int, int] | None = None,
    timeout_s: float = 60.0,
    on_record: Callable[[Any], None] | None = None,
    **config: Any,
) -> dict[int, list[Consumed]]:
    """Read each partition from its start offset (default 0) up to its end offset (which
    may be a high watermark above trailing transaction markers) with an
    assigned Consumer; returns the records per partition in the order delivered. With
    `on_record`, each message is passed to it instead of being collected."""
    starts = dict.fromkeys(end_offsets, 0) if start_offsets is None else dict(start_offsets)
    out: dict[int, list[Consumed]] = {p: [] for p in end_offsets}
    positions = dict(starts)
    c = consumer(bootstrap, **config)
    try:
        c.assign([TopicPartition(topic, p, starts[p]) for p in end_offsets])
        deadline = time.monotonic() + timeout_s
        while any(positions[p] < end_offsets[p] for p in end_offsets):
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"read of {topic} stalled at {positions}, want {dict(end_offsets)}"
                )
            messages = c.consume(num_messages=10_000, timeout=0.2)
            if not messages:
                # the position steps over what no message shows (transaction markers,
                # aborted records): an end offset just past them is reached this way
                for tp in c.position([TopicPartition(topic, p) for p in end_offsets]):
                    positions[tp.partition] = max(positions[tp.partition], tp.offset)
            for message in messages:
                error = message.error()
                if error is not None:
                    raise KafkaException(error)
                partition = message.partition()
                positions[partition] = message.offset() + 1
                if message.offset() >= end_offsets[partition]:
                    continue  # past what was asked for (the log may be growing)
                if on_record is not None:
                    on_record(message)
                    continue
                timestamp_type, timestamp_ms = message.timestamp()
                out[partition].append(
                    Consumed(
                        partition=partition,
                        offset=message.offset(),
                        key=message.key(),
                        value=message.value(),
                        headers=message.headers(),
                        timestamp_type=timestamp_type,
                        timestamp_ms=timestamp_ms,
                    )
                )
    finally:
        c.close()
    return out


def watermarks(bootstrap: str, topic: str, partitions: int) -> dict[int, tuple[int, int]]:
    """(low, high) watermark of each partition, by ListOffsets."""
    c = consumer(bootstrap)
    try:
        return {
            p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30, cached=False)
            for p in range(partitions)
        }
    finally:
        c.close()


@dataclass(frozen=True, slots=True)
class Sent:
    key: bytes | None
    value: bytes
    headers: Headers | None
    timestamp_ms: int


def make_records(count: int, *, seed: int, null_header_values: bool = True) -> list[Sent]:
    """Varied keys (some null), ~100-byte values (some empty), varied headers (some
    absent, some repeated, some with a null value unless `null_header_values` is
    false), strictly increasing explicit timestamps."""
    rng = random.Random(seed)
    filler = b"the quick brown fox jumps over the lazy dog "
    records = []
    for i in range(count):
        key = None if i % 50 == 7 else b"key-%d" % rng.randrange(5_000)
        padding = rng.randbytes(rng.randrange(20, 60))
        value = b"" if i % 37 == 0 else b"%08d:" % i + padding + filler
        headers: Headers | None = None
        if i % 3:
            headers = [("idx", b"%d" % i), ("trace", rng.randbytes(8))]
            if i % 7 == 0:
                headers.append(("idx", b"repeated"))
            if i % 101 == 0:
                headers.append(("empty", None if null_header_values else b""))
        records.append(Sent(key, value, headers, BASE_TIMESTAMP_MS + i))
    return records
