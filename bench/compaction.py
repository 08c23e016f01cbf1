"""Log compaction: what the cleaner saves, how fast it cleans, what it costs the
clients meanwhile, and the broker's memory.

Run from the repository root:

    .venv/bin/python -m bench.compaction            # 1M keyed records over 10k keys
    .venv/bin/python -m bench.compaction --quick    # 20k over 500 keys, to try it

The script starts its own broker (tests/support/broker.py) on a temporary data
directory, with its HTTP listener on (the figures are read from /metrics) and
`log.cleaner.backoff.ms=200`, otherwise default settings (`--broker-config k=v` adds
overrides). Steps:

1. Load: one partition, `cleanup.policy=delete` (nothing cleans yet), 16 MiB
   segments; `--records` records over `--keys` keys (uniformly drawn, ~100-byte
   values), the last `--tombstones` share of the keys deleted by tombstones at the
   end. One more record after `segment.ms` seals every segment before it (the
   active segment is never cleaned).
2. Baseline: a probe topic of its own gets `--probe-rate` records/s for
   `--probe-seconds` while nothing cleans: produce latency (send to acknowledgement,
   acks=all) and fetch latency (send to a consumer's receipt), p50 and p99.
3. Cleaning: the same probe starts again, the topic is switched to
   `cleanup.policy=compact` (IncrementalAlterConfigs), and the probe stops once
   /metrics shows the partition cleaned (polled every 100 ms), so it measures the
   clients while the cleaner works (from its first pass after the switch, within
   `log.cleaner.backoff.ms`). The clean's own duration is what the broker logs for
   it (server/services/log_cleaner.py).
4. Result: the partition's bytes before and after, the cleaner's throughput (log
   bytes and records cleaned per second of clean time, and bytes read per second as
   /metrics counts them), the broker's RSS (peak during each phase), and a check that
   a consumer reading from the beginning sees one record per key (tombstones
   included: `delete.retention.ms` keeps them a day).

Results: an aligned table on stdout and JSON in bench/results/compaction.json, with
machine information. On a shared machine the latencies are noisy: compare runs made
back to back, never across machines.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.admin import ResourceType as AdminResourceType
from tests.support.broker import BrokerProcess, wait_until
from tests.support.clients import create_topic, watermarks
from tests.support.metrics import METRICS_OVERRIDE, metrics_url, scrape, value

from bench.produce_fetch import machine, save_result
from bench.share_consume import percentile

SEGMENT_BYTES = 16 * 1024 * 1024
SEGMENT_MS = 2000
VALUE_BYTES = 100
BROKER_OVERRIDES = ("log.cleaner.backoff.ms=200", METRICS_OVERRIDE)
CLEAN_TIMEOUT_S = 420.0
_CLEANED = re.compile(r"cleaned (\S+)-0 in ([\d.]+) s: (\d+) bytes read, (\d+) written")


class RssSampler:
    """The broker's peak resident set (VmRSS) while active, sampled every 100 ms."""

    def __init__(self, pid: int) -> None:
        self._path = Path(f"/proc/{pid}/status")
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _rss_kib(self) -> int:
        for line in self._path.read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_kib = max(self.peak_kib, self._rss_kib())
            self._stop.wait(0.1)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


