"""Spark's own Kafka connector (`format("kafka")`, spark-sql-kafka-0-10), unchanged, against
a real `shoal serve`: what a PySpark job written for Kafka relies on.

The connector's jars come from tests/spark/kafka-connector/pom.xml through the shared
session's `spark.jars` (tests/spark/conftest.py, tests/spark/kafka_connector.py).
Every check compares exact values: what Spark read with what confluent-kafka produced
(key, value, headers, partition, offset, timestamp), and what Spark wrote with what
confluent-kafka reads back.

- batch reads: subscribe, subscribePattern and assign; startingOffsets/endingOffsets as
  earliest/latest and as JSON per partition; startingTimestamp,
  startingOffsetsByTimestamp and endingOffsetsByTimestamp; includeHeaders;
- a stream with a checkpoint and maxOffsetsPerTrigger, run again from its checkpoint:
  it resumes exactly where it stopped (Parquet sink, exactly once);
- writes: `df.write` and `writeStream` with topic/partition/key/value/headers columns;
- read_committed over aborted transactions (batch and stream) and read_uncommitted;
- a compacted topic, whose offsets may have gaps once the cleaner has run;
- a broker killed (SIGKILL) and restarted in the middle of a stream: the query goes on
  (or is restarted from its checkpoint) and the Parquet sink holds every record once.

Without java/mvn/Maven Central the module skips, except in CI (CI=true); a PySpark other
than the pom's fails it. `SHOAL_SPARK_KAFKA_TARGET=kafka` runs the same module against
Apache Kafka 4.2 (tests/support/kafka_reference.py) instead, whose log cleaner runs: that
is how the expectations here were checked against Kafka's behaviour.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.spark.kafka_connector import (
    ConnectorVersionMismatch,
    check_pyspark_version,
    pom_property,
)
from tests.support import kafka_reference
from tests.support.broker import BrokerProcess, running, wait_until
from tests.support.clients import (
    BASE_TIMESTAMP_MS,
    Sent,
    create_topic,
    flush_all,
    make_records,
    producer,
    read_partitions,
    watermarks,
)
from tests.support.topics import topic_name

QUERY_TIMEOUT_S = 240
Headers = tuple[tuple[str, bytes | None], ...]
Row = tuple[str, int, int, bytes | None, bytes | None, int, int, Headers]
"""topic, partition, offset, key, value, timestamp (ms), timestampType, headers."""


@pytest.fixture(scope="module")
def kspark(spark: Any, kafka_connector_jars: list[Path] | Exception) -> Any:
    """The shared session, if it carries Spark's Kafka connector."""
    if isinstance(kafka_connector_jars, Exception):
        if os.environ.get("CI") or isinstance(kafka_connector_jars, ConnectorVersionMismatch):
            raise kafka_connector_jars
        pytest.skip(f"no Spark Kafka connector: {kafka_connector_jars}")
    return spark


Broker = BrokerProcess | kafka_reference.KafkaBroker


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """This module's own broker (the kill test restarts it); retention off, as the
    records carry 2023 timestamps."""
    data = tmp_path_factory.mktemp("kafka-connector") / "data"
    if os.environ.get("SHOAL_SPARK_KAFKA_TARGET") == "kafka":
        # the cleaner looks for work every half second instead of every 15
        with kafka_reference.running(
            data, "log.retention.ms=-1", "log.cleaner.backoff.ms=500"
        ) as kafka:
            yield kafka
        return
    yield from running(data, "log.retention.ms=-1", "log.cleaner.backoff.ms=500")


# ---- helpers


def _produce(
    bootstrap: str, topic: str, records: Sequence[Sent], partitions: int
) -> dict[int, list[tuple[int, Sent]]]:
    """Record i goes to partition i % `partitions`; returns (offset, record) per partition."""
    p = producer(bootstrap, enable_idempotence=True)
    placed: dict[int, list[tuple[int, Sent]]] = {n: [] for n in range(partitions)}
    for i, sent in enumerate(records):
        partition = i % partitions
        p.produce(
            topic,
            key=sent.key,
            value=sent.value,
            headers=sent.headers,
            partition=partition,
            timestamp=sent.timestamp_ms,
        )
        placed[partition].append((len(placed[partition]), sent))
    flush_all(p)
    return placed


