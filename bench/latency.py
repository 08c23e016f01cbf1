"""End-to-end latency of share consumption: from the produce call to the ShareConsumer's
receipt, with a producer paced at a fixed rate.

Run from the repository root:

    .venv/bin/python -m bench.latency               # 1k/10k/50k x 1 and 4 partitions, 5 s
    .venv/bin/python -m bench.latency --rates 10000 --partitions 1 --duration 20
    .venv/bin/python -m bench.latency --linger-ms 5 # librdkafka's default linger

The script starts its own broker (tests/support/broker.py) on a temporary data
directory, with 500 ms share heartbeats (joins settle fast) and otherwise default
settings (`--broker-config k=v` adds overrides). For every partition count P and rate
R it creates a topic of P partitions and a share group of its own
(share.auto.offset.reset=earliest), and starts four ShareConsumers, each in a process
of its own (the per-record Python work holds the GIL; see bench/share_consume.py), in
explicit acknowledgement mode: after each poll a consumer ACCEPTs every record and
calls commit_sync. One confluent-kafka Producer (acks=all, `--linger-ms`, default 0,
no compression) then sends V-byte records round-robin over the partitions, paced at R
records/s for a warm-up second and then `--duration` seconds.

Each payload starts with CLOCK_MONOTONIC nanoseconds read just before `produce()` and
a sequence number; a record's latency is the consumer's clock when `poll()` returned
it minus that stamp (one clock for every process on the machine). Records of the
warm-up second are not counted (the group forms and the partitions get assigned
then). Percentiles are per record, over every record of the measured window; the
phase fails if a measured record never arrives.

librdkafka's own default is linger.ms=5 (queue.buffering.max.ms): at a paced rate a
record then waits up to 5 ms in the producer before it is even sent, which is the
whole p50 at low rates. The bench defaults to 0 (send at once; records that arrive
while a produce request is in flight still share the next one).

Results: an aligned table on stdout and JSON in bench/results/latency-<ts>.json with
machine information. On a machine shared with other work the tail is noisy: compare
runs made back to back, never across machines.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import struct
import sys
import tempfile
import time
from array import array
from pathlib import Path
from typing import Any

from confluent_kafka import AcknowledgeType, KafkaException, Producer, ShareConsumer
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic

from bench.produce_fetch import CpuMeter, machine, save_result
from bench.share_consume import percentile, set_group

BROKER_OVERRIDES = (
    "group.share.min.heartbeat.interval.ms=100",
    "group.share.heartbeat.interval.ms=500",
)
CONSUMERS = 4
WARMUP_S = 1.0
STAMP = struct.Struct(">qq")  # monotonic ns before produce(), sequence number
DRAIN_TIMEOUT_S = 60.0
START_TIMEOUT_S = 120.0
PACE_SLICE_S = 0.0005  # the producer sleeps this long when it is ahead of its schedule


def consumer_worker(
    bootstrap: str,
    group: str,
    topic: str,
    warmup_records: int,
    ready: Any,  # multiprocessing.Barrier
    stop: Any,  # multiprocessing.Event
    received: Any,  # multiprocessing.Value("q")
    results: Any,  # multiprocessing.Queue
) -> None:
    """One ShareConsumer process: explicit mode, ACCEPT every record, commit_sync per
    poll; records the latency (µs) of every record past the warm-up."""
    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
        }
    )
    consumer.subscribe([topic])
    ready.wait()
    latencies_us = array("q")
    sequences = array("q")
    redelivered = 0
    error = None
    try:
        while not stop.is_set():
            batch = consumer.poll(0.1)
            if not batch:
                continue
            now_ns = time.monotonic_ns()
            for message in batch:
                if message.error() is not None:
                    error = str(message.error())
                    break
                stamp_ns, sequence = STAMP.unpack_from(message.value() or b"")
                if message.delivery_count() != 1:
                    redelivered += 1
                if sequence >= warmup_records:
                    latencies_us.append((now_ns - stamp_ns) // 1000)
                    sequences.append(sequence)
                consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            if error:
                break
            consumer.commit_sync(60)
            with received.get_lock():
                received.value += len(batch)
    except KafkaException as exc:  # reported to the parent, which fails the phase
        error = repr(exc)
    finally:
        consumer.close()
    results.put(
        {
            "latencies_us": latencies_us.tobytes(),
            "sequences": sequences.tobytes(),
            "redelivered": redelivered,
            "error": error,
        }
    )


def produce_paced(
    bootstrap: str,
    topic: str,
    *,
    partitions: int,
    rate: int,
    records: int,
    value_bytes: int,
    linger_ms: float,
) -> float:
    """Send `records` records at `rate` records/s, round-robin over the partitions;
    returns the seconds the sending took (the schedule's, if kept)."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": linger_ms,
            "compression.type": "none",
            "queue.buffering.max.messages": 2_000_000,
            "message.timeout.ms": 120_000,
        }
    )
    failures: list[str] = []

    def delivered(err: Any, _message: Any) -> None:
        if err is not None:
            failures.append(str(err))

    padding = os.urandom(max(0, value_bytes - STAMP.size))
    interval_s = 1.0 / rate
    started = time.monotonic()
    for sequence in range(records):
        due = started + sequence * interval_s
        while True:
            ahead_s = due - time.monotonic()
            if ahead_s <= 0:
                break
            producer.poll(0)
            time.sleep(min(ahead_s, PACE_SLICE_S))
        value = STAMP.pack(time.monotonic_ns(), sequence) + padding
        producer.produce(topic, value, partition=sequence % partitions, on_delivery=delivered)
        if sequence % 64 == 0:
            producer.poll(0)
    took = time.monotonic() - started
    if producer.flush(120):
        raise RuntimeError("records not delivered")
    if failures:
        raise RuntimeError(f"{len(failures)} records failed: {failures[:3]}")
    return took