def load(bootstrap: str, topic: str, args: argparse.Namespace) -> dict[str, Any]:
    """Produce the keyed records and tombstones; returns counts and the seal's offset."""
    rng = random.Random(42)
    keys = [b"key-%06d" % i for i in range(args.keys)]
    doomed = keys[: int(len(keys) * args.tombstones)]
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "compression.type": "none",
            "queue.buffering.max.messages": 1_000_000,
            "message.timeout.ms": 300_000,
        }
    )
    failures: list[KafkaError] = []

    def delivered(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            failures.append(error)

    filler = os.urandom(VALUE_BYTES)
    started = time.monotonic()
    for i in range(args.records - len(doomed)):
        value = b"%08d" % i + filler[8:]
        producer.produce(
            topic, key=rng.choice(keys), value=value, partition=0, on_delivery=delivered
        )
        if i % 10_000 == 0:
            producer.poll(0)
    for key in doomed:
        producer.produce(topic, key=key, value=None, partition=0, on_delivery=delivered)
    if producer.flush(300):
        raise RuntimeError("records not delivered")
    produce_s = time.monotonic() - started
    time.sleep(SEGMENT_MS / 1000 + 0.5)
    producer.produce(topic, key=b"~seal", value=b"seal", partition=0, on_delivery=delivered)
    producer.flush(60)
    if failures:
        raise RuntimeError(f"{len(failures)} records failed: {failures[:3]}")
    return {"records": args.records + 1, "tombstones": len(doomed), "produce_s": produce_s}


def probe(
    bootstrap: str,
    topic: str,
    *,
    seconds: float,
    rate: int,
    until: threading.Event | None = None,
    started: threading.Event | None = None,
) -> dict[str, float]:
    """Paced produce to `topic` while a consumer reads it, for `seconds` or until
    `until` is set (`started` is set once both clients are connected): produce (ack)
    and fetch (receipt) latency percentiles, in ms."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{topic}-probe",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
            "fetch.queue.backoff.ms": 10,
        }
    )
    high = watermarks(bootstrap, topic, 1)[0][1]
    consumer.assign([TopicPartition(topic, 0, high)])
    sent_ns: dict[int, int] = {}
    acks_ms: list[float] = []
    fetches_ms: list[float] = []
    stop, warm = threading.Event(), threading.Event()

    def read() -> None:
        while not stop.is_set():
            message = consumer.poll(0.1)  # returns at the first record (consume waits)
            if message is not None and message.error() is None:
                if message.value() == b"warm-up":
                    warm.set()
                    continue
                sequence = int(message.value())
                fetches_ms.append((time.monotonic_ns() - sent_ns[sequence]) / 1e6)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    # the consumer's connection and first fetch, and the producer's, are not measured
    producer.produce(topic, value=b"warm-up", partition=0)
    producer.flush(30)
    if not warm.wait(30):
        raise RuntimeError("the probe's consumer did not start")
    if started is not None:
        started.set()

    def acked(error: KafkaError | None, message: Message) -> None:
        if error is None:
            acks_ms.append((time.monotonic_ns() - sent_ns[int(message.value())]) / 1e6)

    total = int(seconds * rate)
    begun = time.monotonic()
    for sequence in range(int(seconds * rate)):
        if until is not None and until.is_set():
            total = sequence
            break
        due = begun + sequence / rate
        while (now := time.monotonic()) < due:
            producer.poll(min(due - now, 0.001))
        sent_ns[sequence] = time.monotonic_ns()
        producer.produce(topic, value=b"%d" % sequence, partition=0, on_delivery=acked)
        producer.poll(0)
    producer.flush(60)
    wait_until(lambda: len(fetches_ms) >= total, timeout_s=30)
    stop.set()
    reader.join(5)
    consumer.close()
    acks, fetches = sorted(acks_ms), sorted(fetches_ms)
    return {
        "records": total,
        "produce_p50_ms": percentile(acks, 50),
        "produce_p99_ms": percentile(acks, 99),
        "fetch_p50_ms": percentile(fetches, 50),
        "fetch_p99_ms": percentile(fetches, 99),
    }


def set_topic_config(bootstrap: str, topic: str, key: str, value: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(
        AdminResourceType.TOPIC,
        topic,
        incremental_configs=[ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)],
    )
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)


def count_per_key(bootstrap: str, topic: str) -> tuple[int, int]:
    """(records read from the beginning, distinct keys among them)."""
    (low, high) = watermarks(bootstrap, topic, 1)[0]
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"{topic}-count", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, 0, low)])
    records, keys, position = 0, set(), low
    deadline = time.monotonic() + 300
    while position < high and time.monotonic() < deadline:
        for message in consumer.consume(10_000, 0.5):
            if message.error() is None:
                records += 1
                keys.add(message.key())
                position = message.offset() + 1
    consumer.close()
    return records, len(keys)


def run(args: argparse.Namespace) -> dict[str, Any]:
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="shoal-bench-compaction-") as tmp:
        broker = BrokerProcess(
            Path(tmp) / "data", overrides=[*BROKER_OVERRIDES, *args.broker_config]
        ).start()
        try:
            url = metrics_url(broker)
            bootstrap = broker.bootstrap
            topic, probe_topic = "bench-compaction", "bench-compaction-probe"
            create_topic(
                bootstrap,
                topic,
                config={
                    "cleanup.policy": "delete",
                    "retention.ms": "-1",
                    "segment.bytes": str(SEGMENT_BYTES),
                    "segment.ms": str(SEGMENT_MS),
                    "min.cleanable.dirty.ratio": "0.01",
                },
            )
            create_topic(bootstrap, probe_topic)
            labels = {"topic": topic, "partition": "0"}
            with RssSampler(broker.pid) as loading:
                loaded = load(bootstrap, topic, args)
            size_before = value(scrape(url), "kafka_log_log_size", labels)
            with RssSampler(broker.pid) as idle:
                baseline = probe(
                    bootstrap, probe_topic, seconds=args.probe_seconds, rate=args.probe_rate
                )
            with RssSampler(broker.pid) as cleaning:
                # the probe runs from the switch to the clean's end, and no longer
                cleaned, probing = threading.Event(), threading.Event()
                during_box: list[dict[str, float]] = []

                def probe_during() -> None:
                    during_box.append(
                        probe(
                            bootstrap,
                            probe_topic,
                            seconds=CLEAN_TIMEOUT_S,
                            rate=args.probe_rate,
                            until=cleaned,
                            started=probing,
                        )
                    )

                prober = threading.Thread(target=probe_during, daemon=True)
                prober.start()
                if not probing.wait(60):
                    raise RuntimeError("the probe did not start")
                switched = time.monotonic()
                set_topic_config(bootstrap, topic, "cleanup.policy", "compact")
                done = wait_until(
                    lambda: (
                        value(scrape(url), "shoal_log_cleaner_cleans_total", labels) >= 1
                        and value(scrape(url), "shoal_log_cleaner_dirty_bytes", labels) == 0
                    ),
                    timeout_s=CLEAN_TIMEOUT_S,
                    interval_s=0.1,
                )
                cleaned.set()
                probe_end_s = time.monotonic() - switched
                prober.join(120)
                if not done:
                    raise RuntimeError(f"not cleaned within {CLEAN_TIMEOUT_S} s")
                (during,) = during_box
            samples = scrape(url)
            cleans = [m for m in _CLEANED.finditer(broker.log_text()) if m.group(1) == topic]
            clean_s = sum(float(m.group(2)) for m in cleans)
            records_after, keys_after = count_per_key(bootstrap, topic)
        finally:
            broker.kill()
    size_after = value(samples, "kafka_log_log_size", labels)
    cleaned_read = value(samples, "shoal_log_cleaner_cleaned_bytes_total", labels)
    result = {
        "bench": "compaction",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "machine": machine(),
        "load_before": load_before,
        "settings": {
            "records": args.records,
            "keys": args.keys,
            "tombstones_share": args.tombstones,
            "segment_bytes": SEGMENT_BYTES,
            "probe_rate": args.probe_rate,
            "probe_seconds": args.probe_seconds,
        },
        "loaded": loaded,
        "bytes_before": size_before,
        "bytes_after": size_after,
        "cleans": len(cleans),
        "clean_seconds": clean_s,
        "clean_mb_per_s": size_before / clean_s / 1e6 if clean_s else None,
        "clean_records_per_s": loaded["records"] / clean_s if clean_s else None,
        "read_mb_per_s": cleaned_read / clean_s / 1e6 if clean_s else None,
        "probe_during_s": probe_end_s,
        "records_after": records_after,
        "keys_after": keys_after,
        "baseline": baseline,
        "during_cleaning": during,
        "rss_mib": {
            "loading": loading.peak_kib / 1024,
            "idle": idle.peak_kib / 1024,
            "cleaning": cleaning.peak_kib / 1024,
        },
        "recopy_percent": value(samples, "kafka_log_logcleaner_cleaner_recopy_percent"),
        "buffer_utilization_percent": value(
            samples, "kafka_log_logcleaner_max_buffer_utilization_percent"
        ),
    }
    return result


def table(r: dict[str, Any]) -> str:
    b, d = r["baseline"], r["during_cleaning"]
    lines = [
        f"records {r['loaded']['records']:,} over {r['settings']['keys']:,} keys "
        f"({r['loaded']['tombstones']:,} tombstones), load {r['load_before']:.1f}",
        f"bytes before {r['bytes_before'] / 1e6:10.1f} MB   after {r['bytes_after'] / 1e6:8.2f} MB"
        f"   records after {r['records_after']:,} ({r['keys_after']:,} keys)",
        f"cleaner: {r['cleans']} cleans, {r['clean_seconds']:.2f} s, "
        f"{r['clean_mb_per_s'] or 0:.1f} MB/s of log, "
        f"{r['clean_records_per_s'] or 0:,.0f} records/s, "
        f"{r['read_mb_per_s'] or 0:.1f} MB/s read; recopy {r['recopy_percent']:.0f}%",
        f"{'':22}{'produce p50':>12}{'produce p99':>12}{'fetch p50':>11}{'fetch p99':>11}",
    ]
    for name, p in (("without cleaning", b), ("while cleaning", d)):
        lines.append(
            f"{name:22}{p['produce_p50_ms']:>10.2f}ms{p['produce_p99_ms']:>10.2f}ms"
            f"{p['fetch_p50_ms']:>9.2f}ms{p['fetch_p99_ms']:>9.2f}ms"
        )
    lines.append(
        f"(probe while cleaning: {r['probe_during_s']:.1f} s from the switch to compact to "
        f"the clean's end, {d['records']:,} records)"
    )
    rss = r["rss_mib"]
    lines.append(
        f"broker RSS peak: loading {rss['loading']:.0f} MiB, idle {rss['idle']:.0f} MiB, "
        f"cleaning {rss['cleaning']:.0f} MiB"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20k records over 500 keys")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--tombstones", type=float, default=0.1, help="share of keys deleted")
    parser.add_argument("--probe-rate", type=int, default=500)
    parser.add_argument("--probe-seconds", type=float, default=15.0)
    parser.add_argument("--broker-config", action="append", default=[], metavar="K=V")
    args = parser.parse_args(argv)
    if args.quick:
        args.records, args.keys, args.probe_seconds = 20_000, 500, 3.0
    result = run(args)
    print(table(result))
    print(f"wrote {save_result('compaction', result)}", file=sys.stderr)
    expected = args.keys + 1  # every key (tombstones included) and the seal record
    if result["records_after"] != expected or result["keys_after"] != expected:
        print(f"FAIL: want {expected} records, one per key", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