def _expected(
    topic: str, placed: dict[int, list[tuple[int, Sent]]], *, headers: bool = True
) -> list[Row]:
    rows = [
        (
            topic,
            partition,
            offset,
            sent.key,
            sent.value,
            sent.timestamp_ms,
            0,  # CreateTime
            tuple(sent.headers or ()) if headers else (),
        )
        for partition, entries in placed.items()
        for offset, sent in entries
    ]
    return sorted(rows, key=lambda r: (r[0], r[1], r[2]))


def _read(spark: Any, bootstrap: str, **options: str) -> Any:
    return (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .options(**options)
        .load()
    )


def _rows(df: Any) -> list[Row]:
    """The rows of a Kafka-schema DataFrame, the timestamp in exact milliseconds."""
    columns = ["topic", "partition", "offset", "key", "value", "unix_millis(timestamp) AS ts"]
    columns.append("timestampType")
    has_headers = "headers" in df.columns
    if has_headers:
        columns.append("headers")
    out = []
    for r in df.selectExpr(*columns).collect():
        headers = tuple((h.key, h.value) for h in r.headers or ()) if has_headers else ()
        key = bytes(r.key) if r.key is not None else None
        value = bytes(r.value) if r.value is not None else None
        out.append((r.topic, r.partition, r.offset, key, value, r.ts, r.timestampType, headers))
    return sorted(out, key=lambda row: (row[0], row[1], row[2]))


def _only(rows: Sequence[Row], keep: Any) -> list[Row]:
    return [r for r in rows if keep(r)]


def _run_available_now(stream: Any, out: Path, checkpoint: Path, fmt: str = "parquet") -> Any:
    query = (
        stream.writeStream.format(fmt)
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(QUERY_TIMEOUT_S), "the AvailableNow query did not finish"
    assert query.exception() is None, query.exception()
    return query


def _batch_sizes(query: Any) -> list[int]:
    return [int(p["numInputRows"]) for p in query.recentProgress if p["numInputRows"]]


KAFKA_COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]


def test_the_pom_names_the_installed_pyspark() -> None:
    """Another PySpark than the pom's is refused, saying what to change (no Spark needed)."""
    wanted = pom_property("pyspark.version")
    check_pyspark_version(wanted)
    with pytest.raises(ConnectorVersionMismatch, match=r"set <pyspark.version> to 9\.9\.9"):
        check_pyspark_version("9.9.9")


# ---- batch reads


def test_batch_read_subscribe_columns_exact(kspark: Any, broker: Broker) -> None:
    topic = topic_name("sk-read")
    create_topic(broker.bootstrap, topic, partitions=3)
    # 102 records: record 101 has a header with a null value
    placed = _produce(broker.bootstrap, topic, make_records(102, seed=1), 3)

    plain = _read(kspark, broker.bootstrap, subscribe=topic)
    assert plain.columns == KAFKA_COLUMNS
    assert _rows(plain) == _expected(topic, placed, headers=False)

    with_headers = _read(kspark, broker.bootstrap, subscribe=topic, includeHeaders="true")
    assert with_headers.columns == [*KAFKA_COLUMNS, "headers"]
    assert _rows(with_headers) == _expected(topic, placed)

    # minPartitions: each Kafka partition split into offset ranges, each its own task
    # (and consumer) starting in the middle of the partition
    split = _read(
        kspark, broker.bootstrap, subscribe=topic, includeHeaders="true", minPartitions="7"
    )
    assert split.rdd.getNumPartitions() > 3
    assert _rows(split) == _expected(topic, placed)


