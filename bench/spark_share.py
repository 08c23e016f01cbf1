"""Throughput of the `shoal-share` streaming source against the batch source, on the
same data (not a timed test: a measurement to read).

Run from the repository root (needs the spark extra and Java):

    .venv/bin/python -m bench.spark_share            # 2M x 100 B records, 32 partitions
    .venv/bin/python -m bench.spark_share --quick    # 100k records, to try it

The script starts its own broker (in-flight window raised to `--locks` records per
partition with `group.share.partition.max.record.locks` and its maximum, so a
micro-batch may hold that many), produces the records with confluent-kafka to a topic
of `--partitions` partitions, then reads all of them four ways on one `local[2]`
session, each into the `noop` sink:

- `batch Nx`: `spark.read.format("shoal")` with N tasks per partition (`minPartitions`);
- `share Nx`: `readStream.format("shoal-share")` of a new share group with
  `trigger(availableNow=True)`, `maxRecordsPerBatch` = `--batch-records` and N tasks
  per partition (`numPartitions`). Its time includes acquiring on the driver (the
  records also travel to the driver in ShareFetch), planning each micro-batch and
  acknowledging;
- `batch cores` / `share cores`: the same with as many tasks as the session has cores
  (Spark's default parallelism, 2 for `local[2]`): the README's documented sizing,
  since every Spark task costs a fixed overhead on every micro-batch.

A first untimed batch read warms the session (Python workers, JIT). The broker's CPU
and the whole machine's show what bound each phase.

The bound. A micro-batch holds at most `partitions x locks` records (acquired records
stay locked until Spark commits the batch, and a share-partition locks at most
`group.share.partition.max.record.locks` records), so the stream moves at most

    min(maxRecordsPerBatch, partitions x locks) / seconds per micro-batch

records/s. The script prints that bound for each share phase, from the mean time of
its full micro-batches, next to the measured rate and the rate of the batch source, and
where a micro-batch's time goes (Spark's `durationMs` of the query progress:
`latestOffset` is the source's acquiring and acknowledging on the driver, `addBatch` the
executors reading and the sink, the rest Spark's planning and checkpoint writes).

Results: a table on stdout and JSON in bench/results/spark_share.json.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic

from bench.produce_fetch import machine, produce, save_result
from bench.spark_read import HEADER, VALUE_BYTES, Phase, measure, spark_session

QUERY_TIMEOUT_S = 1800
PROGRESS_PARTS = (
    "latestOffset",
    "queryPlanning",
    "walCommit",
    "addBatch",
    "commitOffsets",
    "triggerExecution",
)
"""The `durationMs` entries of a micro-batch's progress shown (ms, mean over its full
batches); `triggerExecution` is the whole micro-batch."""


def broker_overrides(locks: int) -> tuple[str, ...]:
    return (
        f"group.share.max.partition.max.record.locks={locks}",
        f"group.share.partition.max.record.locks={locks}",
    )


@dataclass
class StreamRun:
    """What one share stream did, from its query progress."""

    micro_batches: int
    full_batches: int
    batch_records_max: int
    mean_ms: dict[str, float]

    def bound_records_per_s(self, window: int) -> float:
        """min(batch size, window) records per mean full micro-batch."""
        seconds = self.mean_ms.get("triggerExecution", 0.0) / 1000
        return min(self.batch_records_max, window) / seconds if seconds > 0 else 0.0


def batch_read(spark: Any, bootstrap: str, topic: str, tasks: int) -> None:
    frame = (
        spark.read.format("shoal")
        .option("bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("minPartitions", str(tasks))
        .load()
    )
    frame.write.format("noop").mode("overwrite").save()


def share_read(
    spark: Any,
    bootstrap: str,
    topic: str,
    *,
    group: str,
    tasks: int,
    batch: int,
    locks: int,
    tmp: Path,
) -> StreamRun:
    """Stream the topic through a new share group."""
    stream = (
        spark.readStream.format("shoal-share")
        .option("bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("group.id", group)
        .option("numPartitions", str(tasks))
        .option("maxRecordsPerBatch", str(batch))
        .option("share.auto.offset.reset", "earliest")
        .option("share.partition.max.record.locks", str(locks))
        .load()
    )
    query = (
        stream.writeStream.format("noop")
        .option("checkpointLocation", str(tmp / group))
        .trigger(availableNow=True)
        .start()
    )
    if not query.awaitTermination(QUERY_TIMEOUT_S):
        query.stop()
        raise RuntimeError(f"share stream {group} did not finish in {QUERY_TIMEOUT_S} s")
    if query.exception() is not None:
        raise RuntimeError(f"share stream {group} failed: {query.exception()}")
    progress = [p for p in query.recentProgress if p["numInputRows"]]
    read = sum(p["numInputRows"] for p in progress)
    largest = max((p["numInputRows"] for p in progress), default=0)
    full = [p for p in progress if p["numInputRows"] == largest] or progress
    mean_ms = {
        part: sum(p["durationMs"].get(part, 0) for p in full) / len(full) for part in PROGRESS_PARTS
    }
    print(
        f"  ({group}: {read:,} records in {len(progress)} micro-batches, {len(full)} of "
        f"{largest:,}; per full batch, ms: "
        + ", ".join(f"{part} {ms:,.0f}" for part, ms in mean_ms.items())
        + ")",
        flush=True,
    )
    return StreamRun(len(progress), len(full), largest, mean_ms)


def run(args: argparse.Namespace) -> dict[str, Any]:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    load_before = os.getloadavg()[0]
    phases: list[Phase] = []
    streams: dict[str, StreamRun] = {}
    window = args.partitions * args.locks
    with tempfile.TemporaryDirectory(prefix="shoal-bench-share-") as tmp_name:
        tmp = Path(tmp_name)
        broker = BrokerProcess(tmp / "data", overrides=broker_overrides(args.locks)).start()
        spark = spark_session()
        try:
            bootstrap, topic, parts = broker.bootstrap, "bench-spark-share", args.partitions
            create_topic(bootstrap, topic, partitions=parts)
            produce(
                bootstrap,
                topic,
                records=args.records,
                value_bytes=VALUE_BYTES,
                acks="1",
                partitions=parts,  # even, so that full batches hold partitions x locks
            )
            batch_read(spark, bootstrap, topic, parts)  # warm-up, untimed
            share_read(
                spark,
                bootstrap,
                topic,
                group="warm-up",
                tasks=parts,
                batch=args.batch_records,
                locks=args.locks,
                tmp=tmp,
            )
            print(HEADER, flush=True)
            cores = int(spark.sparkContext.defaultParallelism)
            for label, tasks in (("1x", parts), ("4x", 4 * parts), ("cores", cores)):
                phases.append(
                    measure(
                        f"batch {label}",
                        args.records,
                        tasks,
                        broker.pid,
                        lambda t=tasks: batch_read(spark, bootstrap, topic, t),
                    )
                )
                group = f"share-{label}"

                def stream(t: int = tasks, g: str = group) -> None:
                    streams[g] = share_read(
                        spark,
                        bootstrap,
                        topic,
                        group=g,
                        tasks=t,
                        batch=args.batch_records,
                        locks=args.locks,
                        tmp=tmp,
                    )

                phases.append(measure(f"share {label}", args.records, tasks, broker.pid, stream))
        finally:
            spark.stop()
            broker.kill()
    summary = compare(phases, streams, window)
    return {
        "timestamp": stamp,
        "machine": {**machine(), "load_average_1m_before": load_before},
        "settings": {
            "value_bytes": VALUE_BYTES,
            "partitions": args.partitions,
            "max_records_per_batch": args.batch_records,
            "locks_per_partition": args.locks,
            "share_window_records": window,
            "spark": "local[2], noop sink; share streams with trigger(availableNow=True)",
        },
        "phases": [{**asdict(p), "records_per_s": p.records_per_s} for p in phases],
        "share_streams": {
            g: {**asdict(r), "bound_records_per_s": r.bound_records_per_s(window)}
            for g, r in streams.items()
        },
        "comparison": summary,
    }


def compare(
    phases: list[Phase], streams: dict[str, StreamRun], window: int
) -> list[dict[str, Any]]:
    """Each share phase next to the batch phase with as many tasks, and its bound."""
    by_name = {p.name: p for p in phases}
    lines = []
    print(
        f"\n{'stream':<10} {'records/s':>11} {'batch src':>11} {'share/batch':>11} "
        f"{'bound/s':>11} {'of bound':>9}   (window {window:,} records per micro-batch)"
    )
    for name, phase in by_name.items():
        if not name.startswith("share "):
            continue
        batch = by_name.get(name.replace("share", "batch", 1))
        run = streams.get(name.replace("share ", "share-", 1))
        if batch is None or run is None:
            continue
        bound = run.bound_records_per_s(window)
        line = {
            "share": name,
            "records_per_s": phase.records_per_s,
            "batch_records_per_s": batch.records_per_s,
            "share_of_batch": phase.records_per_s / batch.records_per_s,
            "bound_records_per_s": bound,
            "share_of_bound": phase.records_per_s / bound if bound else 0.0,
        }
        lines.append(line)
        print(
            f"{name:<10} {phase.records_per_s:>11,.0f} {batch.records_per_s:>11,.0f} "
            f"{line['share_of_batch']:>10.0%} {bound:>11,.0f} {line['share_of_bound']:>8.0%}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.spark_share",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--records", type=int, default=2_000_000, help="default 2,000,000 (start-up amortised)"
    )
    parser.add_argument(
        "--partitions",
        type=int,
        default=32,
        help="topic partitions (default 32: the README's sizing)",
    )
    parser.add_argument(
        "--locks",
        type=int,
        default=10_000,
        help="group.share.partition.max.record.locks (default 10,000, Kafka's maximum)",
    )
    parser.add_argument(
        "--batch-records",
        type=int,
        default=320_000,
        help="maxRecordsPerBatch (default 320,000 = 32 partitions x 10,000 locks)",
    )
    parser.add_argument("--quick", action="store_true", help="100,000 records")
    args = parser.parse_args(argv)
    if args.quick:
        args.records = 100_000
    result = run(args)
    print(f"\nresults: {save_result('spark_share', result)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
