"""End-to-end latency of share consumption: from the produce call to the ShareConsumer's
receipt, with a producer paced at a fixed rate.

Run from the repository root:

    .venv/bin/python -m bench.latency               # 1k/10k/50k x 1 and 4 partitions, 5 s
    .venv/bin/python -m bench.latency --rates 10000 --partitions 1 --duration 20
    .venv/bin/python -m bench.latency --linger-ms 0 # each record sent at once

The script starts its own broker (tests/support/broker.py) on a temporary data
directory, with 500 ms share heartbeats (joins settle fast) and otherwise default
settings (`--broker-config k=v` adds overrides). For every partition count P and rate
R it creates a topic of P partitions and a share group of its own
(share.auto.offset.reset=earliest), and starts four ShareConsumers, each in a process
of its own (the per-record Python work holds the GIL; see bench/share_consume.py), in
explicit acknowledgement mode: after each poll a consumer ACCEPTs every record and
calls commit_sync. One confluent-kafka Producer (acks=all, `--linger-ms`, default 5,
no compression) then sends V-byte records round-robin over the partitions, paced at R
records/s for a warm-up and then `--duration` seconds. The warm-up lasts at least a second and until
every consumer has received records and the group keeps up with the producer (the
join and the first assignment are over; at most 20 s).

Each payload starts with CLOCK_MONOTONIC nanoseconds read just before `produce()` and
a sequence number; a record's latency is the consumer's clock when `poll()` returned
it minus that stamp (one clock for every process on the machine). Records of the
warm-up are not counted. Percentiles are per record, over every record of the measured window; the
phase fails if a measured record never arrives.

The producer's linger decides most of the result. The bench uses librdkafka's own
default, linger.ms=5 (queue.buffering.max.ms): a record waits up to 5 ms before it is
sent, which is most of the p50 at low rates, but the broker sees one Produce request
per 5 ms instead of one per record or two. With linger 0 at 10k records/s the broker
spends a whole core on Produce requests and the tail grows (docs/performance/latency.md has the
figures); linger 0 gives the lowest latency at 1k-3k/s.

With `--record-path` the broker records every request (server/observability/record_path.py) and,
after the run, each record's latency is split into the producer's part (stamp -> its
Produce read by the broker), the broker's (-> the ShareFetch answer carrying it in the
socket) and the consumer's (-> poll returning it), for records whose fetch was already
parked and for the others (bench/record_path.py); the broker is then stopped gracefully.

Results: an aligned table on stdout and JSON in bench/results/latency.json with
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import AcknowledgeType, KafkaException, Producer, ShareConsumer
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic

from bench import record_path
from bench.produce_fetch import CpuMeter, machine, save_result
from bench.share_consume import percentile, set_group
from shoal.server.observability.record_path import ENV as RECORD_PATH_ENV

BROKER_OVERRIDES = (
    "group.share.min.heartbeat.interval.ms=100",
    "group.share.heartbeat.interval.ms=500",
)
CONSUMERS = 4
WARMUP_MIN_S = 1.0
WARMUP_MAX_S = 20.0
CAUGHT_UP_S = 0.05  # the warm-up ends once the consumers are at most this far behind
STAMP = struct.Struct(">qq")  # monotonic ns before produce(), sequence number
DRAIN_TIMEOUT_S = 60.0
START_TIMEOUT_S = 120.0
PACE_SLICE_S = 0.0005  # the producer sleeps this long when it is ahead of its schedule


def consumer_worker(
    bootstrap: str,
    group: str,
    topic: str,
    index: int,
    ready: Any,  # multiprocessing.Barrier
    stop: Any,  # multiprocessing.Event
    received: Any,  # multiprocessing.Array("q"), records received per consumer
    results: Any,  # multiprocessing.Queue
) -> None:
    """One ShareConsumer process: explicit mode, ACCEPT every record, commit_sync per
    poll; returns the sequence number and latency (µs) of every record."""
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
    stamps_ns = array("q")
    received_ns = array("q")
    redelivered = 0
    polls = 0
    error = None
    try:
        while not stop.is_set():
            batch = consumer.poll(0.1)
            if not batch:
                continue
            now_ns = time.monotonic_ns()
            polls += 1
            for message in batch:
                if message.error() is not None:
                    error = str(message.error())
                    break
                stamp_ns, sequence = STAMP.unpack_from(message.value() or b"")
                if message.delivery_count() != 1:
                    redelivered += 1
                latencies_us.append((now_ns - stamp_ns) // 1000)
                sequences.append(sequence)
                stamps_ns.append(stamp_ns)
                received_ns.append(now_ns)
                consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            if error:
                break
            consumer.commit_sync(60)
            received[index] += len(batch)
    except KafkaException as exc:  # reported to the parent, which fails the phase
        error = repr(exc)
    finally:
        consumer.close()
    results.put(
        {
            "latencies_us": latencies_us.tobytes(),
            "sequences": sequences.tobytes(),
            "stamps_ns": stamps_ns.tobytes(),
            "received_ns": received_ns.tobytes(),
            "redelivered": redelivered,
            "polls": polls,
            "error": error,
        }
    )


def produce_paced(
    bootstrap: str,
    topic: str,
    *,
    partitions: int,
    rate: int,
    measured: int,
    value_bytes: int,
    linger_ms: float,
    warm: Callable[[int, float], bool],
) -> tuple[int, float]:
    """Send records at `rate` records/s, round-robin over the partitions: a warm-up
    until `warm(sent, elapsed_s)` says it is over (asked every 10 ms), then `measured`
    more. Returns the first measured sequence number and the measured window's rate."""
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
    check_every = max(1, rate // 100)
    started = time.monotonic()
    first_measured: int | None = None
    measured_from_s = 0.0
    sequence = 0
    while first_measured is None or sequence < first_measured + measured:
        due = started + sequence * interval_s
        while True:
            now = time.monotonic()
            if now >= due:
                break
            producer.poll(0)
            time.sleep(min(due - now, PACE_SLICE_S))
        value = STAMP.pack(time.monotonic_ns(), sequence) + padding
        producer.produce(topic, value, partition=sequence % partitions, on_delivery=delivered)
        sequence += 1
        if sequence % check_every == 0:
            producer.poll(0)
            if first_measured is None and warm(sequence, time.monotonic() - started):
                first_measured, measured_from_s = sequence, time.monotonic()
    sent_rate = measured / (time.monotonic() - measured_from_s)
    if producer.flush(120):
        raise RuntimeError("records not delivered")
    if failures:
        raise RuntimeError(f"{len(failures)} records failed: {failures[:3]}")
    assert first_measured is not None
    return first_measured, sent_rate


def phase(
    bootstrap: str, *, partitions: int, rate: int, args: argparse.Namespace, meter: CpuMeter
) -> dict[str, Any]:
    topic = f"bench-latency-p{partitions}-r{rate}-{time.monotonic_ns()}"
    group = f"{topic}-group"
    create_topic(bootstrap, topic, partitions=partitions)
    set_group(bootstrap, group)
    measured = int(rate * args.duration)
    context = mp.get_context("spawn")  # never fork a process with librdkafka threads
    ready = context.Barrier(CONSUMERS + 1)
    stop = context.Event()
    received = context.Array("q", CONSUMERS)
    results = context.Queue()
    workers = [
        context.Process(
            target=consumer_worker,
            args=(bootstrap, group, topic, index, ready, stop, received, results),
        )
        for index in range(CONSUMERS)
    ]
    for worker in workers:
        worker.start()

    def warm(sent: int, elapsed_s: float) -> bool:
        """Warm once every consumer has records and the group keeps up (the join and
        the first assignment are over), or after WARMUP_MAX_S regardless."""
        counts = list(received)
        caught_up = sum(counts) >= sent - rate * CAUGHT_UP_S
        settled = min(counts) > 0 and caught_up and elapsed_s >= WARMUP_MIN_S
        return settled or elapsed_s >= WARMUP_MAX_S

    ready.wait(START_TIMEOUT_S)
    with meter:  # client CPU counts the consumer processes once they have exited
        try:
            first, sent_rate = produce_paced(
                bootstrap,
                topic,
                partitions=partitions,
                rate=rate,
                measured=measured,
                value_bytes=args.value_bytes,
                linger_ms=args.linger_ms,
                warm=warm,
            )
            deadline = time.monotonic() + DRAIN_TIMEOUT_S
            while sum(received) < first + measured and time.monotonic() < deadline:
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
    stamps = array("q")
    receipts = array("q")
    for outcome in outcomes:
        latencies.frombytes(outcome["latencies_us"])
        sequences.frombytes(outcome["sequences"])
        stamps.frombytes(outcome["stamps_ns"])
        receipts.frombytes(outcome["received_ns"])
    window = [(q, v) for q, v in zip(sequences, latencies, strict=True) if q >= first]
    missing = measured - len({q for q, _ in window})
    if missing:
        raise RuntimeError(f"{partitions} partitions at {rate}/s: {missing} records never arrived")
    values = sorted(v / 1000 for _, v in window)
    sent = first + measured
    path_records = [
        (q, stamp, received)
        for q, stamp, received in zip(sequences, stamps, receipts, strict=True)
        if q >= first
    ]
    return {
        "topic": topic,
        "path_records": path_records,
        "partitions": partitions,
        "rate": rate,
        "records": measured,
        "warmup_records": first,
        "sent_rate": sent_rate,
        "p50_ms": percentile(values, 50),
        "p99_ms": percentile(values, 99),
        "p999_ms": percentile(values, 99.9),
        "max_ms": values[-1],
        "redelivered": sum(o["redelivered"] for o in outcomes)
        + len(sequences)
        - len(set(sequences)),
        "mean_poll_records": len(sequences) / max(1, sum(o["polls"] for o in outcomes)),
        "broker_cpu_percent": meter.broker_percent,
        "client_cpu_percent": meter.client_percent,
        # CPU per record: unlike the latency, barely moved by other work on the machine
        "broker_cpu_us_per_record": meter.broker_percent / 100 * meter.seconds * 1e6 / sent,
    }


HEADER = (
    f"{'P':>2} {'rate/s':>7} {'sent/s':>8} {'records':>8} {'p50 ms':>7} {'p99 ms':>7} "
    f"{'p99.9 ms':>8} {'max ms':>7} {'redeliv':>7} {'per poll':>8} {'broker CPU':>10} "
    f"{'client CPU':>10} {'broker µs/rec':>13}"
)


def row(r: dict[str, Any]) -> str:
    return (
        f"{r['partitions']:>2} {r['rate']:>7,} {r['sent_rate']:>8,.0f} {r['records']:>8,} "
        f"{r['p50_ms']:>7.2f} {r['p99_ms']:>7.2f} {r['p999_ms']:>8.2f} {r['max_ms']:>7.1f} "
        f"{r['redelivered']:>7} {r['mean_poll_records']:>8.1f} {r['broker_cpu_percent']:>9.0f}% "
        f"{r['client_cpu_percent']:>9.0f}% {r['broker_cpu_us_per_record']:>13.0f}"
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    load_before = os.getloadavg()[0]
    overrides = (*BROKER_OVERRIDES, *args.broker_config)
    phases: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="shoal-bench-") as tmp:
        events_path = Path(tmp) / "record-path.jsonl"
        if args.record_path:  # the broker inherits the environment
            os.environ[RECORD_PATH_ENV] = str(events_path)
        try:
            broker = BrokerProcess(
                Path(tmp) / "data", overrides=overrides, log_path=args.broker_log
            ).start()
        finally:
            os.environ.pop(RECORD_PATH_ENV, None)
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
            if args.record_path:
                broker.stop()  # the events are written at a graceful stop
                events = record_path.load(events_path)
                for p in phases:
                    p["record_path"] = record_path.split(
                        events,
                        topic=p["topic"],
                        partitions=p["partitions"],
                        records=p["path_records"],
                    )
                    print(f"\n{p['partitions']} partitions at {p['rate']:,}/s, record by record:")
                    print("\n".join(record_path.table(p["record_path"])), flush=True)
        finally:
            broker.kill()
        for p in phases:
            del p["path_records"]
    return {
        "timestamp": stamp,
        "machine": {**machine(), "load_average_1m_before": load_before},
        "settings": {
            "duration_s": args.duration,
            "warmup": f"at least {WARMUP_MIN_S} s, until every consumer has records and "
            f"the group is within {CAUGHT_UP_S} s of the producer (at most {WARMUP_MAX_S} s)",
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
    parser.add_argument(
        "--linger-ms", type=float, default=5.0, help="producer linger.ms (default 5)"
    )
    parser.add_argument(
        "--broker-config", action="append", default=[], metavar="K=V", help="broker override"
    )
    parser.add_argument(
        "--broker-log",
        type=Path,
        default=None,
        help="keep the broker's log here (with SHOAL_LATENCY_TRACE=<s> set, it has the "
        "per-stage timings and the loop lag: server/observability/latency_trace.py)",
    )
    parser.add_argument(
        "--record-path",
        action="store_true",
        help="split each record's latency into producer / broker / consumer parts "
        "(the broker records every request: server/observability/record_path.py; "
        "bench/record_path.py)",
    )
    args = parser.parse_args(argv)
    if args.value_bytes < STAMP.size:
        parser.error(f"--value-bytes must be at least {STAMP.size}")
    result = run(args)
    out = save_result("latency", result)
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