def test_batch_read_subscribe_pattern_assign_and_offset_ranges(kspark: Any, broker: Broker) -> None:
    prefix = topic_name("sk-range")
    topics = [f"{prefix}-a", f"{prefix}-b"]
    expected: list[Row] = []
    for n, topic in enumerate(topics):
        create_topic(broker.bootstrap, topic, partitions=2)
        placed = _produce(broker.bootstrap, topic, make_records(40, seed=10 + n), 2)
        expected += _expected(topic, placed)
    expected.sort(key=lambda r: (r[0], r[1], r[2]))
    a, b = topics
    headers = {"includeHeaders": "true"}

    pattern = _read(kspark, broker.bootstrap, subscribePattern=f"{prefix}-.*", **headers)
    assert _rows(pattern) == expected

    assigned = _read(kspark, broker.bootstrap, assign=json.dumps({a: [1], b: [0]}), **headers)
    assert _rows(assigned) == _only(expected, lambda r: (r[0], r[1]) in {(a, 1), (b, 0)})

    # JSON per partition: -2 is earliest, -1 latest
    ranged = _read(
        kspark,
        broker.bootstrap,
        subscribe=f"{a},{b}",
        startingOffsets=json.dumps({a: {"0": 5, "1": -2}, b: {"0": 19, "1": 3}}),
        endingOffsets=json.dumps({a: {"0": 12, "1": -1}, b: {"0": -1, "1": 4}}),
        **headers,
    )
    window = {(a, 0): (5, 12), (a, 1): (0, 20), (b, 0): (19, 20), (b, 1): (3, 4)}

    def inside(r: Row) -> bool:
        start, end = window[(r[0], r[1])]
        return start <= r[2] < end

    assert _rows(ranged) == _only(expected, inside)

    # the names: earliest to latest is everything (Spark refuses a batch from latest)
    earliest = _read(
        kspark,
        broker.bootstrap,
        subscribe=b,
        startingOffsets="earliest",
        endingOffsets="latest",
        **headers,
    )
    assert _rows(earliest) == _only(expected, lambda r: r[0] == b)


def test_batch_read_by_timestamp(kspark: Any, broker: Broker) -> None:
    topic = topic_name("sk-time")
    create_topic(broker.bootstrap, topic, partitions=2)
    # record i has timestamp BASE + i; partition i % 2
    placed = _produce(broker.bootstrap, topic, make_records(60, seed=3), 2)
    expected = _expected(topic, placed)
    headers = {"includeHeaders": "true", "subscribe": topic}

    since_ms = str(BASE_TIMESTAMP_MS + 31)
    since = _read(kspark, broker.bootstrap, startingTimestamp=since_ms, **headers)
    assert _rows(since) == _only(expected, lambda r: r[5] >= BASE_TIMESTAMP_MS + 31)

    by_partition = _read(
        kspark,
        broker.bootstrap,
        startingOffsetsByTimestamp=json.dumps(
            {topic: {"0": BASE_TIMESTAMP_MS + 10, "1": BASE_TIMESTAMP_MS + 41}}
        ),
        endingOffsetsByTimestamp=json.dumps(
            {topic: {"0": BASE_TIMESTAMP_MS + 20, "1": BASE_TIMESTAMP_MS + 10_000}}
        ),
        **headers,
    )
    # start: the first record at or after the timestamp; end: the first one at or after
    # it (exclusive); a timestamp past every record is the end of the partition
    window = {0: (10, 20), 1: (41, 60)}
    assert _rows(by_partition) == _only(
        expected, lambda r: window[r[1]][0] <= r[5] - BASE_TIMESTAMP_MS < window[r[1]][1]
    )


def test_batch_read_log_append_time_and_records_past_fetch_sizes(
    kspark: Any, broker: Broker
) -> None:
    """A LogAppendTime topic: timestampType 1 and the broker's append time (the same
    value confluent-kafka reads), not the producer's; records larger than the consumer's
    fetch sizes still come (the broker returns the first batch whole)."""
    topic = topic_name("sk-append")
    create_topic(
        broker.bootstrap, topic, partitions=1, config={"message.timestamp.type": "LogAppendTime"}
    )
    big = [bytes([65 + i]) * 300_000 for i in range(4)]
    before_ms = int(time.time() * 1000)
    p = producer(broker.bootstrap, linger_ms=0)
    for value in big:
        p.produce(topic, value=value, partition=0, timestamp=BASE_TIMESTAMP_MS)
        flush_all(p)  # one record per batch
    after_ms = int(time.time() * 1000)
    confluent = read_partitions(broker.bootstrap, topic, {0: len(big)})[0]
    assert {m.timestamp_type for m in confluent} == {2}  # TIMESTAMP_LOG_APPEND_TIME

    rows = _rows(
        _read(
            kspark,
            broker.bootstrap,
            subscribe=topic,
            **{"kafka.max.partition.fetch.bytes": "1024", "kafka.fetch.max.bytes": "1024"},
        )
    )
    assert [r[4] for r in rows] == big
    assert [r[6] for r in rows] == [1] * len(big)  # LogAppendTime
    assert [r[5] for r in rows] == [m.timestamp_ms for m in confluent]
    assert all(before_ms - 1000 <= r[5] <= after_ms + 1000 for r in rows)


# ---- streams


