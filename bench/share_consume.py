"""Share-group consumption throughput and acknowledgement latency of a Shoal broker,
measured with confluent-kafka 2.16.1 ShareConsumers on loopback.

Run from the repository root:

    .venv/bin/python -m bench.share_consume            # 200k x 1 KiB
    .venv/bin/python -m bench.share_consume --quick    # 5k x 1 KiB, to try it

The script starts its own broker (tests/support/broker.py) on a temporary data
directory, with 500 ms share heartbeats (joins settle fast) and otherwise default
share settings (30 s locks, 2000 in-flight records per share-partition). For every
partition count P in the combinations it produces R records of V-byte random values
(linger.ms=5, batch.size=1 MB, no compression) to a topic of P partitions, then:

(a) fetch: one plain Consumer, assigned every partition from offset 0, reads all R
    records (classic Fetch; the baseline).
(b) share N x P: N ShareConsumers, each in a process of its own, in one new share
    group (share.auto.offset.reset=earliest), implicit acknowledgement (each poll
    accepts the previous poll's records; a final commit_sync accepts the last), read
    all R records with default settings (max.poll.records 500); with --ack explicit
    each consumer calls acknowledge(ACCEPT) per record instead, and the next poll's
    ShareFetch carries the acknowledgements. Processes rather
    than threads: the per-record Python work (Message objects) holds the GIL, so N
    threads in one interpreter would share one core's worth of it, while the broker
    itself is one event loop on one core; on a 2-core machine, processes let the
    consumers' Python run beside each other as real independent clients would.
    Each group reads the same topic: share groups keep independent state.
(c) latency: one ShareConsumer in explicit mode reads L records of a one-partition
    topic written in log batches of 10 records (so that acquisitions, which take
    whole log batches, can be small), once with max.poll.records 10 and once with
    500, each in a group of its own: after each poll it ACCEPTs every record and
    calls commit_sync. A record's acquisition-to-acknowledgement latency is the time
    from poll() returning it to commit_sync() returning, i.e. the broker having
    answered the ShareAcknowledge that carried its ACCEPT (the application does no
    other work). Percentiles are per record; the commit_sync round trip per commit
    is also given.

Timing: "seconds" runs from subscribe (the first consumer's, for share groups) or
assign to the last record received by any consumer (CLOCK_MONOTONIC is one clock for
all processes), so the group join is included; "start s" is the part before the
first record. records/s = R / seconds; MB/s counts value bytes. Broker CPU is from
/proc; client CPU includes the consumer processes (counted when they exit). The
consumer processes are started and have imported confluent_kafka before the clock
and the CPU meters start.

Results: an aligned table on stdout and JSON in bench/results/share_consume.json
with machine information.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import time
from array import array
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import AcknowledgeType, Consumer, Producer, ShareConsumer, TopicPartition
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic
from tests.support.share_consumers import alter_group_configs

from bench.produce_fetch import CpuMeter, machine, save_result

BROKER_OVERRIDES = (
    "group.share.min.heartbeat.interval.ms=100",
    "group.share.heartbeat.interval.ms=500",
)
PHASE_TIMEOUT_S = 900.0
LATENCY_TOPIC = "bench-share-latency"
LATENCY_BATCH_RECORDS = 10
LATENCY_POLL_RECORDS = (10, 500)


@dataclass
class Phase:
    name: str
    consumers: int
    partitions: int
    records: int
    value_bytes: int
    seconds: float  # subscribe/assign to last record
    start_seconds: float  # subscribe/assign to first record
    broker_cpu_percent: float
    client_cpu_percent: float
    redelivered: int = 0

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else float("inf")

    @property
    def mb_per_s(self) -> float:
        return self.records_per_s * self.value_bytes / 1e6


def produce(
    bootstrap: str,
    topic: str,
    *,
    partitions: int,
    records: int,
    value_bytes: int,
    batch_records: int = 1_000_000,
) -> None:
    """R records round-robin over the partitions (R / P each), in log batches of at
    most `batch_records` records."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "batch.num.messages": batch_records,
            "compression.type": "none",
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 2_097_151,
            "message.timeout.ms": 300_000,
        }
    )
    value = os.urandom(value_bytes)
    for i in range(records):
        try:
            producer.produce(topic, value, partition=i % partitions)
        except BufferError:
            producer.poll(0.01)
            producer.produce(topic, value, partition=i % partitions)
    if producer.flush(300):
        raise RuntimeError("records not delivered")


