"""The Spark connector, unchanged, against a 3-broker cluster: librdkafka's mock cluster.

The mock (an independent Kafka implementation inside confluent-kafka) puts a topic's
four partition leaders on different brokers and a group's coordinator on one of them,
so every leg of the connector must route: the batch source's planner and executors
(Metadata, ListOffsets, Fetch to each leader), the sink (confluent-kafka's producer),
the topic stream (its `commitToGroup` OffsetCommit to the group coordinator) and the
`shoal-share` stream (heartbeats to the group coordinator, ShareFetch and
ShareAcknowledge to each partition's leader, one share session per broker).

The mock cannot set group configs (no IncrementalAlterConfigs) and starts a new share
group at the latest offset, so the stream test starts its query first and produces
while it runs. The mock also drops a broker's share sessions whenever any connection
to that broker closes, so that test produces through one producer kept open.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

from tests.support.mock_cluster import MOCK_PARTITIONS, MockCluster

QUERY_TIMEOUT_S = 240


@pytest.fixture(scope="module")
def cluster() -> Iterator[MockCluster]:
    with MockCluster(brokers=3) as mock:
        yield mock


def test_batch_source_reads_every_partition_from_its_leader(
    spark: Any, cluster: MockCluster
) -> None:
    topic = cluster.spread_topic("cluster-read")
    values = [b"read-%d" % i for i in range(1000)]
    _produce_to_every_partition(cluster, topic, values)
    frame = (
        spark.read.format("shoal")
        .option("bootstrap.servers", cluster.bootstrap)
        .option("topic", topic)
        .load()
    )
    rows = frame.select("partition", "offset", "value").collect()
    assert sorted(bytes(r.value) for r in rows) == sorted(values)
    assert {r.partition for r in rows} == set(range(MOCK_PARTITIONS))
    per_partition: dict[int, list[int]] = {}
    for r in rows:
        per_partition.setdefault(r.partition, []).append(r.offset)
    for offsets in per_partition.values():
        assert sorted(offsets) == list(range(len(offsets)))


def test_sink_writes_rows_that_the_source_reads_back(spark: Any, cluster: MockCluster) -> None:
    topic = cluster.spread_topic("cluster-sink")
    rows = [(b"k%d" % i, b"sink-%d" % i, i % MOCK_PARTITIONS) for i in range(400)]
    spark.createDataFrame(rows, "key binary, value binary, partition int").write.format(
        "shoal"
    ).option("bootstrap.servers", cluster.bootstrap).option("topic", topic).mode("append").save()
    read = (
        spark.read.format("shoal")
        .option("bootstrap.servers", cluster.bootstrap)
        .option("topic", topic)
        .load()
        .select("partition", "key", "value")
        .collect()
    )
    assert sorted((bytes(r.key), bytes(r.value), r.partition) for r in read) == sorted(rows)


def test_topic_stream_reads_every_leader_and_commits_to_the_coordinator(
    spark: Any, cluster: MockCluster, tmp_path: Path
) -> None:
    topic = cluster.spread_topic("cluster-stream")
    values = [b"stream-%d" % i for i in range(600)]
    _produce_to_every_partition(cluster, topic, values)
    out = tmp_path / "out"
    query = (
        spark.readStream.format("shoal")
        .option("kafka.bootstrap.servers", cluster.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "250")
        .option("commitToGroup", "cluster-stream-group")
        .load()
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(QUERY_TIMEOUT_S)
    assert query.exception() is None, query.exception()
    rows = spark.read.parquet(str(out)).select("partition", "offset", "value").collect()
    assert sorted(bytes(r.value) for r in rows) == sorted(values)  # each once
    ends = {p: 1 + max(r.offset for r in rows if r.partition == p) for p in range(MOCK_PARTITIONS)}
    reader = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "cluster-stream-group"})
    try:
        committed = reader.committed(
            [TopicPartition(topic, p) for p in range(MOCK_PARTITIONS)], timeout=30
        )
    finally:
        reader.close()
    assert {tp.partition: tp.offset for tp in committed} == ends


def test_share_stream_acquires_from_every_leader(
    spark: Any, cluster: MockCluster, tmp_path: Path
) -> None:
    topic = cluster.spread_topic("cluster-share")
    out = tmp_path / "out"
    query = (
        spark.readStream.format("shoal-share")
        .option("bootstrap.servers", cluster.bootstrap)
        .option("topic", topic)
        .option("group.id", "cluster-share-group")
        .load()
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(processingTime="1 second")
        .start()
    )
    # The mock drops every share session on a broker when any connection to it closes
    # (the records held there go back to the group): produce through one producer kept
    # open for the whole query, so each final record is delivered once.
    producer = _Spreader(cluster)
    try:
        # Until every partition has delivered a record, a partition may not have been
        # fetched yet and would start after records produced now: produce warm-up
        # rounds. Then every record of the final round must arrive.
        deadline = time.monotonic() + QUERY_TIMEOUT_S
        round_ = 0
        while _partitions_seen(spark, out) != set(range(MOCK_PARTITIONS)):
            assert query.exception() is None, query.exception()
            assert time.monotonic() < deadline, "no records from some partitions"
            producer.produce(topic, [b"warm-%d-%d" % (round_, i) for i in range(40)])
            round_ += 1
            time.sleep(1)
        values = {b"final-%d" % i for i in range(400)}
        producer.produce(topic, sorted(values))
        seen: set[bytes] = set()
        while not values <= seen:
            assert query.exception() is None, query.exception()
            assert time.monotonic() < deadline, f"{len(values & seen)} of 400 records read"
            time.sleep(1)
            seen = {bytes(r.value) for r in spark.read.parquet(str(out)).collect()}
        final = [r for r in spark.read.parquet(str(out)).collect() if bytes(r.value) in values]
        assert len(final) == len(values)  # each exactly once
        assert {r.partition for r in final} == set(range(MOCK_PARTITIONS))
    finally:
        query.stop()
        producer.close()


def _partitions_seen(spark: Any, out: Path) -> set[int]:
    from pyspark.errors import AnalysisException

    if not any(out.glob("*.parquet")):
        return set()
    try:
        return {r.partition for r in spark.read.parquet(str(out)).select("partition").collect()}
    except AnalysisException:  # files written, the first batch not yet in _spark_metadata
        return set()


class _Spreader:
    """A producer that writes round-robin over the partitions (one left to choose may
    put a whole small batch on one partition)."""

    def __init__(self, cluster: MockCluster) -> None:
        self._producer = Producer(
            {"bootstrap.servers": cluster.bootstrap, "acks": "all", "log_level": 3}
        )

    def produce(self, topic: str, values: list[bytes]) -> None:
        failures: list[object] = []
        for i, value in enumerate(values):
            self._producer.produce(
                topic,
                value=value,
                partition=i % MOCK_PARTITIONS,
                on_delivery=lambda error, _message: error is None or failures.append(error),
            )
        assert self._producer.flush(30) == 0 and not failures, failures

    def close(self) -> None:
        self._producer.flush(1)


def _produce_to_every_partition(cluster: MockCluster, topic: str, values: list[bytes]) -> None:
    spreader = _Spreader(cluster)
    spreader.produce(topic, values)
    spreader.close()
