"""The batch source: read_range against a real broker, range planning, and Spark reads.

The round trip writes 10k varied rows through the sink and reads them back through
the source, byte for byte. read_range is also checked on its own (no Spark): every
compression codec, LogAppendTime, its limits, deleted ranges; and the read_committed
filter on hand-built batches.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

from confluent_kafka import TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient  # noqa: E402

from shoal.log.clean_batch import rebuild  # noqa: E402
from shoal.protocol.errors import ErrorCode  # noqa: E402
from shoal.protocol.record_batch import HEADER_SIZE, BatchError, iter_headers  # noqa: E402
from shoal.spark import reading  # noqa: E402
from shoal.spark.batch_source import OffsetRange, split_ranges  # noqa: E402
from shoal.spark.reading import (  # noqa: E402
    ARROW_SCHEMA,
    OffsetRangeError,
    _AbortedTransactions,
    _Constants,
    _Kept,
    _kept_batches,
    decode_batches,
    read_range,
)
from tests.support.batches import Record, build_batch  # noqa: E402
from tests.support.broker import BrokerProcess  # noqa: E402
from tests.support.clients import (  # noqa: E402
    Sent,
    create_topic,
    flush_all,
    make_records,
    producer,
)
from tests.support.topics import topic_name  # noqa: E402


def produce(
    bootstrap: str, topic: str, records: list[Sent], partitions: int, **config: Any
) -> None:
    """Record i goes to partition i % partitions, in order."""
    p = producer(bootstrap, **config)
    for i, r in enumerate(records):
        p.produce(
            topic,
            value=r.value,
            key=r.key,
            headers=r.headers,
            partition=i % partitions,
            timestamp=r.timestamp_ms,
        )
        if i % 1000 == 0:
            p.poll(0)
    flush_all(p)


def rows_of(batches: list[Any]) -> list[dict[str, Any]]:
    return pa.Table.from_batches(batches, schema=ARROW_SCHEMA).to_pylist()  # type: ignore[no-any-return]


def as_sent(row: dict[str, Any]) -> Sent:
    headers = [(h["key"], h["value"]) for h in row["headers"]] if row["headers"] else None
    timestamp_ms = int(row["timestamp"].timestamp() * 1000)
    return Sent(row["key"], row["value"], headers, timestamp_ms)


# ---- read_range, no Spark


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_read_range_decodes_every_codec_exactly(spark_broker: BrokerProcess, codec: str) -> None:
    topic = topic_name(f"spark-codec-{codec}")
    create_topic(spark_broker.bootstrap, topic)
    sent = make_records(3_000, seed=11)
    produce(spark_broker.bootstrap, topic, sent, 1, compression_type=codec, linger_ms=20)
    rows = rows_of(list(read_range(spark_broker.bootstrap, topic, 0, 0, len(sent))))
    assert [as_sent(r) for r in rows] == sent
    assert [r["offset"] for r in rows] == list(range(len(sent)))
    assert {(r["topic"], r["partition"], r["timestampType"]) for r in rows} == {(topic, 0, 0)}


def test_read_range_keeps_only_the_range_and_log_append_time(spark_broker: BrokerProcess) -> None:
    topic = topic_name("spark-lat")
    create_topic(spark_broker.bootstrap, topic, config={"message.timestamp.type": "LogAppendTime"})
    sent = make_records(500, seed=12)
    produce(spark_broker.bootstrap, topic, sent, 1, linger_ms=20)
    rows = rows_of(list(read_range(spark_broker.bootstrap, topic, 0, 123, 321)))
    assert [r["offset"] for r in rows] == list(range(123, 321))
    assert [r["value"] for r in rows] == [s.value for s in sent[123:321]]
    assert {r["timestampType"] for r in rows} == {1}
    assert all(as_sent(r).timestamp_ms > sent[-1].timestamp_ms for r in rows)  # broker time


def test_read_range_limits_rows_per_batch_and_bytes_per_fetch(spark_broker: BrokerProcess) -> None:
    """MAX_ROWS_PER_BATCH and FETCH_BYTES, hit: small limits still read everything,
    since a Fetch always returns its first batch whole."""
    topic = topic_name("spark-limits")
    create_topic(spark_broker.bootstrap, topic)
    sent = make_records(1_000, seed=13)
    produce(spark_broker.bootstrap, topic, sent, 1, linger_ms=20)
    batches = list(
        read_range(
            spark_broker.bootstrap, topic, 0, 0, 1_000, max_rows_per_batch=7, fetch_max_bytes=1
        )
    )
    assert max(b.num_rows for b in batches) == 7
    assert [as_sent(r) for r in rows_of(batches)] == sent


def test_read_range_past_the_high_watermark_fails_clearly(spark_broker: BrokerProcess) -> None:
    topic = topic_name("spark-hw")
    create_topic(spark_broker.bootstrap, topic)
    produce(spark_broker.bootstrap, topic, make_records(10, seed=14), 1)
    with pytest.raises(OffsetRangeError, match=r"offsets \[10, 15\) .* high watermark is 10"):
        list(read_range(spark_broker.bootstrap, topic, 0, 5, 15))


def test_read_range_of_deleted_records_fails_clearly(spark_broker: BrokerProcess) -> None:
    topic = topic_name("spark-deleted")
    create_topic(spark_broker.bootstrap, topic)
    produce(spark_broker.bootstrap, topic, make_records(100, seed=15), 1)
    admin = AdminClient({"bootstrap.servers": spark_broker.bootstrap})
    for future in admin.delete_records([TopicPartition(topic, 0, 60)]).values():
        future.result(timeout=30)
    with pytest.raises(OffsetRangeError) as info:
        list(read_range(spark_broker.bootstrap, topic, 0, 10, 100))
    assert "OFFSET_OUT_OF_RANGE" in str(info.value)
    assert "the log now starts at offset 60" in str(info.value)


def test_empty_range_reads_nothing(spark_broker: BrokerProcess) -> None:
    topic = topic_name("spark-empty")
    create_topic(spark_broker.bootstrap, topic)
    assert list(read_range(spark_broker.bootstrap, topic, 0, 0, 0)) == []


# ---- decoding hand-built batches


def _control(producer_id: int, base_offset: int, *, abort: bool) -> bytes:
    marker = Record(key=b"\x00\x00\x00" + (b"\x00" if abort else b"\x01"), value=b"\x00" * 6)
    return build_batch(
        [marker],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=0,
        transactional=True,
        control=True,
    )


def _transactional(producer_id: int, base_offset: int, *values: bytes) -> bytes:
    return build_batch(
        list(values),
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=0,
        transactional=True,
    )


TRANSACTIONS = b"".join(
    [
        _transactional(7, 0, b"aborted-1", b"aborted-2"),
        _transactional(8, 2, b"committed-1", b"committed-2"),
        _control(7, 4, abort=True),
        _control(8, 5, abort=False),
        build_batch([b"plain"], base_offset=6),
        _transactional(7, 7, b"after-abort"),
        _control(7, 8, abort=False),
    ]
)


def _values(records: bytes, start: int, end: int, aborted: Any) -> list[bytes]:
    next_offset, kept = _kept_batches(records, start, end, aborted)
    assert next_offset == 9 or end < 9
    batches = decode_batches(kept, start=start, end=end, constants=_Constants("t", 0))
    return [v for batch in batches for v in batch.column("value").to_pylist()]


def test_read_committed_drops_aborted_transactions_and_markers() -> None:
    aborted = _AbortedTransactions()
    aborted.add(((7, 0),))
    assert _values(TRANSACTIONS, 0, 9, aborted) == [
        b"committed-1",
        b"committed-2",
        b"plain",
        b"after-abort",
    ]


def test_read_uncommitted_keeps_every_data_record_but_no_marker() -> None:
    assert _values(TRANSACTIONS, 1, 8, None) == [
        b"aborted-2",
        b"committed-1",
        b"committed-2",
        b"plain",
        b"after-abort",
    ]


def _emptied(batch: bytes) -> bytes:
    """`batch` as the log cleaner leaves a producer's last batch whose records all went
    (docs/design/compaction.md): the same offsets and producer fields, no record."""
    (header,) = iter_headers(batch)
    return rebuild(header, batch[HEADER_SIZE:], [], horizon_ms=None)


def test_batches_the_cleaner_emptied_hold_no_record_to_read() -> None:
    records = b"".join(
        [
            _emptied(_transactional(7, 0, b"aborted-1", b"aborted-2")),
            _emptied(_control(7, 2, abort=True)),
            build_batch([b"plain"], base_offset=3),
            _emptied(build_batch([b"gone"], base_offset=4, producer_id=9, producer_epoch=0)),
            build_batch([b"last"], base_offset=5),
        ]
    )
    aborted = _AbortedTransactions()
    aborted.add(((7, 0),))
    for isolation in (aborted, None):
        next_offset, kept = _kept_batches(records, 0, 6, isolation)
        assert next_offset == 6
        batches = decode_batches(kept, start=0, end=6, constants=_Constants("t", 0))
        assert [v for b in batches for v in b.column("value").to_pylist()] == [b"plain", b"last"]


def test_corrupt_batches_raise_corrupt_message() -> None:
    with pytest.raises(BatchError, match="CRC-32C mismatch") as info:
        _kept_batches(build_batch([b"x"], corrupt_crc=True), 0, 1, None)
    assert info.value.code == ErrorCode.corrupt_message
    batch = build_batch([b"a value"])
    (header,) = iter_headers(batch)
    for position, byte in ((0, 0x7E), (5, 0x7E)):  # record length; value length
        payload = bytearray(batch[HEADER_SIZE:])
        payload[position] = byte
        with pytest.raises(BatchError, match="malformed") as info:
            list(
                decode_batches(
                    [_Kept(header, bytes(payload))], start=0, end=1, constants=_Constants("t", 0)
                )
            )
        assert info.value.code == ErrorCode.corrupt_message


def test_decode_bytes_limit_splits_a_response_and_refuses_a_huge_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DECODE_BYTES_MAX, hit: a response is decoded in several Arrow batches; a single
    batch inflating beyond it is CORRUPT_MESSAGE."""
    records = b"".join(
        build_batch([b"%d-%d" % (b, i) for i in range(10)], base_offset=10 * b) for b in range(3)
    )
    _, kept = _kept_batches(records, 0, 30, None)
    monkeypatch.setattr(reading, "DECODE_BYTES_MAX", 2 * len(kept[0].payload))
    batches = list(decode_batches(kept, start=0, end=30, constants=_Constants("t", 0)))
    assert [b.num_rows for b in batches] == [20, 10]
    assert [v for b in batches for v in b.column("value").to_pylist()] == [
        b"%d-%d" % (b, i) for b in range(3) for i in range(10)
    ]
    monkeypatch.setattr(reading, "DECODE_BYTES_MAX", len(kept[0].payload) - 1)
    with pytest.raises(BatchError, match="more than DECODE_BYTES_MAX"):
        list(decode_batches(kept, start=0, end=30, constants=_Constants("t", 0)))