def fetch_phase(
    bootstrap: str, topic: str, *, partitions: int, records: int, value_bytes: int, meter: CpuMeter
) -> Phase:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-fetch",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "fetch.max.bytes": 52_428_800,
            "max.partition.fetch.bytes": 10_485_760,
            "queued.max.messages.kbytes": 262_144,
            "queued.min.messages": 5_000_000,
            "fetch.queue.backoff.ms": 10,
        }
    )
    first = last = 0.0
    with meter:
        assigned = time.monotonic()
        try:
            consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
            seen = 0
            deadline = time.monotonic() + PHASE_TIMEOUT_S
            while seen < records:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"fetch stalled at {seen} of {records}")
                batch = consumer.consume(num_messages=10_000, timeout=0.05)
                if not batch:
                    continue
                now = time.monotonic()
                first = first or now
                last = now
                for message in batch:
                    if message.error() is not None:
                        raise RuntimeError(str(message.error()))
                seen += len(batch)
        finally:
            consumer.close()
    return Phase(
        "fetch",
        1,
        partitions,
        records,
        value_bytes,
        last - assigned,
        first - assigned,
        meter.broker_percent,
        meter.client_percent,
    )


def set_group(bootstrap: str, group: str) -> None:
    """The share group's share.auto.offset.reset=earliest (a group config)."""
    alter_group_configs(bootstrap, group, {"share.auto.offset.reset": "earliest"})


def share_worker(
    bootstrap: str,
    group: str,
    topic: str,
    records: int,
    total: Any,  # multiprocessing.Value("q")
    ready: Any,  # multiprocessing.Barrier
    results: Any,  # multiprocessing.Queue
    explicit: bool = False,
) -> None:
    """One ShareConsumer process until the group has `records`: implicit mode, or
    with `explicit` acknowledge(ACCEPT) of each record, which the next poll carries
    (piggybacked on its ShareFetch); commit_sync at the end accepts the last poll's."""
    ready.wait()
    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit" if explicit else "implicit",
        }
    )
    acknowledge = consumer.acknowledge
    consumer.subscribe([topic])
    subscribed = time.monotonic()
    seen = array("q")
    first = last = 0.0
    redelivered = 0
    error = None
    deadline = time.monotonic() + PHASE_TIMEOUT_S
    try:
        while total.value < records:
            if time.monotonic() > deadline:
                error = f"stalled at {total.value} of {records}"
                break
            batch = consumer.poll(0.1)
            if not batch:
                continue
            now = time.monotonic()
            first = first or now
            last = now
            for message in batch:
                if message.error() is not None:
                    error = str(message.error())
                    break
                seen.append(int(message.partition() or 0) << 40 | int(message.offset() or 0))
                if message.delivery_count() != 1:
                    redelivered += 1
                if explicit:
                    acknowledge(message, AcknowledgeType.ACCEPT)
            with total.get_lock():
                total.value += len(batch)
            if error:
                break
        consumer.commit_sync(60)  # acknowledges the last poll's records
    finally:
        consumer.close()
    results.put(
        {
            "seen": seen.tobytes(),
            "first": first,
            "last": last,
            "subscribed": subscribed,
            "redelivered": redelivered,
            "error": error,
        }
    )