def test_stream_max_offsets_per_trigger_and_restart_from_checkpoint(
    kspark: Any, broker: Broker, tmp_path: Path
) -> None:
    topic = topic_name("sk-stream")
    create_topic(broker.bootstrap, topic, partitions=2)
    records = make_records(100, seed=4)
    placed = _produce(broker.bootstrap, topic, records[:60], 2)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def stream() -> Any:
        return (
            kspark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "16")
            .option("includeHeaders", "true")
            .load()
        )

    query = _run_available_now(stream(), out, checkpoint)
    sizes = _batch_sizes(query)
    assert sum(sizes) == 60 and max(sizes) <= 16 and len(sizes) >= 4, sizes
    assert _rows(kspark.read.parquet(str(out))) == _expected(topic, placed)

    # a third partition and 40 more records: a second run from the checkpoint reads
    # exactly those, the new partition from its start
    from confluent_kafka.admin import AdminClient, NewPartitions

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_partitions([NewPartitions(topic, 3)])[topic].result(timeout=30)
    more = _produce(broker.bootstrap, topic, records[60:], 3)
    base = {0: 30, 1: 30, 2: 0}
    for partition, entries in more.items():
        placed.setdefault(partition, [])
        placed[partition] += [(offset + base[partition], sent) for offset, sent in entries]
    query = _run_available_now(stream(), out, checkpoint)
    sizes = _batch_sizes(query)
    assert sum(sizes) == 40 and max(sizes) <= 16, sizes
    assert _rows(kspark.read.parquet(str(out))) == _expected(topic, placed)