def phase(
    bootstrap: str, *, partitions: int, rate: int, args: argparse.Namespace, meter: CpuMeter
) -> dict[str, Any]:
    topic = f"bench-latency-p{partitions}-r{rate}-{time.monotonic_ns()}"
    group = f"{topic}-group"
    create_topic(bootstrap, topic, partitions=partitions)
    set_group(bootstrap, group)
    warmup_records = int(rate * WARMUP_S)
    measured = int(rate * args.duration)
    total = warmup_records + measured
    context = mp.get_context("spawn")  # never fork a process with librdkafka threads
    ready = context.Barrier(CONSUMERS + 1)
    stop = context.Event()
    received = context.Value("q", 0)
    results = context.Queue()
    workers = [
        context.Process(
            target=consumer_worker,
            args=(bootstrap, group, topic, warmup_records, ready, stop, received, results),
        )
        for _ in range(CONSUMERS)
    ]
    for worker in workers:
        worker.start()
    try:
        ready.wait(START_TIMEOUT_S)
        with meter:
            sent_s = produce_paced(
                bootstrap,
                topic,
                partitions=partitions,
                rate=rate,
                records=total,
                value_bytes=args.value_bytes,
                linger_ms=args.linger_ms,
            )
            deadline = time.monotonic() + DRAIN_TIMEOUT_S
            while received.value < total and time.monotonic() < deadline:
                time.sleep(0.05)
    finally:
        stop.set()
    outcomes = [results.get(timeout=DRAIN_TIMEOUT_S) for _ in workers]
    for worker in workers:
        worker.join(30)
    errors = [o["error"] for o in outcomes if o["error"]]
    if errors:
        raise RuntimeError(f"{partitions} partitions at {rate}/s: {errors}")
    latencies = array("q")
    sequences = array("q")
    for outcome in outcomes:
        latencies.frombytes(outcome["latencies_us"])
        sequences.frombytes(outcome["sequences"])
    missing = measured - len(set(sequences))
    if missing:
        raise RuntimeError(f"{partitions} partitions at {rate}/s: {missing} records never arrived")
    values = sorted(v / 1000 for v in latencies)
    return {
        "partitions": partitions,
        "rate": rate,
        "records": measured,
        "sent_rate": total / sent_s,
        "p50_ms": percentile(values, 50),
        "p99_ms": percentile(values, 99),
        "p999_ms": percentile(values, 99.9),
        "max_ms": values[-1],
        "redelivered": sum(o["redelivered"] for o in outcomes) + len(sequences) - measured,
        "broker_cpu_percent": meter.broker_percent,
        "client_cpu_percent": meter.client_percent,
    }


