"""The Spark connector, unchanged, against Apache Kafka 4.2 (the reference broker,
tests/support/kafka_reference.py) instead of Shoal: what a Spark user moving from Shoal
to Kafka (or back) relies on.

Each leg is checked by reading back with confluent-kafka, never with the connector
itself: the batch source (`spark.read.format("shoal")`; read_committed over an aborted
transaction; its reader on batches Kafka recompressed with its own codecs), the topic
stream (AvailableNow, committing its progress to a consumer group), the sink
(`df.write`) and the `shoal-share` stream: every record delivered at least once, and
the records it acknowledged not delivered again to a confluent-kafka ShareConsumer of
the same group, whether the query ended as an AvailableNow run or was stopped after
Spark committed a batch, before the next trigger. Its member's RENEW and its reading
of the delivery count limit are checked on their own.

The reference broker runs with the share-group bounds of Shoal's own share tests
(SHARE_TEST_BROKER_OVERRIDES, Kafka's names) and a delivery count limit of its own,
which the share source's member reads from the broker (Kafka 4.2 has no group config
for it). Without java and mvn the module skips, except in CI (CI=true).
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

pa = pytest.importorskip("pyarrow")  # the connector's reader needs it (the spark extra)

from shoal.client.ranges import Span  # noqa: E402
from shoal.spark.reading import ARROW_SCHEMA, read_range  # noqa: E402
from shoal.spark.share_group import ACCEPT, MemberSettings, ShareGroupMember  # noqa: E402
from shoal.spark.share_offsets import TopicPartition as ShareTopicPartition  # noqa: E402
from tests.support import kafka_reference  # noqa: E402
from tests.support.clients import (  # noqa: E402
    Sent,
    create_topic,
    flush_all,
    make_records,
    producer,
    read_partitions,
    watermarks,
)
from tests.support.share_consumers import (  # noqa: E402
    SHARE_TEST_BROKER_OVERRIDES,
    produce_values,
    records_of,
    share_consumer,
)
from tests.support.topics import topic_name  # noqa: E402

QUERY_TIMEOUT_S = 240
SHARE_OPTIONS = {"share.auto.offset.reset": "earliest"}
BROKER_DELIVERY_COUNT_LIMIT = 4
"""The reference broker's `group.share.delivery.count.limit` (Kafka's default is 5)."""
SETTLE_S = 3.0
"""How long a ShareConsumer keeps polling after its first records, to see anything the
group still had to hand out."""


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[kafka_reference.KafkaBroker]:
    try:
        kafka_reference.install()
    except kafka_reference.ReferenceUnavailable as exc:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no Kafka reference broker: {exc}")
    data = tmp_path_factory.mktemp("kafka") / "data"
    overrides = [
        *SHARE_TEST_BROKER_OVERRIDES,
        # make_records' timestamps are of 2023: retention (7 days) would delete them
        # at its first check, five minutes after the broker started
        "log.retention.ms=-1",
        f"group.share.delivery.count.limit={BROKER_DELIVERY_COUNT_LIMIT}",
    ]
    with kafka_reference.running(data, *overrides) as broker:
        yield broker


def _produce(bootstrap: str, topic: str, records: list[Sent], partitions: int) -> None:
    """Record i goes to partition i % partitions, in order."""
    p = producer(bootstrap)
    for i, r in enumerate(records):
        p.produce(
            topic,
            value=r.value,
            key=r.key,
            headers=r.headers,
            partition=i % partitions,
            timestamp=r.timestamp_ms,
        )
    flush_all(p)


def _consumed(bootstrap: str, topic: str, partitions: int, **config: Any) -> list[tuple[Any, ...]]:
    """(partition, offset, key, value, headers, timestamp ms) of every record, read
    with a confluent-kafka Consumer."""
    ends = {p: high for p, (_, high) in watermarks(bootstrap, topic, partitions).items()}
    got = read_partitions(bootstrap, topic, ends, **config)
    return sorted(
        (r.partition, r.offset, r.key, r.value, _headers(r.headers), r.timestamp_ms)
        for records in got.values()
        for r in records
    )


def _headers(headers: Any) -> tuple[tuple[str, bytes | None], ...] | None:
    if not headers:
        return None
    return tuple((k, None if v is None else bytes(v)) for k, v in headers)


def _spark_rows_of_dicts(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(
        (
            r["partition"],
            r["offset"],
            r["key"],
            r["value"],
            _headers([(h["key"], h["value"]) for h in r["headers"]] if r["headers"] else None),
            round(r["timestamp"].timestamp() * 1000),
        )
        for r in rows
    )


def _spark_rows(rows: list[Any]) -> list[tuple[Any, ...]]:
    return sorted(
        (
            r.partition,
            r.offset,
            None if r.key is None else bytes(r.key),
            bytes(r.value),
            _headers([(h.key, h.value) for h in r.headers] if r.headers else None),
            round(r.timestamp.timestamp() * 1000),
        )
        for r in rows
    )


# ---- the topic source and the sink


def test_batch_read_returns_what_a_kafka_consumer_reads(
    spark: Any, kafka: kafka_reference.KafkaBroker
) -> None:
    topic = topic_name("kafka-read")
    create_topic(kafka.bootstrap, topic, partitions=3)
    _produce(kafka.bootstrap, topic, make_records(900, seed=3), 3)
    frame = (
        spark.read.format("shoal")
        .option("bootstrap.servers", kafka.bootstrap)
        .option("topic", topic)
        .load()
    )
    rows = _spark_rows(frame.collect())
    assert len(rows) == 900
    assert rows == _consumed(kafka.bootstrap, topic, 3)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_read_range_decodes_batches_kafka_compressed_itself(
    kafka: kafka_reference.KafkaBroker, codec: str
) -> None:
    """A topic's `compression.type` makes Kafka recompress what producers send, with
    its Java codecs (snappy in xerial framing, lz4 frames as Kafka writes them): the
    executors' reader (reading.read_range, no Spark needed) decodes them exactly."""
    topic = topic_name(f"kafka-codec-{codec}")
    create_topic(kafka.bootstrap, topic, config={"compression.type": codec})
    sent = make_records(2_000, seed=13)
    _produce(kafka.bootstrap, topic, sent, 1)
    batches = list(read_range(kafka.bootstrap, topic, 0, 0, len(sent)))
    rows = pa.Table.from_batches(batches, schema=ARROW_SCHEMA).to_pylist()
    assert [(r["offset"], r["key"], r["value"]) for r in rows] == [
        (i, s.key, s.value) for i, s in enumerate(sent)
    ]
    assert _spark_rows_of_dicts(rows) == _consumed(kafka.bootstrap, topic, 1)