# ---- planning


def test_split_ranges_spreads_min_partitions_by_size_and_caps_records() -> None:
    ranges = [OffsetRange("a", 0, 0, 900), OffsetRange("a", 1, 50, 150), OffsetRange("b", 0, 7, 7)]
    tasks = split_ranges(ranges, min_partitions=10, max_records_per_partition=None)
    assert Counter((t.topic, t.partition) for t in tasks) == {("a", 0): 9, ("a", 1): 1}
    tasks = split_ranges(ranges, min_partitions=None, max_records_per_partition=400)
    assert [(t.partition, t.start, t.end) for t in tasks] == [
        (0, 0, 300),
        (0, 300, 600),
        (0, 600, 900),
        (1, 50, 150),
    ]
    assert split_ranges(ranges, min_partitions=2, max_records_per_partition=None) == ranges[:2]


# ---- through Spark


def test_sink_then_source_round_trips_10k_rows_byte_exact(
    spark: Any, spark_broker: BrokerProcess
) -> None:
    from pyspark.sql.pandas.types import to_arrow_schema

    topic = topic_name("spark-roundtrip")
    create_topic(spark_broker.bootstrap, topic, partitions=3)
    sent = make_records(10_000, seed=21)
    rows = [(s.key, s.value, s.headers, i % 3) for i, s in enumerate(sent)]
    frame = spark.createDataFrame(
        rows,
        "key binary, value binary, headers array<struct<key:string,value:binary>>, partition int",
    )
    frame.write.format("shoal").option("bootstrap.servers", spark_broker.bootstrap).option(
        "topic", topic
    ).mode("append").save()

    read = (
        spark.read.format("shoal")
        .option("bootstrap.servers", spark_broker.bootstrap)
        .option("topic", topic)
        .load()
    )
    assert to_arrow_schema(read.schema, timezone="UTC").equals(ARROW_SCHEMA)
    got = read.collect()
    assert len(got) == len(sent)

    def fingerprint(partition: int, key: Any, value: Any, headers: Any) -> tuple[Any, ...]:
        pairs = tuple((h[0], None if h[1] is None else bytes(h[1])) for h in headers or ())
        return (partition, None if key is None else bytes(key), bytes(value), pairs)

    assert Counter(fingerprint(r.partition, r.key, r.value, r.headers) for r in got) == Counter(
        fingerprint(i % 3, s.key, s.value, s.headers) for i, s in enumerate(sent)
    )
    for partition in range(3):
        offsets = sorted(r.offset for r in got if r.partition == partition)
        assert offsets == list(range(len(offsets)))
    assert {(r.topic, r.timestampType) for r in got} == {(topic, 0)}