HEADER = (
    f"{'P':>2} {'rate/s':>7} {'sent/s':>8} {'records':>8} {'p50 ms':>7} {'p99 ms':>7} "
    f"{'p99.9 ms':>8} {'max ms':>7} {'redeliv':>7} {'broker CPU':>10}"
)


def row(r: dict[str, Any]) -> str:
    return (
        f"{r['partitions']:>2} {r['rate']:>7,} {r['sent_rate']:>8,.0f} {r['records']:>8,} "
        f"{r['p50_ms']:>7.2f} {r['p99_ms']:>7.2f} {r['p999_ms']:>8.2f} {r['max_ms']:>7.1f} "
        f"{r['redelivered']:>7} {r['broker_cpu_percent']:>9.0f}%"
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    load_before = os.getloadavg()[0]
    overrides = (*BROKER_OVERRIDES, *args.broker_config)
    phases: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="shoal-bench-") as tmp:
        broker = BrokerProcess(Path(tmp) / "data", overrides=overrides).start()
        try:
            meter = CpuMeter(broker.pid, include_children=True)
            print(HEADER, flush=True)
            for partitions in args.partitions:
                for rate in args.rates:
                    phases.append(
                        phase(
                            broker.bootstrap,
                            partitions=partitions,
                            rate=rate,
                            args=args,
                            meter=meter,
                        )
                    )
                    print(row(phases[-1]), flush=True)
        finally:
            broker.kill()
    return {
        "timestamp": stamp,
        "machine": {**machine(), "load_average_1m_before": load_before},
        "settings": {
            "duration_s": args.duration,
            "warmup_s": WARMUP_S,
            "value_bytes": args.value_bytes,
            "consumers": CONSUMERS,
            "producer": f"acks=all linger.ms={args.linger_ms} compression=none, paced, no keys",
            "share_consumers": "one process each, explicit mode, ACCEPT each record, "
            "commit_sync per poll",
            "broker_overrides": list(overrides),
        },
        "phases": phases,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.latency",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--rates", type=lambda s: [int(x) for x in s.split(",")], default=[1_000, 10_000, 50_000]
    )
    parser.add_argument(
        "--partitions", type=lambda s: [int(x) for x in s.split(",")], default=[1, 4]
    )
    parser.add_argument("--duration", type=float, default=5.0, help="measured seconds per phase")
    parser.add_argument("--value-bytes", type=int, default=1024)
    parser.add_argument("--linger-ms", type=float, default=0.0, help="producer linger.ms")
    parser.add_argument(
        "--broker-config", action="append", default=[], metavar="K=V", help="broker override"
    )
    args = parser.parse_args(argv)
    if args.value_bytes < STAMP.size:
        parser.error(f"--value-bytes must be at least {STAMP.size}")
    result = run(args)
    out = save_result("latency", result["timestamp"], result)
    info = result["machine"]
    print(
        f"\n{info['cores']} cores ({info['cpu']}), Python {info['python']}, librdkafka "
        f"{info['librdkafka']}; load average {info['load_average_1m_before']:.1f} before, "
        f"{info['load_average_1m']:.1f} after (a shared machine makes the tail noisy)"
    )
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