def test_read_committed_batch_read_leaves_out_an_aborted_transaction(
    spark: Any, kafka: kafka_reference.KafkaBroker
) -> None:
    topic = topic_name("kafka-read-txn")
    create_topic(kafka.bootstrap, topic)
    p = producer(kafka.bootstrap, transactional_id=topic_name("kafka-read-txn-id"))
    p.init_transactions(30)
    for outcome, count in (("commit", 50), ("abort", 30), ("commit", 20)):
        p.begin_transaction()
        for i in range(count):
            p.produce(topic, value=b"%s-%d" % (outcome.encode(), i), partition=0)
        assert p.flush(30) == 0  # written before the end: an abort drops what is not
        if outcome == "commit":
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
    # a plain record last, so a consumer's position reaches the end (past the marker)
    tail = producer(kafka.bootstrap)
    tail.produce(topic, value=b"tail", partition=0)
    flush_all(tail)
    for level in ("read_committed", "read_uncommitted"):
        frame = (
            spark.read.format("shoal")
            .option("bootstrap.servers", kafka.bootstrap)
            .option("topic", topic)
            .option("isolation.level", level)
            .load()
        )
        got = sorted((r.offset, bytes(r.value)) for r in frame.select("offset", "value").collect())
        expected = [
            (r[1], r[3]) for r in _consumed(kafka.bootstrap, topic, 1, isolation_level=level)
        ]
        assert got == expected, level
        assert len(got) == (71 if level == "read_committed" else 101), level


def test_sink_writes_what_a_kafka_consumer_reads_back(
    spark: Any, kafka: kafka_reference.KafkaBroker
) -> None:
    topic = topic_name("kafka-sink")
    create_topic(kafka.bootstrap, topic, partitions=3)
    sent = make_records(600, seed=5)
    rows = [(s.key, s.value, s.headers, i % 3) for i, s in enumerate(sent)]
    schema = (
        "key binary, value binary, headers array<struct<key:string,value:binary>>, partition int"
    )
    # one task, so each partition's records keep the rows' order
    spark.createDataFrame(rows, schema).coalesce(1).write.format("shoal").option(
        "bootstrap.servers", kafka.bootstrap
    ).option("topic", topic).mode("append").save()
    got = [(r[0], r[2], r[3], r[4]) for r in _consumed(kafka.bootstrap, topic, 3)]
    expected: list[tuple[Any, ...]] = []
    for partition in range(3):
        expected += [(p, k, v, _headers(h)) for k, v, h, p in rows if p == partition]
    assert got == expected


