"""The orders pipeline: JSON order events from a share group, through Spark, to Parquet.

    python examples/orders_pipeline.py --bootstrap 127.0.0.1:9092 --topic orders \
        --group orders-pipeline --out /tmp/orders-out --tasks 8

It reads the topic as the share group `--group` with `readStream.format("shoal-share")`,
running `--tasks` Spark tasks per micro-batch whatever the topic's partition count, and
for every micro-batch:

- parses the events (`from_json`) and rejects the malformed ones (not JSON, a missing
  field, a quantity that is not a positive number): they go to `OUT/rejected/`, with the
  reason, the raw text and where they came from (topic, partition, offset);
- aggregates the valid ones per item (orders, quantity, revenue) into `OUT/totals/`.

Each micro-batch writes its own `batch_id=N` directory with overwrite, so a batch that
Spark replays after a crash replaces its first attempt instead of adding to it. The
share group acknowledges a batch's events only after Spark has committed it (at least
once). By default the job processes what is in the topic and stops
(`trigger(availableNow=True)`), then prints the totals; `--continuous` keeps it running
(a micro-batch every `--interval-s`) until interrupted. Run it again with the same
`--checkpoint` and it continues where it stopped: the group only hands out events
nobody has acknowledged yet.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

ORDER_SCHEMA = (
    "order_id long, customer string, item string, quantity int, unit_price double, ts timestamp"
)


def spark_session(app_name: str = "orders-pipeline") -> Any:
    """A local Spark session with the Shoal data sources registered."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need pyarrow
    from pyspark.sql import SparkSession

    import shoal.spark

    spark = (
        SparkSession.builder.master(os.environ.get("SPARK_MASTER", "local[2]"))
        .appName(app_name)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    shoal.spark.register(spark)
    return spark


def order_events(
    spark: Any,
    *,
    bootstrap: str,
    topic: str,
    group: str,
    tasks: int,
    batch_records: int,
    checkpoint: str,
) -> Any:
    """The share group's events as a streaming DataFrame (`shoal-share` columns)."""
    return (
        spark.readStream.format("shoal-share")
        .option("bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("group.id", group)
        .option("numPartitions", str(tasks))
        .option("maxRecordsPerBatch", str(batch_records))
        .option("share.auto.offset.reset", "earliest")  # a new group starts at the beginning
        # the query's own checkpoint: a stop right after a batch still acknowledges it
        .option("checkpointLocation", checkpoint)
        .load()
    )


def parse_orders(events: Any) -> tuple[Any, Any]:
    """(valid orders, rejected events with a `reason`) of a DataFrame of events."""
    from pyspark.sql import functions as F

    text = F.col("value").cast("string")
    parsed = events.select(
        "topic",
        "partition",
        "offset",
        "delivery_count",
        text.alias("raw"),
        F.from_json(text, ORDER_SCHEMA).alias("order"),
    )
    order = F.col("order")
    reason = (
        F.when(order.isNull() | order["order_id"].isNull(), F.lit("not a JSON order"))
        .when(order["item"].isNull(), F.lit("no item"))
        .when(order["quantity"].isNull() | (order["quantity"] <= 0), F.lit("bad quantity"))
        .when(order["unit_price"].isNull(), F.lit("no unit price"))
    )
    checked = parsed.withColumn("reason", reason)
    valid = checked.where(F.col("reason").isNull()).select("order.*")
    rejected = checked.where(F.col("reason").isNotNull()).select(
        "topic", "partition", "offset", "delivery_count", "reason", "raw"
    )
    return valid, rejected


def item_totals(orders: Any) -> Any:
    from pyspark.sql import functions as F

    return orders.groupBy("item").agg(
        F.count("*").alias("orders"),
        F.sum("quantity").alias("quantity"),
        F.round(F.sum(F.col("quantity") * F.col("unit_price")), 2).alias("revenue"),
    )


def batch_writer(out: str) -> Any:
    """The foreachBatch function: totals and rejects of one micro-batch, written with
    overwrite to its own directory so a replayed batch replaces its first attempt."""

    def write_batch(events: Any, batch_id: int) -> None:
        if events.isEmpty():
            return
        events = events.persist()
        try:
            valid, rejected = parse_orders(events)
            item_totals(valid).write.mode("overwrite").parquet(f"{out}/totals/batch_id={batch_id}")
            rejected.write.mode("overwrite").parquet(f"{out}/rejected/batch_id={batch_id}")
        finally:
            events.unpersist()

    return write_batch


def start(
    spark: Any,
    *,
    bootstrap: str,
    topic: str,
    group: str,
    out: str,
    checkpoint: str,
    tasks: int = 8,
    batch_records: int = 2000,
    continuous: bool = False,
    interval_s: float = 2.0,
) -> Any:
    """Start the streaming query; returns it."""
    events = order_events(
        spark,
        bootstrap=bootstrap,
        topic=topic,
        group=group,
        tasks=tasks,
        batch_records=batch_records,
        checkpoint=checkpoint,
    )
    writer = (
        events.writeStream.foreachBatch(batch_writer(out))
        .option("checkpointLocation", checkpoint)
        .queryName(f"orders-{group}")
    )
    if continuous:
        writer = writer.trigger(processingTime=f"{interval_s} seconds")
    else:
        writer = writer.trigger(availableNow=True)
    return writer.start()


def summary(spark: Any, out: str) -> tuple[Any, int]:
    """(totals per item over every batch, number of rejected events); nothing written
    yet reads as no rows."""
    from pyspark.sql import functions as F

    if not os.path.isdir(f"{out}/totals"):
        return spark.createDataFrame([], "item string, orders long"), 0
    totals = (
        spark.read.parquet(f"{out}/totals")
        .groupBy("item")
        .agg(
            F.sum("orders").alias("orders"),
            F.sum("quantity").alias("quantity"),
            F.round(F.sum("revenue"), 2).alias("revenue"),
        )
        .orderBy("item")
    )
    has_rejects = os.path.isdir(f"{out}/rejected")
    rejected = spark.read.parquet(f"{out}/rejected").count() if has_rejects else 0
    return totals, rejected


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--group", default="orders-pipeline")
    parser.add_argument("--out", default="/tmp/orders-out")
    parser.add_argument("--checkpoint", default=None, help="default: OUT/_checkpoint")
    parser.add_argument("--tasks", type=int, default=8, help="Spark tasks per micro-batch")
    parser.add_argument("--batch-records", type=int, default=2000)
    parser.add_argument("--continuous", action="store_true")
    parser.add_argument("--interval-s", type=float, default=2.0)
    args = parser.parse_args(argv)
    spark = spark_session()
    spark.sparkContext.setLogLevel("WARN")
    query = start(
        spark,
        bootstrap=args.bootstrap,
        topic=args.topic,
        group=args.group,
        out=args.out,
        checkpoint=args.checkpoint or f"{args.out}/_checkpoint",
        tasks=args.tasks,
        batch_records=args.batch_records,
        continuous=args.continuous,
        interval_s=args.interval_s,
    )
    try:
        query.awaitTermination()
    except KeyboardInterrupt:
        query.stop()
    totals, rejected = summary(spark, args.out)
    totals.show(truncate=False)
    print(f"rejected events: {rejected}")
    progress = query.lastProgress
    if progress:
        print(f"source status: {progress['sources'][0].get('latestOffset')}")
    spark.stop()


if __name__ == "__main__":
    main()
