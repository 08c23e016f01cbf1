"""A shoal-share stream into Parquet whose tasks are slowed down, run in its own process
(its own Spark session) so that test_share_stream.py can kill it in the middle of a
batch. Usage: python -m tests.spark.share_stream_child OPTIONS_JSON OUT CHECKPOINT SLEEP_S
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any


def main(options_json: str, out: str, checkpoint: str, sleep_s: str) -> None:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    from shoal.spark import register

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("shoal-share-child")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    pause_s = float(sleep_s)

    def slow(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            time.sleep(pause_s)
            yield batch

    stream = spark.readStream.format("shoal-share").options(**json.loads(options_json)).load()
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
