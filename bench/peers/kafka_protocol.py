"""The side-by-side benchmark's workloads on the Kafka protocol, with confluent-kafka.

The same code runs against Apache Kafka 4.2 and Shoal: each workload is a function of
the broker's "127.0.0.1:port" and returns a dict with at least `records`, `seconds`,
`records_per_s` and `mb_per_s` (value bytes), plus the clients' CPU seconds
(`client_cpu_s`, user + system of every client process over the timed part). Result
keys match bench/peers/redis_streams.py's.

Every client runs in a process of its own (bench/peers/procs.py `run_jobs`: spawned, not
forked; a process imports this module and confluent_kafka, makes its client and waits
on a barrier with the others and the parent, so timing starts after the barrier and no
process start, import or client construction is timed).

- `produce(address, topic, n, size, partitions=1, settings=None)`: creates the topic
  (AdminClient; `partitions` partitions), then one Producer with acks=all and
  enable.idempotence=true, librdkafka's defaults otherwise (linger.ms 5, no
  compression, no keys: the sticky partitioner), except that delivery reports are
  asked for failures only (`delivery.report.only.error`: client-side, nothing on the
  wire changes), and `settings` on top (e.g. batch.num.messages: log batches of at
  most that many records). Before the barrier it reads the topic's metadata and sends
  one record to a warm-up topic of its own (so the producer id is acquired:
  librdkafka's idempotent producer otherwise spends up to ~0.5 s on it inside the
  timed part); then it sends `n` values of `size` random bytes (a pool of
  `VALUE_POOL` distinct random values, made before the clock) and flushes. Rate =
  n / (first produce() to flush() returning, i.e. the last delivery report); a failed
  delivery fails the workload.
- `consume_group(address, topic, n, settings=None)`: one Consumer in a new consumer
  group (auto.offset.reset=earliest, librdkafka's defaults otherwise, `settings` on
  top: `NO_BACKOFF` for the run without librdkafka's fetch-queue backoff) subscribes
  to the topic and reads its `n` records (already produced). Time = subscribe() to the last
  record received; `first_s` = subscribe() to the first (the group join included).
- `share_drain(address, topic, n, consumers=4)`: a new share group, its
  share.auto.offset.reset=earliest set as a group config (IncrementalAlterConfigs on
  the GROUP resource, as Kafka requires), and `consumers` ShareConsumer processes with
  share.acknowledgement.mode=explicit: each record is acknowledged ACCEPT with
  acknowledge() as it is seen (the next poll() carries the acknowledgements), until
  the group has received `n` records among them; each then calls commit_sync() once
  (untimed) and closes. Time = the first process's subscribe() to the last record
  received by any process. `redelivered` counts records seen with a delivery count
  above 1, `duplicates` records seen twice.
- `end_to_end(address, topic, n, size, consumers=4, partitions=1, settings=None)`: a
  fresh topic and share group as above; the consumers subscribe first, and the
  producer (as in `produce`, with its `settings`) sends warm-up records every
  `WARMUP_INTERVAL_S` until every consumer has received one (or `WARMUP_TIMEOUT_S`
  passed: `warmed` says how many had). Then it sends `n` measured records as fast as
  it can, each value starting with time.monotonic_ns() read just before produce() and
  its sequence number (`STAMP`), padded with random bytes to `size`. Rate = records
  received / (the first measured send to the last measured record received); a
  record's latency = the consumer's clock when poll() returned it - its stamp: p50,
  p99, p99.9, max (ms, nearest rank, first delivery of each record).

Every workload checks what it received: it fails if records are missing after
`IDLE_S` of nothing, and reports `received` (distinct records) and `duplicates`.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import struct
import time
from array import array
from typing import Any

from confluent_kafka import AcknowledgeType, Consumer, Producer, ShareConsumer
from tests.support.clients import create_topic

from bench.peers.procs import (
    CLOSE_TIMEOUT_S,
    RESULT_TIMEOUT_S,
    START_TIMEOUT_S,
    Seen,
    cpu_s,
    drained,
    latency_summary,
    rates,
    run_jobs,
    unique_name,
)
from bench.share_consume import set_group

STAMP = struct.Struct(">qq")
"""The head of an end-to-end value: send time (monotonic ns), sequence (-1: warm-up)."""
VALUE_POOL = 256
"""Distinct random values the producer cycles through (made before the clock)."""
IDLE_S = 60.0
"""A consumer that receives nothing for this long gives up (the workload then fails)."""
WARMUP_INTERVAL_S = 0.02
WARMUP_TIMEOUT_S = 30.0
TOPIC_TIMEOUT_S = 120.0
NO_BACKOFF = {"queued.min.messages": 5_000_000, "fetch.queue.backoff.ms": 10}
"""Consumer settings that keep librdkafka's fetch-queue backoff out of the way: it stops
fetching for fetch.queue.backoff.ms (1 s) once more than queued.min.messages (100k)
records wait in its queue, which can set the pace of `consume_group` (`settings`)."""


# --- the workloads -------------------------------------------------------------------


def idempotent_producer(
    address: str, topic: str, failures: list[str], timeout_s: float, **settings: Any
) -> Producer:
    """An acks=all idempotent Producer that reports only failed deliveries, appending
    each to `failures`, already connected with `topic`'s metadata known (so the first
    timed record does not pay for either)."""

    def failed(err: Any, _message: Any) -> None:
        failures.append(str(err))

    producer = Producer(
        {
            "bootstrap.servers": address,
            "acks": "all",
            "enable.idempotence": True,
            "delivery.report.only.error": True,
            "on_delivery": failed,
            **settings,
        }
    )
    producer.list_topics(topic, timeout=timeout_s)
    return producer


def produce(
    address: str,
    topic: str,
    n: int,
    size: int,
    partitions: int = 1,
    settings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    create_topic(address, topic, partitions=partitions, timeout_s=TOPIC_TIMEOUT_S)
    warmup = unique_name("bench-warmup")
    create_topic(address, warmup, timeout_s=TOPIC_TIMEOUT_S)
    (out,) = run_jobs([(_producer, (address, topic, n, size, warmup, None, settings or {}))])
    seconds = (out["end"] - out["start"]) / 1e9
    return {
        **rates(n, size, seconds),
        "partitions": partitions,
        "client_cpu_s": out["cpu_s"],
    }


def consume_group(
    address: str, topic: str, n: int, settings: dict[str, Any] | None = None
) -> dict[str, Any]:
    group = unique_name("bench-group")
    (out,) = run_jobs([(_group_consumer, (address, topic, group, n, settings or {}))])
    return drained([out], n, Seen([out]), out["subscribed"])


def share_drain(address: str, topic: str, n: int, consumers: int = 4) -> dict[str, Any]:
    group = unique_name("bench-share")
    set_group(address, group)
    context = mp.get_context("spawn")
    total = context.Value("q", 0)
    warm = context.Array("b", consumers)
    outs = run_jobs(
        [
            (_share_consumer, (address, topic, group, n, total, warm, i, False))
            for i in range(consumers)
        ]
    )
    return {
        **drained(outs, n, Seen(outs), min(o["subscribed"] for o in outs)),
        "redelivered": sum(o["redelivered"] for o in outs),
    }


def end_to_end(
    address: str,
    topic: str,
    n: int,
    size: int,
    consumers: int = 4,
    partitions: int = 1,
    settings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    create_topic(address, topic, partitions=partitions, timeout_s=TOPIC_TIMEOUT_S)
    group = unique_name("bench-e2e")
    set_group(address, group)
    context = mp.get_context("spawn")
    total = context.Value("q", 0)
    warm = context.Array("b", consumers)
    go = context.Event()

    def release() -> None:
        """Once every consumer has a warm-up record (or the bound passed), measure."""
        deadline = time.monotonic() + WARMUP_TIMEOUT_S
        while not all(warm[:]) and time.monotonic() < deadline:
            time.sleep(0.01)
        go.set()

    outs = run_jobs(
        [
            (_producer, (address, topic, n, size, None, go, settings or {})),
            *(
                (_share_consumer, (address, topic, group, n, total, warm, i, True))
                for i in range(consumers)
            ),
        ],
        after_barrier=release,
    )
    producer, readers = outs[0], outs[1:]
    seen = Seen(readers)
    got = [o for o in readers if o["count"]]
    seconds = (max(o["last"] for o in got) - producer["start"]) / 1e9
    return {
        **rates(seen.unique, size, seconds),
        **seen.counts(n),
        **latency_summary(seen.latency_by_seq),
        "warmed": sum(o["warmed"] for o in readers),
        "warmup_records": producer["warmup"],
        "send_s": (producer["end"] - producer["start"]) / 1e9,
        "redelivered": sum(o["redelivered"] for o in readers),
        "per_consumer": [o["count"] for o in readers],
        "consumers": consumers,
        "partitions": partitions,
        "client_cpu_s": producer["cpu_s"] + sum(o["cpu_s"] for o in readers),
    }


# --- the processes -------------------------------------------------------------------


def _producer(
    address: str,
    topic: str,
    n: int,
    size: int,
    warmup: str | None,
    go: Any,
    settings: dict[str, Any],
    barrier: Any,
) -> dict[str, Any]:
    """`n` records of `size` bytes, acks=all and idempotent. With a `warmup` topic,
    random values, after one record to that topic before the barrier (the producer id
    is then acquired and the connection warm); else stamped values (`STAMP`), after
    warm-up records to `topic` until `go` is set."""
    stamped = warmup is None
    failures: list[str] = []
    producer = idempotent_producer(address, topic, failures, TOPIC_TIMEOUT_S, **settings)
    pool = [os.urandom(size) for _ in range(VALUE_POOL)]
    padding = os.urandom(max(0, size - STAMP.size))
    warmed = 0
    if warmup is not None:
        producer.produce(warmup, pool[0])
        if producer.flush(TOPIC_TIMEOUT_S) or failures:
            raise RuntimeError(f"the warm-up record was not delivered: {failures[:1]}")
    barrier.wait(START_TIMEOUT_S)
    if stamped:
        while not go.wait(WARMUP_INTERVAL_S):
            producer.produce(topic, STAMP.pack(time.monotonic_ns(), -1) + padding)
            producer.poll(0)
            warmed += 1
    cpu = cpu_s()
    start = time.monotonic_ns()
    send = producer.produce
    for seq in range(n):
        value = STAMP.pack(time.monotonic_ns(), seq) + padding if stamped else pool[seq & 255]
        while True:
            try:
                send(topic, value)
                break
            except BufferError:  # the local queue is full: wait for deliveries, retry
                producer.poll(0.005)
    remaining = producer.flush(RESULT_TIMEOUT_S)
    end = time.monotonic_ns()
    if remaining or failures:
        raise RuntimeError(f"{remaining} undelivered, {len(failures)} failed: {failures[:3]}")
    return {"start": start, "end": end, "warmup": warmed, "cpu_s": cpu_s() - cpu}


def _group_consumer(
    address: str, topic: str, group: str, n: int, settings: dict[str, Any], barrier: Any
) -> dict[str, Any]:
    consumer = Consumer(
        {
            "bootstrap.servers": address,
            "group.id": group,
            "auto.offset.reset": "earliest",
            **settings,
        }
    )
    keys = array("q")
    size = 0
    first = last = 0
    barrier.wait(START_TIMEOUT_S)
    cpu = cpu_s()
    subscribed = time.monotonic_ns()
    consumer.subscribe([topic])
    idle_since = time.monotonic()
    try:
        while len(keys) < n:
            batch = consumer.consume(num_messages=1000, timeout=0.1)
            if not batch:
                if time.monotonic() - idle_since > IDLE_S:
                    break
                continue
            last = time.monotonic_ns()
            first = first or last
            idle_since = time.monotonic()
            for message in batch:
                if message.error() is not None:
                    raise RuntimeError(str(message.error()))
                keys.append((message.partition() or 0) << 40 | (message.offset() or 0))
                size += len(message.value() or b"")
        cpu = cpu_s() - cpu
    finally:
        consumer.close()
    return {
        "subscribed": subscribed,
        "first": first,
        "last": last,
        "count": len(keys),
        "bytes": size,
        "keys": keys.tobytes(),
        "cpu_s": cpu,
    }


def _share_consumer(
    address: str,
    topic: str,
    group: str,
    n: int,
    total: Any,  # mp.Value("q"): records the group has received
    warm: Any,  # mp.Array("b"): which consumers have received a warm-up record
    index: int,
    stamped: bool,
    barrier: Any,
) -> dict[str, Any]:
    """A ShareConsumer in explicit mode ACCEPTing every record, until the group has
    `n` (measured) records; with `stamped`, warm-up records are acknowledged and not
    counted, and each measured record's latency is kept."""
    consumer = ShareConsumer(
        {
            "bootstrap.servers": address,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
        }
    )
    keys, seqs, latencies = array("q"), array("q"), array("q")
    size = redelivered = 0
    first = last = 0
    barrier.wait(START_TIMEOUT_S)
    cpu = cpu_s()
    subscribed = time.monotonic_ns()
    consumer.subscribe([topic])
    idle_since = time.monotonic()
    accept = AcknowledgeType.ACCEPT
    try:
        while total.value < n:
            batch = consumer.poll(0.1)
            if not batch:
                if time.monotonic() - idle_since > IDLE_S:
                    break
                continue
            now = time.monotonic_ns()
            idle_since = time.monotonic()
            counted = 0
            for message in batch:
                if message.error() is not None:
                    raise RuntimeError(str(message.error()))
                value = message.value() or b""
                consumer.acknowledge(message, accept)
                if stamped:
                    sent, seq = STAMP.unpack_from(value)
                    if seq < 0:
                        warm[index] = 1
                        continue
                    seqs.append(seq)
                    latencies.append(now - sent)
                keys.append((message.partition() or 0) << 40 | (message.offset() or 0))
                size += len(value)
                if message.delivery_count() != 1:
                    redelivered += 1
                counted += 1
            if counted:
                last = now
                first = first or now
                with total.get_lock():
                    total.value += counted
        cpu = cpu_s() - cpu
        consumer.commit_sync(CLOSE_TIMEOUT_S)  # the last poll's acknowledgements
    finally:
        consumer.close()
    return {
        "subscribed": subscribed,
        "first": first,
        "last": last,
        "count": len(keys),
        "bytes": size,
        "redelivered": redelivered,
        "warmed": int(warm[index]),
        "keys": keys.tobytes(),
        "seqs": seqs.tobytes(),
        "latencies": latencies.tobytes(),
        "cpu_s": cpu,
    }