def test_stream_fail_on_data_loss(kspark: Any, broker: Broker, tmp_path: Path) -> None:
    """Records deleted (DeleteRecords) between two runs of a stream: with failOnDataLoss
    (the default) the run fails naming the lost offsets; with false it goes on from the
    new log start offset."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    topic = topic_name("sk-loss")
    create_topic(broker.bootstrap, topic, partitions=1)
    placed = _produce(broker.bootstrap, topic, make_records(20, seed=7), 1)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def stream(**options: str) -> Any:
        return (
            kspark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .options(**options)
            .load()
        )

    _run_available_now(stream(), out, checkpoint)
    more = _produce(broker.bootstrap, topic, make_records(30, seed=8), 1)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.delete_records([TopicPartition(topic, 0, 35)]).values():
        future.result(timeout=30)
    assert watermarks(broker.bootstrap, topic, 1) == {0: (35, 50)}

    query = (
        stream()
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(Exception) as failed:
        query.awaitTermination(QUERY_TIMEOUT_S)
    message = str(failed.value)
    assert "Some data may have been lost" in message, message
    assert f"Could not read records in offset [20, 50) for topic partition {topic}-0" in message

    _run_available_now(stream(failOnDataLoss="false"), out, checkpoint)
    kept = {0: placed[0] + [(20 + offset, sent) for offset, sent in more[0] if offset >= 15]}
    assert _rows(kspark.read.parquet(str(out))) == _expected(topic, kept, headers=False)


# ---- writes


def test_batch_write_columns_read_back_exactly(kspark: Any, broker: Broker) -> None:
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        IntegerType,
        StringType,
        StructField,
        StructType,
    )

    first, second = topic_name("sk-write-a"), topic_name("sk-write-b")
    create_topic(broker.bootstrap, first, partitions=3)
    create_topic(broker.bootstrap, second, partitions=1)
    header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    schema = StructType(
        [
            StructField("topic", StringType()),
            StructField("partition", IntegerType()),
            StructField("key", BinaryType()),
            StructField("value", BinaryType()),
            StructField("headers", ArrayType(header)),
        ]
    )
    rows = []
    for i in range(45):
        topic = second if i % 5 == 4 else first
        partition = 0 if topic == second else i % 3
        key = None if i % 11 == 3 else b"k%d" % i
        headers = [("n", b"%d" % i), ("n", None)] if i % 2 else []
        rows.append((topic, partition, key, b"value %d" % i, headers))
    kspark.createDataFrame(rows, schema).coalesce(1).write.format("kafka").option(
        "kafka.bootstrap.servers", broker.bootstrap
    ).save()

    for topic, partitions in ((first, 3), (second, 1)):
        ends = {p: high for p, (_, high) in watermarks(broker.bootstrap, topic, partitions).items()}
        got = read_partitions(broker.bootstrap, topic, ends)
        for partition in range(partitions):
            want = [r for r in rows if r[0] == topic and r[1] == partition]
            seen = got[partition]
            assert [m.offset for m in seen] == list(range(len(want)))
            assert [(m.key, m.value, m.headers or []) for m in seen] == [
                (key, value, headers) for _, _, key, value, headers in want
            ]


def test_write_compressed_and_to_a_new_topic(kspark: Any, broker: Broker) -> None:
    """The connector's producer (kafka-clients) compressing with each codec, read back by
    confluent-kafka and by Spark; and a write to a topic that does not exist yet, which
    the broker creates (auto.create.topics.enable, default true) with num.partitions."""
    values = [b"compressible %04d " % i + b"x" * 200 for i in range(300)]
    frame = kspark.createDataFrame([(v,) for v in values], "value BINARY").coalesce(1)
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        topic = topic_name(f"sk-{codec}")
        create_topic(broker.bootstrap, topic, partitions=1)
        frame.write.format("kafka").option("kafka.bootstrap.servers", broker.bootstrap).option(
            "topic", topic
        ).option("kafka.compression.type", codec).option("kafka.linger.ms", "50").save()
        got = read_partitions(broker.bootstrap, topic, {0: len(values)})[0]
        assert [m.value for m in got] == values, codec
        assert watermarks(broker.bootstrap, topic, 1) == {0: (0, len(values))}, codec
        read = _read(kspark, broker.bootstrap, subscribe=topic).orderBy("offset").collect()
        assert [bytes(r.value) for r in read] == values, codec

    fresh = topic_name("sk-auto")
    frame.limit(10).write.format("kafka").option(
        "kafka.bootstrap.servers", broker.bootstrap
    ).option("topic", fresh).save()
    assert wait_until(
        lambda: sum(high for _, high in watermarks(broker.bootstrap, fresh, 1).values()) == 10,
        timeout_s=30,
    )
    assert [m.value for m in read_partitions(broker.bootstrap, fresh, {0: 10})[0]] == values[:10]


def test_stream_write_topic_to_topic(kspark: Any, broker: Broker, tmp_path: Path) -> None:
    source, sink = topic_name("sk-copy-in"), topic_name("sk-copy-out")
    create_topic(broker.bootstrap, source, partitions=2)
    create_topic(broker.bootstrap, sink, partitions=2)
    placed = _produce(broker.bootstrap, source, make_records(50, seed=5), 2)
    query = (
        kspark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .option("includeHeaders", "true")
        .option("maxOffsetsPerTrigger", "20")
        .load()
        .selectExpr("key", "value", "headers", "partition")
        .writeStream.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("topic", sink)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(QUERY_TIMEOUT_S), "the AvailableNow query did not finish"
    assert query.exception() is None, query.exception()
    got = read_partitions(broker.bootstrap, sink, {0: 25, 1: 25})
    for partition, entries in placed.items():
        assert [(m.offset, m.key, m.value, m.headers) for m in got[partition]] == [
            (offset, sent.key, sent.value, sent.headers) for offset, sent in entries
        ]
    assert watermarks(broker.bootstrap, sink, 2) == {0: (0, 25), 1: (0, 25)}


# ---- transactions and compaction


def test_read_committed_skips_aborted_transactions(
    kspark: Any, broker: Broker, tmp_path: Path
) -> None:
    topic = topic_name("sk-txn")
    create_topic(broker.bootstrap, topic, partitions=2)
    p = producer(broker.bootstrap, transactional_id=topic_name("sk-txn-id"))
    p.init_transactions(30)
    committed: list[bytes] = []
    everything: list[bytes] = []
    for n, commit in enumerate((True, False, True, False, True)):
        p.begin_transaction()
        values = [b"txn %d record %d" % (n, i) for i in range(6)]
        for i, value in enumerate(values):
            p.produce(topic, value=value, partition=i % 2)
        everything += values
        if commit:
            p.commit_transaction(30)
            committed += values
        else:
            p.flush(30)
            p.abort_transaction(30)
    # a last open transaction: read_committed stops before it (the last stable offset)
    p.begin_transaction()
    p.produce(topic, value=b"still open", partition=0)
    p.flush(30)

    def values(df: Any) -> Counter[bytes]:
        return Counter(bytes(r.value) for r in df.select("value").collect())

    isolation = {"kafka.isolation.level": "read_committed", "subscribe": topic}
    assert values(_read(kspark, broker.bootstrap, **isolation)) == Counter(committed)
    uncommitted = values(_read(kspark, broker.bootstrap, subscribe=topic))
    assert uncommitted == Counter([*everything, b"still open"])

    stream = (
        kspark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "7")
        .options(**isolation)
        .load()
    )
    _run_available_now(stream, tmp_path / "out", tmp_path / "checkpoint")
    assert values(kspark.read.parquet(str(tmp_path / "out"))) == Counter(committed)
    p.abort_transaction(30)


def test_compacted_topic(kspark: Any, broker: Broker, tmp_path: Path) -> None:
    """Until the cleaner runs every record is read; after, the latest of each key and
    gaps in the offsets. Either way each row read is the record produced at its offset,
    the latest record of every key is read, and neither the batch read nor the stream
    fails (Spark treats gaps in a compacted topic as expected, not as data loss)."""
    topic = topic_name("sk-compact")
    create_topic(
        broker.bootstrap,
        topic,
        partitions=1,
        config={
            "cleanup.policy": "compact",
            "segment.ms": "100",
            "min.cleanable.dirty.ratio": "0.01",
            "delete.retention.ms": "100",
        },
    )
    p = producer(broker.bootstrap)
    produced: dict[int, tuple[bytes, bytes]] = {}
    for offset in range(120):
        key, value = b"key-%d" % (offset % 7), b"value-%d" % offset
        p.produce(topic, key=key, value=value, partition=0)
        produced[offset] = (key, value)
    flush_all(p)
    time.sleep(0.3)  # a segment roll the cleaner may act on
    p.produce(topic, key=b"key-last", value=b"last", partition=0)
    flush_all(p)
    produced[120] = (b"key-last", b"last")
    latest = {key: offset for offset, (key, _) in produced.items()}

    def check(rows: Sequence[Any]) -> None:
        got = {r.offset: (bytes(r.key), bytes(r.value)) for r in rows}
        assert len(got) == len(rows)
        assert all(produced[offset] == record for offset, record in got.items())
        assert set(latest.values()) <= set(got)

    check(_read(kspark, broker.bootstrap, subscribe=topic).collect())
    stream = (
        kspark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "25")
        .load()
    )
    _run_available_now(stream, tmp_path / "out", tmp_path / "checkpoint")
    check(kspark.read.parquet(str(tmp_path / "out")).collect())


COMPACTION_WAIT_S = 90.0
"""How long the slow compaction test waits for the broker's cleaner (Kafka's cleans within
a few seconds with the module's backoff of 500 ms)."""


