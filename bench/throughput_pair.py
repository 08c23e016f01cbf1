"""Throughput of Apache Kafka 4.2 and Shoal in one run, alternating the brokers, with
CPU per record: a developer's quick pair (the project's full comparison is
bench/side_by_side.py).

Run from the repository root:

    .venv/bin/python -m bench.throughput_pair                 # 2 rounds, small sizes
    .venv/bin/python -m bench.throughput_pair --only shoal    # Shoal alone (profiling)
    .venv/bin/python -m bench.throughput_pair --old-src /tmp/old/src  # + Shoal before

Each round starts each broker in turn (the order alternates between rounds) on a fresh
temporary data directory: Kafka with its start scripts' JVM options
(kafka_reference.START_SCRIPT_JVM_OPTIONS), Shoal with its defaults; both with 500 ms
share heartbeats (joins settle fast) and group.initial.rebalance.delay.ms=0 (Kafka's
shipped server.properties). Before the workloads one consumer group reads a small
topic (Kafka creates __consumer_offsets then). Every workload uses confluent-kafka clients:

- produce-1k, produce-100: R records of 1 KiB / 100 B to a 1-partition topic, acks=all,
  enable.idempotence, linger.ms 5, batch.size 1 MB, no compression.
- consume: one Consumer in a new group subscribes to the produce-1k topic and reads
  it all (Fetch; the group join is included); consume-nobackoff: the same with
  librdkafka's fetch-queue backoff out of the way (NO_BACKOFF).
- share: four ShareConsumer processes in one new share group drain a 1-partition
  topic of R 1 KiB records (written in log batches of --share-batch records),
  acknowledge(ACCEPT) of each record carried by the next poll, commit_sync at the
  end (bench/share_consume.py, explicit mode).
- e2e: the same four consumers and a producer writing the R records at once; the
  phase ends at the last record received.

Per phase: records/s, the seconds before the first record (group joins) and the rate
after it, broker CPU seconds and microseconds per record (from /proc),
client CPU seconds (this process and its finished consumer processes). On a 2-core
machine the clients compete with the broker, so CPU per record is the figure to read.
Results: a table on stdout and bench/results/throughput_pair.json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer
from tests.support import kafka_reference
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic

from bench.produce_fetch import CpuMeter, machine, save_result
from bench.share_consume import produce as produce_batched
from bench.share_consume import share_phase

OVERRIDES = (
    "group.share.min.heartbeat.interval.ms=100",
    "group.share.heartbeat.interval.ms=500",
    # Kafka's shipped config/server.properties sets 0 (and KafkaBroker does); the
    # code default, 3000, which Shoal keeps, would add 3 s to every classic join.
    "group.initial.rebalance.delay.ms=0",
)
TIMEOUT_S = 600.0
NO_BACKOFF = {"queued.min.messages": 5_000_000, "fetch.queue.backoff.ms": 10}
"""librdkafka pauses fetching for fetch.queue.backoff.ms (1 s) once more than
queued.min.messages (100k) wait in its queue: the consume phase runs once with the
defaults (the pauses in the figure) and once without them."""


def produce_idempotent(bootstrap: str, topic: str, *, records: int, value_bytes: int) -> None:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "compression.type": "none",
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 2_097_151,
            "message.timeout.ms": 300_000,
        }
    )
    value = os.urandom(value_bytes)
    send = producer.produce
    for _ in range(records):
        try:
            send(topic, value)
        except BufferError:
            producer.poll(0.01)
            send(topic, value)
    if producer.flush(300):
        raise RuntimeError("records not delivered")


def consume_group(
    bootstrap: str, topic: str, *, records: int, settings: dict[str, Any] | None = None
) -> float:
    """Returns the seconds from subscribe to the first record (the group join)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-consume-{time.monotonic_ns()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **(settings or {}),
        }
    )
    try:
        subscribed = time.monotonic()
        consumer.subscribe([topic])
        seen = 0
        first = 0.0
        deadline = subscribed + TIMEOUT_S
        while seen < records:
            if time.monotonic() > deadline:
                raise RuntimeError(f"consume stalled at {seen} of {records}")
            for message in consumer.consume(num_messages=10_000, timeout=0.05):
                if message.error() is not None:
                    raise RuntimeError(str(message.error()))
                first = first or time.monotonic()
                seen += 1
    finally:
        consumer.close()
    return first - subscribed