def test_topic_stream_copies_every_record_and_commits_to_the_group(
    spark: Any, kafka: kafka_reference.KafkaBroker, tmp_path: Path
) -> None:
    topic, group = topic_name("kafka-stream"), topic_name("kafka-stream-group")
    create_topic(kafka.bootstrap, topic, partitions=2)
    _produce(kafka.bootstrap, topic, make_records(700, seed=7), 2)
    out = tmp_path / "out"
    query = (
        spark.readStream.format("shoal")
        .option("kafka.bootstrap.servers", kafka.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "250")
        .option("commitToGroup", group)
        .load()
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(QUERY_TIMEOUT_S), "the AvailableNow query did not finish"
    assert query.exception() is None, query.exception()
    assert sum(p["numInputRows"] for p in query.recentProgress) == 700
    rows = _spark_rows(spark.read.parquet(str(out)).collect())
    assert rows == _consumed(kafka.bootstrap, topic, 2)  # each record once
    reader = Consumer({"bootstrap.servers": kafka.bootstrap, "group.id": group})
    try:
        committed = reader.committed([TopicPartition(topic, p) for p in (0, 1)], timeout=30)
    finally:
        reader.close()
    assert {tp.partition: tp.offset for tp in committed} == {0: 350, 1: 350}


# ---- the share-group stream


def test_share_member_reads_the_brokers_delivery_count_limit(
    kafka: kafka_reference.KafkaBroker,
) -> None:
    """Kafka 4.2 has no `share.delivery.count.limit` group config (DescribeConfigs of
    the group shows none): the member reads the brokers' limit instead, which sizes
    the split of a failing batch (share_bisect.py)."""
    topic = topic_name("kafka-share-limit")
    create_topic(kafka.bootstrap, topic)
    settings = MemberSettings(kafka.bootstrap, topic_name("kafka-share-limit-group"), (topic,))
    member = ShareGroupMember(settings)
    member.start()
    try:
        assert member.delivery_count_limit == BROKER_DELIVERY_COUNT_LIMIT
    finally:
        member.close()


def _share_source(spark: Any, bootstrap: str, topic: str, group: str, checkpoint: Path) -> Any:
    return (
        spark.readStream.format("shoal-share")
        .option("bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("group.id", group)
        .option("maxRecordsPerBatch", "200")
        .option("checkpointLocation", str(checkpoint))
        .options(**SHARE_OPTIONS)
        .load()
    )


def _share_topic(kafka: kafka_reference.KafkaBroker, prefix: str) -> tuple[str, dict[int, int]]:
    """A two-partition topic with 300 and 200 records: (name, end offsets)."""
    topic = topic_name(prefix)
    create_topic(kafka.bootstrap, topic, partitions=2)
    produce_values(kafka.bootstrap, topic, (b"a-%d" % i for i in range(300)), partition=0)
    produce_values(kafka.bootstrap, topic, (b"b-%d" % i for i in range(200)), partition=1)
    return topic, {0: 300, 1: 200}


def _delivered(spark: Any, out: Path) -> Counter[tuple[int, int]]:
    """(partition, offset) of the committed output rows, with how often each came."""
    from pyspark.errors import AnalysisException

    if not any(out.glob("*.parquet")):
        return Counter()
    try:
        rows = spark.read.parquet(str(out)).select("partition", "offset").collect()
    except AnalysisException:  # files written, the first batch not yet in _spark_metadata
        return Counter()
    return Counter((r.partition, r.offset) for r in rows)


def _assert_delivered_next(
    bootstrap: str, topic: str, group: str, ends: dict[int, int], left: set[tuple[int, int]]
) -> None:
    """A confluent-kafka ShareConsumer of the group gets exactly the records `left`
    (those the query did not deliver) and the one produced now on each partition: no
    record the query acknowledged comes again (the group would hand out an
    unacknowledged one, the lowest offsets first, before or with the new ones)."""
    for partition in ends:
        produce_values(bootstrap, topic, [b"after-%d" % partition], partition=partition)
    wanted = left | set(ends.items())
    consumer = share_consumer(bootstrap, group, [topic])
    got: list[tuple[int, int]] = []
    try:
        deadline = time.monotonic() + 60
        settle_until: float | None = None
        while settle_until is None or time.monotonic() < settle_until:
            assert time.monotonic() < deadline, f"{len(got)} records delivered: {sorted(got)}"
            got += [(m.partition(), m.offset()) for m in records_of(consumer.poll(0.2))]
            if settle_until is None and wanted <= set(got):
                settle_until = time.monotonic() + SETTLE_S
    finally:
        consumer.close()
    assert sorted(got) == sorted(wanted)


def test_share_member_acquires_exactly_or_whole_batches_as_asked(
    kafka: kafka_reference.KafkaBroker,
) -> None:
    """Record-limit mode (a failing batch's split, share_bisect.py) acquires exactly
    the records asked for; batch-optimized mode whole log batches (one of 50 here)."""
    topic = topic_name("kafka-share-modes")
    create_topic(kafka.bootstrap, topic)
    # one log batch: the flush sends all 50 long before the linger ends
    values = [b"m%d" % i for i in range(50)]
    produce_values(kafka.bootstrap, topic, values, partition=0, linger_ms=2_000)
    group = topic_name("kafka-share-modes-group")
    member = ShareGroupMember(MemberSettings(kafka.bootstrap, group, (topic,), SHARE_OPTIONS))
    member.start()
    try:
        tp = ShareTopicPartition(topic, 0)
        exact = member.acquire(records_max=3, wait_ms=5_000, exact=True)
        assert exact == {tp: [Span(0, 2, 1)]}
        whole = member.acquire(records_max=3, wait_ms=5_000, exact=False)
        assert whole == {tp: [Span(3, 49, 1)]}
    finally:
        member.close()


def test_share_member_renews_its_locks_past_the_lock_duration(
    kafka: kafka_reference.KafkaBroker,
) -> None:
    """A batch may run longer than the group's lock duration: the member RENEWs what it
    holds (ShareAcknowledge's RENEW, which Kafka 4.2 serves), so its ACCEPT still
    succeeds after three lock durations, where a member that does not renew finds
    its records' locks gone."""
    topic = topic_name("kafka-share-renew")
    create_topic(kafka.bootstrap, topic)
    produce_values(kafka.bootstrap, topic, [b"r%d" % i for i in range(10)], partition=0)
    configs = {**SHARE_OPTIONS, "share.record.lock.duration.ms": "1000"}
    members: dict[str, tuple[ShareGroupMember, dict[Any, list[Any]]]] = {}
    try:
        for name, interval in (("renewing", None), ("idle", 60_000)):
            member = ShareGroupMember(
                MemberSettings(
                    kafka.bootstrap,
                    topic_name(f"kafka-share-{name}"),
                    (topic,),
                    configs,
                    lock_renew_interval_ms=interval,
                )
            )
            member.start()
            held: dict[Any, list[Any]] = {}
            deadline = time.monotonic() + 30
            while sum(s.size for spans in held.values() for s in spans) < 10:
                assert time.monotonic() < deadline, held
                for tp, spans in member.acquire(records_max=10, wait_ms=500).items():
                    held.setdefault(tp, []).extend(spans)
            assert member.lock_duration_ms == 1000
            members[name] = (member, held)
        time.sleep(3.0)
        renewing, idle = members["renewing"], members["idle"]
        assert renewing[0].acknowledge(renewing[1], ACCEPT) == {}
        assert idle[0].acknowledge(idle[1], ACCEPT) == {
            ShareTopicPartition(topic, 0): "INVALID_RECORD_STATE"
        }
    finally:
        for member, _ in members.values():
            member.close()


def test_share_stream_available_now_delivers_every_record_and_acknowledges_them(
    spark: Any, kafka: kafka_reference.KafkaBroker, tmp_path: Path
) -> None:
    topic, ends = _share_topic(kafka, "kafka-share-now")
    group = topic_name("kafka-share-now-group")
    out = tmp_path / "out"
    query = (
        _share_source(spark, kafka.bootstrap, topic, group, tmp_path / "checkpoint")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(QUERY_TIMEOUT_S), "the AvailableNow query did not finish"
    assert query.exception() is None, query.exception()
    delivered = _delivered(spark, out)
    assert set(delivered) == {(p, o) for p, end in ends.items() for o in range(end)}
    _assert_delivered_next(kafka.bootstrap, topic, group, ends, left=set())


def test_share_stream_stopped_before_its_next_trigger_has_acknowledged_its_batch(
    spark: Any, kafka: kafka_reference.KafkaBroker, tmp_path: Path
) -> None:
    """A query whose next trigger is an hour away is stopped once Spark committed its
    first batch: only `stop()` can ACCEPT that batch (from the checkpoint, as no
    trigger follows). The group then delivers exactly the records the batch did not
    hold."""
    topic, ends = _share_topic(kafka, "kafka-share-stop")
    group = topic_name("kafka-share-stop-group")
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    query = (
        _share_source(spark, kafka.bootstrap, topic, group, checkpoint)
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="1 hour")
        .start()
    )
    try:
        deadline = time.monotonic() + QUERY_TIMEOUT_S
        while not (checkpoint / "commits" / "0").exists():
            assert query.exception() is None, query.exception()
            assert time.monotonic() < deadline, "Spark did not commit the first batch"
            time.sleep(0.2)
    finally:
        query.stop()
    assert query.exception() is None, query.exception()
    delivered = _delivered(spark, out)
    assert delivered and max(delivered.values()) == 1, "one batch: each record once"
    everything = {(p, o) for p, end in ends.items() for o in range(end)}
    assert set(delivered) <= everything
    _assert_delivered_next(kafka.bootstrap, topic, group, ends, left=everything - set(delivered))
