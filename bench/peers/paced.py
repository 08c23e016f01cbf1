"""Paced end-to-end latency on any Kafka-protocol broker: one producer on an absolute
schedule, share or plain consumers, per-record latency percentiles.

Run from the repository root:

    .venv/bin/python -m bench.peers.paced --shoal --rate 3000
    .venv/bin/python -m bench.peers.paced --kafka --rate 10000 --kind group
    .venv/bin/python -m bench.peers.paced --address 127.0.0.1:9092 --rate 3000

`paced(address, rate=, n=)` talks to a broker that is already running and uses only
what every Kafka 4.2 broker offers, so it runs unchanged against Shoal and Apache
Kafka. It creates a topic of one partition and then:

- kind "share": a new share group (share.auto.offset.reset=earliest, set as a group
  config through the AdminClient) and `consumers` ShareConsumer processes in explicit
  acknowledgement mode, each record ACCEPTed on receipt (the acknowledgements ride the
  consumer's next ShareFetch);
- kind "group": a new consumer group and one plain Consumer (auto.offset.reset=earliest).

One producer process (confluent-kafka, acks=all, enable.idempotence=true, linger.ms=0,
no compression) sends `size`-byte records on an absolute schedule: record i is due at
start + i/rate. Each payload starts with time.monotonic_ns() read just before
`produce()` (CLOCK_MONOTONIC: one clock for every process on the machine) and its
sequence number; a record's latency is the consumer's clock when `poll()` returned it
minus that stamp. A producer that falls behind its schedule sends the overdue records
back to back (the schedule is never reset); how far behind it fell is in the result
(`behind_p99_ms`, `behind_max_ms`, `late_sends`: records sent more than 1 ms after
their due time), so a catch-up burst is never hidden.

Every process is started with multiprocessing's spawn method and imports its client
library before it reads the clock. The consumers join first: warm-up records are sent
at the same rate until every consumer has received at least one record and then for
`WARMUP_S` more; only the `n` records after that are measured. Percentiles are per
record (nearest rank) over the measured records; the run fails if a measured record
never arrives.

`python -m bench.peers.paced` prints a table and writes bench/results/paced.json
(`--kafka` starts Apache Kafka 4.2 with its start script's JVM settings, `--shoal` a
`shoal serve`, each on a temporary data directory, bench/peers/runners.py). A broker it
started first serves one unmeasured share run (`--broker-warmup` seconds): without it
a fresh JVM's first run measured Kafka's JIT compilation (p99 0.5-0.8 s at 3k/s in
three of three fresh starts, against 0.01-0.1 s later on the same JVM).

Besides the percentiles, each row says what shaped them:
- `cpu%`: the broker's CPU over the run, of one core (join, warm-up and drain
  included); `wait`: the seconds its threads were runnable but had no CPU, per CPU
  second (/proc schedstat): how starved it was on a shared machine;
- `rec/P` and `rtt50`: records per Produce request and the producer's round trip to
  the leader (librdkafka's statistics over the measured window): with linger.ms=0 a
  broker that answers sooner gets more, smaller requests for the same records;
- `load`: the load average before the run. The JSON adds the clients' CPU seconds
  (`producer_cpu_s`, `consumers_cpu_s`, every thread of each process).
On a shared machine compare runs made back to back only (docs/performance/latency.md).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import struct
import sys
import tempfile
import time
from array import array
from pathlib import Path
from typing import Any

from bench.share_consume import percentile

STAMP = struct.Struct(">qq")  # monotonic ns just before produce(), sequence number
WARMUP_S = 1.0  # measured sending starts this long after every consumer has a record
JOIN_TIMEOUT_S = 30.0  # every consumer must have received a record by then
DRAIN_TIMEOUT_S = 60.0
LATE_NS = 1_000_000  # a send this far behind its due time counts as late
STATS_INTERVAL_MS = 1000  # librdkafka's statistics of the producer
SLEEP_SLICE_S = 0.002  # the producer serves its delivery reports at least this often


def _percentile(sorted_values: list[int], q: float) -> float:
    """Nearest-rank percentile of integer nanoseconds, in milliseconds (the project's
    one percentile rule: bench/share_consume.percentile)."""
    return percentile(sorted_values, q) / 1e6


def _produce_stats(stats: list[dict[str, Any]]) -> dict[str, Any]:
    """What librdkafka's statistics say of the measured window: Produce requests and
    records sent (the first interval is the baseline), so records per Produce, and the
    producer's round-trip times to the leader (the median of the intervals' p50s, the
    largest of their p99s, ms)."""
    if len(stats) < 2:
        return {}

    def counts(snapshot: dict[str, Any]) -> tuple[int, int]:
        brokers = snapshot.get("brokers", {}).values()
        requests = sum(b.get("req", {}).get("Produce", 0) for b in brokers)
        return requests, snapshot.get("txmsgs", 0)

    first, last = counts(stats[0]), counts(stats[-1])
    requests, records = last[0] - first[0], last[1] - first[1]
    p50s, p99s = [], []
    for snapshot in stats[1:]:
        leaders = [b for b in snapshot.get("brokers", {}).values() if b.get("toppars")]
        for broker in leaders:
            rtt = broker.get("rtt", {})
            if rtt.get("cnt"):
                p50s.append(rtt["p50"] / 1000)
                p99s.append(rtt["p99"] / 1000)
    return {
        "produce_requests": requests,
        "records_per_produce": round(records / requests, 2) if requests else None,
        "produce_rtt_p50_ms": round(sorted(p50s)[len(p50s) // 2], 3) if p50s else None,
        "produce_rtt_p99_max_ms": round(max(p99s), 3) if p99s else None,
    }


def _share_consumer(
    address: str, group: str, topic: str, index: int, state: Any, stop: Any, out: Any
) -> None:
    from confluent_kafka import AcknowledgeType, KafkaException, ShareConsumer

    consumer = ShareConsumer(
        {
            "bootstrap.servers": address,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
        }
    )
    consumer.subscribe([topic])
    sequences, latencies, error = array("q"), array("q"), None
    redelivered = 0
    try:
        while not stop.is_set():
            batch = consumer.poll(0.1)
            if not batch:
                continue
            now = time.monotonic_ns()
            for message in batch:
                if message.error() is not None:
                    error = str(message.error())
                    break
                stamp, sequence = STAMP.unpack_from(message.value() or b"")
                if message.delivery_count() != 1:
                    redelivered += 1
                sequences.append(sequence)
                latencies.append(now - stamp)
                consumer.acknowledge(message, AcknowledgeType.ACCEPT)
            if error:
                break
            state[index] += len(batch)
    except KafkaException as exc:  # reported to the parent, which fails the run
        error = repr(exc)
    finally:
        consumer.close()
    cpu_s = time.process_time()  # every thread of the process (librdkafka's too)
    out.put((index, sequences.tobytes(), latencies.tobytes(), redelivered, error, cpu_s))


def _group_consumer(
    address: str, group: str, topic: str, index: int, state: Any, stop: Any, out: Any
) -> None:
    from confluent_kafka import Consumer, KafkaException

    consumer = Consumer(
        {"bootstrap.servers": address, "group.id": group, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    sequences, latencies, error = array("q"), array("q"), None
    try:
        while not stop.is_set():
            message = consumer.poll(0.1)
            if message is None:
                continue
            now = time.monotonic_ns()
            if message.error() is not None:
                error = str(message.error())
                break
            stamp, sequence = STAMP.unpack_from(message.value() or b"")
            sequences.append(sequence)
            latencies.append(now - stamp)
            state[index] += 1
    except KafkaException as exc:  # reported to the parent, which fails the run
        error = repr(exc)
    finally:
        consumer.close()
    cpu_s = time.process_time()  # every thread of the process (librdkafka's too)
    out.put((index, sequences.tobytes(), latencies.tobytes(), 0, error, cpu_s))


def _producer(
    address: str,
    topic: str,
    rate: int,
    n: int,
    size: int,
    joined: Any,  # mp.Event: every consumer has a record
    control: Any,  # mp.Array("q"): [first measured sequence, records sent]
    out: Any,
) -> None:
    from confluent_kafka import Producer

    stats: list[dict[str, Any]] = []  # librdkafka's statistics, one per interval
    producer = Producer(
        {
            "bootstrap.servers": address,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 0,
            "compression.type": "none",
            "queue.buffering.max.messages": 2_000_000,
            "message.timeout.ms": 120_000,
            "statistics.interval.ms": STATS_INTERVAL_MS,
            "stats_cb": lambda raw: stats.append(json.loads(raw)),
        }
    )
    failures: list[str] = []

    def delivered(err: Any, _message: Any) -> None:
        if err is not None:
            failures.append(str(err))

    padding = os.urandom(max(0, size - STAMP.size))
    interval_ns = 1_000_000_000 // rate
    behind = array("q")  # ns behind schedule, per measured record
    first_measured = -1
    stop_at = -1
    stats_from = 0
    joined_at_ns = 0
    started = time.monotonic_ns()
    deadline = started + int(JOIN_TIMEOUT_S * 1e9)
    sequence = 0
    while stop_at < 0 or sequence < stop_at:
        due = started + sequence * interval_ns
        now = time.monotonic_ns()
        if now < due:
            producer.poll(0)
            time.sleep(min(due - now, SLEEP_SLICE_S * 1e9) / 1e9)
            continue
        if first_measured < 0:
            if joined.is_set():
                joined_at_ns = joined_at_ns or now
                if now - joined_at_ns >= WARMUP_S * 1e9:
                    first_measured = sequence
                    stop_at = sequence + n
                    stats_from = len(stats)
                    control[0] = first_measured
            elif now > deadline:
                break
        sent_ns = time.monotonic_ns()
        producer.produce(topic, STAMP.pack(sent_ns, sequence) + padding, on_delivery=delivered)
        if first_measured >= 0:
            behind.append(sent_ns - due)
        sequence += 1
        control[1] = sequence
    window_s = (time.monotonic_ns() - (started + max(first_measured, 0) * interval_ns)) / 1e9
    remaining = producer.flush(60)
    producer.poll(STATS_INTERVAL_MS / 1000)  # the statistics up to the end
    out.put(
        {
            "cpu_s": time.process_time(),
            "first_measured": first_measured,
            "sent": sequence,
            "behind_ns": behind.tobytes(),
            "window_s": window_s,
            "undelivered": remaining,
            "failures": failures[:5],
            "failed": len(failures),
            **_produce_stats(stats[max(0, stats_from - 1) :]),
        }
    )


def paced(
    address: str,
    *,
    rate: int,
    n: int,
    size: int = 1024,
    kind: str = "share",
    consumers: int = 4,
) -> dict[str, Any]:
    """Send `n` measured records at `rate` records/s through the broker at `address` and
    return their latency percentiles (ms) with what was sent and received."""
    if kind not in ("share", "group"):
        raise ValueError(f"kind must be 'share' or 'group', not {kind!r}")
    if kind == "group":
        consumers = 1
    tag = f"paced-{kind}-{rate}-{time.time_ns()}"
    topic = group = tag
    from tests.support.clients import create_topic

    from bench.share_consume import set_group  # share.auto.offset.reset=earliest

    create_topic(address, topic)
    if kind == "share":
        set_group(address, group)
    ctx = mp.get_context("spawn")
    state = ctx.Array("q", consumers)  # records received per consumer
    control = ctx.Array("q", 2)  # first measured sequence, records sent
    control[0] = -1
    stop, joined = ctx.Event(), ctx.Event()
    results: Any = ctx.Queue()
    produced: Any = ctx.Queue()
    target = _share_consumer if kind == "share" else _group_consumer
    workers = [
        ctx.Process(target=target, args=(address, group, topic, i, state, stop, results))
        for i in range(consumers)
    ]
    producer = ctx.Process(
        target=_producer, args=(address, topic, rate, n, size, joined, control, produced)
    )
    for process in (*workers, producer):
        process.start()
    try:
        deadline = time.monotonic() + JOIN_TIMEOUT_S + 60  # spawn and imports included
        while not all(state[i] > 0 for i in range(consumers)):
            if time.monotonic() > deadline or not producer.is_alive():
                raise RuntimeError(f"consumers did not all receive a record: {state[:]}")
            time.sleep(0.01)
        joined.set()
        produced_result = produced.get(timeout=n / rate + JOIN_TIMEOUT_S + 120)
        sent = produced_result["sent"]
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        while sum(state[:]) < sent and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
    collected = [results.get(timeout=60) for _ in workers]
    for process in (*workers, producer):
        process.join(30)
        if process.is_alive():
            process.kill()
    first = produced_result["first_measured"]
    if first < 0:
        raise RuntimeError("the producer never left its warm-up")
    latency_of: dict[int, int] = {}
    redelivered = 0
    errors = []
    per_consumer = []
    consumers_cpu_s = 0.0
    for _index, seq_bytes, lat_bytes, again, error, cpu_s in sorted(collected):
        consumers_cpu_s += cpu_s
        sequences, latencies = array("q"), array("q")
        sequences.frombytes(seq_bytes)
        latencies.frombytes(lat_bytes)
        per_consumer.append(sum(1 for s in sequences if s >= first))
        redelivered += again
        if error:
            errors.append(error)
        for sequence, latency in zip(sequences, latencies, strict=True):
            if sequence >= first and sequence not in latency_of:  # first delivery counts
                latency_of[sequence] = latency
    missing = n - len(latency_of)
    if errors or missing:
        raise RuntimeError(f"{missing} measured records never arrived; errors: {errors}")
    values = sorted(latency_of.values())
    behind = array("q")
    behind.frombytes(produced_result["behind_ns"])
    behind_sorted = sorted(behind)
    return {
        "kind": kind,
        "rate": rate,
        "size": size,
        "consumers": consumers,
        "p50_ms": round(_percentile(values, 50), 3),
        "p99_ms": round(_percentile(values, 99), 3),
        "p999_ms": round(_percentile(values, 99.9), 3),
        "max_ms": round(values[-1] / 1e6, 3),
        "sent": n,
        "received": len(latency_of),
        "warmup_records": first,
        "achieved_rate": round(n / produced_result["window_s"], 1),
        "behind_p99_ms": round(_percentile(behind_sorted, 99), 3),
        "behind_max_ms": round(behind_sorted[-1] / 1e6, 3),
        "late_sends": sum(1 for b in behind if b > LATE_NS),
        "redelivered": redelivered,
        "per_consumer": per_consumer,
        "producer_failures": produced_result["failed"],
        # the clients' CPU over their whole lives (start-up, join, warm-up, drain)
        "producer_cpu_s": round(produced_result["cpu_s"], 2),
        "consumers_cpu_s": round(consumers_cpu_s, 2),
        **{k: v for k, v in produced_result.items() if k.startswith(("produce_", "records_"))},
    }


def _start(which: str, root: Path) -> Any:
    """A started `Runner` (bench/peers/runners.py) of `which`, "kafka" (Kafka's
    start-script JVM settings) or "shoal", on a data directory under `root`."""
    from bench.peers.runners import KafkaRunner, ShoalRunner

    runner = KafkaRunner(root / "kafka") if which == "kafka" else ShoalRunner(root / "shoal")
    runner.start()
    return runner


def _schedstat(pid: int) -> tuple[int, int]:
    """Nanoseconds the process's threads have spent on a CPU and runnable but waiting
    for one (`/proc/<pid>/task/*/schedstat`; threads that ended are not counted)."""
    on_cpu = waiting = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "schedstat").read_text().split()
        except OSError:  # the thread ended meanwhile
            continue
        on_cpu += int(fields[0])
        waiting += int(fields[1])
    return on_cpu, waiting


def _row(name: str, result: dict[str, Any]) -> str:
    return (
        f"{name:<8}{result['kind']:<7}{result['rate']:>7}{result['p50_ms']:>9.2f}"
        f"{result['p99_ms']:>9.2f}{result['p999_ms']:>9.2f}{result['max_ms']:>9.2f}"
        f"{result['received']:>9}{result['behind_max_ms']:>9.2f}{result['late_sends']:>7}"
        f"{result.get('broker_cpu_percent', float('nan')):>6.0f}{result['load_before']:>6.1f}"
        f"{result.get('records_per_produce') or float('nan'):>6.1f}"
        f"{result.get('produce_rtt_p50_ms') or float('nan'):>7.2f}"
        f"{result.get('broker_wait_per_cpu_s', float('nan')):>6.2f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--kafka", action="store_true", help="start Apache Kafka 4.2")
    where.add_argument("--shoal", action="store_true", help="start shoal serve")
    where.add_argument("--address", help="a broker already running")
    parser.add_argument("--rate", type=int, nargs="+", default=[3000])
    parser.add_argument("--seconds", type=float, default=10.0, help="measured seconds per run")
    parser.add_argument("--kind", choices=["share", "group", "both"], default="both")
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--consumers", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument(
        "--broker-warmup",
        type=float,
        default=5.0,
        help="seconds of an unmeasured run (share, the first rate) on a newly started broker "
        "first: Kafka's JIT compiles its hot paths, Shoal loads its lazy modules; 0: none",
    )
    args = parser.parse_args(argv)
    from bench.produce_fetch import machine, save_result

    name = "kafka" if args.kafka else "shoal" if args.shoal else args.address
    kinds = ["share", "group"] if args.kind == "both" else [args.kind]
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="shoal-paced-") as tmp:
        broker = None if args.address else _start(name, Path(tmp))
        address = args.address or (broker.address if broker is not None else "")
        print(
            f"{'broker':<8}{'kind':<7}{'rate':>7}{'p50':>9}{'p99':>9}{'p99.9':>9}{'max':>9}"
            f"{'records':>9}{'behind':>9}{'late':>7}{'cpu%':>6}{'load':>6}{'rec/P':>6}{'rtt50':>7}{'wait':>6}"
        )
        try:
            if broker is not None and args.broker_warmup > 0:
                rate = args.rate[0]
                paced(address, rate=rate, n=int(rate * args.broker_warmup), kind="share")
            for _ in range(args.repeats):
                for rate in args.rate:
                    for kind in kinds:
                        load = os.getloadavg()[0]
                        cpu_before = broker.cpu_seconds() if broker is not None else 0.0
                        sched_before = _schedstat(broker.pid) if broker is not None else (0, 0)
                        began = time.monotonic()
                        result = paced(
                            address,
                            rate=rate,
                            n=int(rate * args.seconds),
                            size=args.size,
                            kind=kind,
                            consumers=args.consumers,
                        )
                        result["broker"] = name
                        result["load_before"] = round(load, 2)
                        result["load_after"] = round(os.getloadavg()[0], 2)
                        if broker is not None:  # the whole run: join, warm-up, drain
                            cpu_s = broker.cpu_seconds() - cpu_before
                            result["broker_cpu_percent"] = round(
                                100 * cpu_s / (time.monotonic() - began), 1
                            )
                            # time its threads were runnable but had no CPU, per CPU
                            # second: how starved the broker was on a shared machine
                            sched = _schedstat(broker.pid)
                            result["broker_wait_per_cpu_s"] = round(
                                (sched[1] - sched_before[1]) / max(1, sched[0] - sched_before[0]),
                                2,
                            )
                        runs.append(result)
                        print(_row(name, result), flush=True)
        finally:
            if broker is not None:
                broker.kill()
    out = save_result("paced", {"machine": machine(), "runs": runs})
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
