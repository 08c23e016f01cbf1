"""The sink: df.write and writeStream produce rows as records, read back with a real
Kafka consumer (confluent-kafka); a failed delivery fails the task."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

from shoal.spark.sink import SinkError, SinkPlan, produce_batches  # noqa: E402
from tests.support.broker import BrokerProcess  # noqa: E402
from tests.support.clients import create_topic, read_partitions  # noqa: E402
from tests.support.topics import topic_name  # noqa: E402

SINK_SCHEMA = (
    "key binary, value binary, headers array<struct<key:string,value:binary>>, partition int"
)


def test_batch_write_produces_every_column_in_row_order(
    spark: Any, spark_broker: BrokerProcess
) -> None:
    topic = topic_name("spark-sink")
    create_topic(spark_broker.bootstrap, topic, partitions=3)
    rows = [
        (
            None if i % 10 == 0 else b"k%d" % i,
            b"value-%d" % i,
            [("i", b"%d" % i), ("null", None)] if i % 4 == 0 else None,
            i % 3,
        )
        for i in range(600)
    ]
    # One task, so each partition's records keep the rows' order.
    frame = spark.createDataFrame(rows, SINK_SCHEMA).coalesce(1)
    frame.write.format("shoal").option("bootstrap.servers", spark_broker.bootstrap).option(
        "topic", topic
    ).mode("append").save()

    got = read_partitions(spark_broker.bootstrap, topic, dict.fromkeys(range(3), 200))
    for partition in range(3):
        assert [(r.key, r.value, r.headers) for r in got[partition]] == [
            (key, value, headers) for key, value, headers, p in rows if p == partition
        ]


def test_topic_column_routes_rows_and_strings_become_utf8(
    spark: Any, spark_broker: BrokerProcess
) -> None:
    topics = [topic_name("spark-route-a"), topic_name("spark-route-b")]
    for topic in topics:
        create_topic(spark_broker.bootstrap, topic)
    rows = [(topics[i % 2], f"ké{i}", f"välue-{i}") for i in range(40)]
    frame = spark.createDataFrame(rows, "topic string, key string, value string").coalesce(1)
    frame.write.format("shoal").option("bootstrap.servers", spark_broker.bootstrap).mode(
        "append"
    ).save()

    for index, topic in enumerate(topics):
        got = read_partitions(spark_broker.bootstrap, topic, {0: 20})[0]
        assert [(r.key, r.value) for r in got] == [
            (k.encode(), v.encode()) for t, k, v in rows[index::2] if t == topic
        ]


def test_a_failed_record_fails_the_task(spark: Any, spark_broker: BrokerProcess) -> None:
    from pyspark.errors import PythonException

    topic = topic_name("spark-sink-fail")
    create_topic(spark_broker.bootstrap, topic, partitions=2)
    frame = spark.createDataFrame(
        [(b"ok", 0), (b"no such partition", 7), (b"ok", 1)], "value binary, partition int"
    ).coalesce(1)
    writer = (
        frame.write.format("shoal")
        .option("bootstrap.servers", spark_broker.bootstrap)
        .option("topic", topic)
        .mode("append")
    )
    with pytest.raises(PythonException) as info:
        writer.save()
    # librdkafka refuses the record in produce() or in its delivery report, depending on
    # whether it already has the topic's metadata; either way only that record failed.
    assert re.search(r"1 of [23] records failed", str(info.value))
    # produce() words its refusal "Unable to produce message: Local: Unknown partition".
    assert re.search(
        rf"{topic}-7: (Unable to produce message: )?Local: Unknown partition", str(info.value)
    )


def test_stream_write_adds_query_batch_and_partition_headers(
    spark: Any, spark_broker: BrokerProcess, tmp_path: Path
) -> None:
    topic = topic_name("spark-stream-sink")
    create_topic(spark_broker.bootstrap, topic)
    source = tmp_path / "in"
    source.mkdir()
    lines = [json.dumps({"key": f"k{i}", "value": f"v{i}"}) for i in range(50)]
    (source / "part-0.json").write_text("\n".join(lines))
    query = (
        spark.readStream.schema("key string, value string")
        .json(str(source))
        .coalesce(1)
        .writeStream.format("shoal")
        .option("bootstrap.servers", spark_broker.bootstrap)
        .option("topic", topic)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(180)
    assert query.exception() is None
    got = read_partitions(spark_broker.bootstrap, topic, {0: 50})[0]
    assert [r.value for r in got] == [b"v%d" % i for i in range(50)]
    assert {tuple(r.headers or ()) for r in got} == {
        (
            ("spark.queryId", query.id.encode()),
            ("spark.batchId", b"0"),
            ("spark.partition", b"0"),
        )
    }


def test_delivery_timeout_limit_fails_the_write() -> None:
    """deliveryTimeoutMs, hit: records that no broker acknowledges fail the task."""
    with socket.socket() as s:  # a port nothing listens on any more
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    plan = SinkPlan(
        bootstrap=f"127.0.0.1:{port}",
        topic="never",
        delivery_timeout_ms=500,
        columns=frozenset({"value"}),
    )
    batch = pa.record_batch([pa.array([b"a", b"b"], pa.binary())], names=["value"])
    with pytest.raises(SinkError) as info:
        produce_batches(plan, iter([batch]), ())
    assert "2 of 2 records failed" in str(info.value)
    assert "deliveryTimeoutMs 500" in str(info.value)
    assert "timed out" in str(info.value)
