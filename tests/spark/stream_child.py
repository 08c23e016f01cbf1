"""A streaming query into Parquet whose tasks are slowed down, run in its own process
(its own Spark session) so that a test can kill it (SIGKILL) in the middle of a batch.

Usage: python -m tests.spark.stream_child FORMAT OPTIONS_JSON OUT CHECKPOINT SLEEP_S
(FORMAT is a source of `shoal.spark.register`: "shoal" or "shoal-share"; each Arrow
batch a task reads is held SLEEP_S seconds before it is written).

`kill_in_a_batch(...)` is the test side: it starts the child, waits until a batch after
the first is planned (`offsets/N`) but not committed (`commits/N`), kills the child's
process group with SIGKILL and returns N.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def last_batch(offsets_dir: Path) -> int:
    """The newest batch id in a checkpoint's `offsets` directory (-1: none)."""
    names = [int(p.name) for p in offsets_dir.glob("[0-9]*")] if offsets_dir.exists() else []
    return max(names, default=-1)


def kill_in_a_batch(
    source: str,
    options: Mapping[str, str],
    *,
    out: Path,
    checkpoint: Path,
    sleep_s: float,
    log_path: Path,
    timeout_s: float,
) -> int:
    """Run the child until a batch >= 1 is in flight, SIGKILL it; that batch's id."""
    from tests.support.broker import wait_until

    inherited = os.environ.get("PYTHONPATH", "")
    path = os.pathsep.join(p for p in (str(ROOT), inherited) if p)
    with log_path.open("wb") as child_log:
        child = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.spark.stream_child",
                source,
                json.dumps(dict(options)),
                str(out),
                str(checkpoint),
                str(sleep_s),
            ],
            cwd=ROOT,
            env={**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": path},
            stdout=subprocess.DEVNULL,
            stderr=child_log,
            start_new_session=True,
        )
        try:

            def in_flight() -> bool:
                batch = last_batch(checkpoint / "offsets")
                return batch >= 1 and not (checkpoint / "commits" / str(batch)).exists()

            found = wait_until(in_flight, timeout_s=timeout_s, interval_s=0.05)
            assert found, (
                f"no batch in flight (child exit code {child.poll()}); its log:\n"
                + log_path.read_text(errors="replace")[-5000:]
            )
            os.killpg(child.pid, signal.SIGKILL)
        finally:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
            child.wait(30)
    interrupted = last_batch(checkpoint / "offsets")
    assert not (checkpoint / "commits" / str(interrupted)).exists()
    return interrupted


def main(source: str, options_json: str, out: str, checkpoint: str, sleep_s: str) -> None:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    from shoal.spark import register
    from tests.spark.jvm import QUICK_JVM_OPTIONS

    spark = (
        SparkSession.builder.master("local[2]")
        .appName(f"{source}-child")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.extraJavaOptions", QUICK_JVM_OPTIONS)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    pause_s = float(sleep_s)

    def slow(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            time.sleep(pause_s)
            yield batch

    stream = spark.readStream.format(source).options(**json.loads(options_json)).load()
    query = (
        stream.mapInArrow(slow, stream.schema)
        .writeStream.format("parquet")
        .option("path", out)
        .option("checkpointLocation", checkpoint)
        .start()
    )
    query.awaitTermination()


if __name__ == "__main__":
    main(*sys.argv[1:])