def share_phase(
    bootstrap: str,
    topic: str,
    *,
    consumers: int,
    partitions: int,
    records: int,
    value_bytes: int,
    meter: CpuMeter,
    explicit: bool = False,
    produce_during: Any = None,  # Callable[[], None]
) -> Phase:
    """`produce_during`: called once the consumers are started and the meter runs (an
    end-to-end phase: the topic is written while the group drains it)."""
    context = mp.get_context("spawn")  # never fork a process with librdkafka threads
    group = f"bench-share-{consumers}x{partitions}-{time.monotonic_ns()}"
    set_group(bootstrap, group)
    total = context.Value("q", 0)
    ready = context.Barrier(consumers + 1)  # the workers and this process
    results = context.Queue()
    workers = [
        context.Process(
            target=share_worker,
            args=(bootstrap, group, topic, records, total, ready, results, explicit),
        )
        for _ in range(consumers)
    ]
    for worker in workers:
        worker.start()
    ready.wait(120)  # every worker has imported confluent_kafka and is about to start
    with meter:
        if produce_during is not None:
            produce_during()
        outcomes = [results.get(timeout=PHASE_TIMEOUT_S) for _ in workers]
        for worker in workers:
            worker.join(60)
    errors = [o["error"] for o in outcomes if o["error"]]
    if errors:
        raise RuntimeError(f"share {consumers}x{partitions}: {errors}")
    seen = array("q")
    for outcome in outcomes:
        seen.frombytes(outcome["seen"])
    unique = len(set(seen))
    expected = {p << 40 | o for p in range(partitions) for o in range(records // partitions)}
    if unique != records or not set(seen) >= expected:
        raise RuntimeError(f"share {consumers}x{partitions}: {unique} distinct of {records}")
    got = [o for o in outcomes if o["first"]]
    subscribed = min(o["subscribed"] for o in outcomes)
    return Phase(
        "share",
        consumers,
        partitions,
        records,
        value_bytes,
        max(o["last"] for o in got) - subscribed,
        min(o["first"] for o in got) - subscribed,
        meter.broker_percent,
        meter.client_percent,
        redelivered=sum(o["redelivered"] for o in outcomes) + len(seen) - unique,
    )


def percentile(sorted_values: Sequence[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, max(0, round(q / 100 * len(sorted_values)) - 1))
    return sorted_values[index]


def latency_phase(
    bootstrap: str, topic: str, *, records: int, max_poll_records: int, meter: CpuMeter
) -> dict[str, Any]:
    group = f"bench-latency-{max_poll_records}-{time.monotonic_ns()}"
    set_group(bootstrap, group)
    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
            "max.poll.records": max_poll_records,
        }
    )
    per_record: list[float] = []
    per_commit: list[float] = []
    sizes: list[int] = []
    with meter:
        consumer.subscribe([topic])
        deadline = time.monotonic() + PHASE_TIMEOUT_S
        try:
            while len(per_record) < records:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"latency phase stalled at {len(per_record)}")
                batch = consumer.poll(0.1)
                if not batch:
                    continue
                polled = time.monotonic()
                for message in batch:
                    if message.error() is not None:
                        raise RuntimeError(str(message.error()))
                    consumer.acknowledge(message, AcknowledgeType.ACCEPT)
                sent = time.monotonic()
                result = consumer.commit_sync(60)
                done = time.monotonic()
                failed = {tp.partition: e for tp, e in result.items() if e is not None}
                if failed:
                    raise RuntimeError(f"acknowledgement failed: {failed}")
                per_record.extend([done - polled] * len(batch))
                per_commit.append(done - sent)
                sizes.append(len(batch))
        finally:
            consumer.close()
    per_record.sort()
    per_commit.sort()
    return {
        "max_poll_records": max_poll_records,
        "records": len(per_record),
        "commits": len(per_commit),
        "mean_batch": sum(sizes) / len(sizes),
        "record_p50_ms": 1000 * percentile(per_record, 50),
        "record_p99_ms": 1000 * percentile(per_record, 99),
        "record_max_ms": 1000 * per_record[-1],
        "commit_p50_ms": 1000 * percentile(per_commit, 50),
        "commit_p99_ms": 1000 * percentile(per_commit, 99),
        "records_per_s": len(per_record) / meter.seconds,
        "seconds": meter.seconds,
        "broker_cpu_percent": meter.broker_percent,
        "client_cpu_percent": meter.client_percent,
    }


def parse_combos(text: str) -> list[tuple[int, int]]:
    combos = []
    for item in text.split(","):
        n, _, p = item.strip().partition("x")
        combos.append((int(n), int(p)))
    return combos


LATENCY_HEADER = (
    f"{'max.poll.records':>16} {'records':>8} {'commits':>7} {'mean batch':>10} "
    f"{'record p50 ms':>13} {'record p99 ms':>13} {'commit p50 ms':>13} "
    f"{'commit p99 ms':>13} {'records/s':>11}"
)
HEADER = (
    f"{'phase':<7} {'N x P':>6} {'records':>9} {'seconds':>8} {'records/s':>11} "
    f"{'MB/s':>7} {'start s':>8} {'redeliv':>7} {'broker CPU':>10} {'client CPU':>10}"
)