def measured(meter: CpuMeter, records: int, action: Any) -> dict[str, float]:
    """`action`'s figures; when it returns a number, that is its start-up (seconds
    before the first record), also given as `start_seconds`."""
    with meter:
        start = action()
    broker_s = meter.broker_percent * meter.seconds / 100
    client_s = meter.client_percent * meter.seconds / 100
    return {
        "records": records,
        "seconds": meter.seconds,
        "records_per_s": records / meter.seconds,
        "broker_cpu_s": broker_s,
        "client_cpu_s": client_s,
        "broker_us_per_record": 1e6 * broker_s / records,
        "start_seconds": start if isinstance(start, float) else 0.0,
    }


def workloads(bootstrap: str, pid: int, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    meter = CpuMeter(pid, include_children=True)
    out: dict[str, dict[str, float]] = {}
    # A first group: Kafka creates __consumer_offsets (50 partitions) on the first
    # FindCoordinator, seconds that belong to no workload.
    create_topic(bootstrap, "warm-up", partitions=1)
    produce_idempotent(bootstrap, "warm-up", records=1000, value_bytes=100)
    consume_group(bootstrap, "warm-up", records=1000)
    skip = set(args.skip.split(","))
    sizes = (("produce-1k", 1024, args.records), ("produce-100", 100, args.small))
    for name, size, records in sizes:
        if name in skip and not (name == "produce-1k" and "consume" not in skip):
            continue
        create_topic(bootstrap, name, partitions=1)
        out[name] = measured(
            meter,
            records,
            lambda t=name, s=size, r=records: produce_idempotent(
                bootstrap, t, records=r, value_bytes=s
            ),
        )
        report(args.current, name, out[name])
    if "consume" not in skip:
        out["consume"] = measured(
            meter,
            args.records,
            lambda: consume_group(bootstrap, "produce-1k", records=args.records),
        )
        report(args.current, "consume", out["consume"])
    if "consume-nobackoff" not in skip:
        out["consume-nobackoff"] = measured(
            meter,
            args.records,
            lambda: consume_group(
                bootstrap, "produce-1k", records=args.records, settings=NO_BACKOFF
            ),
        )
        report(args.current, "consume-nobackoff", out["consume-nobackoff"])
    create_topic(bootstrap, "share", partitions=1)
    produce_batched(
        bootstrap,
        "share",
        partitions=1,
        records=args.share,
        value_bytes=1024,
        batch_records=args.share_batch,
    )
    for name, topic, during in (
        ("share", "share", None),
        (
            "e2e",
            "e2e",
            lambda: produce_batched(
                bootstrap,
                "e2e",
                partitions=1,
                records=args.share,
                value_bytes=1024,
                batch_records=args.share_batch,
            ),
        ),
    ):
        if name in skip:
            continue
        if name == "e2e":
            create_topic(bootstrap, "e2e", partitions=1)
        phase = share_phase(
            bootstrap,
            topic,
            consumers=4,
            partitions=1,
            records=args.share,
            value_bytes=1024,
            meter=meter,
            explicit=True,
            produce_during=during,
        )
        broker_s = phase.broker_cpu_percent * meter.seconds / 100
        client_s = phase.client_cpu_percent * meter.seconds / 100
        out[name] = {
            "records": args.share,
            "seconds": phase.seconds,
            "records_per_s": phase.records_per_s,
            "start_seconds": phase.start_seconds,
            "broker_cpu_s": broker_s,
            "client_cpu_s": client_s,
            "broker_us_per_record": 1e6 * broker_s / args.share,
            "redelivered": phase.redelivered,
        }
        report(args.current, name, out[name])
    return out


def report(broker: str, name: str, r: dict[str, float]) -> None:
    steady = r["seconds"] - r["start_seconds"]
    after = r["records"] / steady if steady > 0 else float("inf")
    print(
        f"{broker:<6} {name:<12} {r['records']:>8,} {r['seconds']:>7.2f} "
        f"{r['records_per_s']:>10,.0f} {r['broker_cpu_s']:>8.2f} "
        f"{r['broker_us_per_record']:>8.1f} {r['client_cpu_s']:>8.2f} "
        f"{r['start_seconds']:>7.2f} {after:>10,.0f} {os.getloadavg()[0]:>5.1f}",
        flush=True,
    )


def summarize(rounds: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """Medians per broker and phase (records/s, rate after the first record, broker
    us per record, client CPU s), printed with each broker's ratio to Kafka's rate."""
    medians: dict[str, dict[str, dict[str, float]]] = {}
    for broker in dict.fromkeys(r["broker"] for r in rounds):
        mine = [r for r in rounds if r["broker"] == broker]
        phases = [k for k, v in mine[0].items() if isinstance(v, dict)]
        medians[broker] = {
            phase: {
                key: statistics.median(r[phase][key] for r in mine)
                for key in ("records_per_s", "broker_us_per_record", "client_cpu_s")
            }
            for phase in phases
        }
    print(f"\nmedians of {len(rounds)} runs ({', '.join(medians)}); ratio: records/s to Kafka's")
    for broker, phases in medians.items():
        for phase, m in phases.items():
            kafka = medians.get("kafka", {}).get(phase)
            ratio = f"{m['records_per_s'] / kafka['records_per_s']:6.2f}" if kafka else "     -"
            print(
                f"{broker:<6} {phase:<18} {m['records_per_s']:>10,.0f}/s "
                f"{m['broker_us_per_record']:>6.1f} us/rec broker "
                f"{m['client_cpu_s']:>6.2f} s client  x{ratio}"
            )
    return medians


def run_kafka(tmp: Path, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    broker = kafka_reference.KafkaBroker(
        tmp / "kafka",
        overrides=OVERRIDES,
        jvm_options=kafka_reference.START_SCRIPT_JVM_OPTIONS,
        test_properties=False,
    ).start()
    try:
        assert broker.process is not None
        return workloads(broker.bootstrap, broker.process.pid, args)
    finally:
        broker.kill()


def run_shoal(
    tmp: Path, args: argparse.Namespace, src: str | None = None
) -> dict[str, dict[str, float]]:
    """Shoal from this tree, or from the `src` directory of another (its PYTHONPATH)."""
    saved = os.environ.get("PYTHONPATH")
    if src is not None:
        os.environ["PYTHONPATH"] = os.pathsep.join([src, *(saved or "").split(os.pathsep)[1:]])
    try:
        broker = BrokerProcess(tmp / "shoal", overrides=OVERRIDES).start()
    finally:
        if src is not None:
            if saved is None:
                del os.environ["PYTHONPATH"]
            else:
                os.environ["PYTHONPATH"] = saved
    try:
        return workloads(broker.bootstrap, broker.pid, args)
    finally:
        broker.kill()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.throughput_pair", description=__doc__)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--records", type=int, default=50_000, help="1 KiB produce/consume")
    parser.add_argument("--small", type=int, default=200_000, help="100 B produce")
    parser.add_argument("--share", type=int, default=30_000, help="share drain and e2e")
    parser.add_argument(
        "--share-batch",
        type=int,
        default=10_000,
        help="records per log batch for share/e2e (librdkafka's batch.num.messages default)",
    )
    parser.add_argument("--skip", default="", help="phases to leave out, comma-separated")
    parser.add_argument("--only", choices=("kafka", "shoal"))
    parser.add_argument(
        "--old-src",
        help="also run Shoal from this src directory (another tree: before/after), as 'old'",
    )
    args = parser.parse_args(argv)
    runners: dict[str, Any] = {"kafka": run_kafka, "shoal": run_shoal}
    order = [args.only] if args.only else ["kafka", "shoal"]
    if args.old_src:
        runners["old"] = lambda tmp, a: run_shoal(tmp, a, args.old_src)
        order.insert(1, "old")
    rounds: list[dict[str, Any]] = []
    print(
        f"{'broker':<6} {'phase':<12} {'records':>8} {'seconds':>7} {'records/s':>10} "
        f"{'brokerCPU':>8} {'us/rec':>8} {'clientCPU':>8} {'start s':>7} {'after 1st':>10} "
        f"{'load':>5}"
    )
    for index in range(args.rounds):
        for name in order if index % 2 == 0 else order[::-1]:
            args.current = name
            with tempfile.TemporaryDirectory(prefix=f"pair-{name}-") as tmp:
                rounds.append({"broker": name, "round": index, **runners[name](Path(tmp), args)})
    summary = summarize(rounds)
    out = save_result(
        "throughput_pair",
        {
            "machine": machine(),
            "settings": vars(args) | {"current": None},
            "rounds": rounds,
            "medians": summary,
        },
    )
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