def test_source_reads_offset_ranges_split_over_min_partitions(
    spark: Any, spark_broker: BrokerProcess
) -> None:
    topics = [topic_name("spark-ranges-a"), topic_name("spark-ranges-b")]
    for topic in topics:
        create_topic(spark_broker.bootstrap, topic, partitions=2)
        produce(spark_broker.bootstrap, topic, make_records(400, seed=22), 2)
    a, b = topics
    starting = {a: {"0": 10, "1": -2}, b: {"0": 150, "1": 199}}
    ending = {a: {"0": 20, "1": 5}, b: {"0": -1, "1": -1}}
    read = (
        spark.read.format("shoal")
        .option("bootstrap.servers", spark_broker.bootstrap)
        .option("topics", ",".join(topics))
        .option("startingOffsets", json.dumps(starting))
        .option("endingOffsets", json.dumps(ending))
        .option("minPartitions", "8")
        .load()
    )
    assert read.rdd.getNumPartitions() == 9  # sizes 10, 5, 50, 1 of 66 get 1, 1, 6, 1
    got = sorted((r.topic, r.partition, r.offset) for r in read.collect())
    expected = (
        [(a, 0, o) for o in range(10, 20)]
        + [(a, 1, o) for o in range(0, 5)]
        + [(b, 0, o) for o in range(150, 200)]
        + [(b, 1, 199)]
    )
    assert got == sorted(expected)


def test_source_reads_an_empty_topic_as_no_rows(spark: Any, spark_broker: BrokerProcess) -> None:
    topic = topic_name("spark-nothing")
    create_topic(spark_broker.bootstrap, topic, partitions=2)
    read = (
        spark.read.format("shoal")
        .option("bootstrap.servers", spark_broker.bootstrap)
        .option("topic", topic)
        .load()
    )
    assert read.count() == 0


def test_source_without_headers_has_no_headers_column(
    spark: Any, spark_broker: BrokerProcess
) -> None:
    topic = topic_name("spark-no-headers")
    create_topic(spark_broker.bootstrap, topic)
    sent = make_records(30, seed=23)
    produce(spark_broker.bootstrap, topic, sent, 1)
    read = (
        spark.read.format("shoal")
        .option("bootstrap.servers", spark_broker.bootstrap)
        .option("topic", topic)
        .option("includeHeaders", "false")
        .load()
    )
    assert "headers" not in read.columns
    assert [bytes(r.value) for r in read.orderBy("offset").collect()] == [s.value for s in sent]