def row(p: Phase) -> str:
    shape = f"{p.consumers}x{p.partitions}"
    return (
        f"{p.name:<7} {shape:>6} {p.records:>9,} {p.seconds:>8.2f} {p.records_per_s:>11,.0f} "
        f"{p.mb_per_s:>7.1f} {p.start_seconds:>8.2f} {p.redelivered:>7} "
        f"{p.broker_cpu_percent:>9.0f}% {p.client_cpu_percent:>9.0f}%"
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    load_before = os.getloadavg()[0]
    combos = parse_combos(args.combos)
    partition_counts = sorted({p for _, p in combos})
    phases: list[Phase] = []
    latency: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="shoal-bench-") as tmp:
        broker = BrokerProcess(Path(tmp) / "data", overrides=BROKER_OVERRIDES).start()
        try:
            bootstrap = broker.bootstrap
            meter = CpuMeter(broker.pid, include_children=True)
            topics = {p: f"bench-share-p{p}" for p in partition_counts}
            for p, topic in topics.items():
                create_topic(bootstrap, topic, partitions=p)
                produce(
                    bootstrap,
                    topic,
                    partitions=p,
                    records=args.records,
                    value_bytes=args.value_bytes,
                )
            create_topic(bootstrap, LATENCY_TOPIC, partitions=1)
            produce(
                bootstrap,
                LATENCY_TOPIC,
                partitions=1,
                records=args.latency_records * len(LATENCY_POLL_RECORDS),
                value_bytes=args.value_bytes,
                batch_records=LATENCY_BATCH_RECORDS,
            )
            print(HEADER, flush=True)
            for p, topic in topics.items():
                phases.append(
                    fetch_phase(
                        bootstrap,
                        topic,
                        partitions=p,
                        records=args.records,
                        value_bytes=args.value_bytes,
                        meter=meter,
                    )
                )
                print(row(phases[-1]), flush=True)
            for n, p in combos:
                phases.append(
                    share_phase(
                        bootstrap,
                        topics[p],
                        consumers=n,
                        partitions=p,
                        records=args.records,
                        value_bytes=args.value_bytes,
                        meter=meter,
                        explicit=args.ack == "explicit",
                    )
                )
                print(row(phases[-1]), flush=True)
            for max_poll_records in LATENCY_POLL_RECORDS:
                latency.append(
                    latency_phase(
                        bootstrap,
                        LATENCY_TOPIC,
                        records=args.latency_records,
                        max_poll_records=max_poll_records,
                        meter=meter,
                    )
                )
        finally:
            broker.kill()
    return {
        "timestamp": stamp,
        "machine": {**machine(), "load_average_1m_before": load_before},
        "settings": {
            "records": args.records,
            "value_bytes": args.value_bytes,
            "combos": args.combos,
            "broker_overrides": list(BROKER_OVERRIDES),
            "producer": "acks=all linger.ms=5 batch.size=1MB compression=none, no keys",
            "share_consumers": f"one process each, {args.ack} mode, default settings",
        },
        "phases": [
            {**asdict(p), "records_per_s": p.records_per_s, "mb_per_s": p.mb_per_s} for p in phases
        ],
        "latency": latency,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.share_consume",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--records", type=int, default=200_000, help="R (default 200,000)")
    parser.add_argument("--value-bytes", type=int, default=1024, help="V (default 1024)")
    parser.add_argument(
        "--combos", default="1x1,2x1,4x1,4x4", help="N x P list (default 1x1,2x1,4x1,4x4)"
    )
    parser.add_argument(
        "--latency-records", type=int, default=20_000, help="L per variant (default 20,000)"
    )
    parser.add_argument(
        "--ack",
        choices=("implicit", "explicit"),
        default="implicit",
        help="share phases: implicit mode, or acknowledge(ACCEPT) of each record (explicit)",
    )
    parser.add_argument("--quick", action="store_true", help="a tiny run (5,000 records)")
    args = parser.parse_args(argv)
    if args.quick:
        args.records, args.latency_records = 5_000, 2_000
    for _, p in parse_combos(args.combos):
        if args.records % p:
            parser.error(f"--records must be a multiple of every partition count ({p})")
    result = run(args)
    out = save_result("share_consume", result)
    print(
        "\nacquisition-to-acknowledgement latency: poll() returning a record -> "
        "commit_sync() returning\n(explicit mode, ACCEPT of every record, one partition, "
        f"log batches of {LATENCY_BATCH_RECORDS} records)"
    )
    print(LATENCY_HEADER)
    for lat in result["latency"]:
        print(
            f"{lat['max_poll_records']:>16} {lat['records']:>8,} {lat['commits']:>7,} "
            f"{lat['mean_batch']:>10.0f} {lat['record_p50_ms']:>13.1f} "
            f"{lat['record_p99_ms']:>13.1f} {lat['commit_p50_ms']:>13.1f} "
            f"{lat['commit_p99_ms']:>13.1f} {lat['records_per_s']:>11,.0f}"
        )
    info = result["machine"]
    print(
        f"\n{info['cores']} cores ({info['cpu']}), {info['ram_gib']} GiB RAM, "
        f"Python {info['python']}, librdkafka {info['librdkafka']}; load average "
        f"{info['load_average_1m_before']:.1f} before, {info['load_average_1m']:.1f} after"
    )
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
