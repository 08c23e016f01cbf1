"""Throughput of the PySpark connector's batch source, topic stream and sink against a
Shoal broker.

Run from the repository root (needs the spark extra and Java):

    .venv/bin/python -m bench.spark_read            # 1M x 100 B records
    .venv/bin/python -m bench.spark_read --quick    # 100k records, to try it

The script starts its own broker on a temporary data directory, produces the records
with confluent-kafka (no keys, no compression) to a topic of `--partitions`
partitions, then measures:

- `read_range`: one partition read in this process with `reading.read_range`, no
  Spark: the decoder's rate for one task;
- `spark read`: `spark.read.format("shoal")` of the whole topic on a `local[2]`
  session, materialised with the `noop` sink (no rows collected); run twice, the
  first including the session's warm-up (Python workers, JIT);
- `spark stream`: `spark.readStream.format("shoal")` of the whole topic with
  `trigger(availableNow=True)` into the `noop` sink, in one micro-batch, then in
  `--stream-batches` micro-batches (`maxOffsetsPerTrigger`): the stream's cost over
  the batch source is its per-batch planning and commit;
- `spark write`: `df.write.format("shoal")` of as many rows of the same size.

The broker's CPU and the whole machine's CPU (over all cores, from /proc/stat) show
what bound each phase. Results: a table on stdout and JSON in
bench/results/spark_read.json.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic

from bench.produce_fetch import CpuMeter, machine, produce, save_result

VALUE_BYTES = 100


@dataclass
class Phase:
    name: str
    records: int
    tasks: int
    seconds: float
    broker_cpu_percent: float
    machine_cpu_percent: float

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds


class MachineCpu:
    """Busy share of all cores over a phase, from /proc/stat (100% = every core busy)."""

    @staticmethod
    def _jiffies() -> tuple[int, int]:
        fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        idle = fields[3] + fields[4]  # idle + iowait
        return sum(fields) - idle, sum(fields)

    def __enter__(self) -> MachineCpu:
        self._busy, self._total = self._jiffies()
        return self

    def __exit__(self, *exc: object) -> None:
        busy, total = self._jiffies()
        self.percent = 100 * (busy - self._busy) / max(1, total - self._total)


def measure(name: str, records: int, tasks: int, broker_pid: int, action: Any) -> Phase:
    meter = CpuMeter(broker_pid)
    with meter, MachineCpu() as cpu:
        action()
    phase = Phase(name, records, tasks, meter.seconds, meter.broker_percent, cpu.percent)
    print(row(phase), flush=True)
    return phase


def spark_session() -> Any:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    from shoal.spark import register

    session = (
        SparkSession.builder.master("local[2]")
        .appName("shoal-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    register(session)
    return session


def run(args: argparse.Namespace) -> dict[str, Any]:
    from shoal.spark.cluster import LATEST, client_for, list_offsets
    from shoal.spark.reading import read_range

    stamp = time.strftime("%Y%m%d-%H%M%S")
    load_before = os.getloadavg()[0]
    phases: list[Phase] = []
    with tempfile.TemporaryDirectory(prefix="shoal-bench-spark-") as tmp:
        broker = BrokerProcess(Path(tmp) / "data").start()
        spark = spark_session()
        try:
            bootstrap = broker.bootstrap
            topic, written = "bench-spark-read", "bench-spark-write"
            create_topic(bootstrap, topic, partitions=args.partitions)
            create_topic(bootstrap, written, partitions=args.partitions)
            produce(bootstrap, topic, records=args.records, value_bytes=VALUE_BYTES, acks="1")
            ends = list_offsets(
                client_for(bootstrap), topic, dict.fromkeys(range(args.partitions), LATEST)
            )
            print(HEADER, flush=True)

            def one_partition() -> None:
                for _ in read_range(bootstrap, topic, 0, 0, ends[0]):
                    pass

            phases.append(measure("read_range", ends[0], 1, broker.pid, one_partition))
            frame = (
                spark.read.format("shoal")
                .option("bootstrap.servers", bootstrap)
                .option("topic", topic)
                .option("minPartitions", str(args.min_partitions))
                .load()
            )
            tasks = frame.rdd.getNumPartitions()
            for name in ("spark read cold", "spark read warm"):
                phases.append(
                    measure(
                        name,
                        args.records,
                        tasks,
                        broker.pid,
                        lambda: frame.write.format("noop").mode("overwrite").save(),
                    )
                )
            for batches in (1, args.stream_batches):
                phases.append(
                    measure(
                        f"spark stream x{batches}",
                        args.records,
                        tasks,
                        broker.pid,
                        lambda batches=batches: stream_all(
                            spark, bootstrap, topic, args, batches, Path(tmp) / f"cp{batches}"
                        ),
                    )
                )
            values = spark.range(args.records, numPartitions=2).selectExpr(
                f"cast(repeat('x', {VALUE_BYTES}) as binary) as value"
            )
            writer = (
                values.write.format("shoal")
                .option("bootstrap.servers", bootstrap)
                .option("topic", written)
                .mode("append")
            )
            phases.append(measure("spark write", args.records, 2, broker.pid, writer.save))
        finally:
            spark.stop()
            broker.kill()
    return {
        "timestamp": stamp,
        "machine": {**machine(), "load_average_1m_before": load_before},
        "settings": {
            "value_bytes": VALUE_BYTES,
            "partitions": args.partitions,
            "min_partitions": args.min_partitions,
            "spark": "local[2], Arrow batches, noop sink for reads",
            "stream_batches": args.stream_batches,
        },
        "phases": [{**asdict(p), "records_per_s": p.records_per_s} for p in phases],
    }


def stream_all(
    spark: Any, bootstrap: str, topic: str, args: argparse.Namespace, batches: int, cp: Path
) -> None:
    """The whole topic through an AvailableNow stream in about `batches` micro-batches."""
    stream = (
        spark.readStream.format("shoal")
        .option("bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("minPartitions", str(args.min_partitions))
        .option("maxOffsetsPerTrigger", str(-(-args.records // batches)))
        .load()
    )
    query = (
        stream.writeStream.format("noop")
        .option("checkpointLocation", str(cp))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    assert query.exception() is None, query.exception()
    read = sum(int(p["numInputRows"]) for p in query.recentProgress)
    assert read == args.records, f"the stream read {read} of {args.records} records"


HEADER = (
    f"{'phase':<16} {'records':>10} {'tasks':>5} {'seconds':>8} {'records/s':>11} "
    f"{'broker CPU':>10} {'machine CPU':>11}"
)


def row(p: Phase) -> str:
    return (
        f"{p.name:<16} {p.records:>10,} {p.tasks:>5} {p.seconds:>8.2f} {p.records_per_s:>11,.0f} "
        f"{p.broker_cpu_percent:>9.0f}% {p.machine_cpu_percent:>10.0f}%"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.spark_read",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--records", type=int, default=1_000_000, help="default 1,000,000")
    parser.add_argument("--partitions", type=int, default=2, help="topic partitions (default 2)")
    parser.add_argument(
        "--min-partitions", type=int, default=2, help="the source's minPartitions (default 2)"
    )
    parser.add_argument(
        "--stream-batches", type=int, default=10, help="micro-batches of the limited stream"
    )
    parser.add_argument("--quick", action="store_true", help="100,000 records")
    args = parser.parse_args(argv)
    if args.quick:
        args.records = 100_000
    result = run(args)
    print(f"\nresults: {save_result('spark_read', result)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