def _log_cleaner_present() -> bool:
    """Kafka has a cleaner; Shoal has one once server/services/log_cleaner.py exists."""
    if os.environ.get("SHOAL_SPARK_KAFKA_TARGET") == "kafka":
        return True
    import importlib.util

    return importlib.util.find_spec("shoal.server.services.log_cleaner") is not None


def _present(bootstrap: str, topic: str) -> dict[int, tuple[bytes | None, bytes | None]]:
    """offset -> (key, value) of what partition 0 holds now, read with confluent-kafka."""
    _, high = watermarks(bootstrap, topic, 1)[0]
    got = read_partitions(bootstrap, topic, {0: high})[0]
    return {m.offset: (m.key, m.value) for m in got}


@pytest.mark.slow
@pytest.mark.skipif(
    not _log_cleaner_present(),
    reason="this Shoal has no log cleaner (server/services/log_cleaner.py) yet",
)
def test_compacted_topic_once_cleaned(kspark: Any, broker: Broker, tmp_path: Path) -> None:
    """A stream whose checkpoint lies inside a range the cleaner has since compacted, and a
    batch read starting at a compacted-away offset: neither is data loss for Spark (its
    consumer skips offsets that are gone while the log start offset is not past them),
    and compaction leaves the log start offset at 0, as Kafka's does. Each row read is
    the record produced at its offset; every key's latest record is read; tombstones
    (null values) are read until `delete.retention.ms` lets the cleaner drop them."""
    topic = topic_name("sk-cleaned")
    create_topic(
        broker.bootstrap,
        topic,
        partitions=1,
        config={
            "cleanup.policy": "compact",
            "segment.ms": "100",
            "min.cleanable.dirty.ratio": "0.01",
            "min.compaction.lag.ms": "0",
            "delete.retention.ms": "60000",
        },
    )
    produced: dict[int, tuple[bytes | None, bytes | None]] = {}
    p = producer(broker.bootstrap)

    def send(count: int) -> None:
        for _ in range(count):
            offset = len(produced)
            key = b"key-%d" % (offset % 5)
            value = None if offset % 17 == 16 else b"value-%d" % offset  # some tombstones
            p.produce(topic, key=key, value=value, partition=0)
            produced[offset] = (key, value)
            if offset % 10 == 9:
                flush_all(p)
                time.sleep(0.12)  # past segment.ms: the next append rolls a segment
        flush_all(p)

    stream_options = {
        "subscribe": topic,
        "startingOffsets": "earliest",
        "maxOffsetsPerTrigger": "7",
    }
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def run_stream() -> None:
        stream = (
            kspark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .options(**stream_options)
            .load()
        )
        _run_available_now(stream, out, checkpoint)

    send(23)
    run_stream()  # the checkpoint now says offset 23
    send(100)
    assert wait_until(
        lambda: len(_present(broker.bootstrap, topic)) < len(produced) // 2,
        timeout_s=COMPACTION_WAIT_S,
        interval_s=1.0,
    ), "the cleaner did not compact the topic"
    present = _present(broker.bootstrap, topic)
    assert 23 not in present  # the stream resumes at an offset that is gone
    assert watermarks(broker.bootstrap, topic, 1)[0] == (0, len(produced))
    latest = {key: offset for offset, (key, _) in produced.items()}
    assert set(latest.values()) <= set(present)
    assert all(produced[offset] == record for offset, record in present.items())

    run_stream()
    streamed = kspark.read.parquet(str(out)).select("offset", "key", "value").collect()
    rows = {r.offset: (bytes(r.key), None if r.value is None else bytes(r.value)) for r in streamed}
    assert len(rows) == len(streamed)
    # offsets below 23: the first run's, read while the cleaner may already have been at work
    # the cleaner may go on after `present` was read: it only ever removes records
    assert {o for o in rows if o >= 23} <= set(present)
    assert set(latest.values()) <= set(rows)
    assert all(produced[offset] == record for offset, record in rows.items())

    # a batch read from an offset the cleaner removed
    batch = _read(
        kspark, broker.bootstrap, subscribe=topic, startingOffsets=json.dumps({topic: {"0": 23}})
    ).collect()
    assert {r.offset for r in batch} <= {o for o in present if o >= 23}
    assert set(latest.values()) <= {r.offset for r in batch}


