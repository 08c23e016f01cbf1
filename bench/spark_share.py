"""Throughput of the `shoal-share` streaming source against the batch source, on the
same data (not a timed test: a measurement to read).

Run from the repository root (needs the spark extra and Java):

    .venv/bin/python -m bench.spark_share            # 400k x 100 B records
    .venv/bin/python -m bench.spark_share --quick    # 100k records, to try it

The script starts its own broker (in-flight window raised to 10k records per
partition with `group.share.partition.max.record.locks` and its maximum, so a
micro-batch may hold that many), produces the records with confluent-kafka to a topic
of `--partitions` partitions, then reads all of them four ways on one `local[2]`
session, each into the `noop` sink:

- `batch Nx`: `spark.read.format("shoal")` with N tasks per partition (`minPartitions`);
- `share Nx`: `readStream.format("shoal-share")` of a new share group with
  `trigger(availableNow=True)`, `maxRecordsPerBatch` = `--batch-records` and N tasks
  per partition (`numPartitions`). Its time includes acquiring on the driver (the
  records also travel to the driver in ShareFetch), planning each micro-batch and
  acknowledging.

A first untimed batch read warms the session (Python workers, JIT). The broker's CPU
and the whole machine's show what bound each phase. Results: a table on stdout and JSON
in bench/results/spark_share-<timestamp>.json.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic

from bench.produce_fetch import machine, produce, save_result
from bench.spark_read import HEADER, VALUE_BYTES, Phase, measure, spark_session

WINDOW_RECORDS = 10_000
BROKER_OVERRIDES = (
    f"group.share.max.partition.max.record.locks={WINDOW_RECORDS}",
    f"group.share.partition.max.record.locks={WINDOW_RECORDS}",
)
QUERY_TIMEOUT_S = 1800


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
    spark: Any, bootstrap: str, topic: str, *, group: str, tasks: int, batch: int, tmp: Path
) -> int:
    """Stream the topic through a new share group; returns the micro-batches run."""
    stream = (
        spark.readStream.format("shoal-share")
        .option("bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("group.id", group)
        .option("numPartitions", str(tasks))
        .option("maxRecordsPerBatch", str(batch))
        .option("share.auto.offset.reset", "earliest")
        .option("share.partition.max.record.locks", str(WINDOW_RECORDS))
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
    read = sum(p["numInputRows"] for p in query.recentProgress)
    batches = sum(1 for p in query.recentProgress if p["numInputRows"])
    print(f"  ({group}: {read:,} records in {batches} micro-batches)", flush=True)
    return batches


def run(args: argparse.Namespace) -> dict[str, Any]:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    load_before = os.getloadavg()[0]
    phases: list[Phase] = []
    batches: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="shoal-bench-share-") as tmp_name:
        tmp = Path(tmp_name)
        broker = BrokerProcess(tmp / "data", overrides=BROKER_OVERRIDES).start()
        spark = spark_session()
        try:
            bootstrap, topic, parts = broker.bootstrap, "bench-spark-share", args.partitions
            create_topic(bootstrap, topic, partitions=parts)
            produce(bootstrap, topic, records=args.records, value_bytes=VALUE_BYTES, acks="1")
            batch_read(spark, bootstrap, topic, parts)  # warm-up, untimed
            share_read(
                spark,
                bootstrap,
                topic,
                group="warm-up",
                tasks=parts,
                batch=args.batch_records,
                tmp=tmp,
            )
            print(HEADER, flush=True)
            for per_partition in (1, 4):
                tasks = per_partition * parts
                phases.append(
                    measure(
                        f"batch {per_partition}x",
                        args.records,
                        tasks,
                        broker.pid,
                        lambda t=tasks: batch_read(spark, bootstrap, topic, t),
                    )
                )
                group = f"share-{per_partition}x"

                def stream(t: int = tasks, g: str = group) -> None:
                    batches[g] = share_read(
                        spark,
                        bootstrap,
                        topic,
                        group=g,
                        tasks=t,
                        batch=args.batch_records,
                        tmp=tmp,
                    )

                phases.append(
                    measure(f"share {per_partition}x", args.records, tasks, broker.pid, stream)
                )
        finally:
            spark.stop()
            broker.kill()
    return {
        "timestamp": stamp,
        "machine": {**machine(), "load_average_1m_before": load_before},
        "settings": {
            "value_bytes": VALUE_BYTES,
            "partitions": args.partitions,
            "max_records_per_batch": args.batch_records,
            "share_window_records": WINDOW_RECORDS,
            "spark": "local[2], noop sink; share streams with trigger(availableNow=True)",
        },
        "phases": [{**asdict(p), "records_per_s": p.records_per_s} for p in phases],
        "share_micro_batches": batches,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.spark_share",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--records", type=int, default=400_000, help="default 400,000")
    parser.add_argument("--partitions", type=int, default=2, help="topic partitions (default 2)")
    parser.add_argument(
        "--batch-records", type=int, default=20_000, help="maxRecordsPerBatch (default 20,000)"
    )
    parser.add_argument("--quick", action="store_true", help="100,000 records")
    args = parser.parse_args(argv)
    if args.quick:
        args.records = 100_000
    result = run(args)
    print(f"\nresults: {save_result('spark_share', result['timestamp'], result)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
