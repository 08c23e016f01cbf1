"""Spark and transactions, against a real broker with confluent-kafka transactional
producers and read_committed readers.

Sources: `kafka.isolation.level` on the batch source (read_uncommitted by default) and
the topic stream (read_committed by default): read_committed stops at the last stable
offset and drops aborted transactions; markers are never rows.

Sink `exactlyOnce=true`: a task's rows are committed in one transaction (a
read_committed reader sees them all, and the log holds a marker per task); a task that
fails leaves nothing visible; an earlier attempt of the same task (a zombie) is fenced
and its open transaction aborted; a micro-batch Spark replays after its tasks
committed (commits/N deleted, as a driver crash leaves it) writes nothing again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

from confluent_kafka import KafkaException, Producer  # noqa: E402

from shoal.protocol.schema import request_schema  # noqa: E402
from shoal.spark.options import OptionError  # noqa: E402
from shoal.spark.reading import read_range  # noqa: E402
from shoal.spark.sink import (  # noqa: E402
    SinkError,
    SinkPlan,
    plan_write,
    produce_batches,
)
from shoal.spark.topic_stream_options import parse_stream_options  # noqa: E402
from tests.support.broker import BrokerProcess  # noqa: E402
from tests.support.clients import (  # noqa: E402
    create_topic,
    flush_all,
    producer,
    read_partitions,
    watermarks,
)
from tests.support.topics import topic_name  # noqa: E402
from tests.support.wire import call1  # noqa: E402

TXN_TIMEOUT_S = 30
QUERY_TIMEOUT_S = 240
PLAIN_BEFORE = [b"plain-0", b"plain-1"]
COMMITTED = [b"committed-0", b"committed-1", b"committed-2"]
ABORTED = [b"aborted-0", b"aborted-1", b"aborted-2"]
PLAIN_AFTER = [b"plain-2", b"plain-3"]
OPEN = [b"open-0", b"open-1", b"open-2"]


def _transactional(bootstrap: str, transactional_id: str) -> Producer:
    p = producer(bootstrap, transactional_id=transactional_id)
    p.init_transactions(TXN_TIMEOUT_S)
    return p


def _write_mixed(bootstrap: str, topic: str) -> Producer:
    """Partition 0: 2 plain, 3 committed, 3 aborted, 2 plain, then 3 in a transaction
    left open (its producer is returned, to abort at the end)."""
    plain = producer(bootstrap)
    txn = _transactional(bootstrap, f"{topic}-txn")
    for value in PLAIN_BEFORE:
        plain.produce(topic, value, partition=0)
    flush_all(plain)
    for values, commit in ((COMMITTED, True), (ABORTED, False)):
        txn.begin_transaction()
        for value in values:
            txn.produce(topic, value, partition=0)
        flush_all(txn)
        if commit:
            txn.commit_transaction(TXN_TIMEOUT_S)
        else:
            txn.abort_transaction(TXN_TIMEOUT_S)
    for value in PLAIN_AFTER:
        plain.produce(topic, value, partition=0)
    flush_all(plain)
    txn.begin_transaction()
    for value in OPEN:
        txn.produce(topic, value, partition=0)
    flush_all(txn)
    return txn


def _read(spark: Any, bootstrap: str, topic: str, **options: str) -> list[bytes]:
    frame = (
        spark.read.format("shoal")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .options(**options)
        .load()
    )
    return [r.value for r in frame.orderBy("offset").select("value").collect()]


def _stream(spark: Any, bootstrap: str, topic: str, tmp: Path, **options: str) -> list[bytes]:
    query = (
        spark.readStream.format("shoal")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .options(**options)
        .load()
        .writeStream.format("parquet")
        .option("path", str(tmp / "out"))
        .option("checkpointLocation", str(tmp / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(QUERY_TIMEOUT_S), "the AvailableNow query did not finish"
    assert query.exception() is None, query.exception()
    rows = spark.read.parquet(str(tmp / "out")).orderBy("offset").select("value").collect()
    return [r.value for r in rows]


# ---- options (no broker)


def test_isolation_level_option_defaults_aliases_and_mistakes() -> None:
    base = {"bootstrap.servers": "127.0.0.1:9092", "subscribe": "t"}
    assert parse_stream_options(base).isolation_level == 1  # read_committed by default
    assert parse_stream_options({**base, "kafka.isolation.level": "read_uncommitted"}) == (
        parse_stream_options({**base, "isolation.level": "READ_UNCOMMITTED"})
    )
    assert (
        parse_stream_options({**base, "kafka.isolation.level": "read_uncommitted"}).isolation_level
        == 0
    )
    with pytest.raises(OptionError, match=r"'isolation\.level' = 'serializable'"):
        parse_stream_options({**base, "kafka.isolation.level": "serializable"})


# ---- sources


def test_batch_and_stream_read_committed_and_uncommitted(
    spark: Any, spark_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = spark_broker.bootstrap
    topic = topic_name("spark-txn-read")
    create_topic(bootstrap, topic)
    open_txn = _write_mixed(bootstrap, topic)
    try:
        committed = PLAIN_BEFORE + COMMITTED + PLAIN_AFTER
        everything = PLAIN_BEFORE + COMMITTED + ABORTED + PLAIN_AFTER + OPEN
        # Batch: read_uncommitted by default (up to the high watermark, aborted kept).
        assert _read(spark, bootstrap, topic) == everything
        assert _read(spark, bootstrap, topic, **{"kafka.isolation.level": "read_committed"}) == (
            committed
        )
        # Stream: read_committed by default, so it stops at the open transaction.
        assert _stream(spark, bootstrap, topic, tmp_path / "committed") == committed
        assert (
            _stream(
                spark,
                bootstrap,
                topic,
                tmp_path / "uncommitted",
                **{"kafka.isolation.level": "read_uncommitted"},
            )
            == everything
        )
    finally:
        open_txn.abort_transaction(TXN_TIMEOUT_S)


# ---- sink


def test_exactly_once_batch_write_commits_one_transaction_per_task(
    spark: Any, spark_broker: BrokerProcess
) -> None:
    bootstrap = spark_broker.bootstrap
    topic = topic_name("spark-txn-sink")
    create_topic(bootstrap, topic)
    rows = [(b"v%d" % i,) for i in range(200)]
    frame = spark.createDataFrame(rows, "value binary").repartition(2)
    (
        frame.write.format("shoal")
        .option("bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("exactlyOnce", "true")
        .mode("append")
        .save()
    )
    _low, high = watermarks(bootstrap, topic, 1)[0]
    assert high == 200 + 2, "one COMMIT marker per task"
    # the two tasks' records may interleave, and both markers may follow them all:
    # read to the high watermark, not to an assumed last record offset
    got = read_partitions(bootstrap, topic, {0: high}, isolation_level="read_committed")[0]
    assert sorted(r.value for r in got) == sorted(v for (v,) in rows)


def _exactly_once_stream(spark: Any, bootstrap: str, topic: str, tmp_path: Path) -> Any:
    query = (
        spark.readStream.schema("value string")
        .option("maxFilesPerTrigger", 1)
        .json(str(tmp_path / "in"))
        .coalesce(1)
        .writeStream.format("shoal")
        .option("bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("exactlyOnce", "true")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(QUERY_TIMEOUT_S)
    assert query.exception() is None, query.exception()
    return query


def test_exactly_once_stream_uses_one_transactional_id_per_query_and_partition(
    spark: Any, spark_broker: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = spark_broker.bootstrap
    topic = topic_name("spark-txn-stream-sink")
    create_topic(bootstrap, topic)
    source = tmp_path / "in"
    source.mkdir()
    for part in range(2):  # two files, one per micro-batch
        lines = [json.dumps({"value": f"v{part}-{i}"}) for i in range(50)]
        (source / f"part-{part}.json").write_text("\n".join(lines))
    query = _exactly_once_stream(spark, bootstrap, topic, tmp_path)
    assert watermarks(bootstrap, topic, 1)[0][1] == 100 + 2, "a COMMIT marker per batch"
    got = read_partitions(bootstrap, topic, {0: 101}, isolation_level="read_committed")[0]
    assert sorted(r.value for r in got) == sorted(
        f"v{part}-{i}".encode() for part in range(2) for i in range(50)
    )
    assert {dict(r.headers or ())["spark.batchId"] for r in got} == {b"0", b"1"}
    request = request_schema(65, 0).make(
        "DescribeTransactionsRequest", transactional_ids=(f"shoal-spark-{query.id}-0",)
    )
    (state,) = call1(bootstrap, request).transaction_states
    # Each batch's task called init_transactions once: epochs 0 then 1, both committed.
    assert (state.producer_epoch, state.transaction_state) == (1, "CompleteCommit")

    # A crash after the tasks committed but before Spark recorded batch 1 done: Spark
    # replays batch 1 on restart; its task finds the batch's marker and writes nothing.
    for name in ("1", ".1.crc"):
        (tmp_path / "checkpoint" / "commits" / name).unlink()
    _exactly_once_stream(spark, bootstrap, topic, tmp_path)
    assert (tmp_path / "checkpoint" / "commits" / "1").exists(), "batch 1 was replayed"
    assert watermarks(bootstrap, topic, 1)[0][1] == 100 + 2, "the replay wrote nothing"
    again = read_partitions(bootstrap, topic, {0: 101}, isolation_level="read_committed")[0]
    assert [r.value for r in again] == [r.value for r in got]


def test_transaction_timeout_option_bounds(spark_broker: BrokerProcess) -> None:
    from pyspark.sql.types import BinaryType, StructField, StructType

    schema = StructType([StructField("value", BinaryType())])
    raw = {"bootstrap.servers": spark_broker.bootstrap, "topic": "t", "exactlyOnce": "true"}
    plan = plan_write(raw, schema)
    assert (plan.exactly_once, plan.transaction_timeout_ms) == (True, 60_000)
    assert plan_write({**raw, "transactionTimeoutMs": "900000"}, schema).transaction_timeout_ms == (
        900_000
    )
    with pytest.raises(OptionError, match="transactionTimeoutMs"):
        plan_write({**raw, "transactionTimeoutMs": "900001"}, schema)


def _plan(bootstrap: str, topic: str) -> SinkPlan:
    return SinkPlan(
        bootstrap=bootstrap,
        topic=topic,
        delivery_timeout_ms=30_000,
        columns=frozenset({"value", "partition"}),
        exactly_once=True,
    )


def _batch(values: list[bytes], partitions: list[int | None]) -> Any:
    return pa.record_batch(
        [pa.array(values, pa.binary()), pa.array(partitions, pa.int32())],
        names=["value", "partition"],
    )


def test_a_retried_task_fences_its_zombie_attempt(spark_broker: BrokerProcess) -> None:
    bootstrap = spark_broker.bootstrap
    topic = topic_name("spark-txn-zombie")
    create_topic(bootstrap, topic)
    tid = f"shoal-spark-{topic}-0"
    zombie = _transactional(bootstrap, tid)
    zombie.begin_transaction()
    for i in range(3):
        zombie.produce(topic, b"zombie-%d" % i, partition=0)
    flush_all(zombie)  # offsets 0..2, in an open transaction

    retry = [b"retry-0", b"retry-1"]
    written = produce_batches(
        _plan(bootstrap, topic), iter([_batch(retry, [0, 0])]), (), transactional_id=tid
    )
    assert written == 2
    with pytest.raises(KafkaException):  # fenced: the zombie can no longer commit
        zombie.commit_transaction(TXN_TIMEOUT_S)
    # 0..2 zombie (aborted), 3 ABORT marker, 4..5 retry, 6 COMMIT marker.
    assert watermarks(bootstrap, topic, 1)[0][1] == 7
    got = read_partitions(bootstrap, topic, {0: 6}, isolation_level="read_committed")[0]
    assert [r.value for r in got] == retry


def test_a_batch_already_written_by_its_task_is_not_written_again(
    spark_broker: BrokerProcess,
) -> None:
    bootstrap = spark_broker.bootstrap
    topic = topic_name("spark-txn-replay")
    create_topic(bootstrap, topic)
    tid = f"shoal-spark-{topic}-0"
    plan = _plan(bootstrap, topic)

    def write(values: list[bytes], batch_id: int) -> int:
        batch = _batch(values, [0] * len(values))
        return produce_batches(plan, iter([batch]), (), transactional_id=tid, batch_id=batch_id)

    assert write([b"b0-0", b"b0-1"], 0) == 2
    assert write([b"b0-0", b"b0-1"], 0) == 0  # batch 0 replayed
    assert write([b"b1-0"], 1) == 1
    assert write([b"b0-0", b"b0-1"], 0) == 0  # an older batch is never rewritten
    # 0..1 batch 0, 2 COMMIT, 3 batch 1, 4 COMMIT.
    assert watermarks(bootstrap, topic, 1)[0][1] == 5
    got = read_partitions(bootstrap, topic, {0: 4}, isolation_level="read_committed")[0]
    assert [r.value for r in got] == [b"b0-0", b"b0-1", b"b1-0"]


def test_a_failed_task_leaves_nothing_visible(spark_broker: BrokerProcess) -> None:
    bootstrap = spark_broker.bootstrap
    topic = topic_name("spark-txn-fail")
    create_topic(bootstrap, topic)
    batch = _batch([b"ok-0", b"ok-1", b"to-a-missing-partition"], [0, 0, 7])
    with pytest.raises(SinkError, match="transaction shoal-spark-"):
        produce_batches(
            _plan(bootstrap, topic),
            iter([batch]),
            (),
            transactional_id=f"shoal-spark-{topic}-0",
        )
    _low, high = watermarks(bootstrap, topic, 1)[0]
    assert high == 3, "two records and the ABORT marker"
    assert list(read_range(bootstrap, topic, 0, 0, high, isolation_level=1)) == []
    uncommitted = pa.Table.from_batches(list(read_range(bootstrap, topic, 0, 0, high)))
    assert uncommitted.column("value").to_pylist() == [b"ok-0", b"ok-1"]