# ---- a broker crash


def test_broker_killed_during_stream(kspark: Any, broker: Broker, tmp_path: Path) -> None:
    """Exactly once through the checkpoint and the Parquet sink: the query is restarted
    from its checkpoint if the outage failed it; every record is in the output once."""
    topic = topic_name("sk-crash")
    create_topic(broker.bootstrap, topic, partitions=2)
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def start() -> Any:
        return (
            kspark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("subscribe", topic)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", "50")
            .load()
            .writeStream.format("parquet")
            .option("path", str(out))
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="500 milliseconds")
            .start()
        )

    def copied() -> Counter[tuple[int, int]]:
        if not (out / "_spark_metadata").exists():
            return Counter()
        # the schema given: before the first batch's commit there is nothing to infer it from
        rows = kspark.read.schema("partition INT, offset LONG").parquet(str(out)).collect()
        return Counter((r.partition, r.offset) for r in rows)

    records = make_records(400, seed=6)
    _produce(broker.bootstrap, topic, records[:200], 2)
    query = start()
    restarts = 0
    try:
        assert wait_until(lambda: len(copied()) >= 60, timeout_s=QUERY_TIMEOUT_S, interval_s=0.5)
        broker.kill()
        time.sleep(3)
        broker.start()
        _produce(broker.bootstrap, topic, records[200:], 2)
        want = {(p, o) for p in range(2) for o in range(200)}

        def done() -> bool:
            nonlocal query, restarts
            if not query.isActive:
                restarts += 1
                query = start()
            return set(copied()) == want

        assert wait_until(done, timeout_s=QUERY_TIMEOUT_S, interval_s=1.0), sorted(
            want - set(copied())
        )[:10]
    finally:
        query.stop()
    counts = copied()
    assert set(counts) == want and set(counts.values()) == {1}
    print(f"query restarts after the broker's restart: {restarts}")
