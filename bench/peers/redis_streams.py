"""The side-by-side benchmark's workloads on Redis Streams, with the `redis` client.

The same functions, arguments and result keys as the Kafka-protocol workloads
(bench/peers/kafka_protocol.py): `records`, `seconds`, `records_per_s`, `mb_per_s`
(value bytes), `received` (distinct records) and `duplicates`, the clients' CPU seconds
over the timed part (`client_cpu_s`), and each workload's own keys below. A topic is a
stream of that name (one log: `partitions` is accepted and reported as 1), a record an
entry with one field `d` holding its value: `size` bytes, a send time in
CLOCK_MONOTONIC nanoseconds and a sequence number (`HEADER`), then random bytes.
`address` is the server's "127.0.0.1:port" (bench/peers/redis.py's `RedisRunner`).

The client is redis-py with hiredis, its C reply parser (both in the dev extra), as
a Redis user would run it: without hiredis a drained entry (its share of an XREADGROUP
of 500 and its own XACK) costs the client about 11 us of CPU here against about 5 us,
and on a machine with few cores the client rather than the server would bound the
Redis figures; `client_cpu_s` shows what the clients spent.

Every client runs in a process of its own (bench/peers/procs.py `run_jobs`, as for
the Kafka-protocol workloads): it imports this module and the client, connects and
PINGs, then waits on a barrier with the others and the parent; its clock starts when
the barrier opens, so no process start, import or connection is timed.

- `produce(address, topic, n, size)`: one producer appends `n` entries with XADD,
  pipelined `PIPELINE` at a time; each batch's replies are awaited before the next is
  sent (the closest Redis has to acks=all: a reply means the entry is in the server's
  memory and its append-only file, fsynced within a second). Rate = n / (first XADD
  to the last reply).
- `consume_group(address, topic, n)`: one consumer in a new consumer group created at
  id 0 reads `n` entries with XREADGROUP (`READ_COUNT` per call, BLOCK `BLOCK_MS`) and
  acknowledges each call's entries with one XACK of all their ids (the consumer-group
  analogue: a committed position per batch). Time = its first XREADGROUP to the last
  XACK's reply; `first_s` = to the first entry.
- `share_drain(address, topic, n, consumers=4)`: `consumers` processes in one new
  consumer group created at id 0 read with XREADGROUP (`READ_COUNT`, BLOCK
  `BLOCK_MS`) and acknowledge every entry with an XACK of its own, the XACKs of one
  read pipelined and their replies awaited before the next read (the queue analogue of
  ShareConsumers acknowledging each record explicitly). They stop once `n` entries are
  acknowledged among them. Time = the first XREADGROUP to the last XACK reply of any
  process. `redelivered` is 0 by construction (reading `>` delivers only entries new to
  the group, and nothing claims pending ones); `per_consumer` counts each one's share.
- `end_to_end(address, topic, n, size, consumers=4)`: the producer of `produce` and the
  consumers of `share_drain` (a group created at `$` before they start: only this run's
  entries) run together; no warm-up is needed (a consumer has no group to join).
  Rate = records received / (the first XADD to the last XACK reply); a record's
  latency = the consumer's clock when XREADGROUP returned it - its send time: p50,
  p99, p99.9, max (ms, nearest rank); `send_s` = the producer's own time.
- `paced(address, rate=, n=, size=)`: one producer sends `n` entries one XADD at a time
  (each reply awaited), the i-th at i/rate seconds after its start (at once if it is
  behind: `behind_max_ms` says how far it fell behind), stamping the send time as it
  sends; the consumers of `end_to_end` read them. Latency as in `end_to_end`, with
  `sent` and `received`.

A consumer that sees nothing for `IDLE_S` seconds gives up; a workload missing records
then fails (paced reports `received` instead).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import struct
import time
from array import array
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Barrier
from typing import Any

import redis

from bench.peers.procs import (
    START_TIMEOUT_S,
    Seen,
    cpu_s,
    drained,
    latency_summary,
    rates,
    run_jobs,
    unique_name,
)

HEADER = struct.Struct(">qq")
"""The head of every value: its send time (monotonic ns) and its sequence number."""
PIPELINE = 1000
"""XADDs per pipelined batch of `produce` and `end_to_end`."""
READ_COUNT = 500
"""Entries per XREADGROUP at most (the Kafka consumer's default max.poll.records)."""
BLOCK_MS = 100
"""How long one XREADGROUP waits for entries before a consumer looks at the count."""
IDLE_S = 60.0
"""A consumer that sees no entry for this long gives up (the workload then fails)."""
GROUP_PREFIX = "bench"
FIELD = b"d"


def connect(address: str) -> redis.Redis:
    host, _, port = address.rpartition(":")
    return redis.Redis(host=host, port=int(port), protocol=2)


def value(seq: int, pad: bytes) -> bytes:
    """A record's value: the send time now, its sequence number, then `pad`."""
    return HEADER.pack(time.monotonic_ns(), seq) + pad


def _pad(size: int) -> bytes:
    assert size >= HEADER.size, f"a value holds at least {HEADER.size} bytes"
    return os.urandom(size - HEADER.size)


def new_group(address: str, topic: str, start_id: str) -> str:
    """A new consumer group on `topic` (created if missing) at `start_id` ("0" or "$")."""
    group = unique_name(GROUP_PREFIX)
    client = connect(address)
    try:
        client.xgroup_create(topic, group, id=start_id, mkstream=True)
    finally:
        client.close()
    return group


# --- the workloads -------------------------------------------------------------------


def produce(address: str, topic: str, n: int, size: int, partitions: int = 1) -> dict[str, Any]:
    (out,) = run_jobs([(_producer, (address, topic, n, size, 0))])
    seconds = (out["end"] - out["start"]) / 1e9
    return {**rates(n, size, seconds), "partitions": 1, "client_cpu_s": out["cpu_s"]}


def consume_group(address: str, topic: str, n: int) -> dict[str, Any]:
    group = new_group(address, topic, "0")
    counter = _counter()
    (out,) = run_jobs([(_consumer, (address, topic, group, "c0", n, counter, False, False))])
    return drained([out], n, Seen([out], key="seqs"), out["start"])


def share_drain(address: str, topic: str, n: int, consumers: int = 4) -> dict[str, Any]:
    group = new_group(address, topic, "0")
    counter = _counter()
    outs = run_jobs(
        [
            (_consumer, (address, topic, group, f"c{i}", n, counter, True, False))
            for i in range(consumers)
        ]
    )
    return {
        **drained(outs, n, Seen(outs, key="seqs"), min(o["start"] for o in outs)),
        "redelivered": 0,
    }


def end_to_end(
    address: str, topic: str, n: int, size: int, consumers: int = 4, partitions: int = 1
) -> dict[str, Any]:
    group = new_group(address, topic, "$")
    outs = _together(address, topic, group, n, size, 0, consumers)
    producer, readers = outs[0], outs[1:]
    seen = Seen(readers, key="seqs")
    got = [o for o in readers if o["count"]]
    seconds = (max(o["last"] for o in got) - producer["start"]) / 1e9
    return {
        **rates(seen.unique, size, seconds),
        **seen.counts(n),
        **latency_summary(seen.latency_by_seq),
        "send_s": (producer["end"] - producer["start"]) / 1e9,
        "redelivered": 0,
        "per_consumer": [o["count"] for o in readers],
        "consumers": consumers,
        "partitions": 1,
        "client_cpu_s": producer["cpu_s"] + sum(o["cpu_s"] for o in readers),
    }


def paced(
    address: str,
    *,
    rate: float,
    n: int,
    size: int,
    consumers: int = 4,
    topic: str | None = None,
) -> dict[str, Any]:
    topic = topic or unique_name("paced")
    group = new_group(address, topic, "$")
    outs = _together(address, topic, group, n, size, rate, consumers)
    producer, readers = outs[0], outs[1:]
    seen = Seen(readers, key="seqs")
    return {
        **latency_summary(seen.latency_by_seq),
        "rate": rate,
        "sent": producer["sent"],
        "received": seen.unique,
        "duplicates": seen.duplicates,
        "behind_max_ms": producer["behind_max_ns"] / 1e6,
        "seconds": (max(o["last"] for o in readers) - producer["start"]) / 1e9,
        "consumers": consumers,
        "client_cpu_s": producer["cpu_s"] + sum(o["cpu_s"] for o in readers),
    }


def _together(
    address: str, topic: str, group: str, n: int, size: int, rate: float, consumers: int
) -> list[dict[str, Any]]:
    """The producer (paced at `rate`, or flat out if 0) and `consumers` consumers with
    latencies, started together: the producer's result first."""
    counter = _counter()
    return run_jobs(
        [
            (_producer, (address, topic, n, size, rate)),
            *(
                (_consumer, (address, topic, group, f"c{i}", n, counter, True, True))
                for i in range(consumers)
            ),
        ]
    )


# --- the processes -------------------------------------------------------------------


def _counter() -> Synchronized[int]:
    return mp.get_context("spawn").Value("q", 0)


def _producer(
    address: str, topic: str, n: int, size: int, rate: float, barrier: Barrier
) -> dict[str, Any]:
    """`n` XADDs: pipelined in batches (rate 0) or one at a time at `rate` per second."""
    client = connect(address)
    client.ping()
    pad = _pad(size)
    behind_max = 0
    barrier.wait(START_TIMEOUT_S)
    cpu = cpu_s()
    start = time.monotonic_ns()
    if rate:
        interval = 1e9 / rate
        for seq in range(n):
            due = start + int(seq * interval)
            now = time.monotonic_ns()
            if due > now:
                time.sleep((due - now) / 1e9)
            else:
                behind_max = max(behind_max, now - due)
            client.xadd(topic, {FIELD: value(seq, pad)})
    else:
        pipe = client.pipeline(transaction=False)
        for base in range(0, n, PIPELINE):
            for seq in range(base, min(base + PIPELINE, n)):
                pipe.xadd(topic, {FIELD: value(seq, pad)})
            pipe.execute()
    end = time.monotonic_ns()
    cpu = cpu_s() - cpu
    client.close()
    return {"start": start, "end": end, "sent": n, "behind_max_ns": behind_max, "cpu_s": cpu}


def _consumer(
    address: str,
    topic: str,
    group: str,
    name: str,
    n: int,
    counter: Synchronized[int],
    ack_each: bool,
    latency: bool,
    barrier: Barrier,
) -> dict[str, Any]:
    """XREADGROUP until the consumers have acknowledged `n` entries among them: one
    XACK per entry, pipelined per read (`ack_each`), or one XACK per read."""
    client = connect(address)
    client.ping()
    seqs: array[int] = array("q")
    latencies: array[int] = array("q")
    size = 0
    first = last = 0
    barrier.wait(START_TIMEOUT_S)
    cpu = cpu_s()
    start = time.monotonic_ns()
    idle_since = time.monotonic()
    while counter.value < n and time.monotonic() - idle_since < IDLE_S:
        reply: Any = client.xreadgroup(group, name, {topic: ">"}, count=READ_COUNT, block=BLOCK_MS)
        if not reply:
            continue
        received = time.monotonic_ns()
        first = first or received
        entries: list[tuple[bytes, dict[bytes, bytes]]] = reply[0][1]
        ids: list[bytes] = []
        for entry_id, fields in entries:
            body = fields[FIELD]
            sent, seq = HEADER.unpack_from(body)
            seqs.append(seq)
            if latency:
                latencies.append(received - sent)
            size += len(body)
            ids.append(entry_id)
        if ack_each:
            pipe = client.pipeline(transaction=False)
            for entry_id in ids:
                pipe.xack(topic, group, entry_id)
            pipe.execute()
        else:
            client.xack(topic, group, *ids)
        last = time.monotonic_ns()
        idle_since = time.monotonic()
        with counter.get_lock():
            counter.value += len(ids)
    cpu = cpu_s() - cpu
    client.close()
    return {
        "start": start,
        "first": first,
        "last": last,
        "count": len(seqs),
        "bytes": size,
        "seqs": seqs.tobytes(),
        "latencies": latencies.tobytes(),
        "cpu_s": cpu,
    }
