"""Broker-side compression (compression.type): what recompressing costs the broker.

Run from the repository root:

    .venv/bin/python -m bench.recompression            # 300k x 100 B per scenario
    .venv/bin/python -m bench.recompression --quick    # a few seconds per scenario

Two parts:

1. In-process cost per MB (no broker): a batch of ~100-byte records (keys, varied
   values), uncompressed or lz4 as a producer sends it, passed through the produce
   path's validation (log/validation.py `validate`) for each topic codec, and the key
   check of a compacted topic. Reported per MB of records (uncompressed) and per batch
   of 16 KiB, 64 KiB and 1 MiB: how long the work would hold the event loop (batches
   above limits.PRODUCE_RECORDS_ON_LOOP_BYTES_MAX are read in a worker thread).
2. Through a broker: one confluent-kafka producer (acks=all, linger.ms=5, batch.size
   1 MB, producer-side `none` or `lz4`) sends N records of 100 B to a 1-partition topic
   of each compression.type (producer, gzip, snappy, lz4, zstd, uncompressed).
   Throughput (records/s, MB/s of values), the latency from produce() to the delivery
   report (p50, p99) and the broker's CPU (% of one core) per scenario.

Results: an aligned table on stdout and JSON in bench/results/recompression.json
(--quick: recompression-quick.json) with machine information. The machine is shared
during development: compare runs made back to back only.
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, Message, Producer
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic

from bench.produce_fetch import CpuMeter, machine, save_result
from shoal import limits
from shoal.config import TOPIC_KEYS
from shoal.log.settings import LogConfig
from shoal.log.validation import validate
from shoal.protocol.compression import Codec
from shoal.protocol.record_batch import encode_batch, validate_produced

TOPIC_CODECS = ("producer", "gzip", "snappy", "lz4", "zstd", "uncompressed")
PRODUCER_CODECS = ("none", "lz4")
VALUE_BYTES = 100
BATCH_SIZES = {"16KiB": 16 * 1024, "64KiB": 64 * 1024, "1MiB": 1024 * 1024}


def _records(total_bytes: int, seed: int = 7) -> list[tuple[bytes | None, bytes | None]]:
    """Keyed ~100-byte records, half text and half random bytes (compress about 2x)."""
    rng = random.Random(seed)
    out: list[tuple[bytes | None, bytes | None]] = []
    size = 0
    while size < total_bytes:
        value = (b"reading %08d " % len(out) + rng.randbytes(VALUE_BYTES // 2)).ljust(
            VALUE_BYTES, b"."
        )
        key = b"sensor-%d" % rng.randrange(10_000)
        out.append((key, value))
        size += len(key) + len(value) + 8
    return out


def _settings(**config: str) -> LogConfig:
    return LogConfig.from_config({k: TOPIC_KEYS[k].parse(v) for k, v in config.items()})


def _time_ms(batch: bytes, settings: LogConfig, *, repeat: int) -> float:
    """Median milliseconds of one `validate` of `batch` under `settings`."""
    headers = validate_produced(batch, max_batch_bytes=len(batch))
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        validate(batch, headers, settings, topic="t", partition=0, max_batch_bytes=8 << 20)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def in_process(*, quick: bool) -> list[dict[str, Any]]:
    rows = []
    targets: list[tuple[str, LogConfig]] = [
        (f"compression.type={c}", _settings(**{"compression.type": c}))
        for c in TOPIC_CODECS
        if c != "producer"
    ]
    targets.append(("cleanup.policy=compact (keys)", _settings(**{"cleanup.policy": "compact"})))
    for source in (Codec.NONE, Codec.LZ4):
        for label, settings in targets:
            row: dict[str, Any] = {"producer_codec": source.name.lower(), "work": label}
            for size_name, size in BATCH_SIZES.items():
                records = _records(size)
                batch = encode_batch(records, timestamp_ms=1_700_000_000_000, codec=source)
                repeat = 3 if quick else (20 if size > 100_000 else 100)
                ms = _time_ms(batch, settings, repeat=repeat)
                row[f"ms_{size_name}"] = round(ms, 3)
                if size_name == "1MiB":
                    row["ms_per_mb"] = round(ms * 1e6 / size, 2)
            rows.append(row)
    return rows


def _produce(bootstrap: str, topic: str, count: int, codec: str) -> dict[str, Any]:
    latencies: list[float] = []
    errors: list[KafkaError] = []

    def delivered(sent: float, error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            errors.append(error)
        else:
            latencies.append(time.perf_counter() - sent)

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "compression.type": codec,
            "queue.buffering.max.messages": count + 1000,
            "queue.buffering.max.kbytes": 2_000_000,
        }
    )
    values = [v for _, v in _records(count * (VALUE_BYTES + 20))][:count]
    started = time.perf_counter()
    for value in values:
        while True:
            try:
                p.produce(
                    topic, value, on_delivery=functools.partial(delivered, time.perf_counter())
                )
                break
            except BufferError:
                p.poll(0.01)
        p.poll(0)
    remaining = p.flush(120)
    seconds = time.perf_counter() - started
    assert remaining == 0 and not errors, (remaining, errors[:3])
    latencies.sort()
    return {
        "records": count,
        "seconds": round(seconds, 3),
        "records_per_s": round(count / seconds),
        "mb_per_s": round(count * VALUE_BYTES / seconds / 1e6, 2),
        "p50_ms": round(latencies[len(latencies) // 2] * 1000, 1),
        "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 1),
    }


def through_broker(*, count: int) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="shoal-bench-recompression-") as tmp:
        broker = BrokerProcess(Path(tmp) / "data").start()
        try:
            for producer_codec in PRODUCER_CODECS:
                for topic_codec in TOPIC_CODECS:
                    topic = f"recompress-{producer_codec}-{topic_codec}"
                    create_topic(broker.bootstrap, topic, config={"compression.type": topic_codec})
                    with CpuMeter(broker.pid) as cpu:
                        row = _produce(broker.bootstrap, topic, count, producer_codec)
                    rows.append(
                        {
                            "producer_codec": producer_codec,
                            "compression.type": topic_codec,
                            **row,
                            "broker_cpu_percent": round(cpu.broker_percent),
                        }
                    )
                    print(_line(rows[-1]), flush=True)
        finally:
            broker.kill()
    return rows


def _line(row: dict[str, Any]) -> str:
    return (
        f"{row['producer_codec']:>5} -> {row['compression.type']:<13}"
        f"{row['records_per_s']:>10,} rec/s {row['mb_per_s']:>7} MB/s "
        f"p50 {row['p50_ms']:>6} ms  p99 {row['p99_ms']:>6} ms  "
        f"broker {row['broker_cpu_percent']:>4}%"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.recompression",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, to try it")
    parser.add_argument("--records", type=int, default=None, help="records per scenario")
    args = parser.parse_args(argv)
    count = args.records or (20_000 if args.quick else 300_000)
    load_before = os.getloadavg()[0]
    print(f"validate() per batch (ms; on-loop limit {limits.PRODUCE_RECORDS_ON_LOOP_BYTES_MAX} B)")
    cost = in_process(quick=args.quick)
    for row in cost:
        sizes = "  ".join(f"{name} {row[f'ms_{name}']:>8.3f}" for name in BATCH_SIZES)
        print(
            f"{row['producer_codec']:>5} -> {row['work']:<32}{sizes}   {row['ms_per_mb']:>7} ms/MB"
        )
    print(f"\nthrough a broker: {count:,} records of {VALUE_BYTES} B per scenario")
    broker_rows = through_broker(count=count)
    result = {
        "timestamp": time.strftime("%Y%m%d-%H%M%S"),
        "machine": machine(),
        "load_average_1m_before": load_before,
        "load_average_1m_after": os.getloadavg()[0],
        "quick": args.quick,
        "validate_cost": cost,
        "produce": broker_rows,
    }
    out = save_result("recompression-quick" if args.quick else "recompression", result)
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
